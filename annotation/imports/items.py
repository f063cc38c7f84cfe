"""All-or-nothing import of JSONL files (or, for some formats, one JSON document).

Files are streamed: each line is parsed, checked and written in batches inside one
transaction, so memory stays at a batch whatever the file's size, and a bad line anywhere rolls
everything back (``on_error="refuse"``, the default). With ``on_error="skip"`` the bad lines are
left out and reported, line by line, with the result; the good ones are imported. Lines are read
by annotation.imports.reading; uploads become an ``ImportJob`` that a Celery task runs
(annotation.imports.jobs); the management command and tests call ``import_jsonl`` directly.
"""

import functools
import gc
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.db import connection, transaction

from annotation.exceptions import ImportFailed
from annotation.exports.lines import imported_row, store_new_items_lines
from annotation.imports.ids import FileIds, identity, stored_clashes, stored_identities
from annotation.imports.pipelined import constraints_checked_per_statement, constraints_deferred_again, read_ahead
from annotation.imports.reading import Reading, document_records, jsonl_records, line_error, note_warnings
from annotation.imports.rows import bulk_insert, copy_gold_records, copy_items_and_stages, copy_stages
from annotation.imports.uploads import stored_path
from annotation.json_values import NUL, nul_path, values_parsed_from
from annotation.kinds import KindSpec, PayloadError, get_kind
from annotation.kinds.base import ImportLineError, ParsedItem
from annotation.models import (
    GoldRecord,
    GoldSource,
    ImportJob,
    Item,
    ItemStage,
    Project,
    StageStatus,
)
from annotation.services.assignments import annotator_ids, assign_new_stages, current_load
from annotation.services.consolidation import enqueue_store_export_lines
from annotation.services.stages import enqueue_precompute, open_next_stages

logger = logging.getLogger(__name__)

LABELS_AS = ("ignore", "gold", "suggestion")
ON_ERROR = ("refuse", "skip")
# Bad lines listed in a refusal or a result (each line, not a sample: a released file has a few
# dozen); past this many the import stops listing (refuse) or counts only (skip).
MAX_REPORTED_ERRORS = 1000
BATCH_SIZE = 2000
PROGRESS_INTERVAL_SECONDS = 0.5
UPLOAD_DIR = "imports"
NUL_MESSAGE = NUL
# Item columns with a length limit, and the import field each comes from ("id" or "index" for
# the external id, see ParsedItem.id_field).
LIMITED_COLUMNS = ("external_id", "source", "domain")


@dataclass
class ImportResult:
    items: int
    gold_records: int
    precomputing: int
    assignments: int
    duplicates_skipped: int = 0
    lines: int = 0
    # on_error=skip: how many bad lines were left out, and each one's line, field and reason
    skipped_lines: int = 0
    skipped: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


@functools.cache
def _column_limits() -> tuple[tuple[str, int], ...]:
    return tuple((column, Item._meta.get_field(column).max_length) for column in LIMITED_COLUMNS)


def _too_long(item: ParsedItem, fmt: str, data: dict) -> dict | None:
    for column, limit in _column_limits():
        value = getattr(item, column)
        if len(value) > limit:
            name = item.id_field if column == "external_id" else column
            return line_error(item.line, name, f"is {len(value)} characters long; at most {limit} fit")
    return None


def _nul_in_stored_fields(item: ParsedItem) -> str | None:
    """Where the item's stored text holds U+0000 (PostgreSQL cannot store it), or None.

    Only what is kept counts: the released Factcheck-Bench file has a NUL in evidence text that
    step-1 import does not store.
    """
    top_level = {
        "prompt": item.prompt,
        "response": item.response,
        "id": item.external_id,
        "source": item.source,
        "domain": item.domain,
        **item.metadata,
    }
    return nul_path(top_level) or nul_path(item.content, "content") or nul_path(item.suggestions, "suggestions")


def _label_error(kind: KindSpec, item: ParsedItem, stage: int, labels_as: str) -> dict | None:
    if labels_as == "ignore":
        return None
    if stage not in item.labels:
        return line_error(item.line, "labels", "is missing, but labels_as=gold") if labels_as == "gold" else None
    if where := nul_path(item.labels[stage], "labels"):
        return line_error(item.line, where, NUL_MESSAGE)
    try:
        kind.validate_payload(stage, item.content.get(stage, {}), item.labels[stage], complete=False)
    except PayloadError as exc:  # the labels must at least fit the annotation schema
        first = exc.errors[0]
        return line_error(item.line, f"labels: {first['field']}", first["message"])
    return None


