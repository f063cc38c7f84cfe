"""Writing an import's new rows on PostgreSQL with COPY.

``bulk_insert`` writes model objects (the general path: gold records, later stages). The import
of items without gold (FELM, plain lines) skips model objects altogether: ``copy_items_and_stages``
formats each item's and first stage's row as COPY text itself (a model object, its fields'
``get_db_prep_save`` and psycopg's per-value dumpers were two thirds of a 10,000-item FELM
import's Python time). Ids are drawn from the tables' sequences first, in one statement.
"""

from django.db import connection, connections, models
from django.utils import timezone

from annotation.json_values import dumps_stored
from annotation.models import GoldRecord, Item, ItemStage

BATCH_SIZE = 2000
# COPY's text format: a backslash starts an escape; tab, newline and carriage return end a field
# or a row. JSON text holds none of the last three (JSON escapes them).
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
NULL = "\\N"
# the columns of the rows copy_items_and_stages formats, in their order
ITEM_COLUMNS = ("id", "project_id", "external_id", "source", "domain", "prompt", "response", "metadata", "created_at")
STAGE_COLUMNS = (
    "id",
    "item_id",
    "stage",
    "status",
    "content",
    "suggestion",
    "provenance",
    "precompute_error",
    "discard_reason",
    "updated_at",
)


def copy_text(value: str) -> str:
    """A text value as a field of COPY's text format."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.translate(_COPY_ESCAPES)
    return value


def copy_json(value) -> str:
    """A JSON value as a field of COPY's text format (the text JSONField would store)."""
    if not value and isinstance(value, dict):
        return "{}"  # most stages' provenance
    text = dumps_stored(value)
    return text.replace("\\", "\\\\") if "\\" in text else text


def _ids(cursor, tables: tuple[str, ...], count: int) -> list[tuple[int, ...]]:
    """``count`` new ids of each table (its identity sequence), one statement for all."""
    columns = ", ".join("nextval(pg_get_serial_sequence(%s, 'id'))" for _ in tables)
    cursor.execute(f"SELECT {columns} FROM generate_series(1, %s)", [*tables, count])
    return cursor.fetchall()


def copy_items_and_stages(
    project_id: int, batch: list, stage: int, stage_values: list[tuple[dict, object, dict, str]]
) -> tuple[list[int], list[int]]:
    """Write ``batch`` (ParsedItems) as new items of the project and each one's first stage
    (``stage_values``: content, suggestion, provenance, status of each); returns their ids."""
    wrapper = connections[connection.alias]
    quote = wrapper.ops.quote_name
    now = timezone.now().isoformat()
    item_table, stage_table = Item._meta.db_table, ItemStage._meta.db_table
    with wrapper.cursor() as cursor:
        ids = _ids(cursor, (item_table, stage_table), len(batch))
        project = str(project_id)
        item_rows = "".join(
            f"{item_id}\t{project}\t{copy_text(p.external_id)}\t{copy_text(p.source)}\t{copy_text(p.domain)}\t"
            f"{copy_text(p.prompt)}\t{copy_text(p.response)}\t{copy_json(p.metadata)}\t{now}\n"
            for (item_id, _), p in zip(ids, batch)
        )
        stage_rows = "".join(
            f"{stage_id}\t{item_id}\t{stage}\t{status}\t{copy_json(content)}\t"
            f"{NULL if suggestion is None else copy_json(suggestion)}\t{copy_json(provenance)}\t\t\t{now}\n"
            for (item_id, stage_id), (content, suggestion, provenance, status) in zip(ids, stage_values)
        )
        raw = cursor.cursor
        with raw.copy(f"COPY {quote(item_table)} ({', '.join(ITEM_COLUMNS)}) FROM STDIN") as copy:
            copy.write(item_rows.encode("utf-8"))
        with raw.copy(f"COPY {quote(stage_table)} ({', '.join(STAGE_COLUMNS)}) FROM STDIN") as copy:
            copy.write(stage_rows.encode("utf-8"))
    return [item_id for item_id, _ in ids], [stage_id for _, stage_id in ids]


