"""Project guidelines: the Markdown template of each kind and its rendering to safe HTML."""

from functools import cache

# Beyond bleach's defaults (inline tags and lists).
EXTRA_TAGS = [
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


@cache
def _tools():
    """The Markdown renderer and the sanitiser's allowed tags and attributes."""
    # bleach and markdown-it: only the guidelines page needs them, web workers start without them
    import bleach
    from markdown_it import MarkdownIt

    # CommonMark: a list nested by 2 spaces (or 4) renders nested, unlike python-markdown, which
    # needs 4. Raw HTML in the text is shown as text, not passed through; bleach then keeps only
    # the allowed tags (and markdown-it refuses javascript: links) — a second guard, not the first.
    renderer = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    tags = [*bleach.sanitizer.ALLOWED_TAGS, *EXTRA_TAGS]
    attributes = {**bleach.sanitizer.ALLOWED_ATTRIBUTES, "ol": ["start"]}
    return bleach, renderer, tags, attributes


def render(text: str) -> str:
    """The guidelines as HTML safe to put in a page."""
    bleach, renderer, tags, attributes = _tools()
    html = renderer.render(text or "_No guidelines yet._")
    return bleach.clean(html, tags=tags, attributes=attributes, protocols=["http", "https", "mailto"])
