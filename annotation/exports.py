"""Export formats: consolidated records in the published shapes, or every raw annotation."""
import json
from typing import Iterator

from annotation import selectors
from annotation.kinds import get_kind
from annotation.models import Project

RAW_ANNOTATIONS = "annotations"


def export_formats(project: Project) -> tuple[str, ...]:
    return (*get_kind(project.kind).export_formats, RAW_ANNOTATIONS)


def export_jsonl(project: Project, fmt: str) -> Iterator[str]:
    """JSON lines of the export, produced lazily so memory stays flat in the item count."""
    if fmt not in export_formats(project):
        raise ValueError(f"format must be one of {', '.join(export_formats(project))}")
    if fmt == RAW_ANNOTATIONS:
        records = selectors.annotation_rows(project)
    else:
        records = get_kind(project.kind).export_lines(fmt, selectors.gold_rows(project, later_stages=get_kind(project.kind).export_later_stages))
    for record in records:
        yield json.dumps(record, ensure_ascii=False) + "\n"


def export_filename(project: Project, fmt: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in project.name).strip("-") or "project"
    return f"{safe}-{fmt}.jsonl"
