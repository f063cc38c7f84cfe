"""Query generation and stance hints against the loopback LLM server."""

import pytest

from pipeline.evidence import (
    STANCE_LABELS,
    StanceRequest,
    claim_queries,
    parse_stance,
    stance_hints,
    verdict_from_stances,
)
from pipeline.llm import LLM, OFFLINE
from pipeline.parsing import ParseError
from tests.helpers.fake_llm import FakeLLMServer, FakeReply, last_user_message

CLAIMS = ["The Eiffel Tower was completed in 1889.", "Marie Curie won two Nobel Prizes."]


def questions(request):
    message = last_user_message(request)
    if "Eiffel" in message.split("Statement:")[-1]:
        return '["When was the Eiffel Tower completed?", "When was the Eiffel tower completed ?", "Who built it?"]'
    return "I would rather not."


def test_llm_questions_follow_the_claim_without_near_duplicates_and_fall_back_per_claim():
    with FakeLLMServer(questions) as server:
        eiffel, curie = claim_queries(CLAIMS, server.config(max_retries=0))
    assert eiffel.queries == [CLAIMS[0], "When was the Eiffel Tower completed?", "Who built it?"]
    assert (eiffel.backend, eiffel.model, eiffel.fallback) == (LLM, "fake-model", False)
    assert curie.backend == OFFLINE and curie.fallback and "unparseable" in curie.error
    assert curie.queries == [CLAIMS[1], "Marie Curie Nobel Prizes"]


def test_offline_queries_need_no_server():
    offline = claim_queries(CLAIMS)
    assert [q.backend for q in offline] == [OFFLINE, OFFLINE]
    assert offline[0].queries == [CLAIMS[0], "Eiffel Tower 1889"]


def test_all_claims_are_asked_at_once():
    with FakeLLMServer(lambda r: '["q?"]', delay=0.1) as server:
        claim_queries(CLAIMS * 3, server.config(concurrency=8))
    assert server.max_in_flight > 1 and len(server.requests) == 6


@pytest.mark.parametrize(
    "answer, label",
    [
        ("refute", "refute"),
        ("Label: Completely support", "completely-support"),
        ("'partially-support'.", "partially-support"),
        ("IRRELEVANT", "irrelevant"),
    ],
)
def test_stance_answers_are_parsed_strictly(answer, label):
    assert parse_stance(answer) == label


@pytest.mark.parametrize("answer", ["", "supports", "refute, mostly", None])
def test_unusable_stance_answers_are_refused(answer):
    with pytest.raises(ParseError):
        parse_stance(answer)


def test_stance_hints_come_from_the_llm_only_and_a_bad_answer_gives_no_hint():
    def stance(request):
        message = last_user_message(request)
        if "1889" in message.split("Evidence:")[-1]:
            return "completely-support"
        if "error" in message:
            return FakeReply(status=500)
        return "no idea"

    pairs = [
        StanceRequest(CLAIMS[0], "Construction finished in March 1889."),
        StanceRequest(CLAIMS[0], "Bananas are yellow."),
        StanceRequest(CLAIMS[1], "server error please"),
    ]
    with FakeLLMServer(stance) as server:
        hints = stance_hints(pairs, server.config(max_retries=0))
    assert hints[0].label == "completely-support" and hints[0].backend == LLM and hints[0].label in STANCE_LABELS
    assert hints[1:] == [None, None]
    assert stance_hints(pairs) == [None, None, None]  # offline: no guesses


def test_long_evidence_is_cut_before_it_reaches_the_model():
    with FakeLLMServer(lambda r: "irrelevant") as server:
        stance_hints([StanceRequest("claim", "word " * 5000)], server.config())
    assert len(last_user_message(server.requests[0])) < 3600


@pytest.mark.parametrize(
    "stances, verdict",
    [
        ([], None),
        ([None, None], None),
        (["completely-support", "irrelevant"], "true"),
        (["refute", "partially-support"], "false"),
        (["completely-support", "refute"], "not_enough_evidence"),  # a tie
        (["completely-support", "refute", "refute"], "false"),
        (
            ["partially-support", "irrelevant"],
            "not_enough_evidence",
        ),  # partial support does not vote
    ],
)
def test_a_claims_verdict_follows_from_its_passages_stances(stances, verdict):
    assert verdict_from_stances(stances) == verdict
