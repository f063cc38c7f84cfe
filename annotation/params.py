"""Whole numbers from query parameters.

``str.isdigit`` accepts "²" and other digits ``int`` refuses (a ValueError, a 500); ids are
ASCII digits only, and at most 18 of them so they fit a 64-bit database column.
"""

import re

NATURAL = re.compile(r"[0-9]{1,18}")


def parse_natural(raw: str | None) -> int | None:
    """The number ``raw`` spells in ASCII digits, or None for anything else."""
    return int(raw) if raw is not None and NATURAL.fullmatch(raw) else None
