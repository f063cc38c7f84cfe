"""What D-FActScore's annotation page is handed (the shapes: annotation/kinds/pages.py): the
kind's name, and for its one step the label lists, the completeness rules and the keys."""

from ..pages import labelled, rule
from .settings import ANY_PAGE, LABELS

TITLE = "D-FActScore"

# What a D-FActScore answer needs on submit (dfactscore.payloads.check_payload); "$name" reads
# the item's passes.
COMPLETENESS = [
    rule("individuals", "how many individuals?", min=1, when={"facts": {"filled": True}}),
    rule("groups", "individual", rules=[rule("link", "page link", filled="set")]),
    rule(
        "groups",
        "no facts in it",
        each=True,
        referenced_by=["facts", "group"],
        counted_as="an individual with no facts",
    ),
    rule(
        "facts",
        "fact",
        rules=[
            rule("group", "individual", filled="set"),
            rule("label", "label"),
            rule("any_page", "supported by any page?", when={"$factscore_pass": True}),
            rule("entity", "who it is about", filled="set", when={"$entity_pass": True}),
        ],
    ),
]

RULES = {
    1: {
        "choices": {
            "label": labelled(LABELS, ("Supported", "Not supported", "Irrelevant")),
            "any_page": labelled(ANY_PAGE, ("Some page supports it", "No page does")),
            # how a label reads inside a sentence (suggestions, the annotators' answers)
            "label_text": labelled(LABELS, ("supported", "not supported", "irrelevant")),
        },
        "completeness": COMPLETENESS,
    },
}

KEYS = {
    1: {
        "individuals": "+",
        "groups[].link": "g, then 1–9",
        "groups[]": "1–9",
        "facts[].group": "1–9",
        "facts[].label": ["s", "n", "i"],
        "facts[].any_page": ["a", "A"],
        "facts[].entity": "e, then 1–9",
    },
}
