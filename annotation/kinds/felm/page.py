"""What FELM's annotation page is handed (the shapes: annotation/kinds/pages.py): the kind's
name, and for its one step the label lists, the completeness rules and the keys."""

from ..pages import labelled, rule
from . import ERROR_TYPES

TITLE = "FELM segment labelling"

# What a FELM answer needs on submit (FelmKind.validate_payload): each segment's label, and
# for a segment labelled as an error its type and reason. "$text" reads the segment's text: a
# segment without text (released files have some) needs nothing.
HAS_TEXT = {"$text": {"filled": True}}
IS_ERROR = {"label": [False], **HAS_TEXT}
COMPLETENESS = [
    rule(
        "segments",
        "segment",
        rules=[
            rule("label", "label", filled="set", when=HAS_TEXT),
            rule("error_type", "error type", when=IS_ERROR),
            rule("comment", "reason", when=IS_ERROR),
        ],
    ),
]

RULES = {
    1: {
        "choices": {
            "label": labelled((True, False), ("Correct", "Contains an error")),
            "error_type": labelled(
                ERROR_TYPES,
                ("Knowledge error", "Reasoning error", "Irrelevant to the question", "Fooled"),
            ),
        },
        "completeness": COMPLETENESS,
    },
}

KEYS = {
    1: {
        "segments[].label": ["c", "x"],
        "segments[].error_type": ["1", "2", "3", "4"],
        "segments[].comment": "r, then type",
    },
}