GOLD_COLUMNS = (
    "id",
    "item_stage_id",
    "payload",
    "source",
    "consolidated_by_id",
    "disagreed_fields",
    "created_at",
    "updated_at",
)


def copy_stages(rows: list[tuple[int, int, str, dict, dict]]) -> list[int]:
    """New item stages, each (item id, stage, status, content, provenance) without suggestion;
    returns their ids."""
    wrapper = connections[connection.alias]
    now = timezone.now().isoformat()
    table = ItemStage._meta.db_table
    with wrapper.cursor() as cursor:
        ids = [row[0] for row in _ids(cursor, (table,), len(rows))]
        text = "".join(
            f"{stage_id}\t{item_id}\t{stage}\t{status}\t{copy_json(content)}\t{NULL}\t{copy_json(provenance)}\t\t\t{now}\n"
            for stage_id, (item_id, stage, status, content, provenance) in zip(ids, rows)
        )
        with cursor.cursor.copy(
            f"COPY {wrapper.ops.quote_name(table)} ({', '.join(STAGE_COLUMNS)}) FROM STDIN"
        ) as copy:
            copy.write(text.encode("utf-8"))
    return ids


def copy_gold_records(stage_ids: list[int], payloads: list, source: str) -> list[int]:
    """New gold records of these stages (no consolidator, nothing disagreed); returns their ids."""
    wrapper = connections[connection.alias]
    now = timezone.now().isoformat()
    table = GoldRecord._meta.db_table
    source = copy_text(str(source))
    with wrapper.cursor() as cursor:
        ids = [row[0] for row in _ids(cursor, (table,), len(stage_ids))]
        text = "".join(
            f"{gold_id}\t{stage_id}\t{copy_json(payload)}\t{source}\t{NULL}\t[]\t{now}\t{now}\n"
            for gold_id, stage_id, payload in zip(ids, stage_ids, payloads)
        )
        with cursor.cursor.copy(f"COPY {wrapper.ops.quote_name(table)} ({', '.join(GOLD_COLUMNS)}) FROM STDIN") as copy:
            copy.write(text.encode("utf-8"))
    return ids


def bulk_insert(objs: list) -> list:
    """``bulk_create`` of one model's new rows; on PostgreSQL with COPY (ids drawn from the
    sequence first). Django's INSERT ... UNNEST quotes every JSON value into an array literal
    in Python, most of a Factcheck-Bench import's time (benchmarks/README.md, "Imports")."""
    if connection.vendor != "postgresql" or not objs:
        return type(objs[0]).objects.bulk_create(objs, batch_size=BATCH_SIZE) if objs else objs
    meta = objs[0]._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    typed = [(f, isinstance(f, models.JSONField) and f.encoder is None) for f in fields]
    # the wrapper itself: each attribute read through the ``connection`` proxy costs a
    # thread-local lookup, and the loop below makes one per value (a third of its time)
    wrapper = connections[connection.alias]
    columns = ", ".join(wrapper.ops.quote_name(f.column) for f in [meta.pk, *fields])
    with wrapper.cursor() as cursor:
        ids = [row[0] for row in _ids(cursor, (meta.db_table,), len(objs))]
        with cursor.cursor.copy(f"COPY {wrapper.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN") as copy:
            write_row = copy.write_row
            for obj, pk in zip(objs, ids):
                write_row((pk, *[_copy_value(f, obj, json_field, wrapper) for f, json_field in typed]))
    for obj, pk in zip(objs, ids):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, wrapper.alias
    return objs


def _copy_value(field, obj, json_field: bool, wrapper):
    """A column's value for COPY: JSON values as their text (dumps_stored: orjson, not the
    Jsonb adapter's ``json.dumps``, which was half of a Factcheck-Bench import's Python time)."""
    value = field.pre_save(obj, True)
    if json_field and isinstance(value, (dict, list)):
        return dumps_stored(value)
    return field.get_db_prep_save(value, wrapper)
