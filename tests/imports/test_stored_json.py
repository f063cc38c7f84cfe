"""Stored JSON values (issue 22): imports encode them with orjson (json_values.dumps_stored),
falling back to Python's json for what orjson refuses; the big JSON columns are compressed with
lz4 on PostgreSQL (migration 0015)."""

import hashlib
import json

import pytest
from django.db import connection, transaction

from annotation.exports import lines as export_lines
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.json_values import dumps_stored
from annotation.models import ExportLine, GoldRecord, Item
from tests.helpers.builders import jsonl
from tests.helpers.factcheck import released_line

ODD_VALUES = [
    {"big": 2**70, "negative": -(2**80), "text": "é 😀 \u2028", "list": [1.5, None, True, 0, 0.1]},
    [{"nested": [[["deep"]]]}, "", 12345678901234567890123],
    {"1": "keys as text", "": "empty key"},
]


@pytest.mark.parametrize("value", ODD_VALUES)
def test_stored_text_decodes_to_the_same_value(value):
    assert json.loads(dumps_stored(value)) == value


def test_what_orjson_refuses_goes_through_json():
    assert dumps_stored({1: "a"}) == json.dumps({1: "a"})  # a key that is not a string
    assert dumps_stored(["\ud800"]) == json.dumps(["\ud800"])  # a lone surrogate (the database refuses it)
    assert dumps_stored([2**70]) == "[1180591620717411303424]"


@pytest.mark.django_db
def test_import_stores_every_value_it_accepted(factcheck_project, django_capture_on_commit_callbacks):
    line = released_line()
    line["extra"] = ODD_VALUES[0]
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    item = Item.objects.get(project=factcheck_project)
    assert item.metadata["extra"] == ODD_VALUES[0]
    assert GoldRecord.objects.filter(item_stage__item=item).count() == 2
    exported = json.loads("".join(export_jsonl(factcheck_project, "factcheck-bench")))
    assert exported["sentences"]["sentence1"]["auto_evidence"][0] == line["sentences"]["sentence1"]["auto_evidence"][0]


def _lz4_available() -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL default_toast_compression = lz4")
    except Exception:
        return False
    return True


@pytest.mark.django_db
@pytest.mark.postgres_only("column compression is a PostgreSQL setting")
def test_big_json_columns_are_compressed_with_lz4():
    if connection.pg_version < 140000 or not _lz4_available():
        pytest.skip("this PostgreSQL has no lz4 (the migration leaves pglz)")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, a.attname, a.attcompression FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "WHERE (c.relname, a.attname) IN (('annotation_item', 'metadata'), ('annotation_itemstage', 'content'), "
            "('annotation_goldrecord', 'payload'), ('annotation_exportline', 'line'))"
        )
        rows = cursor.fetchall()
    assert len(rows) == 4
    assert {row[2] for row in rows} == {"l"}


@pytest.mark.django_db
@pytest.mark.postgres_only("column compression is a PostgreSQL setting")
def test_stored_lines_and_imported_values_are_compressed_with_lz4(factcheck_project):
    if connection.pg_version < 140000 or not _lz4_available():
        pytest.skip("this PostgreSQL has no lz4 (the migration leaves pglz)")
    line = released_line()
    # ~16 KB that compresses to about half: stored out of line (highly repetitive text stays inline)
    passage = " ".join(hashlib.sha1(str(i).encode()).hexdigest() for i in range(400))
    line["sentences"]["sentence1"]["auto_evidence"][0][0] = passage
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    query = (
        "SELECT pg_column_compression(e.line), pg_column_compression(i.metadata) "
        "FROM annotation_exportline e JOIN annotation_item i ON i.id = e.item_id"
    )
    with connection.cursor() as cursor:  # the import stored the line itself (COPY into the table)
        cursor.execute(query)
        assert cursor.fetchall() == [("lz4", "lz4")]
    ExportLine.objects.all().delete()  # and the task, through its temporary table
    assert export_lines.store_export_lines(factcheck_project) == 1
    with connection.cursor() as cursor:
        cursor.execute(query)
        assert cursor.fetchall() == [("lz4", "lz4")]
        # a line is compressed in the temporary table it is copied into, and kept so: with lz4 too
        assert export_lines._line_compression(cursor) == " COMPRESSION lz4"


@pytest.mark.django_db
@pytest.mark.postgres_only("the COPY rows of an import as gold are PostgreSQL's")
def test_an_import_as_gold_writes_the_rows_the_models_would(factcheck_project):
    """Items, steps and gold records of an import as gold are COPY text, not model objects:
    each column as the model's defaults and the import's values make it."""
    from annotation.models import GoldSource, ItemStage, StageStatus

    line = released_line()
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    item = Item.objects.get(project=factcheck_project)
    assert (item.prompt, item.response, item.created_at is not None) == (line["prompt"], line["response"], True)
    stages = list(ItemStage.objects.filter(item=item).order_by("stage"))
    # step 2 as the file gives it; step 3, which it does not, opened for pre-annotation
    assert [(s.stage, s.status, s.provenance, s.suggestion) for s in stages[1:]] == [
        (2, StageStatus.DONE, {"content": "import"}, None),
        (3, StageStatus.PRECOMPUTING, {}, None),
    ]
    assert stages[0].status == StageStatus.DONE and stages[0].content["sentences"]
    assert not GoldRecord.objects.filter(item_stage=stages[2]).exists()
    for stage in stages[:2]:
        gold = GoldRecord.objects.get(item_stage=stage)
        assert (gold.source, gold.consolidated_by, gold.disagreed_fields) == (GoldSource.IMPORT, None, [])
        assert gold.created_at == gold.updated_at and gold.payload
