"""Hostile import input: a clear error naming line and field, nothing written, never a 500."""

import json

import pytest

from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl
from annotation.models import Item
from tests.helpers.builders import felm_line, jsonl, post_import

pytestmark = pytest.mark.django_db

GOOD = json.dumps({"prompt": "q", "response": "Fine."})
DEEP = "[" * 100_000 + "]" * 100_000
SURROGATE = "contains a lone UTF-16 surrogate (e.g. \\ud800), which is not valid Unicode"
NON_FINITE = "is NaN or infinite (or too large for a number), which JSON does not allow"
TOO_DEEP = "nests arrays or objects too deeply to be read"
# (format, the bad second line, field, message); line 2 of a file whose other lines are good.
HOSTILE_LINES = [
    ("plain", '{"prompt": "q", "response": "x", "meta": ' + DEEP + "}", "(json)", TOO_DEEP),
    ("plain", DEEP, "(json)", TOO_DEEP),
    (
        "plain",
        json.dumps({"response": "x", "source": "s" * 201}),
        "source",
        "is 201 characters long; at most 200 fit",
    ),
    (
        "plain",
        json.dumps({"response": "x", "id": "i" * 201}),
        "id",
        "is 201 characters long; at most 200 fit",
    ),
    (
        "plain",
        json.dumps({"response": "x", "index": "i" * 300}),
        "index",
        "is 300 characters long; at most 200 fit",
    ),
    (
        "plain",
        json.dumps({"response": "x", "domain": "d" * 51}),
        "domain",
        "is 51 characters long; at most 50 fit",
    ),
    (
        "felm",
        json.dumps(felm_line("n" * 201, ["A."])),
        "index",
        "is 201 characters long; at most 200 fit",
    ),
    (
        "felm",
        json.dumps(felm_line(2, ["A."], source="s" * 250)),
        "source",
        "is 250 characters long; at most 200 fit",
    ),
    ("plain", '{"prompt": "q", "response": "a\\ud800b"}', "response", SURROGATE),
    (
        "plain",
        '{"prompt": "q", "response": "ok", "notes": ["fine", "\\udfff"]}',
        "notes[1]",
        SURROGATE,
    ),
    (
        "plain",
        '{"prompt": "q", "response": "ok", "meta": {"\\ud800": 1}}',
        "meta.\\ud800",
        f"(a key) {SURROGATE}",
    ),
    (
        "felm",
        json.dumps(felm_line(2, ["A.", "B.", "C."], comment=["", "", "x"]))[:-1].replace('"x"', '"\\ud83d"') + "}",
        "comment[2]",
        SURROGATE,
    ),
    ("plain", '{"prompt": "q", "response": "ok", "score": NaN}', "score", NON_FINITE),
    (
        "plain",
        '{"prompt": "q", "response": "ok", "scores": [1, 2, Infinity]}',
        "scores[2]",
        NON_FINITE,
    ),
    ("plain", '{"prompt": "q", "response": "ok", "x": {"y": -Infinity}}', "x.y", NON_FINITE),
    ("plain", '{"prompt": "q", "response": "ok", "big": 1e400}', "big", NON_FINITE),
    (
        "felm",
        json.dumps(felm_line(2, ["A."]))[:-1] + ', "labels_score": [0.5, 1E+999]}',
        "labels_score[1]",
        NON_FINITE,
    ),
]


def _file(bad_line: str, fmt: str = "plain") -> list[bytes]:
    good = GOOD if fmt == "plain" else json.dumps(felm_line(1, ["A."]))
    # a good line after the bad one (its own id: an id names one item)
    last = good.replace("A.", "C.") if fmt == "plain" else json.dumps(felm_line(3, ["C."]))
    return [
        f"{good}\n".encode(),
        f"{bad_line}\n".encode(),
        f"{last}\n".encode(),
    ]


@pytest.mark.parametrize("fmt, bad_line, field, message", HOSTILE_LINES)
def test_hostile_values_are_refused_with_line_and_field(felm_project, fmt, bad_line, field, message):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, _file(bad_line, fmt), fmt=fmt)
    assert failed.value.errors == [{"line": 2, "field": field, "message": message}]
    assert not Item.objects.exists()


@pytest.mark.parametrize("fmt, bad_line, field, message", HOSTILE_LINES[::3])
def test_hostile_values_through_the_api_fail_the_job_not_the_server(
    clients, felm_project, fmt, bad_line, field, message
):
    upload = jsonl([])
    upload.write(b"".join(_file(bad_line, fmt)))
    upload.seek(0)
    response, job = post_import(clients["admin"], felm_project.id, upload, fmt)
    assert response.status_code == 202
    assert job["state"] == "failed" and job["errors"] == [{"line": 2, "field": field, "message": message}]
    assert not Item.objects.exists()


def test_a_non_finite_number_on_a_line_that_is_not_json_anyway_is_a_json_error(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, _file('{"response": "x", "n": NaN, "m": }'), fmt="plain")
    assert failed.value.errors == [
        {
            "line": 2,
            "field": "(json)",
            "column": 34,
            "message": 'is not valid JSON: Expecting value at column 34, near «…e": "x", "n": NaN, "m": ⟨here⟩}»',
        }
    ]


def test_an_integer_too_long_to_read_is_a_line_error(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, _file('{"response": "x", "n": 1' + "0" * 5000 + "}"), fmt="plain")
    [error] = failed.value.errors
    # the field and the column of the number, not only the line
    assert (error["line"], error["field"]) == (2, "n") and "5,001 digits at column 24" in error["message"]