def check_options(project: Project, fmt: str, labels_as: str, on_error: str = "refuse", domain: str = "") -> None:
    """Refuse an unknown format, labels_as or on_error, or a bad domain, before any line is read."""
    kind = get_kind(project.kind)
    if fmt not in kind.import_formats:
        raise ImportFailed([line_error(0, "format", f"must be one of {', '.join(kind.import_formats)}")])
    if labels_as not in LABELS_AS:
        raise ImportFailed([line_error(0, "labels_as", f"must be one of {', '.join(LABELS_AS)}")])
    if on_error not in ON_ERROR:
        raise ImportFailed([line_error(0, "on_error", f"must be one of {', '.join(ON_ERROR)}")])
    if domain and (message := domain_error(kind, fmt, domain)):
        raise ImportFailed([line_error(0, "domain", message)])


def domain_error(kind: KindSpec, fmt: str, domain: Any) -> str | None:
    """Why ``domain`` cannot be the import's domain option, or None (it fills Item.domain)."""
    limit = dict(_column_limits())["domain"]
    if not isinstance(domain, str) or not domain.strip():
        return "must be a non-empty string"
    if domain != domain.strip() or any(not ch.isprintable() for ch in domain):
        return "must be one line of printable text without spaces around it"
    if len(domain) > limit:
        return f"is {len(domain)} characters long; at most {limit} fit"
    return kind.import_domain_error(fmt, domain)


def parse_import_file(
    project: Project,
    lines: Iterable[bytes | str],
    fmt: str,
    labels_as: str = "ignore",
    reading: Reading | None = None,
    domain: str = "",
) -> Iterator[ParsedItem | dict]:
    """Each line read and checked: a ParsedItem, or error dicts naming line and field (one or
    more per bad line). ``domain`` fills the domain of items whose line has none."""
    kind = get_kind(project.kind)
    reading = reading or Reading()
    reading.non_finite = kind.import_non_finite_fields.get(fmt, ())
    records = document_records(lines, reading) if fmt in kind.document_formats else jsonl_records(lines, reading)
    for number, data, error in records:
        if error is None and not isinstance(data, dict):
            error = line_error(number, "(line)", "must be a JSON object")
        if error is not None:
            yield error
            continue
        # values are walked for U+0000 only when the line's text can spell it; the context is
        # left before yielding (a generator's consumer would otherwise run inside it)
        with values_parsed_from(reading.may_hold_nul):
            checked = _parsed_item(kind, fmt, data, number, domain, labels_as)
        yield from checked if isinstance(checked, list) else (checked,)


def _parsed_item(
    kind: KindSpec, fmt: str, data: dict, number: int, domain: str, labels_as: str
) -> ParsedItem | list[dict]:
    """One line's item, or the errors naming its line and fields."""
    try:
        item = kind.parse_import_line(fmt, data, number)
    except ImportLineError as exc:
        return [line_error(exc.line, name, message) for name, message in ((exc.field, exc.message), *exc.more)]
    if domain and not item.domain:
        item.domain = domain
    if error := _too_long(item, fmt, data):
        return [error]
    if where := _nul_in_stored_fields(item):
        return [line_error(number, where, NUL_MESSAGE)]
    if error := _label_error(kind, item, kind.stages[0], labels_as):
        return [error]
    return item


# -- writing ------------------------------------------------------------------------------------


def import_jsonl(
    project: Project,
    file: IO[bytes] | Iterable[bytes],
    *,
    fmt: str,
    labels_as: str = "ignore",
    on_error: str = "refuse",
    domain: str = "",
    on_progress: Callable[[int, int], None] | None = None,
    before_commit: Callable[[ImportResult], None] | None = None,
) -> ImportResult:
    """Import a file into ``project``; a bad record fails the whole file and writes nothing,
    unless ``on_error="skip"``: then bad lines are left out and listed in ``result.skipped``
    (a file-wide problem, or a file with no good line, still fails). ``domain`` fills the
    domain of items whose line has none.

    Stages whose content and suggestions the file gives are ready at once; the others are
    pre-annotated by a Celery task after the transaction commits. ``labels_as`` decides what
    labels in the file become: the gold record (``gold``), the annotators' starting point
    instead of the machine's (``suggestion``) or nothing (``ignore``). Exact duplicates (same
    external id, domain, prompt and response, in the file or already in the project) are skipped
    and counted; another item with an id already used is a bad line (annotation.imports.ids). ``on_progress(lines, bytes)`` is called every half second or so;
    ``before_commit(result)`` runs inside the transaction (an exception there undoes it all).
    """
    check_options(project, fmt, labels_as, on_error, domain)
    with cyclic_gc_paused():
        return _import(
            project,
            file,
            fmt,
            labels_as,
            on_progress,
            before_commit,
            on_error=on_error,
            domain=domain,
        )


