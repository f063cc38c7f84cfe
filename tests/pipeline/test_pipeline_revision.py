"""Step-3 revision suggestions: offline rules, and the LLM backend against the loopback server."""

from pipeline.revision import (
    DELETED,
    FALSE,
    TRUE,
    UNVERIFIED,
    ClaimOutcome,
    SentenceToRevise,
    offline_revision,
    suggest_revisions,
)
from tests.helpers.fake_llm import FakeLLMServer, FakeReply, last_user_message

CURIE = "Marie Curie won the Nobel Prize in Physics in 1911 and was born in Paris."
WRONG = SentenceToRevise(
    CURIE,
    True,
    [
        ClaimOutcome(
            "Marie Curie won the Nobel Prize in Physics in 1911.",
            FALSE,
            "Marie Curie won the Nobel Prize in Physics in 1903.",
        ),
        ClaimOutcome("Marie Curie was born in Paris.", DELETED, ""),
    ],
)
RIGHT = SentenceToRevise("She studied in Paris.", True, [ClaimOutcome("Marie Curie studied in Paris.", TRUE, "")])
OPINION = SentenceToRevise("I admire her.", False, [ClaimOutcome("I admire her.", UNVERIFIED, "")])


def test_offline_keeps_unchanged_sentences_and_joins_the_corrected_claims_of_the_others():
    assert offline_revision(RIGHT) == "She studied in Paris."
    assert offline_revision(OPINION) == "I admire her."
    assert offline_revision(WRONG) == "Marie Curie won the Nobel Prize in Physics in 1903."
    repeated = SentenceToRevise(
        "A. A.",
        True,
        [ClaimOutcome("A is b.", FALSE, "A is c."), ClaimOutcome("A is  c.", TRUE, "")],
    )
    assert offline_revision(repeated) == "A is c."  # duplicates dropped


def test_the_llm_is_asked_only_about_changed_sentences_with_or_without_the_question():
    asked = []

    def reply(request):
        asked.append(last_user_message(request))
        return '"Marie Curie won the Nobel Prize in Physics in 1903."'

    with FakeLLMServer(reply) as server:
        revisions = suggest_revisions([RIGHT, WRONG, OPINION], server.config(), question="Who was Marie Curie?")
        assert [r.text for r in revisions] == [
            "She studied in Paris.",
            "Marie Curie won the Nobel Prize in Physics in 1903.",
            "I admire her.",
        ]
        assert [r.backend for r in revisions] == ["offline", "llm", "offline"]
        assert len(asked) == 1 and CURIE in asked[0] and "(deleted)" in asked[0] and "Question:" not in asked[0]
        suggest_revisions([WRONG], server.config(), question="Who was Marie Curie?", with_question=True)
        assert "Question: Who was Marie Curie?" in asked[1]


def test_a_failed_or_empty_answer_falls_back_to_the_offline_revision_and_says_why():
    with FakeLLMServer(lambda request: FakeReply(status=500)) as server:
        (revision,) = suggest_revisions([WRONG], server.config(max_retries=0))
    assert revision.fallback and revision.backend == "offline" and "500" in revision.error
    assert revision.text == offline_revision(WRONG)
    with FakeLLMServer(lambda request: "  ") as server:
        (revision,) = suggest_revisions([WRONG], server.config())
    assert revision.fallback and revision.error == "empty answer"
