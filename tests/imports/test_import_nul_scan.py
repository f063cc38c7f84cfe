"""Imports walk values for U+0000 only when a line's text can spell it, and read a line's
integers twice only when one is too long: the same errors as a walk of every line."""

import json

import pytest

from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl, parse_import_file
from annotation.json_values import NON_FINITE, nul_path, text_may_hold_nul
from annotation.models import Item
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.factcheck import released_line

NUL_REFUSED = "contains a NUL character (\\u0000), which cannot be stored"
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "text, may",
    [
        ('{"a": "b"}', False),
        ('{"a": "b\\u0000"}', True),
        ('{"a\\u0000": 1}', True),
        ('{"a": "b\x00"}', True),
        ('{"a": "\\\\u0000"}', True),  # an escaped backslash before "u0000": walked, found clean
    ],
)
def test_only_an_escape_or_a_raw_nul_can_spell_u0000(text, may):
    assert text_may_hold_nul(text) is may


def test_an_escaped_backslash_before_u0000_is_no_nul(felm_project):
    line = {"prompt": "q", "response": "A path: C:\\u0000\\x."}
    assert import_jsonl(felm_project, jsonl([line]), fmt="plain").items == 1
    assert Item.objects.get().response == "A path: C:\\u0000\\x."


def test_a_nul_in_a_key_of_the_metadata_is_refused_with_its_path(felm_project):
    lines = [felm_line(1, ["A."]), {"prompt": "q", "response": "r", "meta": {"no\u0000te": "x"}}]
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl(lines), fmt="plain")
    assert failed.value.errors == [{"line": 2, "field": "meta.no\\u0000te", "message": NUL_REFUSED}]


def test_a_nul_in_a_later_step_of_a_released_line_is_refused_by_the_kind(factcheck_project):
    clean, dirty = released_line(), released_line()
    dirty["sentences"]["sentence1"]["revised_claims"][0] = "Completed\u0000 in 1889."
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(factcheck_project, jsonl([clean, dirty]), fmt="factcheck-bench", labels_as="gold")
    (error,) = failed.value.errors
    assert error["line"] == 2 and error["field"].startswith("step 2") and "U+0000" in error["message"]


def test_a_nul_in_a_document_is_refused(factcheck_project):
    document = json.dumps(
        [{"response": "x", "sentences": ["x"]}, {"response": "y\u0000", "sentences": ["y"]}],
        indent=1,
    )
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(factcheck_project, [document.encode()], fmt="factcheck-tool")
    assert failed.value.errors == [{"line": 2, "field": "response", "message": NUL_REFUSED}]


def test_the_consumer_of_parsed_items_still_walks_for_nuls(felm_project):
    for entry in parse_import_file(felm_project, jsonl([{"prompt": "q", "response": "r"}]), "plain"):
        assert not isinstance(entry, dict)
        assert nul_path({"a": "b\x00"}) == "a"  # the reader's fast path ends with its line


def test_a_huge_integer_names_its_field_and_one_in_a_string_is_text(felm_project):
    digits = "9" * 5001
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(
            felm_project,
            [('{"prompt": "q", "response": "r", "n": ' + digits + "}\n").encode()],
            fmt="plain",
        )
    (error,) = failed.value.errors
    assert (error["line"], error["field"]) == (1, "n") and "5,001 digits at column 39" in error["message"]
    assert (
        import_jsonl(felm_project, [('{"prompt": "q", "response": "' + digits + '"}').encode()], fmt="plain").items == 1
    )


@pytest.mark.parametrize("tail", ['"n": 1' + "0" * 5000 + ', "x": NaN', '"x": NaN, "n": 1' + "0" * 5000])
def test_a_huge_integer_beside_nan_is_refused_as_before(felm_project, tail):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, [('{"prompt": "q", "response": "r", ' + tail + "}").encode()], fmt="plain")
    (error,) = failed.value.errors
    assert (error["line"], error["field"], error["message"]) == (1, "(json)", NON_FINITE)
