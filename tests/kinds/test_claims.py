"""Claim alignment for consolidation and agreement: rewordings pair, different facts do not."""

import pytest

from annotation.kinds.claims import align, similarity
from annotation.kinds.factcheck import FactcheckKind


@pytest.mark.parametrize(
    "a, b",
    [
        ("Marie Curie was a chemist.", "Marie Curie was born in Poland."),
        ("Python was created by Guido van Rossum.", "Python was first released in 1991."),
        ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower is about 330 metres tall."),
    ],
)
def test_different_claims_about_one_subject_are_not_paired(a, b):
    assert sorted(align([a], [b]), key=str) == [(0, None), (None, 0)]


@pytest.mark.parametrize(
    "a, b",
    [
        ("Marie Curie won two Nobel Prizes.", "Curie was awarded the Nobel Prize twice."),
        ("He was born in 1867.", "Marie Curie was born in 1867."),
        ("A was founded in 1900.", "A was founded in the year 1900."),
        (
            "Marie Curie discovered polonium.",
            "Marie Curie discovered the chemical element polonium.",
        ),
    ],
)
def test_rewordings_of_one_claim_are_paired(a, b):
    assert align([a], [b]) == [(0, 0)]


def test_similarity_ignores_case_word_order_and_spacing():
    assert similarity("Paris is  the capital of France.", "the capital of France is paris.") == pytest.approx(
        similarity("paris is the capital of france.", "paris is the capital of france."), abs=0.05
    )


def test_agreed_texts_reach_the_gold_draft_with_tidy_whitespace():
    sentence = {"importance": "yes", "checkworthy": "yes"}
    alice = {
        "sentences": [
            {
                **sentence,
                "decontext": "Water  boils at 100 °C.",
                "claims": [{"text": "Water boils\nat 100 °C.", "category": "factual", "importance": "yes"}],
            }
        ]
    }
    bob = {
        "sentences": [
            {
                **sentence,
                "decontext": "Water boils at 100 °C. ",
                "claims": [{"text": "Water boils at 100 °C.", "category": "factual", "importance": "yes"}],
            }
        ]
    }
    merged = FactcheckKind().merge(1, {"sentences": ["Water boils at 100 °C."]}, [alice, bob])
    assert merged.disagreed == []
    assert merged.draft["sentences"][0]["decontext"] == "Water boils at 100 °C."
    assert merged.draft["sentences"][0]["claims"][0]["text"] == "Water boils at 100 °C."
