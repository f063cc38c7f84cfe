"""JSON as people and tools read it, for the pages that show stored records (the item page)."""

import json

from django import template

register = template.Library()


@register.filter
def pretty_json(value) -> str:
    """Indented JSON (what the exports and the API hold), not Python's dict text; escaped by
    the template as any text."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def compact_json(value) -> str:
    """One-line JSON, for a summary."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
