"""The big JSON columns compressed with lz4 instead of pglz (PostgreSQL 14+ built with lz4).

A Factcheck-Bench item stores ~40 KB of JSON (metadata, step contents, gold records, its export
line), all TOASTed: pglz compression was a large part of PostgreSQL's time per imported item, lz4
compresses several times faster and decompresses faster for exports (benchmarks/README.md, issue
22). Values already stored stay as they are (both methods are read alike). Elsewhere (SQLite, an
older PostgreSQL, or one built without lz4) this migration changes nothing.
"""

from django.db import migrations

# (table, column) of the values that are large enough to be compressed
COLUMNS = (
    ("annotation_item", "metadata"),
    ("annotation_itemstage", "content"),
    ("annotation_goldrecord", "payload"),
    ("annotation_exportline", "line"),
)


def _set_compression(schema_editor, method: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return
    statements = " ".join(
        f"ALTER TABLE {connection.ops.quote_name(table)} ALTER COLUMN {connection.ops.quote_name(column)} "
        f"SET COMPRESSION {method};"
        for table, column in COLUMNS
    )
    # a server built without lz4 refuses it (feature_not_supported): the columns keep pglz
    schema_editor.execute(f"DO $$ BEGIN {statements} EXCEPTION WHEN feature_not_supported THEN NULL; END $$")


def to_lz4(apps, schema_editor):
    _set_compression(schema_editor, "lz4")


def to_default(apps, schema_editor):
    _set_compression(schema_editor, "default")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0014_redundant_fk_indexes")]

    operations = [migrations.RunPython(to_lz4, to_default)]
