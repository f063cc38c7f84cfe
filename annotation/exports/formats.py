"""Export formats: consolidated records in the published shapes, or every raw annotation.

Everything streams: JSONL line by line; zip archives (several JSONL files) read the items once,
sort the lines into temporary files, then hand on each compressed piece as zipfile writes it
into a sink, so memory stays flat in the item count.
"""

import io
import json
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.db import connection
from django.http import StreamingHttpResponse

from annotation.exports import lines as export_lines
from annotation.exports import selectors
from annotation.exports.downloads import attachment, file_stem
from annotation.gold import gold_rows
from annotation.kinds import get_kind
from annotation.kinds.base import GOLD_RATER
from annotation.models import Project
from annotation.services.consolidation import enqueue_store_export_lines

RAW_ANNOTATIONS = "annotations"
AGREEMENT_UNITS = "agreement-units"
# formats every kind has, after its own
COMMON_FORMATS = (AGREEMENT_UNITS, RAW_ANNOTATIONS)


def export_formats(project: Project) -> tuple[str, ...]:
    return (*get_kind(project.kind).export_formats, *COMMON_FORMATS)


def agreement_unit_lines(project: Project) -> Iterator[dict]:
    """One record per unit of every annotated item-stage: the unit's ids as the kind's exports
    name them, each annotator's value (null where they gave none), the gold value and whether
    the annotators who answered agree (null with fewer than two answers)."""
    kind = get_kind(project.kind)
    for row in selectors.agreement_unit_rows(project):
        annotators = row["payloads"]
        raters = annotators if row["gold"] is None else {GOLD_RATER: row["gold"], **annotators}
        for ids, field, values in kind.agreement_unit_values(row["stage"], row["content"], raters):
            answers = [values[name] for name in annotators if values.get(name) is not None]
            yield {
                "item": row["external_id"] or str(row["item_id"]),
                **({"domain": row["domain"]} if row["domain"] else {}),
                "item_id": row["item_id"],
                "step": row["stage"],
                **ids,
                "field": field,
                "annotators": {name: values.get(name) for name in annotators},
                "third_rater": row["third_rater"],
                "gold": values.get(GOLD_RATER),
                "agreed": all(answer == answers[0] for answer in answers) if len(answers) >= 2 else None,
            }


def export_jsonl(project: Project, fmt: str) -> Iterator[str]:
    """JSON lines of the export, produced lazily so memory stays flat in the item count."""
    if fmt not in export_formats(project) or fmt in get_kind(project.kind).archive_formats:
        raise ValueError(f"format must be one of {', '.join(export_formats(project))}")
    kind = get_kind(project.kind)
    if fmt in kind.stored_export_formats and connection.vendor == "postgresql":
        yield from _stored_lines(project, fmt)
        return
    if fmt == RAW_ANNOTATIONS:
        records = selectors.annotation_rows(project)
    elif fmt == AGREEMENT_UNITS:
        records = agreement_unit_lines(project)
    else:
        records = kind.export_lines(
            fmt,
            gold_rows(project, later_stages=kind.export_later_stages, metadata=kind.export_reads_metadata),
            **kind.export_options(project.pipeline_settings),
        )
    for record in records:
        yield json.dumps(record, ensure_ascii=False) + "\n"


def _stored_lines(project: Project, fmt: str) -> Iterator[str]:
    """The stored lines of the export, and the missing or stale ones rendered now (and stored
    afterwards by a task, so the next export finds them)."""
    rendered = 0
    for chunk in selectors.stored_export_lines(project, fmt, export_lines.renderer_version(get_kind(project.kind))):
        missing = [item_id for item_id, line in chunk if line is None]
        fresh = export_lines.render_lines(project, fmt, missing) if missing else {}
        rendered += len(missing)
        for item_id, line in chunk:
            if line is None:
                line = fresh.get(item_id)  # None: no longer consolidated since the chunk was read
            if line is not None:
                yield line
    if rendered:
        enqueue_store_export_lines(project.id)


def export_filename(project: Project, fmt: str) -> str:
    return f"{file_stem(project)}-{fmt}.{'zip' if fmt in get_kind(project.kind).archive_formats else 'jsonl'}"


@dataclass
class Export:
    chunks: Iterable[bytes | str]
    content_type: str
    filename: str


def download(project: Project, fmt: str) -> StreamingHttpResponse:
    """The export as a streamed file download (pages and API)."""
    stream = export(project, fmt)
    return attachment(StreamingHttpResponse(stream.chunks, content_type=stream.content_type), stream.filename)


def export(project: Project, fmt: str) -> Export:
    """The export of format ``fmt`` as a stream, with its content type and file name."""
    kind = get_kind(project.kind)
    if fmt in kind.archive_formats:
        rows = gold_rows(project, later_stages=kind.export_later_stages, metadata=kind.export_reads_metadata)
        return Export(
            archive_stream(kind.archive_files(fmt), kind.export_archive(fmt, rows)),
            "application/zip",
            export_filename(project, fmt),
        )
    return Export(
        export_jsonl(project, fmt),
        "application/jsonl; charset=utf-8",
        export_filename(project, fmt),
    )


def archive_stream(
    names: tuple[str, ...], lines: Iterable[tuple[str, dict]], spool_bytes: int = 2 << 20
) -> Iterator[bytes]:
    """A zip of one JSONL file per name. The records come in one pass over the items, each
    tagged with its file; they are sorted into temporary files (in memory up to
    ``spool_bytes`` each, then on disk) and zipped one file after the other."""
    spools = {name: tempfile.SpooledTemporaryFile(max_size=spool_bytes) for name in names}
    try:
        for name, record in lines:
            spools[name].write((json.dumps(record, ensure_ascii=False) + "\n").encode())
        yield from zip_stream((name, _blocks(spools[name])) for name in names)
    finally:
        for spool in spools.values():
            spool.close()


def _blocks(spool, size: int = 1 << 16) -> Iterator[bytes]:
    spool.seek(0)
    while block := spool.read(size):
        yield block


class _Sink(io.RawIOBase):
    """A write-only stream zipfile writes into; ``take()`` empties it. It cannot seek, so
    zipfile writes each member's sizes after its data (data descriptors)."""

    def __init__(self):
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data


def zip_stream(files: Iterable[tuple[str, Iterable[bytes]]]) -> Iterator[bytes]:
    """A zip archive of the given files (name, blocks of bytes), produced piece by piece."""
    sink = _Sink()
    # level 1: much faster than the default level for a somewhat larger archive (benchmarks/README.md)
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, blocks in files:
            with archive.open(name, "w", force_zip64=True) as member:
                for block in blocks:
                    member.write(block)
                    if data := sink.take():
                        yield data
            if data := sink.take():
                yield data
    yield sink.take()
