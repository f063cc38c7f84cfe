"""The COPY rows an import of items without gold writes itself (annotation/imports/rows.py): every
column of the tables, text with COPY's special characters, JSON values kept as given."""

import pytest

from annotation.imports.items import import_jsonl
from annotation.imports.rows import ITEM_COLUMNS, STAGE_COLUMNS, copy_json, copy_text
from annotation.models import Assignment, Item, ItemStage, StageStatus
from tests.helpers.builders import felm_line, jsonl

pytestmark = pytest.mark.django_db


def test_copy_text_escapes_what_copy_reads_as_separators():
    assert copy_text("plain") == "plain"
    assert copy_text("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e"
    assert copy_json({"k": 'say "hi"\n\\'}) == '{"k":"say \\\\"hi\\\\"\\\\n\\\\\\\\"}'


def test_the_rows_name_every_column_of_the_tables():
    """A column added to Item or ItemStage must be written by the COPY rows too."""
    for model, columns in ((Item, ITEM_COLUMNS), (ItemStage, STAGE_COLUMNS)):
        assert sorted(columns) == sorted(f.column for f in model._meta.concrete_fields)


def test_items_with_special_characters_come_back_as_given(felm_project):
    awkward = 'tab\there, new\nline, cr\rhere, back\\slash \\N, quote " and ünïcödé 🙂, \\u0041'
    lines = [
        felm_line(
            1,
            [awkward, "second \\ segment"],
            prompt=awkward,
            source="src\\x",
            note={"nested": [awkward, None, 1.5, True]},
        ),
        felm_line(2, ["plain."], domain=""),
    ]
    lines[0]["response"] = awkward + " second \\ segment"
    result = import_jsonl(felm_project, jsonl(lines), fmt="felm")
    assert result.items == 2 and result.assignments == 4

    first = Item.objects.get(external_id="1")
    assert first.prompt == awkward and first.response == lines[0]["response"] and first.source == "src\\x"
    assert first.metadata["note"] == {"nested": [awkward, None, 1.5, True]}
    stage = first.stages.get()
    assert stage.content == {"segments": [awkward, "second \\ segment"]}
    assert stage.suggestion is None and stage.provenance == {} and stage.status == StageStatus.ANNOTATING
    assert stage.precompute_error == "" and stage.discard_reason == ""
    assert Item.objects.get(external_id="2").metadata["domain"] == ""
    assert set(Assignment.objects.filter(item_stage=stage).values_list("user__username", flat=True)) == {
        "alice",
        "bob",
    }