@contextmanager
def cyclic_gc_paused():
    """An import builds a few hundred thousand short-lived objects without reference cycles;
    the cyclic collector would rescan them over and over, for nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class _Writer:
    """Writes one batch of parsed items at a time, inside the import's transaction."""

    project: Project
    kind: KindSpec
    labels_as: str
    annotators: list[int]
    existing_up_to: int | None  # the project's last item id before the import (None: it had none)
    result: ImportResult = field(default_factory=lambda: ImportResult(0, 0, 0, 0))
    first_item_id: int | None = None
    stages_done: list[int] = field(default_factory=list)
    # whether some imported gold item's export lines are left to the task store_export_lines
    lines_pending: bool = False

    def __post_init__(self):
        self.stage = self.kind.stages[0]
        self.load = current_load(self.project, self.annotators) if self.annotators else None

    def write(self, batch: list[ParsedItem]) -> None:
        if stored := stored_identities(self.project, self.existing_up_to, batch):
            kept = [p for p in batch if identity(p.external_id, p.domain, p.prompt, p.response) not in stored]
            self.result.duplicates_skipped += len(batch) - len(kept)
            batch = kept
        if not batch:
            return
        if connection.vendor == "postgresql":
            self._copy_gold(batch) if self.labels_as == "gold" else self._copy(batch)
            return
        items = bulk_insert(
            [
                Item(
                    project=self.project,
                    external_id=p.external_id,
                    source=p.source,
                    domain=p.domain,
                    prompt=p.prompt,
                    response=p.response,
                    metadata=p.metadata,
                )
                for p in batch
            ],
        )
        if self.first_item_id is None:
            self.first_item_id = items[0].id
        stages = bulk_insert([self._stage(item, p) for item, p in zip(items, batch)])
        if self.labels_as == "gold":
            gold = bulk_insert(
                [
                    GoldRecord(item_stage=stage, payload=p.labels[self.stage], source=GoldSource.IMPORT)
                    for stage, p in zip(stages, batch)
                ],
            )
            self.result.gold_records += len(gold)
            later = self._write_later_gold(items, batch)
            open_next_stages(self.project, [stage.id for stage in stages] + later)
            self._store_export_lines([(item.id, stage.content) for item, stage in zip(items, stages)], batch)
        self.result.items += len(items)
        self.result.precomputing += sum(stage.status == StageStatus.PRECOMPUTING for stage in stages)
        self.result.assignments += assign_new_stages(
            self.project,
            [s.id for s in stages if s.status == StageStatus.ANNOTATING],
            self.annotators,
            self.load,
        )

    def _copy_gold(self, batch: list[ParsedItem]) -> None:
        """Items with gold on PostgreSQL: items, steps and gold records written as COPY text (no
        model objects: their fields' per-value preparation was a third of the import's Python
        time), then the items' export lines stored from the same values."""
        values = [self._stage_values(p) for p in batch]
        item_ids, stage_ids = copy_items_and_stages(self.project.id, batch, self.stage, values)
        if self.first_item_id is None:
            self.first_item_id = item_ids[0]
        copy_gold_records(stage_ids, [p.labels[self.stage] for p in batch], GoldSource.IMPORT)
        done = list(stage_ids)
        carried = list(zip(item_ids, batch))
        for number in self.kind.stages[1:]:  # later steps the file gives, as _write_later_gold
            carried = [(item_id, p) for item_id, p in carried if number in p.content and number in p.labels]
            if not carried:
                break
            ids = copy_stages(
                [
                    (item_id, number, StageStatus.DONE, p.content[number], {"content": "import"})
                    for item_id, p in carried
                ]
            )
            copy_gold_records(ids, [p.labels[number] for _, p in carried], GoldSource.IMPORT)
            done += ids
        self.result.gold_records += len(done)
        if open_next_stages(self.project, done):
            # the steps opened are pre-annotated after the commit, which moves their items'
            # stamps: the task stores those items' lines again once the import has committed
            self.lines_pending = True
        self.result.items += len(item_ids)
        # every first stage is done (labels_as=gold): none precomputes, none is assigned
        self._store_export_lines([(item_id, content) for item_id, (content, *_) in zip(item_ids, values)], batch)

    def _store_export_lines(self, items: list[tuple[int, dict]], batch: list[ParsedItem]) -> None:
        """The batch's export lines rendered from the values in hand and stored in this
        transaction (exports.lines.store_new_items_lines); what it leaves is left to the task.
        ``items``: each new item's id and first stage's content."""
        if not self.kind.stored_export_formats:
            return
        rows = [imported_row(self.kind, item_id, content, p) for (item_id, content), p in zip(items, batch)]
        if len(store_new_items_lines(self.project, rows)) < len(rows):
            self.lines_pending = True

    def _write_later_gold(self, items: list[Item], batch: list[ParsedItem]) -> list[int]:
        """Later stages whose content and labels the file gives (e.g. Factcheck-Bench's released
        step 2): written done with their gold record, as the first stage is. Returns their ids."""
        ids: list[int] = []
        carried = list(zip(items, batch))
        for number in self.kind.stages[1:]:
            carried = [(item, p) for item, p in carried if number in p.content and number in p.labels]
            if not carried:
                break
            stages = bulk_insert(
                [
                    ItemStage(
                        item=item,
                        stage=number,
                        status=StageStatus.DONE,
                        content=p.content[number],
                        provenance={"content": "import"},
                    )
                    for item, p in carried
                ],
            )
            bulk_insert(
                [
                    GoldRecord(item_stage=stage, payload=p.labels[number], source=GoldSource.IMPORT)
                    for stage, (_, p) in zip(stages, carried)
                ],
            )
            self.result.gold_records += len(stages)
            ids += [stage.id for stage in stages]
        return ids

    def _copy(self, batch: list[ParsedItem]) -> None:
        """Items without gold on PostgreSQL: rows written as COPY text, no model objects."""
        values = [self._stage_values(p) for p in batch]
        item_ids, stage_ids = copy_items_and_stages(self.project.id, batch, self.stage, values)
        if self.first_item_id is None:
            self.first_item_id = item_ids[0]
        self.result.items += len(item_ids)
        self.result.precomputing += sum(status == StageStatus.PRECOMPUTING for *_, status in values)
        self.result.assignments += assign_new_stages(
            self.project,
            [stage_id for stage_id, (*_, status) in zip(stage_ids, values) if status == StageStatus.ANNOTATING],
            self.annotators,
            self.load,
        )

    def _stage_values(self, p: ParsedItem) -> tuple[dict, Any, dict, str]:
        """The first stage's content, suggestion, provenance and status."""
        content = p.content.get(self.stage) or {}
        suggestion, provenance = (
            p.suggestions.get(self.stage),
            {"suggestion": "import"} if p.suggestions else {},
        )
        if self.labels_as == "suggestion" and self.stage in p.labels:
            suggestion = self.kind.suggestion_from_labels(self.stage, p.labels[self.stage])
            provenance = {"suggestion": "import:labels"}
        if self.labels_as == "gold":
            status = StageStatus.DONE
        elif self.kind.needs_precompute(self.stage, content, suggestion):
            status = StageStatus.PRECOMPUTING
        else:
            status = StageStatus.ANNOTATING if self.annotators else StageStatus.READY
        return content, suggestion, provenance, status

    def _stage(self, item: Item, p: ParsedItem) -> ItemStage:
        content, suggestion, provenance, status = self._stage_values(p)
        return ItemStage(
            item=item,
            stage=self.stage,
            status=status,
            content=content,
            suggestion=suggestion,
            provenance=provenance,
        )


