"""The JSONL reader shared by item imports, corpora and predictions: hostile input (a BOM, bad
UTF-8, lone surrogates, NaN and infinities, numbers of thousands of digits, NUL, a pretty-printed
document instead of JSONL) becomes a per-line error with its line, field and column, never a crash.
"""

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from annotation.exceptions import UploadTooLarge
from annotation.json_values import NON_FINITE, bad_value, text_may_hold_nul

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
_STRICT_JSON = json.JSONDecoder(
    parse_constant=_refuse_non_finite, parse_float=_finite_float, parse_int=_refuse_huge_int
)
_COUNTING_JSON = json.JSONDecoder(parse_constant=_refuse_non_finite, parse_float=_finite_float, parse_int=_bounded_int)


MULTILINE_DOCUMENT = (
    "is one JSON document spread over several lines (a pretty-printed array or object), not JSONL: "
    "put each item on a line of its own, e.g. with jq -c '.[]'"
)


@dataclass
class Reading:
    """How far the reader got; read by the progress callback."""

    lines: int = 0
    bytes: int = 0
    # whether the line just read (a document: the whole text) can hold U+0000 at all
    may_hold_nul: bool = True
    # top-level fields where NaN or ±Infinity is read, not refused (read_json_line)
    non_finite: tuple[str, ...] = ()


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


MAX_LISTED_WARNINGS = 1000  # a file warned on every line keeps a result of a few hundred KB


def note_warnings(listed: list[str], line: int, warnings: Iterable[tuple[str, str]]) -> None:
    """A line's warnings, (field, message) of what was read otherwise than given, added to an
    import result's ``listed`` named by line and field, up to MAX_LISTED_WARNINGS."""
    for field_name, message in warnings:
        if len(listed) < MAX_LISTED_WARNINGS:
            listed.append(f"line {line}, field {_storable(field_name, 200)}: {_storable(message, 500)}")


EXCERPT_CHARS = 24  # of the line on either side of an error's column


def excerpt(line_text: str, column: int) -> str:
    """The piece of ``line_text`` around ``column`` (1-based), the place marked, in «»: what a
    person looks for in an editor when the line is thousands of characters long."""
    line_text = line_text.rstrip("\r\n")
    at = max(column - 1, 0)
    before, after = line_text[max(0, at - EXCERPT_CHARS) : at], line_text[at : at + EXCERPT_CHARS]
    text = (
        ("…" if at > EXCERPT_CHARS else "")
        + before
        + "⟨here⟩"
        + after
        + ("…" if len(line_text) > at + EXCERPT_CHARS else "")
    )
    return f"«{text}»"


def placed_error(line: int, field_name: str, message: str, column: int, line_text: str) -> dict:
    """An error at a place of a line: its column (1-based) in the dict and, with a short excerpt
    around it, in the message."""
    return {
        **line_error(line, field_name, f"{message} at column {column}, near {excerpt(line_text, column)}"),
        "column": column,
    }


def _syntax_error(exc: json.JSONDecodeError, number: int) -> dict:
    """Where the JSON stops being JSON: the file's line (a document read whole: the document's
    line) and column, with the text around it."""
    if number == 0:
        lines = exc.doc.splitlines() or [""]
        line_text = lines[min(exc.lineno, len(lines)) - 1]
        return placed_error(exc.lineno, "(json)", f"is not valid JSON: {exc.msg}", exc.colno, line_text)
    # one line: an error at its end (past the newline, for json) is placed after its last character
    line_text = exc.doc.rstrip("\r\n")
    return placed_error(
        number,
        "(json)",
        f"is not valid JSON: {exc.msg}",
        min(exc.pos, len(line_text)) + 1,
        line_text,
    )


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
        before = raw[: exc.start].decode("utf-8", "replace")
        shown = before + raw[exc.start :].decode("utf-8", "backslashreplace")
        return None, placed_error(number, "(line)", f"is not UTF-8: {exc.reason}", len(before) + 1, shown)


def read_json_line(raw: bytes | str, number: int, non_finite: tuple[str, ...] = ()) -> tuple[Any, dict | None, str]:
    """The one reader of a JSONL line for every upload (items of every format, corpora,
    predictions): (parsed JSON, error naming line, column and field, the line's text). A blank
    line gives (None, None, text); NaN, Infinity and numbers too large for a float are refused
    naming their field (PostgreSQL's JSON cannot hold them), but in the top-level fields named
    in ``non_finite``, which the caller reads (a released FELM line's NaN response)."""
    text, error = decode_line(raw, number)
    if error is not None:
        return None, error, ""
    if not text.strip():
        return None, None, text
    data, error = _loads(text, number, non_finite)
    if error is None and (_SURROGATE_ESCAPES[0] in text or _SURROGATE_ESCAPES[1] in text):
        error = _hostile_value(_without(data, non_finite), number)
    return data, error, text


def _without(data: Any, non_finite: tuple[str, ...]) -> Any:
    """``data`` but the top-level fields of ``non_finite`` that hold a non-finite number."""
    if not non_finite or not isinstance(data, dict):
        return data
    return {
        key: value
        for key, value in data.items()
        if not (key in non_finite and isinstance(value, float) and not math.isfinite(value))
    }


def _loads(text: str, number: int, non_finite: tuple[str, ...] = ()) -> tuple[Any, dict | None]:
    line = max(number, 1)
    try:
        try:
            data = _STRICT_JSON.decode(text)
        except _TooManyDigits:
            data = _COUNTING_JSON.decode(text)
            if found := _huge_number(data):
                path, digits = found
                return None, line_error(
                    line,
                    path,
                    f"is a number of {digits:,} digits at column {_huge_number_column(text)}: "
                    f"at most {MAX_INT_DIGITS:,} digits can be read",
                )
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
    found = _hostile_value(_without(data, non_finite), line)
    if found is None and non_finite and isinstance(data, dict):
        return data, None  # only the fields the caller reads hold one
    return None, found or line_error(line, "(json)", NON_FINITE)


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
        data, error, raw = read_json_line(line, number, reading.non_finite)
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
                error, data = (
                    line_error(
                        number,
                        "(file)",
                        "is one JSON array, not JSONL: put each item on a line of its own",
                    ),
                    None,
                )
        yield number, data, error
    if held is not None:
        yield held


def document_records(lines: Iterable[bytes | str], reading: Reading) -> Iterator[tuple[int, Any, dict | None]]:
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
        before = raw[start : exc.start].decode("utf-8", "replace")
        shown = before + raw[exc.start : raw.find(b"\n", exc.start) % (len(raw) + 1)].decode(
            "utf-8", "backslashreplace"
        )
        yield (
            number,
            None,
            placed_error(number, "(file)", f"is not UTF-8: {exc.reason}", len(before) + 1, shown),
        )
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
