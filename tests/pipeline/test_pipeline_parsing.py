import pytest

from pipeline.checkworthiness import parse_category
from pipeline.decompose import parse_decomposition
from pipeline.parsing import ParseError, parse_string_list

TWO_CLAIMS = ["Ada Lovelace was born in 1815.", "Ada Lovelace wrote the first program."]


@pytest.mark.parametrize(
    "answer",
    [
        '["Ada Lovelace was born in 1815.", "Ada Lovelace wrote the first program."]',
        "['Ada Lovelace was born in 1815.', 'Ada Lovelace wrote the first program.']",
        '```json\n["Ada Lovelace was born in 1815.", "Ada Lovelace wrote the first program."]\n```',
        '```\n["Ada Lovelace was born in 1815.",\n "Ada Lovelace wrote the first program."]\n```',
        '{"claims": ["Ada Lovelace was born in 1815.", "Ada Lovelace wrote the first program."]}',
        'Here you go: ["Ada Lovelace was born in 1815.", "Ada Lovelace wrote the first program."]',
        '[\n  "Ada Lovelace was born in 1815."\n  "Ada Lovelace wrote the first program."\n]',
        "1. Ada Lovelace was born in 1815.\n2. Ada Lovelace wrote the first program.",
        "1) Ada Lovelace was born in 1815.\n2) Ada Lovelace wrote the first program.",
        "- Ada Lovelace was born in 1815.\n- Ada Lovelace wrote the first program.",
        '* "Ada Lovelace was born in 1815."\n* "Ada Lovelace wrote the first program."',
        "• Ada Lovelace was born in 1815.\n\n• Ada Lovelace wrote the first program.",
        "Atomic facts:\n1. Ada Lovelace was born in 1815.\n2. Ada Lovelace wrote the first program.",
        "```\n- Ada Lovelace was born in 1815.\n- Ada Lovelace wrote the first program.\n```",
    ],
    ids=[
        "json",
        "python-list",
        "fenced-json",
        "fenced-multiline",
        "claims-object",
        "list-after-prose",
        "missing-commas",
        "numbered-dot",
        "numbered-paren",
        "dashes",
        "quoted-stars",
        "bullets-blank-lines",
        "label-then-numbered",
        "fenced-bullets",
    ],
)
def test_every_list_shape_parses(answer):
    assert parse_string_list(answer) == TWO_CLAIMS


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "",
        "   ",
        "I cannot help with that.",
        '["unterminated',
        "[1, 2]",
        "[]",
        '{"a": 1, "b": 2}',
        "1. A numbered line\nfollowed by prose",
    ],
)
def test_malformed_answers_raise_parse_error(answer):
    with pytest.raises(ParseError):
        parse_string_list(answer)


def test_decomposition_answer_with_decontextualised_line():
    answer = (
        "Decontextualised sentence: Ada Lovelace was born in 1815 and wrote the first program.\n"
        'Atomic facts for this sentence are: ["Ada Lovelace was born in 1815.", '
        '"Ada Lovelace wrote the first program."]'
    )
    assert parse_decomposition(answer) == (
        "Ada Lovelace was born in 1815 and wrote the first program.",
        TWO_CLAIMS,
    )


def test_decomposition_answer_fenced_and_formatted():
    answer = (
        "**Decontextualised sentence:** Ada Lovelace was born in 1815.\n"
        '```json\n["Ada Lovelace was born in 1815."]\n```'
    )
    assert parse_decomposition(answer) == (
        "Ada Lovelace was born in 1815.",
        ["Ada Lovelace was born in 1815."],
    )


def test_decomposition_answer_without_decontext_line():
    assert parse_decomposition("Atomic facts:\n- A is B.\n- C is D.") == (
        None,
        ["A is B.", "C is D."],
    )


def test_decomposition_answer_without_facts_is_an_error():
    with pytest.raises(ParseError):
        parse_decomposition("Decontextualised sentence: Only this line.")


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("factual", "factual"),
        ("Opinion", "opinion"),
        ("not_a_claim", "not_a_claim"),
        ("not a claim", "not_a_claim"),
        ("Not-a-claim.", "not_a_claim"),
        ("Label: other", "other"),
        ('"factual"', "factual"),
        ("```\nfactual\n```", "factual"),
    ],
)
def test_category_answers_parse_strictly(answer, label):
    assert parse_category(answer) == label


@pytest.mark.parametrize("answer", [None, "", "factual, checkworthy", "It is factual.", "fact", "yes"])
def test_category_answers_outside_the_vocabulary_are_errors(answer):
    with pytest.raises(ParseError):
        parse_category(answer)
