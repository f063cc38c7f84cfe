"""Score display for templates: shares shown as percentages, as the papers report them."""

from django import template

register = template.Library()


@register.filter
def percent(value) -> str:
    """0.75 -> "75.0"; None (no facts to score) -> "–"."""
    if value is None or isinstance(value, bool):
        return "–"
    return f"{value * 100:.1f}"


@register.filter
def decimal(value, places: int = 2) -> str:
    """A mean such as individuals per paragraph; None -> "–"."""
    if value is None or isinstance(value, bool):
        return "–"
    return f"{value:.{int(places)}f}"
