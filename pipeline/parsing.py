"""Parsing what an LLM answered into plain data, strictly, so bad output is detected.

Models asked for a JSON list answer in many shapes: the JSON itself, a Python-style list
(single quotes), a ``{"claims": [...]}`` object, numbered or bulleted lines, any of these inside
a ```json fence, often after a label line such as "Atomic facts:". All of those are accepted;
anything else raises :class:`ParseError` so the caller can fall back and record why.
"""

from __future__ import annotations

import ast
import json
import re

_FENCE = re.compile(r"```[\w-]*\s*\n?(.*?)```", re.DOTALL)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+(.*\S)\s*$")
_LABEL_LINE = re.compile(r"^[^\n\[\]{}]{0,80}:\s*$")
_MISSING_COMMA = re.compile(r"([\"'])[ \t]*\n\s*([\"'])")
_QUOTES = "\"'“”‘’"


class ParseError(ValueError):
    """The model's answer does not have the requested shape."""


def strip_code_fence(text: str) -> str:
    """Return the content of the first ``` fenced block, or the text itself when unfenced."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def _strings(value: object) -> list[str]:
    if isinstance(value, dict) and len(value) == 1:
        (value,) = value.values()  # {"claims": [...]} and similar single-key wrappers
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ParseError(f"expected a list of strings, got {type(value).__name__}")
    return [item.strip() for item in value if item.strip()]


def _literal_list(text: str) -> list[str] | None:
    """Parse the bracketed (or braced) part of ``text`` as JSON, then as a Python literal."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    end = max(text.rfind("]"), text.rfind("}"))
    if end <= start:
        return None
    candidate = text[start : end + 1]
    # Items on separate lines with the comma forgotten (the paper's own few-shot examples do
    # this); Python would silently concatenate such adjacent string literals.
    repaired = _MISSING_COMMA.sub(r"\1,\n\2", candidate)
    for load, source in (
        (json.loads, candidate),
        (json.loads, repaired),
        (ast.literal_eval, repaired),
    ):
        try:
            return _strings(load(source))
        except (ParseError, ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # json.JSONDecodeError is a ValueError
    return None


def _listed_lines(text: str) -> list[str] | None:
    """Numbered or bulleted lines; an optional label line ("Facts:") may precede them."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and _LABEL_LINE.match(lines[0]) and not _LIST_ITEM.match(lines[0]):
        lines = lines[1:]
    items = [_LIST_ITEM.match(line) for line in lines]
    if not lines or not all(items):
        return None
    return [m.group(1).strip().strip(_QUOTES).rstrip(",").strip(_QUOTES).strip() for m in items]


def parse_string_list(text: str | None) -> list[str]:
    """Parse a model answer that should be a non-empty list of strings; raise ParseError."""
    if text is None or not text.strip():
        raise ParseError("empty answer")
    body = strip_code_fence(text)
    for parse in (_literal_list, _listed_lines):
        items = parse(body)
        if items:
            return items
    snippet = body[:80].replace("\n", " ")
    raise ParseError(f"not a list of strings: {snippet!r}")


_LABEL_LINE_PREFIX = re.compile(r"^\s*(?:label|category|stance)\s*:\s*", re.IGNORECASE)


def parse_label(answer: str | None, labels: tuple[str, ...], joiner: str) -> str:
    """Exactly one of ``labels``, from an answer that should be just the label.

    Tolerated: a code fence, a "Label:" prefix, quotes, a final full stop, case, and spaces,
    hyphens or underscores between words (written as ``joiner``, the labels' own separator).
    Anything else, e.g. a label plus an explanation, raises ParseError.
    """
    if answer is None or not answer.strip():
        raise ParseError("empty answer")
    text = _LABEL_LINE_PREFIX.sub("", strip_code_fence(answer)).strip().strip("\"'`*.").strip()
    label = re.sub(r"[\s_-]+", joiner, text.lower())
    if label not in labels:
        raise ParseError(f"not one of {labels}: {answer.strip()[:60]!r}")
    return label
