import ast
import json
from pathlib import Path

import pytest

from pipeline.checkworthiness import (
    CHECKWORTHY_LABELS,
    CLAIM_CATEGORIES,
    IMPORTANCE_LABELS,
    Hint,
    importance_hints,
    offline_category,
    sentence_checkworthiness,
)
from pipeline.factcheck_step1 import suggest_step1
from tests.helpers.fake_llm import FakeLLMServer, well_behaved_responder

PROMPT = "Where was Marie Curie born?"
RESPONSE = (
    "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891, and she studied physics there. "
    "In my opinion, she is the best scientist of her century. Is there anything else you would like to know?"
)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Marie Curie was born in Warsaw.", "factual"),
        ("The Best Paper Award went to a Danish team.", "factual"),
        ("Is there anything else you would like to know?", "not_a_claim"),
        ("As an AI language model, I do not have access to current news.", "not_a_claim"),
        ("Sure, here are some examples: 1.", "not_a_claim"),
        ("Some reasons for this include:", "not_a_claim"),
        ("I hope this helps!", "not_a_claim"),
        ("I think Paris is lovely in spring.", "opinion"),
        ("In my opinion, the film is too long.", "opinion"),
        ("You should visit the museum early.", "opinion"),
        ("It is the best museum in the city.", "opinion"),
    ],
)
def test_offline_claim_category(text, category):
    assert offline_category(text) == category


def test_sentence_is_checkworthy_when_one_claim_is_factual():
    assert (
        sentence_checkworthiness([Hint("opinion", backend="offline"), Hint("factual", backend="offline")]).label
        == "yes"
    )
    assert (
        sentence_checkworthiness(
            [Hint("opinion", backend="llm", model="m"), Hint("other", backend="llm", model="m")]
        ).label
        == "no"
    )
    assert sentence_checkworthiness([]).label == "no"


def test_importance_prefers_checkworthy_sentences_that_answer_the_prompt():
    sentences = ["Marie Curie was born in Warsaw.", "She liked music.", "Is that all?"]
    labels = [h.label for h in importance_hints(PROMPT, sentences, ["yes", "yes", "no"])]
    assert labels == ["yes", "intermediate", "no"]


def assert_step1_shape(payload: dict) -> None:
    assert set(payload) == {"sentences", "provenance"}
    for sentence in payload["sentences"]:
        assert set(sentence) == {"text", "decontext", "importance", "checkworthy", "claims"}
        assert sentence["importance"] in IMPORTANCE_LABELS
        assert sentence["checkworthy"] in CHECKWORTHY_LABELS
        assert sentence["claims"]
        for claim in sentence["claims"]:
            assert set(claim) == {"text", "category", "importance"}
            assert claim["category"] in CLAIM_CATEGORIES
            assert claim["importance"] in IMPORTANCE_LABELS
    json.dumps(payload)  # storable as JSON as is


def test_suggest_step1_offline():
    payload = suggest_step1(PROMPT, RESPONSE)
    assert_step1_shape(payload)
    sentences = payload["sentences"]

    assert [s["text"] for s in sentences] == [
        "Marie Curie was born in Warsaw in 1867.",
        "She moved to Paris in 1891, and she studied physics there.",
        "In my opinion, she is the best scientist of her century.",
        "Is there anything else you would like to know?",
    ]
    assert sentences[1]["decontext"] == "Marie Curie moved to Paris in 1891, and she studied physics there."
    assert [c["text"] for c in sentences[1]["claims"]] == [
        "Marie Curie moved to Paris in 1891.",
        "Marie Curie studied physics there.",
    ]
    assert [(s["checkworthy"], s["importance"]) for s in sentences] == [
        ("yes", "yes"),
        ("yes", "intermediate"),
        ("no", "no"),
        ("no", "no"),
    ]
    assert sentences[2]["claims"][0]["category"] == "opinion"
    assert sentences[3]["claims"][0]["category"] == "not_a_claim"
    assert payload["provenance"]["backend"] == "offline"
    assert payload["provenance"]["model"] is None


def test_suggest_step1_of_an_empty_response():
    assert suggest_step1(PROMPT, "  ")["sentences"] == []


def test_suggest_step1_keeps_sentences_it_is_given():
    given = [
        "Marie Curie was born in Warsaw, and she studied in Paris.",
        "She won two Nobel Prizes.",
    ]
    result = suggest_step1(PROMPT, " ".join(given) + " Extra text.", sentences=given)
    assert [s["text"] for s in result["sentences"]] == given
    assert [c["text"] for c in result["sentences"][0]["claims"]] == [
        "Marie Curie was born in Warsaw.",
        "Marie Curie studied in Paris.",
    ]


def test_suggest_step1_with_llm():
    with FakeLLMServer(well_behaved_responder) as server:
        payload = suggest_step1(PROMPT, RESPONSE, server.config())

    assert_step1_shape(payload)
    assert all(c["category"] == "factual" for s in payload["sentences"] for c in s["claims"])
    provenance = payload["provenance"]
    assert (provenance["backend"], provenance["model"]) == ("llm", "fake-model")
    assert provenance["decomposition"]["fallback_sentences"] == []
    assert len(server.requests) == 4 + 4  # one decomposition and one category call per sentence


def test_pipeline_imports_nothing_from_django_or_the_domain():
    """pipeline/ must run in a worker, a command or a notebook: plain data in and out."""
    forbidden = {"django", "rest_framework", "annotation", "api", "config"}
    package = Path(__file__).resolve().parents[2] / "pipeline"
    imported = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {(source.name, alias.name.split(".")[0]) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add((source.name, node.module.split(".")[0]))
    assert sorted(pair for pair in imported if pair[1] in forbidden) == []