def _import(
    project: Project,
    file,
    fmt: str,
    labels_as: str,
    on_progress,
    before_commit,
    *,
    on_error: str = "refuse",
    domain: str = "",
) -> ImportResult:
    kind = get_kind(project.kind)
    annotators = annotator_ids(project) if kind.stages[0] in kind.annotatable_stages else []
    reading = Reading()  # the reader thread's
    shown = Reading()  # how far the reader was at the entry this thread took last
    errors: list[dict] = []
    skipped = _Skipped()
    seen: set[bytes] = set()
    names = FileIds()
    next_report = time.monotonic() + PROGRESS_INTERVAL_SECONDS
    with (
        transaction.atomic(),
        read_ahead(parse_import_file(project, file, fmt, labels_as, reading, domain), reading, BATCH_SIZE) as entries,
    ):
        checks_immediate = constraints_checked_per_statement()
        last_id = Item.objects.filter(project=project).order_by("-id").values_list("id", flat=True).first()
        writer = _Writer(project, kind, labels_as, annotators, last_id)
        batch: list[ParsedItem] = []

        def bad(error: dict) -> None:
            if on_error == "skip" and _skippable(error):
                skipped.add(error)
            else:
                errors.append(error)

        def flush() -> None:
            # after an error the batch is still checked (every bad line is listed), never written
            clashes = stored_clashes(project, last_id, batch)
            for error in clashes.values():
                bad(error)
            if not errors:
                writer.write([p for p in batch if p.line not in clashes])
            batch.clear()

        for entry, shown.lines, shown.bytes in entries:
            if isinstance(entry, dict):
                bad(entry)
            elif (named := identity(entry.external_id, entry.domain, entry.prompt, entry.response)) in seen:
                writer.result.duplicates_skipped += 1
            elif clash := names.clash(entry):
                bad(clash)
            else:
                seen.add(named)
                names.add(entry)
                note_warnings(writer.result.warnings, entry.line, entry.warnings)
                batch.append(entry)
                if len(batch) >= BATCH_SIZE:
                    flush()
            if len(errors) >= MAX_REPORTED_ERRORS:
                break
            if on_progress is not None and time.monotonic() >= next_report:
                on_progress(shown.lines, shown.bytes)
                next_report = time.monotonic() + PROGRESS_INTERVAL_SECONDS
        else:  # the reader ended: all of it read (and lines without entries counted)
            shown.lines, shown.bytes = reading.lines, reading.bytes
            if batch:
                flush()
        if on_progress is not None:
            on_progress(shown.lines, shown.bytes)
        if errors:
            raise ImportFailed(sorted(errors, key=lambda error: error["line"])[:MAX_REPORTED_ERRORS])
        result = writer.result
        result.lines = shown.lines
        result.skipped_lines, result.skipped = len(skipped.lines), skipped.reported
        if not result.items and not result.duplicates_skipped:
            raise ImportFailed(skipped.reported or [line_error(0, "(file)", "contains no items")])
        result.warnings += _warnings(project, kind, writer, annotators)
        if result.precomputing:
            transaction.on_commit(_enqueue_precompute_of(project, writer.stage, writer.first_item_id))
        if result.gold_records and writer.lines_pending:
            enqueue_store_export_lines(project.id)
        if checks_immediate:
            constraints_deferred_again()
        if before_commit is not None:
            before_commit(result)
    return result


