"""The plain import format, ``{"prompt", "response", ...}``, that FELM and Factcheck-Bench
projects both read."""

from .base import ParsedItem, optional_str, require_str


def parse_plain_line(data: dict, line: int) -> ParsedItem:
    """The plain shape ``{"prompt", "response", ...}``; other keys are kept as metadata."""
    response = require_str(data, "response", line)
    known = ("prompt", "response", "id", "index", "source", "domain")
    return ParsedItem(
        line=line,
        prompt=optional_str(data, "prompt", line),
        response=response,
        external_id=optional_str(data, "id", line) or optional_str(data, "index", line),
        id_field="index" if "id" not in data and "index" in data else "id",
        source=optional_str(data, "source", line),
        domain=optional_str(data, "domain", line),
        metadata={k: v for k, v in data.items() if k not in known},
    )
