"""Lines of the released FELM domain files, written here in the released shapes (the release itself
is not in the repository): good lines of each domain, broken ones, a file of them, and its export."""

import json

from annotation.exports.formats import export_jsonl

NAN_RESPONSE = "is NaN or infinite (or too large for a number), which JSON does not allow"


def wk_line() -> dict:
    """world knowledge: an irrelevant segment, reference contents, no domain."""
    return {
        "index": "12",
        "source": "quora",
        "prompt": "Who wrote Hamlet?",
        "response": "Shakespeare wrote Hamlet. I like tea.",
        "segmented_response": ["Shakespeare wrote Hamlet.", "I like tea."],
        "labels": [True, False],
        "comment": ["", "Tea has nothing to do with the question."],
        "type": [None, "irrelevant_with_qst"],
        "ref": ["https://en.wikipedia.org/wiki/Hamlet"],
        "ref_contents": ["Hamlet is a tragedy written by William Shakespeare ..."],
    }


def math_line() -> dict:
    """math: an error found, but types were not annotated (``type: []``)."""
    return {
        "index": "3",
        "source": "MATH",
        "prompt": "What is 2 + 2 * 3?",
        "response": "2 + 2 * 3 = 12. So the answer is 12.",
        "segmented_response": ["2 + 2 * 3 = 12.", "So the answer is 12."],
        "labels": [False, False],
        "comment": ["Multiplication first: 8.", "Follows from the error."],
        "type": [],
        "ref": [],
    }


def writing_line() -> dict:
    """writing_rec: ``""`` for segments without a type, one of them wrong."""
    return {
        "index": "7",
        "source": "chatgpt",
        "prompt": "Recommend a novel.",
        "response": "Read Dune. It was written by Tolkien. It is long.",
        "segmented_response": ["Read Dune.", "It was written by Tolkien.", "It is long."],
        "labels": [True, False, False],
        "comment": ["", "Frank Herbert wrote Dune.", "Not so long."],
        "type": ["", "knowledge_error", ""],
        "ref": [],
        "extra_note": {"kept": [1, None, "x"]},
    }


def reasoning_line() -> dict:
    """reasoning, all correct, ``type: []``, a numeric index and a null source."""
    return {
        "index": 40,
        "source": None,
        "prompt": "If all A are B and x is A, is x B?",
        "response": "Yes, x is B.",
        "segmented_response": ["Yes, x is B."],
        "labels": [True],
        "comment": [""],
        "type": [],
        "ref": [],
    }


def mismatch_line() -> dict:
    """three segments, but labels, comment and type for two (24 such lines in the release)."""
    return {
        "index": "99",
        "source": "quora",
        "prompt": "Q?",
        "response": "A. B. C.",
        "segmented_response": ["A.", "B.", "C."],
        "labels": [True, False],
        "comment": ["", "no"],
        "type": [None, "knowledge_error"],
        "ref": [],
    }


GOOD = [wk_line, math_line, writing_line, reasoning_line]


def released_file(*records) -> bytes:
    """JSONL as the release writes it; the string ``"<NaN>"`` becomes a bare NaN (Python's json does that)."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return text.replace('"<NaN>"', "NaN").encode()


def nan_line() -> dict:
    line = wk_line()
    line["index"], line["response"] = "100", "<NaN>"
    return line


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def exported(project) -> list[dict]:
    return [json.loads(line) for line in export_jsonl(project, "felm")]


BROKEN = released_file(wk_line(), mismatch_line(), math_line(), nan_line(), writing_line())
BROKEN_ERRORS = [
    {
        "line": 2,
        "field": "labels",
        "message": "must be a list with one entry per segment (3), not 2",
    },
    {
        "line": 2,
        "field": "comment",
        "message": "must be a list with one entry per segment (3), not 2",
    },
    {"line": 2, "field": "type", "message": "must be a list with one entry per segment (3), not 2"},
    {"line": 4, "field": "response", "message": NAN_RESPONSE},
]
