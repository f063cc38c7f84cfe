"""Checks on JSON values from outside (import lines, API payloads) before they reach the database."""

import json
import math
import re
from contextlib import contextmanager
from contextvars import ContextVar

import orjson

# A UTF-16 surrogate that json.loads left unpaired ("\ud800"): UTF-8 and PostgreSQL refuse it.
_SURROGATE = re.compile("[\ud800-\udfff]")

NUL = "contains a NUL character (\\u0000), which cannot be stored"
SURROGATE = "contains a lone UTF-16 surrogate (e.g. \\ud800), which is not valid Unicode"
NON_FINITE = "is NaN or infinite (or too large for a number), which JSON does not allow"


def bad_value(
    value, path: str = "", *, nul: bool = True, surrogates: bool = True, non_finite: bool = True
) -> tuple[str, str] | None:
    """(path, problem) of the first string, key or number the database cannot store, or None.

    One walker for the three things that pass ``json.loads`` yet fail later: U+0000 (PostgreSQL
    text and jsonb refuse it), lone surrogates (not encodable as UTF-8) and NaN/±Infinity
    (Python's json reads ``NaN`` and ``1e400``; JSON and jsonb have no such numbers). Paths look
    like ``labels[2]`` or ``meta.note``.
    """
    return _walk(value, path, nul, surrogates, non_finite)


def _text_problem(text: str, nul: bool, surrogates: bool) -> str | None:
    if nul and "\x00" in text:
        return NUL
    if surrogates and _SURROGATE.search(text):
        return SURROGATE
    return None


def _walk(value, path: str, nul: bool, surrogates: bool, non_finite: bool) -> tuple[str, str] | None:
    # Imports walk every line: plain positional recursion, and no closures (imports pause the
    # cyclic garbage collector, which a self-referencing closure would leak under).
    if isinstance(value, str):
        problem = _text_problem(value, nul, surrogates)
        return ((path or "(value)"), problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (problem := _text_problem(key, nul, surrogates)):
                return where, f"(a key) {problem}"
            if isinstance(item, (str, dict, list, float)) and (
                found := _walk(item, where, nul, surrogates, non_finite)
            ):
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, (str, dict, list, float)) and (
                found := _walk(item, f"{path}[{index}]", nul, surrogates, non_finite)
            ):
                return found
    elif isinstance(value, float) and non_finite and not math.isfinite(value):
        return (path or "(value)"), NON_FINITE
    return None


# True while an import checks the values of a line whose text cannot spell U+0000: nul_path
# then answers without walking (the walk was most of a Factcheck-Bench import's CPU time).
_TEXT_WITHOUT_NUL: ContextVar[bool] = ContextVar("text_without_nul", default=False)


def text_may_hold_nul(text: str) -> bool:
    """Whether JSON text can decode to a string or key holding U+0000: only the escape
    ``\\u0000`` (or a raw NUL, which non-strict parsers accept) spells it."""
    return "\\u0000" in text or "\x00" in text


@contextmanager
def values_parsed_from(text_may_hold_nul: bool):
    """Inside, every value given to nul_path comes from JSON text that ``text_may_hold_nul``
    judged: when it cannot hold U+0000, nul_path returns None at once."""
    token = _TEXT_WITHOUT_NUL.set(not text_may_hold_nul)
    try:
        yield
    finally:
        _TEXT_WITHOUT_NUL.reset(token)


def nul_path(value, path: str = "") -> str | None:
    """The path ("response", "labels[2]", "meta.note") of the first string or key holding U+0000, or None.

    PostgreSQL cannot store U+0000 in text or JSON, so such input is refused with its place
    instead of failing in the database.
    """
    if _TEXT_WITHOUT_NUL.get():
        return None
    found = bad_value(value, path, surrogates=False, non_finite=False)
    return found[0] if found else None


# Far below Python's recursion limit, so that walking, storing or rendering a value that passed
# never recurses out of the stack; far above the few levels of any payload or settings.
MAX_JSON_DEPTH = 100


def too_deep(value, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether lists and objects are nested more than ``limit`` levels (checked without recursion)."""
    pending = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


# -- stored JSON values ---------------------------------------------------------------------------


def dumps_stored(value) -> str:
    """JSON text of a value about to be stored in a JSON column (PostgreSQL parses it into jsonb,
    so spacing and key order do not matter). orjson is many times faster than ``json.dumps`` on
    the large values of a Factcheck-Bench item; what it refuses (integers beyond 64 bits, lone
    surrogates, keys that are not strings, objects it does not know) goes through ``json.dumps``
    as before. Values whose floats are not finite never get here: imports and payload checks refuse
    them (``bad_value``), and orjson would write them as null.

    (Reading stored values back with orjson is not done: it reads an integer beyond 64 bits as a
    float where ``json.loads`` gives the integer, and finding such integers in the text first costs
    as much as orjson saves.)"""
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value)
