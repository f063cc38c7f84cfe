"""Importing the released FELM files: broken lines refused or skipped as the admin chooses, the
``domain`` option, and the warning about a project short of annotators."""

import json

import pytest

from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl
from annotation.models import GoldRecord, Item, ItemStage
from tests.helpers.builders import jsonl
from tests.helpers.felm_release import (
    BROKEN,
    BROKEN_ERRORS,
    exported,
    lines_of,
    math_line,
    mismatch_line,
    nan_prompt_line,
    released_file,
    wk_line,
    writing_line,
)

pytestmark = pytest.mark.django_db


# -- broken lines: refuse or skip ----------------------------------------------------------------------


def test_refuse_is_the_default_lists_every_bad_line_and_field_and_writes_nothing(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines_of(BROKEN), fmt="felm", labels_as="gold")
    assert failed.value.errors == BROKEN_ERRORS
    assert not Item.objects.exists() and not ItemStage.objects.exists() and not GoldRecord.objects.exists()


def test_refuse_lists_more_than_twenty_bad_lines(felm_project):
    data = released_file(*[mismatch_line() for _ in range(30)], wk_line())
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines_of(data), fmt="felm")
    assert sorted({e["line"] for e in failed.value.errors}) == list(range(1, 31))


def test_skip_imports_the_good_lines_and_reports_each_skipped_one(felm_project):
    result = import_jsonl(felm_project, lines_of(BROKEN), fmt="felm", labels_as="gold", on_error="skip")
    assert (result.items, result.gold_records, result.lines) == (3, 3, 5)
    assert result.skipped_lines == 2 and result.skipped == BROKEN_ERRORS
    assert exported(felm_project) == [wk_line(), math_line(), writing_line()]
    assert sorted(Item.objects.values_list("external_id", flat=True)) == ["12", "3", "7"]


def test_skip_with_no_good_line_imports_nothing_and_lists_the_lines(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(
            felm_project,
            lines_of(released_file(mismatch_line(), nan_prompt_line())),
            fmt="felm",
            on_error="skip",
        )
    assert failed.value.errors == [{**e, "line": 1 if e["line"] == 2 else 2} for e in BROKEN_ERRORS]
    assert not Item.objects.exists()


def test_skip_does_not_skip_a_problem_of_the_whole_file(felm_project):
    array = (json.dumps([wk_line(), math_line()]) + "\n").encode()
    with pytest.raises(ImportFailed, match="one JSON array, not JSONL"):
        import_jsonl(felm_project, [array], fmt="felm", on_error="skip")
    assert not Item.objects.exists()


def test_unknown_on_error_is_refused_before_reading(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm", on_error="ignore")
    assert failed.value.errors == [{"line": 0, "field": "on_error", "message": "must be one of refuse, skip"}]


# -- the domain option ------------------------------------------------------------------------------


def test_domain_option_fills_the_domain_of_lines_without_one(felm_project):
    with_domain = {**writing_line(), "index": "8", "domain": "writing_rec"}
    result = import_jsonl(felm_project, jsonl([math_line(), with_domain]), fmt="felm", labels_as="gold", domain="math")
    assert result.items == 2
    assert dict(Item.objects.values_list("external_id", "domain")) == {
        "3": "math",
        "8": "writing_rec",
    }
    # the export is FELM's shape: the domain the admin gave is part of it
    assert exported(felm_project) == [{**math_line(), "domain": "math"}, with_domain]


@pytest.mark.parametrize(
    "fmt, domain, message",
    [
        (
            "felm",
            "sports",
            "must be one of wk, science, writing_rec, reasoning, math for FELM files, not 'sports'",
        ),
        ("felm", " math", "must be one line of printable text without spaces around it"),
        ("plain", "d" * 51, "is 51 characters long; at most 50 fit"),
        ("plain", "a\nb", "must be one line of printable text without spaces around it"),
        ("plain", "   ", "must be a non-empty string"),
    ],
)
def test_a_bad_domain_option_is_refused_before_reading(felm_project, fmt, domain, message):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl([wk_line()]), fmt=fmt, domain=domain)
    assert failed.value.errors == [{"line": 0, "field": "domain", "message": message}]
    assert not Item.objects.exists()


def test_a_plain_file_takes_any_short_domain(felm_project):
    import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain", domain="biographies")
    assert Item.objects.get().domain == "biographies"


# -- the warning about too few annotators -------------------------------------------------------------


def test_import_warns_when_items_need_more_annotators_than_the_project_has(felm_project):
    felm_project.annotators_per_item = 3
    felm_project.save()
    result = import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm")
    assert result.warnings == [
        "Items need 3 annotators each, but the project has 2: the imported items wait in "
        "Annotating until you add annotators (they then get the missing assignments)."
    ]
    assert result.assignments == 2


def test_import_warns_a_project_without_annotators(users):
    from annotation.services.projects import create_project

    project = create_project(name="No team", kind="felm", created_by=users["admin"])
    result = import_jsonl(project, jsonl([wk_line()]), fmt="felm")
    assert result.warnings == [
        "Items need 2 annotators each, but the project has 0: the imported items wait until "
        "you add annotators (they then get the missing assignments)."
    ]
    assert ItemStage.objects.get().status == "ready"


def test_no_warning_with_enough_annotators_or_for_gold_records(felm_project):
    assert import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm").warnings == []
    felm_project.annotators_per_item = 3
    felm_project.save()
    assert import_jsonl(felm_project, jsonl([math_line()]), fmt="felm", labels_as="gold").warnings == []
