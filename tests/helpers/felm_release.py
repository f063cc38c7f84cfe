"""Lines of the released FELM domain files, written here in the released shapes (the release itself
is not in the repository): good lines of each domain, lines FELM's evaluation code scores though
they are off (lists longer than the segments, a NaN response, ``"type": ""``), broken ones, a file
of them, and its export."""

import json

from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl

NON_FINITE = "is NaN or infinite (or too large for a number), which JSON does not allow"


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
    """three segments, but labels, comment and type for two: FELM's code cannot score it (no labels[2])."""
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


def long_lists_line() -> dict:
    """two segments, labels, comment and type for three (24 such lines in the release): FELM's
    code reads the first two; the third is a contradiction (correct, with a type) of no segment."""
    return {
        "index": "98",
        "source": "quora",
        "prompt": "Q?",
        "response": "A. B.",
        "segmented_response": ["A.", "B."],
        "labels": [False, True, True],
        "comment": ["no", "", "x"],
        "type": ["knowledge_error", None, "knowledge_error"],
        "ref": [],
    }


def string_type_line() -> dict:
    """reasoning as FELM's evaluation input (eval/all.jsonl) writes all 208 of them: ``"type": ""``."""
    return {**reasoning_line(), "index": 41, "labels": [False], "comment": ["x is B."], "type": ""}


GOOD = [wk_line, math_line, writing_line, reasoning_line]
# lines FELM's code scores that are off: imported as it reads them, with a warning each
READ_AS_FELM = [long_lists_line, string_type_line]


def released_file(*records) -> bytes:
    """JSONL as the release writes it; the string ``"<NaN>"`` becomes a bare NaN (Python's json does that)."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return text.replace('"<NaN>"', "NaN").encode()


def nan_line() -> dict:
    """a NaN response (two lines of the release): FELM's code reads only the segments."""
    line = wk_line()
    line["index"], line["response"] = "100", "<NaN>"
    return line


def nan_prompt_line() -> dict:
    line = wk_line()
    line["index"], line["prompt"] = "101", "<NaN>"
    return line


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def exported(project) -> list[dict]:
    return [json.loads(line) for line in export_jsonl(project, "felm")]


BROKEN = released_file(wk_line(), mismatch_line(), math_line(), nan_prompt_line(), writing_line())
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
    {"line": 4, "field": "prompt", "message": NON_FINITE},
]


# -- the five domain files, each numbered from "0" ----------------------------------------------------

# the shape of a line of each domain file (science's are like world knowledge's)
DOMAIN_LINES = {
    "wk": wk_line,
    "science": wk_line,
    "writing_rec": writing_line,
    "reasoning": reasoning_line,
    "math": math_line,
}


def domain_file_lines(domain: str, count: int = 2) -> list[dict]:
    """The first ``count`` lines of a domain file: indexes from "0", as every released domain file
    has them (numbers where the domain's lines write numbers), prompts of their own."""
    lines = []
    for number in range(count):
        line = DOMAIN_LINES[domain]()
        line["index"] = number if isinstance(line["index"], int) else str(number)
        line["prompt"] = f"{line['prompt']} ({domain} {number})"
        lines.append(line)
    return lines


def import_domain_files(project, count: int = 2, labels_as: str = "gold") -> dict[str, list[dict]]:
    """Each of the five domain files imported into ``project`` with its ``domain`` option."""
    files = {domain: domain_file_lines(domain, count) for domain in DOMAIN_LINES}
    for domain, records in files.items():
        import_jsonl(project, lines_of(released_file(*records)), fmt="felm", labels_as=labels_as, domain=domain)
    return files
