"""The Factcheck-Bench paper's word overlap and normalised edit distance (pipeline.text_measures),
worked by hand, and the paper's figures from the released file (issue 19)."""

import json

import pytest

from pipeline.text_measures import normalised_edit_distance, word_overlap
from tests.helpers.paths import shared_data_path


def test_word_overlap_counts_each_occurrence_of_the_longer_lists_tokens():
    # longer: ["the", "cat", "the", "hat"] (4); in the shorter ["the", "dog"]: the, the -> 2/4
    assert word_overlap("the cat the hat", "the dog") == 0.5
    # a Jaccard of the word sets would give 1/4 ({the} of {the, cat, hat, dog})


def test_word_overlap_keeps_case_and_punctuation():
    # "Paris." is not "Paris", "The" is not "the": of ["The", "capital", "is", "Paris."] only "capital", "is"
    assert word_overlap("The capital is Paris.", "the capital is Paris") == 0.5


def test_word_overlap_takes_the_longer_text_whichever_comes_first():
    # second text longer: ["a", "b", "c", "d", "e"]; in ["a", "b"]: 2/5
    assert word_overlap("a b", "a b c d e") == pytest.approx(2 / 5)
    assert word_overlap("a b c d e", "a b") == pytest.approx(2 / 5)
    # whitespace of any kind splits; nothing is normalised besides
    assert word_overlap("a\tb\n c", "a b c") == 1.0


def test_word_overlap_of_empty_texts():
    assert word_overlap("", "") == 1.0
    assert word_overlap("a b", "") == 0.0


def test_normalised_edit_distance_is_character_levenshtein_over_the_longer_text():
    # kitten -> sitting: 3 edits, longer text 7 characters
    assert normalised_edit_distance("kitten", "sitting") == pytest.approx(3 / 7)
    assert normalised_edit_distance("sitting", "kitten") == pytest.approx(3 / 7)
    # case and punctuation are characters too: "Paris." -> "paris": 2 edits over 6
    assert normalised_edit_distance("Paris.", "paris") == pytest.approx(2 / 6)
    # spaces as given: "a  b" -> "a b" is one deletion over 4 (no whitespace normalisation)
    assert normalised_edit_distance("a  b", "a b") == pytest.approx(1 / 4)
    # a longer second text: "ab" -> "abcde": 3 insertions over 5
    assert normalised_edit_distance("ab", "abcde") == pytest.approx(3 / 5)


def test_normalised_edit_distance_of_empty_texts():
    assert normalised_edit_distance("", "") == 0.0
    assert normalised_edit_distance("", "abc") == 1.0


def false_responses() -> list[dict]:
    """The released responses the paper counts as false: a claim step 2 verified needs an edit or
    lacks evidence (annotation.kinds.factcheck.step3.derived_labels' rule; 61 of 94)."""
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    found = []
    for record in records:
        needs = [
            s["if_claim_needs_edit"][k]
            for s in record["sentences"].values()
            if s["sentence_checkworthiness"] == "yes" and s["if_claim_needs_edit"]
            for k, category in enumerate(s["claim_checkworthiness"])
            if category == "factual" and s["if_claim_needs_edit"][k] != "NA"
        ]
        if needs and any(n in ("yes", "not_enough_evidence") for n in needs):
            found.append(record)
    return found


def test_the_papers_figures_for_the_revisions_of_the_false_responses():
    """Wang et al.: over the 61 false responses the human revision differs from the original by a
    normalised edit distance of 0.354 and a word overlap of 0.715."""
    responses = false_responses()
    assert len(responses) == 61
    distance = sum(normalised_edit_distance(r["response"], r["revised_response"]) for r in responses) / 61
    overlap = sum(word_overlap(r["response"], r["revised_response"]) for r in responses) / 61
    assert (round(distance, 3), round(overlap, 3)) == (0.354, 0.715)
