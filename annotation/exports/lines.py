"""Stored export lines: each consolidated item's line of the large JSONL exports, rendered once
when its gold records change (the task ``store_export_lines``, queued by name by the core after a
consolidation or an import: services.consolidation.enqueue_store_export_lines) so an export
streams stored text. See ``ExportLine`` for why a stored line is never served stale, and
``renderer_version`` for why none rendered by other code is."""

import hashlib
import importlib.util
import json
from collections.abc import Iterable
from functools import cache
from itertools import islice
from pathlib import Path

from django.db import connection, transaction

from annotation.exports import selectors
from annotation.exports.render_path import RENDER_PATHS
from annotation.gold import gold_rows
from annotation.kinds import KindSpec, get_kind
from annotation.kinds.base import ParsedItem
from annotation.models import ExportLine, Project
from annotation.services.locks import project_still_there

RENDER_CHUNK = 250


def renderer_version(kind: KindSpec) -> str:
    """The version of the code that renders ``kind``'s stored lines, part of every line's stamp:
    a digest of the source of each module on the path that renders them (render_path). A deploy
    that changes any of them serves no line the old code rendered; one that changes only modules
    off the path (the core's other selectors, another kind, the pages) keeps every line."""
    return _versions()[kind.key]


@cache
def _versions() -> dict[str, str]:
    versions = {}
    for key, modules in RENDER_PATHS.items():
        digest = hashlib.sha256()
        for name in modules:
            digest.update(name.encode() + b"\0" + _source(source_path(name)) + b"\0")
        versions[key] = digest.hexdigest()[:16]
    return versions


def source_path(module: str) -> Path:
    return Path(importlib.util.find_spec(module).origin)


def _source(path: Path) -> bytes:
    return path.read_bytes()


def render_lines(project: Project, fmt: str, item_ids: Iterable[int]) -> dict[int, str]:
    """item id → its line of format ``fmt`` (a stored format: one record per item), rendered from
    the gold records now."""
    kind = get_kind(project.kind)
    rows = list(
        gold_rows(
            project,
            later_stages=kind.export_later_stages,
            metadata=kind.export_reads_metadata,
            item_ids=item_ids,
        )
    )
    records = kind.export_lines(fmt, rows)
    return {row["item_id"]: json.dumps(record, ensure_ascii=False) + "\n" for row, record in zip(rows, records)}


def store_export_lines(project: Project, item_ids: Iterable[int] | None = None) -> int:
    """Render and store the stored formats' lines of the project's consolidated items (all, or
    ``item_ids``). Returns how many lines were stored.

    Stamps are read before and after rendering, and a line is stored only when its item's stamp
    did not move in between: then no write to its rows committed while it was rendered, so the
    line is the one its stamp describes. (PostgreSQL only: elsewhere exports render every line.)"""
    kind = get_kind(project.kind)
    if connection.vendor != "postgresql" or not kind.stored_export_formats:
        return 0
    version = renderer_version(kind)
    stored = 0
    for fmt in kind.stored_export_formats:
        if item_ids is None:
            ids = iter(
                [
                    item_id
                    for chunk in selectors.stored_export_lines(project, fmt, version)
                    for item_id, line in chunk
                    if line is None
                ]
            )
        else:
            ids = iter(list(item_ids))
        while chunk := list(islice(ids, RENDER_CHUNK)):
            before = selectors.export_stamps(chunk, version)
            lines = render_lines(project, fmt, chunk)
            after = selectors.export_stamps(chunk, version)
            fresh = [
                ExportLine(item_id=i, format=fmt, stamp=before[i], line=line)
                for i, line in lines.items()
                if before.get(i) is not None and before[i] == after.get(i)
            ]
            with transaction.atomic():
                if not project_still_there(project.pk):  # deleted meanwhile: its items' lines with it
                    return stored
                _upsert(fresh)
            stored += len(fresh)
    return stored


