"""All-or-nothing import of JSONL files (or, for some formats, one JSON document).

Files are streamed: each line is parsed, checked and written in batches inside one
transaction, so memory stays at a batch whatever the file's size, and a bad line anywhere rolls
everything back (``on_error="refuse"``, the default). With ``on_error="skip"`` the bad lines are
left out and reported, line by line, with the result; the good ones are imported. Uploads become
an ``ImportJob`` that a Celery task runs (``run_import_job``); the management command and tests
call ``import_jsonl`` directly.
"""
import functools
import gc
import hashlib
import json
import re
import logging
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connection, connections, transaction
from django.db.models import F
from django.utils import timezone

from annotation import dispatch
from annotation.exceptions import ImportFailed, UploadTooLarge
from annotation.json_values import NON_FINITE, NUL, bad_value, nul_path, text_may_hold_nul, values_parsed_from
from annotation.kinds import KindSpec, PayloadError, get_kind
from annotation.kinds.base import ImportLineError, ParsedItem
from annotation.models import GoldRecord, GoldSource, ImportJob, ImportJobState, Item, ItemStage, Project, StageStatus
from annotation.uploads import store_upload, stored_path, upload_name

from . import export_lines
from .assignments import annotator_ids, assign_new_stages, current_load
from .stages import enqueue_precompute, open_next_stages

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
# the external id, see _external_id_field).
LIMITED_COLUMNS = ("external_id", "source", "domain")
_BOM = b"\xef\xbb\xbf"
# Only a line with a \uD800-\uDFFF escape can hold a lone surrogate (raw UTF-8 surrogates fail
# decoding): only such lines are walked value by value, which costs more than the parse.
_SURROGATE_ESCAPES = ("\\ud", "\\uD")


class _NonFinite(ValueError):
    pass


def _refuse_non_finite(text: str) -> float:
    raise _NonFinite(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e400
        raise _NonFinite(text)
    return value


# json.loads, but NaN, Infinity and numbers too large for a float stop it (the hooks cost
# nothing on lines without such numbers); the line is then walked to name the field.
# Python reads integers of at most this many digits (sys.get_int_max_str_digits); json.loads
# raises ValueError beyond it. A longer number is kept as its digit count, so that the
# line's error can name its field and column instead of a bare ValueError.
MAX_INT_DIGITS = 4300
_DIGITS = re.compile(r"-?\d{%d,}" % (MAX_INT_DIGITS + 1))


class _HugeNumber(int):
    pass


class _TooManyDigits(Exception):
    pass


def _refuse_huge_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS and len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooManyDigits
    return int(digits)


def _bounded_int(digits: str) -> int:
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else _HugeNumber(len(digits.lstrip("-")))


def _huge_number(value, path: str = "") -> tuple[str, int] | None:
    """(path, digits) of the first integer too long to read (the decoder already refused
    nesting deep enough to exhaust the stack)."""
    if isinstance(value, _HugeNumber):
        return path or "(value)", int(value)
    if isinstance(value, dict):
        items = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for where, item in items:
        if found := _huge_number(item, where):
            return found
    return None


def _huge_number_column(text: str) -> int:
    match = _DIGITS.search(text)
    return match.start() + 1 if match else 0


# A line is read with _STRICT_JSON; only when it holds a huge integer is it read again with
# _COUNTING_JSON to name that integer's field (searching every line's text for a run of digits
# cost 15 times the parse of a Factcheck-Bench line).
_STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_non_finite, parse_float=_finite_float, parse_int=_refuse_huge_int)
_COUNTING_JSON = json.JSONDecoder(parse_constant=_refuse_non_finite, parse_float=_finite_float, parse_int=_bounded_int)
MULTILINE_DOCUMENT = ("is one JSON document spread over several lines (a pretty-printed array or object), not JSONL: "
                      "put each item on a line of its own, e.g. with jq -c '.[]'")


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


@dataclass
class Reading:
    """How far the reader got; read by the progress callback."""

    lines: int = 0
    bytes: int = 0
    # whether the line just read (a document: the whole text) can hold U+0000 at all
    may_hold_nul: bool = True


