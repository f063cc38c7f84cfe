"""All-or-nothing import of JSONL files (or, for some formats, one JSON document)."""
import gc
import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Iterable, Iterator

from django.db import transaction

from annotation.exceptions import ImportFailed
from annotation.json_values import nul_path
from annotation.kinds import KindSpec, PayloadError, get_kind
from annotation.kinds.base import ImportLineError, ParsedItem
from annotation.models import GoldRecord, GoldSource, Item, ItemStage, Project, StageStatus

from .assignments import annotator_ids, assign_new_stages

LABELS_AS = ("ignore", "gold", "suggestion")
MAX_REPORTED_ERRORS = 20
BATCH_SIZE = 2000


@dataclass
class ImportResult:
    items: int
    gold_records: int
    precomputing: int
    assignments: int

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def _jsonl_records(lines: Iterable[bytes | str]) -> Iterator[tuple[int, Any, dict | None]]:
    """(line number, parsed JSON, error) for every non-blank line."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, None, {"line": number, "field": "(line)", "message": f"is not UTF-8: {exc.reason}"}
                continue
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw), None
        except json.JSONDecodeError as exc:
            yield number, None, {"line": number, "field": "(json)", "message": f"is not valid JSON: {exc.msg} at column {exc.colno}"}


def _document_records(lines: Iterable[bytes | str]) -> Iterator[tuple[int, Any, dict | None]]:
    """The items of one JSON document (an object or a list of objects), numbered from 1.

    A file that is JSONL after all (one object a line) is read as JSONL.
    """
    chunks = list(lines)
    raw = b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        yield 1, None, {"line": 1, "field": "(file)", "message": f"is not UTF-8: {exc.reason}"}
        return
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            yield from _jsonl_records(raw.splitlines())
            return
        yield exc.lineno, None, {"line": exc.lineno, "field": "(json)", "message": f"is not valid JSON: {exc.msg} at column {exc.colno}"}
        return
    for number, record in enumerate(data if isinstance(data, list) else [data], start=1):
        yield number, record, None


def parse_import_file(project: Project, lines: Iterable[bytes | str], fmt: str) -> list[ParsedItem]:
    """Read and validate every record; raise ImportFailed naming each bad line and field."""
    kind = get_kind(project.kind)
    if fmt not in kind.import_formats:
        raise ImportFailed([{"line": 0, "field": "format", "message": f"must be one of {', '.join(kind.import_formats)}"}])
    records = _document_records(lines) if fmt in kind.document_formats else _jsonl_records(lines)
    parsed, errors = [], []
    for number, data, error in records:
        if error is None and not isinstance(data, dict):
            error = {"line": number, "field": "(line)", "message": "must be a JSON object"}
        if error is None:
            try:
                item = kind.parse_import_line(fmt, data, number)
            except ImportLineError as exc:
                error = {"line": exc.line, "field": exc.field, "message": exc.message}
            else:
                if where := _nul_in_stored_fields(item):
                    error = {"line": number, "field": where, "message": NUL_MESSAGE}
                else:
                    parsed.append(item)
        if error is not None:
            errors.append(error)
            if len(errors) >= MAX_REPORTED_ERRORS:
                break
    if errors:
        raise ImportFailed(errors)
    if not parsed:
        raise ImportFailed([{"line": 0, "field": "(file)", "message": "contains no items"}])
    return parsed


NUL_MESSAGE = "contains a NUL character (\\u0000), which cannot be stored"


def _nul_in_stored_fields(item: ParsedItem) -> str | None:
    """Where the item's stored text holds U+0000 (PostgreSQL cannot store it), or None.

    Only what is kept counts: the released Factcheck-Bench file has a NUL in evidence text that
    step-1 import does not store.
    """
    top_level = {"prompt": item.prompt, "response": item.response, "id": item.external_id, "source": item.source,
                 "domain": item.domain, **item.metadata}
    return nul_path(top_level) or nul_path(item.content, "content") or nul_path(item.suggestions, "suggestions")


def _check_labels(kind: KindSpec, parsed: list[ParsedItem], stage: int, labels_as: str) -> None:
    if labels_as == "ignore":
        return
    for item in parsed:
        if stage not in item.labels:
            if labels_as == "gold":
                raise ImportFailed([{"line": item.line, "field": "labels", "message": "is missing, but labels_as=gold"}])
            continue
        if where := nul_path(item.labels[stage], "labels"):
            raise ImportFailed([{"line": item.line, "field": where, "message": NUL_MESSAGE}])
        try:
            kind.validate_payload(stage, item.content.get(stage, {}), item.labels[stage], complete=False)
        except PayloadError as exc:  # the labels must at least fit the annotation schema
            raise ImportFailed([{"line": item.line, "field": f"labels: {e['field']}", "message": e["message"]} for e in exc.errors]) from exc


def import_jsonl(project: Project, file: IO[bytes] | Iterable[bytes], *, fmt: str, labels_as: str = "ignore") -> ImportResult:
    """Import a file into ``project``; a bad record fails the whole file and writes nothing.

    Stages whose content and suggestions the file gives are ready at once; the others are
    pre-annotated by a Celery task after the transaction commits. ``labels_as`` decides what
    labels in the file become: the gold record (``gold``), the annotators' starting point
    instead of the machine's (``suggestion``) or nothing (``ignore``).
    """
    if labels_as not in LABELS_AS:
        raise ImportFailed([{"line": 0, "field": "labels_as", "message": f"must be one of {', '.join(LABELS_AS)}"}])
    with cyclic_gc_paused():
        return _import(project, file, fmt, labels_as)


@contextmanager
def cyclic_gc_paused():
    """An import builds a few hundred thousand short-lived objects without reference cycles;
    the cyclic collector would rescan them over and over (about 0.6 s at 10,000 items)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _import(project: Project, file, fmt: str, labels_as: str) -> ImportResult:
    parsed = parse_import_file(project, file, fmt)
    kind = get_kind(project.kind)
    first_stage = kind.stages[0]
    _check_labels(kind, parsed, first_stage, labels_as)

    annotators = annotator_ids(project) if first_stage in kind.annotatable_stages else []
    with transaction.atomic():
        items = Item.objects.bulk_create(
            [
                Item(project=project, external_id=p.external_id, source=p.source, domain=p.domain,
                     prompt=p.prompt, response=p.response, metadata=p.metadata)
                for p in parsed
            ],
            batch_size=BATCH_SIZE,
        )
        stages = []
        for item, p in zip(items, parsed):
            content = p.content.get(first_stage) or {}
            suggestion, provenance = p.suggestions.get(first_stage), {"suggestion": "import"} if p.suggestions else {}
            if labels_as == "suggestion" and first_stage in p.labels:
                suggestion, provenance = p.labels[first_stage], {"suggestion": "import:labels"}
            if labels_as == "gold":
                status = StageStatus.DONE
            elif kind.needs_precompute(first_stage, content, suggestion):
                status = StageStatus.PRECOMPUTING
            else:
                status = StageStatus.ANNOTATING if annotators else StageStatus.READY
            stages.append(ItemStage(item=item, stage=first_stage, status=status, content=content,
                                    suggestion=suggestion, provenance=provenance))
        stages = ItemStage.objects.bulk_create(stages, batch_size=BATCH_SIZE)
        gold = []
        if labels_as == "gold":
            gold = GoldRecord.objects.bulk_create(
                [GoldRecord(item_stage=stage, payload=p.labels[first_stage], source=GoldSource.IMPORT)
                 for stage, p in zip(stages, parsed)],
                batch_size=BATCH_SIZE,
            )
            from .stages import open_next_stages

            open_next_stages(project, [stage.id for stage in stages])
        to_precompute = [stage.id for stage in stages if stage.status == StageStatus.PRECOMPUTING]
        assigned = assign_new_stages(project, [s.id for s in stages if s.status == StageStatus.ANNOTATING], annotators)
        if to_precompute:
            from annotation.tasks import enqueue_precompute

            transaction.on_commit(lambda: enqueue_precompute(to_precompute))
    return ImportResult(items=len(items), gold_records=len(gold), precomputing=len(to_precompute), assignments=assigned)


def retry_failed_precompute(project: Project) -> int:
    """Send items whose pre-annotation failed back to the pipeline."""
    stage_ids = list(
        ItemStage.objects.filter(item__project=project, status=StageStatus.FAILED).values_list("id", flat=True)
    )
    if stage_ids:
        ItemStage.objects.filter(id__in=stage_ids).update(status=StageStatus.PRECOMPUTING, precompute_error="")
        from annotation.tasks import enqueue_precompute

        transaction.on_commit(lambda: enqueue_precompute(stage_ids))
    return len(stage_ids)