def _skippable(error: dict) -> bool:
    """A bad line on_error=skip may leave out (not the file as a whole, e.g. a JSON array)."""
    return error["line"] > 0 and error["field"] != "(file)"


@dataclass
class _Skipped:
    """The lines on_error=skip left out: all counted, the first MAX_REPORTED_ERRORS errors kept."""

    lines: set[int] = field(default_factory=set)
    reported: list[dict] = field(default_factory=list)

    def add(self, error: dict) -> None:
        self.lines.add(error["line"])
        if len(self.reported) < MAX_REPORTED_ERRORS:
            self.reported.append(error)


def _warnings(project: Project, kind: KindSpec, writer: "_Writer", annotators: list[int]) -> list[str]:
    """What the admin must do for the imported items to move on (said with the result)."""
    waiting = writer.result.items - writer.result.gold_records
    if waiting <= 0 or kind.stages[0] not in kind.annotatable_stages:
        return []
    needed = project.annotators_per_item
    if len(annotators) >= needed:
        return []
    where = "in Annotating " if annotators else ""  # without annotators they stay Ready
    return [
        f"Items need {needed} annotators each, but the project has {len(annotators)}: the imported items "
        f"wait {where}until you add annotators (they then get the missing assignments)."
    ]


def _enqueue_precompute_of(project: Project, stage: int, first_item_id: int):
    """After commit: queue this import's precomputing stages, read back in chunks (not held in memory)."""

    def enqueue():
        stage_ids = (
            ItemStage.objects.filter(
                item__project=project,
                item_id__gte=first_item_id,
                stage=stage,
                status=StageStatus.PRECOMPUTING,
            )
            .order_by("id")
            .values_list("id", flat=True)
        )
        chunk: list[int] = []
        for stage_id in stage_ids.iterator(chunk_size=BATCH_SIZE):
            chunk.append(stage_id)
            if len(chunk) >= BATCH_SIZE:
                enqueue_precompute(chunk)
                chunk = []
        if chunk:
            enqueue_precompute(chunk)

    return enqueue


def retry_failed_precompute(project: Project) -> int:
    """Send items whose pre-annotation failed back to the pipeline."""
    stage_ids = list(
        ItemStage.objects.filter(item__project=project, status=StageStatus.FAILED).values_list("id", flat=True)
    )
    if stage_ids:
        ItemStage.objects.filter(id__in=stage_ids).update(status=StageStatus.PRECOMPUTING, precompute_error="")
        transaction.on_commit(lambda: enqueue_precompute(stage_ids))
    return len(stage_ids)


# -- import jobs (uploads run by a Celery task) ---------------------------------------------------


def upload_path(job: ImportJob) -> Path:
    return stored_path(job.file_path)
