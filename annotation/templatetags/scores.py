"""Score display for templates: shares shown as percentages, as the papers report them."""

import math
from numbers import Real

from django import template

register = template.Library()

UNDEFINED = "–"


def _number(value) -> float | None:
    """The value as a finite number, or None: a template gives "" for a missing attribute (the
    machine's scores of a paragraph it never pre-annotated), None means no facts to score."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        return None
    return float(value)


@register.filter
def percent(value) -> str:
    """0.75 -> "75.0"; undefined (None, missing, "") -> "–"."""
    number = _number(value)
    return UNDEFINED if number is None else f"{number * 100:.1f}"


@register.filter
def decimal(value, places: int = 2) -> str:
    """A mean such as individuals per paragraph; undefined (None, missing, "") -> "–"."""
    number = _number(value)
    return UNDEFINED if number is None else f"{number:.{int(places)}f}"
