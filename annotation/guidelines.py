"""Project guidelines: the Markdown template of each kind and its rendering to safe HTML."""

import bleach
from markdown_it import MarkdownIt

ALLOWED_TAGS = [
    *bleach.sanitizer.ALLOWED_TAGS,
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "hr",
    "br",
    "del",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
]
ALLOWED_ATTRIBUTES = {**bleach.sanitizer.ALLOWED_ATTRIBUTES, "ol": ["start"]}

# CommonMark: a list nested by 2 spaces (or 4) renders nested, unlike python-markdown, which
# needs 4. Raw HTML in the text is shown as text, not passed through; bleach then keeps only the
# tags above (and markdown-it refuses javascript: links) — a second guard, not the first.
_renderer = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def render(text: str) -> str:
    """The guidelines as HTML safe to put in a page."""
    html = _renderer.render(text or "_No guidelines yet._")
    return bleach.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        protocols=["http", "https", "mailto"],
    )