def check_upload_size(size: int | None) -> None:
    if size is not None and size > settings.IMPORT_MAX_UPLOAD_BYTES:
        raise UploadTooLarge(size, settings.IMPORT_MAX_UPLOAD_BYTES)


# -- reading ------------------------------------------------------------------------------------

def _storable(text: str, limit: int) -> str:
    """Error text as the job row and JSON answers can hold it: a field path may quote a
    hostile key (NUL, lone surrogate, megabytes long), shown escaped and cut."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def line_error(line: int, field_name: str, message: str) -> dict:
    return {"line": line, "field": _storable(field_name, 200), "message": _storable(message, 500)}


EXCERPT_CHARS = 24  # of the line on either side of an error's column


def excerpt(line_text: str, column: int) -> str:
    """The piece of ``line_text`` around ``column`` (1-based), the place marked, in «»: what a
    person looks for in an editor when the line is thousands of characters long."""
    line_text = line_text.rstrip("\r\n")
    at = max(column - 1, 0)
    before, after = line_text[max(0, at - EXCERPT_CHARS):at], line_text[at:at + EXCERPT_CHARS]
    text = (("…" if at > EXCERPT_CHARS else "") + before + "⟨here⟩" + after
            + ("…" if len(line_text) > at + EXCERPT_CHARS else ""))
    return f"«{text}»"


def placed_error(line: int, field_name: str, message: str, column: int, line_text: str) -> dict:
    """An error at a place of a line: its column (1-based) in the dict and, with a short excerpt
    around it, in the message."""
    return {**line_error(line, field_name, f"{message} at column {column}, near {excerpt(line_text, column)}"),
            "column": column}


def _syntax_error(exc: json.JSONDecodeError, number: int) -> dict:
    """Where the JSON stops being JSON: the file's line (a document read whole: the document's
    line) and column, with the text around it."""
    if number == 0:
        lines = exc.doc.splitlines() or [""]
        line_text = lines[min(exc.lineno, len(lines)) - 1]
        return placed_error(exc.lineno, "(json)", f"is not valid JSON: {exc.msg}", exc.colno, line_text)
    # one line: an error at its end (past the newline, for json) is placed after its last character
    line_text = exc.doc.rstrip("\r\n")
    return placed_error(number, "(json)", f"is not valid JSON: {exc.msg}", min(exc.pos, len(line_text)) + 1, line_text)


def decode_line(raw: bytes | str, number: int) -> tuple[str | None, dict | None]:
    """One line of an upload as text (a first line's byte-order mark dropped), or the error
    naming the column of the first byte that is not UTF-8."""
    if number == 1:
        raw = raw.removeprefix(_BOM) if isinstance(raw, bytes) else raw.removeprefix("\ufeff")
    if not isinstance(raw, bytes):
        return raw, None
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        before = raw[:exc.start].decode("utf-8", "replace")
        shown = before + raw[exc.start:].decode("utf-8", "backslashreplace")
        return None, placed_error(number, "(line)", f"is not UTF-8: {exc.reason}", len(before) + 1, shown)


def read_json_line(raw: bytes | str, number: int) -> tuple[Any, dict | None, str]:
    """The one reader of a JSONL line for every upload (items of every format, corpora,
    predictions): (parsed JSON, error naming line, column and field, the line's text). A blank
    line gives (None, None, text); NaN, Infinity and numbers too large for a float are refused
    naming their field (PostgreSQL's JSON cannot hold them)."""
    text, error = decode_line(raw, number)
    if error is not None:
        return None, error, ""
    if not text.strip():
        return None, None, text
    data, error = _loads(text, number)
    if error is None and (_SURROGATE_ESCAPES[0] in text or _SURROGATE_ESCAPES[1] in text):
        error = _hostile_value(data, number)
    return data, error, text


def _loads(text: str, number: int) -> tuple[Any, dict | None]:
    line = max(number, 1)
    try:
        try:
            data = _STRICT_JSON.decode(text)
        except _TooManyDigits:
            data = _COUNTING_JSON.decode(text)
            if found := _huge_number(data):
                path, digits = found
                return None, line_error(line, path, f"is a number of {digits:,} digits at column {_huge_number_column(text)}: "
                                                    f"at most {MAX_INT_DIGITS:,} digits can be read")
        return data, None
    except _NonFinite:
        pass
    except json.JSONDecodeError as exc:
        return None, _syntax_error(exc, number)
    except RecursionError:
        return None, line_error(line, "(json)", "nests arrays or objects too deeply to be read")
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        return None, line_error(line, "(json)", f"is not valid JSON: {exc}")
    # NaN, Infinity or 1e400 stopped the strict parse: read it as Python's json does to name the field.
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, _syntax_error(exc, number)
    except (RecursionError, ValueError):
        return None, line_error(line, "(json)", NON_FINITE)
    return None, _hostile_value(data, line) or line_error(line, "(json)", NON_FINITE)


def _hostile_value(data: Any, number: int) -> dict | None:
    """A lone surrogate or non-finite number anywhere in the record (they are never storable)."""
    if found := bad_value(data, nul=False):
        return line_error(number, found[0], found[1])
    return None


def jsonl_records(lines: Iterable[bytes | str], reading: Reading) -> Iterator[tuple[int, Any, dict | None]]:
    """(line number, parsed JSON, error) for every non-blank line."""
    first_line, held = 0, None  # the first line, when it might open a multi-line JSON document
    for number, line in enumerate(lines, start=1):
        reading.lines, reading.bytes = number, reading.bytes + len(line)
        data, error, raw = read_json_line(line, number)
        reading.may_hold_nul = text_may_hold_nul(raw)
        if error is not None and error["field"] == "(line)":  # not UTF-8
            yield number, None, error
            continue
        if not raw.strip():
            continue
        if held is not None:
            if error is not None:  # two lines in a row that are not JSON: a pretty-printed document
                yield first_line, None, line_error(first_line, "(file)", MULTILINE_DOCUMENT)
                return
            yield held
            held = None
        if not first_line:
            first_line = number
            stripped = raw.strip()
            # "[" or '{"prompt": "q",' opening a document; a broken JSONL line still ends in "}"
            if error is not None and stripped[:1] in "[{" and stripped[-1:] not in "]}":
                held = (number, None, error)
                continue
            if error is None and isinstance(data, list) and any(isinstance(entry, dict) for entry in data):
                error, data = line_error(number, "(file)", "is one JSON array, not JSONL: put each item on a line of its own"), None
        yield number, data, error
    if held is not None:
        yield held


def _document_records(lines: Iterable[bytes | str], reading: Reading) -> Iterator[tuple[int, Any, dict | None]]:
    """The items of one JSON document (an object or a list of objects), numbered from 1.

    A file that is JSONL after all (one object a line) is read as JSONL. The document is read
    whole: these are small files (the original tool's screens); the upload limit bounds them.
    """
    chunks = list(lines)
    raw = b"".join(c if isinstance(c, bytes) else c.encode("utf-8", "surrogatepass") for c in chunks)
    del chunks
    reading.bytes, reading.lines = len(raw), raw.count(b"\n") + 1
    raw = raw.removeprefix(_BOM)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = raw.count(b"\n", 0, exc.start) + 1
        start = raw.rfind(b"\n", 0, exc.start) + 1
        before = raw[start:exc.start].decode("utf-8", "replace")
        shown = before + raw[exc.start:raw.find(b"\n", exc.start) % (len(raw) + 1)].decode("utf-8", "backslashreplace")
        yield number, None, placed_error(number, "(file)", f"is not UTF-8: {exc.reason}", len(before) + 1, shown)
        return
    reading.may_hold_nul = text_may_hold_nul(text)
    data, error = _loads(text, 0)
    if error is not None:
        if error["message"].startswith("is not valid JSON: Extra data"):
            yield from jsonl_records(raw.splitlines(keepends=True), Reading())
            return
        yield error["line"], None, error
        return
    for number, record in enumerate(data if isinstance(data, list) else [data], start=1):
        yield number, record, _hostile_value(record, number)


# -- checking -----------------------------------------------------------------------------------

def _external_id_field(fmt: str, data: dict) -> str:
    if fmt == "felm" or ("id" not in data and "index" in data):
        return "index"
    return "id"


@functools.cache
def _column_limits() -> tuple[tuple[str, int], ...]:
    return tuple((column, Item._meta.get_field(column).max_length) for column in LIMITED_COLUMNS)


def _too_long(item: ParsedItem, fmt: str, data: dict) -> dict | None:
    for column, limit in _column_limits():
        value = getattr(item, column)
        if len(value) > limit:
            name = _external_id_field(fmt, data) if column == "external_id" else column
            return line_error(item.line, name, f"is {len(value)} characters long; at most {limit} fit")
    return None


def _nul_in_stored_fields(item: ParsedItem) -> str | None:
    """Where the item's stored text holds U+0000 (PostgreSQL cannot store it), or None.

    Only what is kept counts: the released Factcheck-Bench file has a NUL in evidence text that
    step-1 import does not store.
    """
    top_level = {"prompt": item.prompt, "response": item.response, "id": item.external_id, "source": item.source,
                 "domain": item.domain, **item.metadata}
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


def _identity(external_id: str, prompt: str, response: str) -> bytes:
    """What makes two items exact duplicates, hashed to 16 bytes (about 90 bytes a line in memory)."""
    text = "\x00".join((external_id, prompt, response)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()


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


def parse_import_file(project: Project, lines: Iterable[bytes | str], fmt: str, labels_as: str = "ignore",
                      reading: Reading | None = None, domain: str = "") -> Iterator[ParsedItem | dict]:
    """Each line read and checked: a ParsedItem, or error dicts naming line and field (one or
    more per bad line). ``domain`` fills the domain of items whose line has none."""
    kind = get_kind(project.kind)
    reading = reading or Reading()
    records = _document_records(lines, reading) if fmt in kind.document_formats else jsonl_records(lines, reading)
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


def _parsed_item(kind: KindSpec, fmt: str, data: dict, number: int, domain: str, labels_as: str
                 ) -> ParsedItem | list[dict]:
    """One line's item, or the errors naming its line and fields."""
    try:
        item = kind.parse_import_line(fmt, data, number)
    except ImportLineError as exc:
        return [line_error(exc.line, exc.field, exc.message), *(line_error(exc.line, f, m) for f, m in exc.more)]
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

def import_jsonl(project: Project, file: IO[bytes] | Iterable[bytes], *, fmt: str, labels_as: str = "ignore",
                 on_error: str = "refuse", domain: str = "",
                 on_progress: Callable[[int, int], None] | None = None,
                 before_commit: Callable[[ImportResult], None] | None = None) -> ImportResult:
    """Import a file into ``project``; a bad record fails the whole file and writes nothing,
    unless ``on_error="skip"``: then bad lines are left out and listed in ``result.skipped``
    (a file-wide problem, or a file with no good line, still fails). ``domain`` fills the
    domain of items whose line has none.

    Stages whose content and suggestions the file gives are ready at once; the others are
    pre-annotated by a Celery task after the transaction commits. ``labels_as`` decides what
    labels in the file become: the gold record (``gold``), the annotators' starting point
    instead of the machine's (``suggestion``) or nothing (``ignore``). Exact duplicates (same
    external id, prompt and response, in the file or already in the project) are skipped and
    counted. ``on_progress(lines, bytes)`` is called every half second or so;
    ``before_commit(result)`` runs inside the transaction (an exception there undoes it all).
    """
    check_options(project, fmt, labels_as, on_error, domain)
    with cyclic_gc_paused():
        return _import(project, file, fmt, labels_as, on_progress, before_commit, on_error=on_error, domain=domain)


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

    def __post_init__(self):
        self.stage = self.kind.stages[0]
        self.load = current_load(self.project, self.annotators) if self.annotators else None

    def _already_stored(self, batch: list[ParsedItem]) -> set[bytes]:
        if self.existing_up_to is None:
            return set()
        rows = Item.objects.filter(
            project=self.project, id__lte=self.existing_up_to,
            external_id__in={p.external_id for p in batch}, response__in={p.response for p in batch},
        ).values_list("external_id", "prompt", "response")
        return {_identity(*row) for row in rows}

    def write(self, batch: list[ParsedItem]) -> None:
        if stored := self._already_stored(batch):
            kept = [p for p in batch if _identity(p.external_id, p.prompt, p.response) not in stored]
            self.result.duplicates_skipped += len(batch) - len(kept)
            batch = kept
        if not batch:
            return
        items = _bulk_insert(
            [Item(project=self.project, external_id=p.external_id, source=p.source, domain=p.domain,
                  prompt=p.prompt, response=p.response, metadata=p.metadata) for p in batch],
        )
        if self.first_item_id is None:
            self.first_item_id = items[0].id
        stages = _bulk_insert([self._stage(item, p) for item, p in zip(items, batch)])
        if self.labels_as == "gold":
            gold = _bulk_insert(
                [GoldRecord(item_stage=stage, payload=p.labels[self.stage], source=GoldSource.IMPORT)
                 for stage, p in zip(stages, batch)],
            )
            self.result.gold_records += len(gold)
            open_next_stages(self.project, [stage.id for stage in stages] + self._write_later_gold(items, batch))
        self.result.items += len(items)
        self.result.precomputing += sum(stage.status == StageStatus.PRECOMPUTING for stage in stages)
        self.result.assignments += assign_new_stages(
            self.project, [s.id for s in stages if s.status == StageStatus.ANNOTATING], self.annotators, self.load
        )

    def _write_later_gold(self, items: list[Item], batch: list[ParsedItem]) -> list[int]:
        """Later stages whose content and labels the file gives (e.g. Factcheck-Bench's released
        step 2): written done with their gold record, as the first stage is. Returns their ids."""
        ids: list[int] = []
        carried = list(zip(items, batch))
        for number in self.kind.stages[1:]:
            carried = [(item, p) for item, p in carried if number in p.content and number in p.labels]
            if not carried:
                break
            stages = _bulk_insert(
                [ItemStage(item=item, stage=number, status=StageStatus.DONE, content=p.content[number],
                           provenance={"content": "import"}) for item, p in carried],
            )
            _bulk_insert(
                [GoldRecord(item_stage=stage, payload=p.labels[number], source=GoldSource.IMPORT)
                 for stage, (_, p) in zip(stages, carried)],
            )
            self.result.gold_records += len(stages)
            ids += [stage.id for stage in stages]
        return ids

    def _stage(self, item: Item, p: ParsedItem) -> ItemStage:
        content = p.content.get(self.stage) or {}
        suggestion, provenance = p.suggestions.get(self.stage), {"suggestion": "import"} if p.suggestions else {}
        if self.labels_as == "suggestion" and self.stage in p.labels:
            suggestion = self.kind.suggestion_from_labels(self.stage, p.labels[self.stage])
            provenance = {"suggestion": "import:labels"}
        if self.labels_as == "gold":
            status = StageStatus.DONE
        elif self.kind.needs_precompute(self.stage, content, suggestion):
            status = StageStatus.PRECOMPUTING
        else:
            status = StageStatus.ANNOTATING if self.annotators else StageStatus.READY
        return ItemStage(item=item, stage=self.stage, status=status, content=content, suggestion=suggestion,
                         provenance=provenance)


def _bulk_insert(objs: list) -> list:
    """``bulk_create`` of one model's new rows; on PostgreSQL with COPY (ids drawn from the
    sequence first). Django's INSERT ... UNNEST quotes every JSON value into an array literal
    in Python: 60 % of a Factcheck-Bench import's time."""
    if connection.vendor != "postgresql" or not objs:
        return type(objs[0]).objects.bulk_create(objs, batch_size=BATCH_SIZE) if objs else objs
    meta = objs[0]._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    # the wrapper itself: each attribute read through the ``connection`` proxy costs a
    # thread-local lookup, and the loop below makes one per value (a third of its time)
    wrapper = connections[connection.alias]
    columns = ", ".join(wrapper.ops.quote_name(f.column) for f in [meta.pk, *fields])
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                       [meta.db_table, meta.pk.column, len(objs)])
        ids = [row[0] for row in cursor.fetchall()]
        with cursor.cursor.copy(f"COPY {wrapper.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN") as copy:
            write_row = copy.write_row
            for obj, pk in zip(objs, ids):
                write_row((pk, *[f.get_db_prep_save(f.pre_save(obj, True), wrapper) for f in fields]))
    for obj, pk in zip(objs, ids):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, wrapper.alias
    return objs


def _import(project: Project, file, fmt: str, labels_as: str, on_progress, before_commit, *,
            on_error: str = "refuse", domain: str = "") -> ImportResult:
    kind = get_kind(project.kind)
    annotators = annotator_ids(project) if kind.stages[0] in kind.annotatable_stages else []
    reading = Reading()
    errors: list[dict] = []
    skipped = _Skipped()
    seen: set[bytes] = set()
    next_report = time.monotonic() + PROGRESS_INTERVAL_SECONDS
    with transaction.atomic():
        last_id = Item.objects.filter(project=project).order_by("-id").values_list("id", flat=True).first()
        writer = _Writer(project, kind, labels_as, annotators, last_id)
        batch: list[ParsedItem] = []
        for entry in parse_import_file(project, file, fmt, labels_as, reading, domain):
            if isinstance(entry, dict) and on_error == "skip" and _skippable(entry):
                skipped.add(entry)
            elif isinstance(entry, dict):
                errors.append(entry)
                batch = []  # nothing more is written: the transaction will be rolled back
                if len(errors) >= MAX_REPORTED_ERRORS:
                    break
            elif not errors:
                identity = _identity(entry.external_id, entry.prompt, entry.response)
                if identity in seen:
                    writer.result.duplicates_skipped += 1
                else:
                    seen.add(identity)
                    batch.append(entry)
                    if len(batch) >= BATCH_SIZE:
                        writer.write(batch)
                        batch = []
            if on_progress is not None and time.monotonic() >= next_report:
                on_progress(reading.lines, reading.bytes)
                next_report = time.monotonic() + PROGRESS_INTERVAL_SECONDS
        if on_progress is not None:
            on_progress(reading.lines, reading.bytes)
        if errors:
            raise ImportFailed(errors)
        if batch:
            writer.write(batch)
        result = writer.result
        result.lines = reading.lines
        result.skipped_lines, result.skipped = len(skipped.lines), skipped.reported
        if not result.items and not result.duplicates_skipped:
            raise ImportFailed(skipped.reported or [line_error(0, "(file)", "contains no items")])
        result.warnings = _warnings(project, kind, writer, annotators)
        if result.precomputing:
            transaction.on_commit(_enqueue_precompute_of(project, writer.stage, writer.first_item_id))
        if result.gold_records:
            export_lines.enqueue_store_export_lines(project.id)
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
    return [f"Items need {needed} annotators each, but the project has {len(annotators)}: the imported items "
            f"wait {where}until you add annotators (they then get the missing assignments)."]


def _enqueue_precompute_of(project: Project, stage: int, first_item_id: int):
    """After commit: queue this import's precomputing stages, read back in chunks (not held in memory)."""
    def enqueue():
        stage_ids = ItemStage.objects.filter(
            item__project=project, item_id__gte=first_item_id, stage=stage, status=StageStatus.PRECOMPUTING
        ).order_by("id").values_list("id", flat=True)
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


def create_import_job(*, project: Project, user, upload, fmt: str, labels_as: str = "ignore",
                      on_error: str = "refuse", domain: str = "") -> ImportJob:
    """Store the upload and queue its import; the task starts once this transaction commits.

    Unknown options and files above the size limit are refused here, before anything is stored.
    """
    check_options(project, fmt, labels_as, on_error, domain)
    check_upload_size(getattr(upload, "size", None))
    relative, size = store_upload(upload, UPLOAD_DIR)
    try:
        with transaction.atomic():
            job = ImportJob.objects.create(
                project=project, created_by=user if getattr(user, "is_authenticated", False) else None,
                format=fmt, labels_as=labels_as, options={"on_error": on_error, "domain": domain},
                file_path=relative, file_size=size,
                file_name=upload_name(upload),
            )
            dispatch.queue("run_import", job.id)
    except BaseException:
        stored_path(relative).unlink(missing_ok=True)
        raise
    return job


class _JobEnded(Exception):
    """Another run of the same job finished it first: this run's writes are rolled back."""


class _ProgressWriter:
    """Commits lines/bytes read on a connection of its own, so pollers see them while the import's
    transaction is open. Only on PostgreSQL: SQLite's writer lock is held by that transaction
    (there, the counts are written when the job ends)."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.connection = connections.create_connection(DEFAULT_DB_ALIAS) if connection.vendor == "postgresql" else None
        table = connection.ops.quote_name(ImportJob._meta.db_table)
        self.sql = f"UPDATE {table} SET lines_read = %s, bytes_read = %s, progress_at = %s WHERE id = %s AND state = %s"

    def __call__(self, lines: int, size: int) -> None:
        if self.connection is None:
            return
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(self.sql, [lines, size, timezone.now(), self.job_id, ImportJobState.RUNNING])
        except Exception:  # progress is a courtesy: it must never fail the import
            logger.warning("could not record the progress of import job %s", self.job_id, exc_info=True)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


def _end_job(job_id: int, state: str, *, errors: list[dict] | None = None, result: dict | None = None,
             reading: tuple[int, int] | None = None, only_unended: bool = True) -> int:
    values = {"state": state, "finished_at": timezone.now(), "errors": errors or [], "result": result}
    if reading is not None:
        values["lines_read"], values["bytes_read"] = reading
    jobs = ImportJob.objects.filter(pk=job_id)
    if only_unended:
        jobs = jobs.exclude(state__in=[ImportJobState.DONE, ImportJobState.FAILED])
    return jobs.update(**values)


def fail_import_job(job_id: int, message: str) -> None:
    """End a job that cannot run (e.g. the database stayed unreachable), and drop its upload."""
    _end_job(job_id, ImportJobState.FAILED, errors=[line_error(0, "(server)", message)])
    _delete_upload(job_id)


def _delete_upload(job_id: int) -> None:
    job = ImportJob.objects.filter(pk=job_id).only("file_path").first()
    if job is not None and job.file_path:
        upload_path(job).unlink(missing_ok=True)


def run_import_job(job_id: int) -> ImportJob | None:
    """Run a queued import job (the Celery task's body); safe to run again.

    A job that ended is not run again. A run whose worker died left nothing (one transaction),
    so a redelivered task simply imports again; the job is marked done inside that transaction,
    so two runs at once cannot both write the items. Database errors propagate for the task to
    retry; the upload is deleted once the job has ended.
    """
    claimed = ImportJob.objects.filter(pk=job_id, state__in=[ImportJobState.QUEUED, ImportJobState.RUNNING]).update(
        state=ImportJobState.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1, lines_read=0, bytes_read=0,
        progress_at=timezone.now())
    if not claimed:
        return ImportJob.objects.filter(pk=job_id).first()
    job = ImportJob.objects.select_related("project").get(pk=job_id)
    progress = _ProgressWriter(job_id)
    seen = [0, 0]

    def on_progress(lines: int, size: int) -> None:
        seen[:] = [lines, size]
        progress(lines, size)

    def finish(result: ImportResult) -> None:
        if not _end_job(job_id, ImportJobState.DONE, result=result.as_dict(), reading=tuple(seen)):
            raise _JobEnded()

    try:
        with open(upload_path(job), "rb") as file:
            import_jsonl(job.project, file, fmt=job.format, labels_as=job.labels_as,
                         on_error=job.options.get("on_error", "refuse"), domain=job.options.get("domain", ""),
                         on_progress=on_progress, before_commit=finish)
    except _JobEnded:
        pass
    except ImportFailed as exc:
        _end_job(job_id, ImportJobState.FAILED, errors=exc.errors, reading=tuple(seen))
    except FileNotFoundError:
        _end_job(job_id, ImportJobState.FAILED, errors=[line_error(0, "(file)", "the uploaded file is gone from the server "
                                                                           "(web and worker must share DATA_DIR)")])
    except Exception as exc:
        if isinstance(exc, (OperationalError, InterfaceError)):
            raise  # transient: the task retries, the upload is kept
        logger.exception("import job %s failed", job_id)
        _end_job(job_id, ImportJobState.FAILED, errors=[line_error(
            0, "(server)", f"the import stopped on an internal error ({type(exc).__name__}); nothing was imported")])
    finally:
        progress.close()
    job.refresh_from_db()
    if job.ended:
        _delete_upload(job_id)
    return job