def imported_row(kind: KindSpec, item_id: int, content: dict, parsed: ParsedItem) -> dict:
    """The row ``gold_rows`` will read back for an item an import as gold has just
    written (``content``: its first stage's), from the import's parsed values."""
    row = {
        "item_id": item_id,
        "external_id": parsed.external_id,
        "source": parsed.source,
        "domain": parsed.domain,
        "prompt": parsed.prompt,
        "response": parsed.response,
        "metadata": (parsed.metadata or {}) if kind.export_reads_metadata else {},
        "content": content,
        "gold": parsed.labels[kind.stages[0]],
    }
    if kind.export_later_stages:
        later = {}
        for number in kind.stages[1:]:  # as the import writes them: each only after the last
            if number not in parsed.content or number not in parsed.labels:
                break
            if number in kind.export_later_stages:
                later[number] = {"content": parsed.content[number], "gold": parsed.labels[number]}
        row["stages"] = later
    return row


def store_new_items_lines(project: Project, rows: list[dict]) -> set[int]:
    """Store the lines of items the current transaction has just written (an import as gold),
    rendered from ``rows``: each item's row as ``gold_rows`` would read it back, built
    from the values the import has in hand (no read of what was just written, no second
    transaction). Only rows the kind renders the same from such values as from the stored ones
    (``KindSpec.renders_line_from_import``) are stored here; returns the ids of the items whose
    lines were stored (the others are left to the task ``store_export_lines``).

    Each line is stamped with its item's stamp read after the item's rows were written: rows
    written later in the transaction move the stamp, and the line is then stale, never served."""
    kind = get_kind(project.kind)
    if connection.vendor != "postgresql" or not kind.stored_export_formats or not rows:
        return set()
    version = renderer_version(kind)
    stamps = selectors.export_stamps([row["item_id"] for row in rows], version)
    stored: set[int] | None = None
    lines: list[tuple[int, str, str, str]] = []
    for fmt in kind.stored_export_formats:
        kept = [row for row in rows if row["item_id"] in stamps and kind.renders_line_from_import(fmt, row)]
        records = kind.export_lines(fmt, kept)
        lines += [
            (row["item_id"], fmt, stamps[row["item_id"]], json.dumps(record, ensure_ascii=False) + "\n")
            for row, record in zip(kept, records)
        ]
        ids = {row["item_id"] for row in kept}
        stored = ids if stored is None else stored & ids
    table = connection.ops.quote_name(ExportLine._meta.db_table)
    with connection.cursor() as cursor:
        # new items have no lines yet: straight into the table (no temporary table, no ON CONFLICT)
        with cursor.cursor.copy(f"COPY {table} (item_id, format, stamp, line) FROM STDIN") as copy:
            for line in lines:
                copy.write_row(line)
    return stored or set()


def _upsert(lines: list[ExportLine]) -> None:
    """Insert or replace the lines: COPY into a temporary table, then one INSERT ... ON CONFLICT.
    (bulk_create(update_conflicts=True) quotes every ~25 KB line into an array literal in
    Python, and PostgreSQL parses it back: most of the time of storing them.)"""
    if not lines:
        return
    table = connection.ops.quote_name(ExportLine._meta.db_table)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE export_line_batch "
            f"(item_id bigint, format text, stamp text, line text{_line_compression(cursor)}) ON COMMIT DROP"
        )
        with cursor.cursor.copy("COPY export_line_batch (item_id, format, stamp, line) FROM STDIN") as copy:
            for line in lines:
                copy.write_row((line.item_id, line.format, line.stamp, line.line))
        cursor.execute(
            f"INSERT INTO {table} (item_id, format, stamp, line) "
            "SELECT item_id, format, stamp, line FROM export_line_batch "
            "ON CONFLICT (item_id, format) DO UPDATE SET stamp = EXCLUDED.stamp, line = EXCLUDED.line"
        )
        cursor.execute("DROP TABLE export_line_batch")  # an outer transaction may store another chunk


def _line_compression(cursor) -> str:
    """`` COMPRESSION lz4`` when the stored lines' column uses lz4 (migration 0014), else "".

    A line is compressed when COPY writes it into the temporary table, and INSERT ... SELECT
    keeps it compressed as it is: the temporary column must use the method of the stored one."""
    if connection.pg_version < 140000:
        return ""
    cursor.execute(
        "SELECT attcompression FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'line'",
        [ExportLine._meta.db_table],
    )
    row = cursor.fetchone()
    return " COMPRESSION lz4" if row and row[0] == "l" else ""