def test_strings_that_only_look_suspicious_are_imported(felm_project):
    lines = [
        {
            "prompt": "NaN and Infinity are words",
            "response": "Escaped \\ud800 text, 1e400 as text, 😀 emoji.",
        }
    ]
    assert import_jsonl(felm_project, jsonl(lines), fmt="plain").items == 1
    assert Item.objects.get().response == "Escaped \\ud800 text, 1e400 as text, 😀 emoji."


MULTILINE = "is one JSON document spread over several lines (a pretty-printed array or object), not JSONL"


@pytest.mark.parametrize(
    "records",
    [
        [{"prompt": "q", "response": "a"}, {"prompt": "r", "response": "b"}],
        {"prompt": "q", "response": "a"},
    ],
)
def test_a_pretty_printed_document_is_one_error_that_says_so(felm_project, records):
    content = ("\n\n" + json.dumps(records, indent=2) + "\n").encode()
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, content.splitlines(keepends=True), fmt="plain")
    [error] = failed.value.errors
    assert (error["line"], error["field"]) == (3, "(file)") and error["message"].startswith(MULTILINE)


def test_a_json_array_on_one_line_is_one_error_that_says_so(felm_project):
    content = json.dumps([{"prompt": "q", "response": "a"}, {"prompt": "r", "response": "b"}]).encode()
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, [content], fmt="plain")
    assert failed.value.errors == [
        {
            "line": 1,
            "field": "(file)",
            "message": "is one JSON array, not JSONL: put each item on a line of its own",
        }
    ]


def test_broken_first_lines_of_real_jsonl_are_still_reported_as_lines(felm_project):
    content = [b'{"prompt": "q", "response": \n', f"{GOOD}\n".encode(), b'{"response": 5}\n']
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, content, fmt="plain")
    assert [(e["line"], e["field"]) for e in failed.value.errors] == [
        (1, "(json)"),
        (3, "response"),
    ]
    content = [b'{"prompt": "q", "response": "x",}\n', b'{"prompt": "q" "response": "y"}\n']
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, content, fmt="plain")
    assert [(e["line"], e["field"]) for e in failed.value.errors] == [(1, "(json)"), (2, "(json)")]


def test_a_utf8_byte_order_mark_is_accepted(felm_project):
    content = b"\xef\xbb\xbf" + f"{GOOD}\n".encode() + json.dumps({"response": "Two."}).encode()
    assert import_jsonl(felm_project, content.splitlines(keepends=True), fmt="plain").items == 2
    assert list(Item.objects.values_list("response", flat=True)) == ["Fine.", "Two."]


def test_a_byte_order_mark_is_accepted_in_a_document_format(factcheck_project):
    document = {"response": "Paris is in France.", "sentences": ["Paris is in France."]}
    content = b"\xef\xbb\xbf" + json.dumps(document, indent=2).encode()
    assert import_jsonl(factcheck_project, [content], fmt="factcheck-tool").items == 1


def test_deep_nesting_in_a_document_format_is_a_file_error(factcheck_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(factcheck_project, [DEEP.encode()], fmt="factcheck-tool")
    assert failed.value.errors == [{"line": 1, "field": "(json)", "message": TOO_DEEP}]


def test_exact_duplicates_in_the_file_and_in_the_project_are_skipped_and_counted(felm_project):
    first = [felm_line(1, ["A."]), felm_line(2, ["B."]), felm_line(1, ["A."])]
    result = import_jsonl(felm_project, jsonl(first), fmt="felm")
    assert (result.items, result.duplicates_skipped) == (2, 1)
    again = [
        felm_line(2, ["B."]),
        felm_line(3, ["C."]),
        felm_line(4, ["D."]),
    ]
    result = import_jsonl(felm_project, jsonl(again), fmt="felm")
    assert (result.items, result.duplicates_skipped, result.assignments) == (2, 1, 4)
    assert sorted(Item.objects.values_list("external_id", "prompt")) == [
        ("1", "Question 1?"),
        ("2", "Question 2?"),
        ("3", "Question 3?"),
        ("4", "Question 4?"),
    ]


def test_a_file_of_nothing_but_known_duplicates_is_done_not_an_error(felm_project, clients):
    import_jsonl(felm_project, jsonl([felm_line(1, ["A."])]), fmt="felm")
    response, job = post_import(clients["admin"], felm_project.id, jsonl([felm_line(1, ["A."])]), "felm")
    assert job["state"] == "done" and job["result"]["items"] == 0 and job["result"]["duplicates_skipped"] == 1
    assert Item.objects.count() == 1


def test_hostile_keys_are_named_readably_in_the_stored_job(clients, felm_project):
    """The field path quotes the key: stored as is, it would fail the job row (jsonb) or the JSON answer."""
    upload = jsonl(
        [
            {"prompt": "q", "response": "ok", "m": {"\ud800": 1}},
            {"response": "ok", "n": {"a\x00b": 1}},
            {"response": "ok", "k" * 5000: "\x00"},
        ]
    )
    response, job = post_import(clients["admin"], felm_project.id, upload, "plain")
    assert job["state"] == "failed"
    assert [(e["line"], e["field"]) for e in job["errors"][:2]] == [
        (1, "m.\\ud800"),
        (2, "n.a\\u0000b"),
    ]
    assert job["errors"][2]["line"] == 3 and len(job["errors"][2]["field"]) == 200
