import os
from pathlib import Path

import pytest
from nltk.tokenize.punkt import PunktSentenceTokenizer

from pipeline.evaluation import load_factcheck_bench_sentences, sentence_match_rate
from pipeline.segmenter import SEGMENT_SEPARATOR, segment_response, split_sentences


@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith met Mr. Jones and Mrs. Brown at St. Mary's church.",
        "The U.S. Department of Agriculture publishes the figures.",
        "Fruit, e.g. apples and pears, is sold here, i.e. at the market.",
        "Acme Inc. v. Jones was decided in Jan. 1990 by the court.",
        "He wore shirt No. 10 in the Germany vs. Brazil match.",
        "Apples, pears, etc. are sold in the U.K. and in the U.S. in autumn.",
        "The chair was Justice William O. Douglas of the court.",
    ],
)
def test_abbreviations_and_initials_do_not_end_sentences(text):
    assert split_sentences(text) == [text]


def test_abbreviation_before_a_sentence_starter_ends_the_sentence():
    text = "She moved to Washington, D.C. It was 1990. They sell pens, pencils, etc. The shop is old."
    assert split_sentences(text) == [
        "She moved to Washington, D.C.",
        "It was 1990.",
        "They sell pens, pencils, etc.",
        "The shop is old.",
    ]


def test_circa_before_a_number_does_not_end_the_sentence():
    text = "Rollo was born c. 860 in Norway. He died c. 930. The vase dates from ca. 1500. Eat vitamin C. It helps."
    assert split_sentences(text) == [
        "Rollo was born c. 860 in Norway.",
        "He died c. 930.",
        "The vase dates from ca. 1500.",
        "Eat vitamin C.",
        "It helps.",
    ]


def test_roman_numeral_or_letter_before_a_new_sentence():
    text = "The ship served in World War I. It sank in 1916. The plan failed, so they used Plan B. Please note this."
    assert split_sentences(text) == [
        "The ship served in World War I.",
        "It sank in 1916.",
        "The plan failed, so they used Plan B.",
        "Please note this.",
    ]


def test_line_start_numbered_list_items_become_sentences_without_markers():
    text = "Follow these steps:\n\n1. Open the box. Check the parts.\n\n2. Read the manual.\n3) Assemble it"
    assert split_sentences(text) == [
        "Follow these steps:",
        "Open the box.",
        "Check the parts.",
        "Read the manual.",
        "Assemble it",
    ]


def test_bulleted_lines_become_sentences():
    text = "Useful tools:\n- a hammer\n* a saw\n• a drill\nThat is all."
    assert split_sentences(text) == [
        "Useful tools:",
        "a hammer",
        "a saw",
        "a drill",
        "That is all.",
    ]


def test_inline_numbered_markers_stay_with_their_item():
    text = (
        'Here are two albums: 1. "Red" (2012) is the first one.2. "Blue" (2014) is the second one. 3. "Green" followed.'
    )
    assert split_sentences(text) == [
        "Here are two albums:",
        '1. "Red" (2012) is the first one.',
        '2. "Blue" (2014) is the second one.',
        '3. "Green" followed.',
    ]


def test_number_without_space_is_not_a_list_marker():
    text = "The winners were: \r\n1.Alice (2001) \r\n2.Bob (2002)"
    assert split_sentences(text) == ["The winners were: 1.Alice (2001) 2.Bob (2002)"]


def test_a_number_ending_a_sentence_is_kept():
    assert split_sentences("The answer is 4. The total was: 4. We use version 3.5. Then it ended.") == [
        "The answer is 4.",
        "The total was: 4.",
        "We use version 3.5.",
        "Then it ended.",
    ]


def test_unpunctuated_lines_and_paragraphs_end_sentences():
    text = "Overview\nThe tool is fast\nIt is also free.\n\nA new paragraph starts here"
    assert split_sentences(text) == [
        "Overview",
        "The tool is fast",
        "It is also free.",
        "A new paragraph starts here",
    ]


def test_paragraph_ending_with_colon_continues_into_the_next():
    text = "The equation is:\n\nH2 + O2 → H2O\n\nWater is formed."
    assert split_sentences(text) == ["The equation is: H2 + O2 → H2O", "Water is formed."]


def test_sentences_are_stripped_non_empty_and_in_order():
    text = "  First one.   Second one?\r\n\r\n  Third one!  \n\n\n"
    sentences = split_sentences(text)
    assert sentences == ["First one.", "Second one?", "Third one!"]
    positions = [text.index(s) for s in sentences]
    assert positions == sorted(positions)


@pytest.mark.parametrize("text", ["", "   ", "\n\r\n"])
def test_empty_text_gives_no_sentences(text):
    assert split_sentences(text) == []
    assert segment_response(text) == []


def test_separator_mode_splits_on_felm_separator():
    text = f"First segment. Still first.{SEGMENT_SEPARATOR} Second segment.{SEGMENT_SEPARATOR}"
    assert segment_response(text, "separator") == ["First segment. Still first.", "Second segment."]


def test_auto_mode_uses_separator_only_when_present():
    with_separator = f"A one. B two.{SEGMENT_SEPARATOR}C three."
    assert segment_response(with_separator) == ["A one. B two.", "C three."]
    assert segment_response("A one. B two.") == ["A one.", "B two."]


def test_sentence_mode_ignores_separator_semantics():
    assert segment_response("A one. B two.", "sentence") == ["A one.", "B two."]


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="unknown segmentation method"):
        segment_response("Text.", "paragraph")


# Measured on the released data: plain Punkt 83.6 %, ours 87.8 % (273/311). 28 released
# sentences were edited by annotators and occur nowhere in their response (ceiling 91.0 %);
# most other misses follow contradictory conventions (e.g. list headings removed by hand in
# one item and kept in another). See benchmarks/quality/sentence_split.py --misses.
MIN_MATCH_RATE = 0.87
MIN_SHARE_OF_REACHABLE = 0.95


SHARED_DATA = Path(__file__).resolve().parents[2] / "../shared/data"


def released_data(relative_path: str) -> Path:
    """A file of the released data: skipped when absent, but a failure when CI=true."""
    path = (SHARED_DATA / relative_path).resolve()
    if not path.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"released data missing in CI: {path}")
        pytest.skip(f"released Factcheck-Bench data not found at {path}")
    return path


def test_match_rate_on_released_factcheck_bench_sentences():
    items = load_factcheck_bench_sentences(released_data("factcheck-bench/factcheck-GPT-benchmark.jsonl"))
    ours = sentence_match_rate(items, split_sentences)
    plain = sentence_match_rate(items, PunktSentenceTokenizer().tokenize)
    assert ours.reference == 311
    assert ours.rate >= MIN_MATCH_RATE, ours.misses
    assert ours.matched / ours.reachable >= MIN_SHARE_OF_REACHABLE
    assert ours.rate > plain.rate + 0.03


def test_missing_released_data_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        released_data("no-such-dir/missing.jsonl")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        released_data("no-such-dir/missing.jsonl")
