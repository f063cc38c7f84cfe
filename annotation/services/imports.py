"""All-or-nothing JSONL import."""
import json
from dataclasses import dataclass
from typing import IO, Iterable

from django.db import transaction

from annotation.exceptions import ImportFailed
from annotation.kinds import get_kind
from annotation.kinds.base import ImportLineError, ParsedItem
from annotation.models import GoldRecord, GoldSource, Item, ItemStage, Project, StageStatus

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


def parse_jsonl(project: Project, lines: Iterable[bytes | str], fmt: str) -> list[ParsedItem]:
    """Read and validate every line; raise ImportFailed naming each bad line and field."""
    kind = get_kind(project.kind)
    if fmt not in kind.import_formats:
        raise ImportFailed([{"line": 0, "field": "format", "message": f"must be one of {', '.join(kind.import_formats)}"}])
    parsed, errors = [], []
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                errors.append({"line": number, "field": "(line)", "message": f"is not UTF-8: {exc.reason}"})
                continue
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append({"line": number, "field": "(json)", "message": f"is not valid JSON: {exc.msg} at column {exc.colno}"})
            continue
        if not isinstance(data, dict):
            errors.append({"line": number, "field": "(line)", "message": "must be a JSON object"})
            continue
        try:
            parsed.append(kind.parse_import_line(fmt, data, number))
        except ImportLineError as exc:
            errors.append({"line": exc.line, "field": exc.field, "message": exc.message})
        if len(errors) >= MAX_REPORTED_ERRORS:
            break
    if errors:
        raise ImportFailed(errors)
    if not parsed:
        raise ImportFailed([{"line": 0, "field": "(file)", "message": "contains no items"}])
    return parsed


def import_jsonl(project: Project, file: IO[bytes] | Iterable[bytes], *, fmt: str, labels_as: str = "ignore") -> ImportResult:
    """Import a JSONL file into ``project``; a bad line fails the whole file and writes nothing.

    Stages whose content the file gives are ready at once; the others are pre-annotated by a
    Celery task after the transaction commits. ``labels_as`` decides what labels in the file
    become: the gold record (``gold``), the annotators' starting point (``suggestion``) or
    nothing (``ignore``).
    """
    if labels_as not in LABELS_AS:
        raise ImportFailed([{"line": 0, "field": "labels_as", "message": f"must be one of {', '.join(LABELS_AS)}"}])
    parsed = parse_jsonl(project, file, fmt)
    kind = get_kind(project.kind)
    first_stage = kind.stages[0]
    if labels_as == "gold":
        unlabelled = next((p for p in parsed if first_stage not in p.labels), None)
        if unlabelled is not None:
            raise ImportFailed([{"line": unlabelled.line, "field": "labels", "message": "is missing, but labels_as=gold"}])
        for p in parsed:
            try:
                kind.validate_payload(first_stage, p.content.get(first_stage, {}), p.labels[first_stage], complete=False)
            except Exception as exc:  # the labels must at least fit the annotation schema
                raise ImportFailed([{"line": p.line, "field": "labels", "message": str(exc)}]) from exc

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
            content = p.content.get(first_stage)
            labels = p.labels.get(first_stage)
            if labels_as == "gold":
                status = StageStatus.DONE
            else:
                status = StageStatus.READY if content else StageStatus.PRECOMPUTING
            stages.append(
                ItemStage(
                    item=item,
                    stage=first_stage,
                    status=status,
                    content=content or {},
                    suggestion=labels if labels_as == "suggestion" else None,
                    provenance={"suggestion": "import"} if labels_as == "suggestion" and labels else {},
                )
            )
        stages = ItemStage.objects.bulk_create(stages, batch_size=BATCH_SIZE)
        gold = []
        if labels_as == "gold":
            gold = GoldRecord.objects.bulk_create(
                [GoldRecord(item_stage=stage, payload=p.labels[first_stage], source=GoldSource.IMPORT)
                 for stage, p in zip(stages, parsed)],
                batch_size=BATCH_SIZE,
            )
        to_precompute = [stage.id for stage in stages if stage.status == StageStatus.PRECOMPUTING]
        from .assignments import assign_open_stages

        assigned = assign_open_stages(project, [s.id for s in stages if s.status == StageStatus.READY])
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
