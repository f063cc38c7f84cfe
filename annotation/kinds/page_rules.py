"""What an annotation page is handed about its kind and step: the label lists ([value, text],
values from the kinds' own vocabularies) and the rules the page checks before a submit. The
page scripts hold keys and layout only; every label a page shows and every completeness rule
(``completeness``, applied by static/js/completeness.js) comes from here."""

from .dfactscore.settings import ANY_PAGE
from .dfactscore.settings import LABELS as DFACTSCORE_LABELS
from .factcheck.step1 import (
    CLAIM_CATEGORIES,
    CLAIM_IMPORTANCE,
    SENTENCE_CHECKWORTHY,
    SENTENCE_IMPORTANCE,
)
from .factcheck.step2 import DECIDED, FACTUALITY, FACTUALITY_FOR_EDIT, NEEDS_EDIT, STANCES
from .factcheck.step3 import DELETED, FALSE, TRUE, UNKNOWN, UNVERIFIED
from .felm import ERROR_TYPES


def labelled(values, texts) -> list[list]:
    """[[value, text], ...]; the texts must name every value of the vocabulary, in its order."""
    return [[value, text] for value, text in zip(values, texts, strict=True)]


YES_NO = ((True, False), ("Yes", "No"))


def rule(field: str, name: str, **more) -> dict:
    """One completeness rule (the shape static/js/completeness.js documents): ``field`` must be
    filled, ``name`` is what the page calls it."""
    return {"field": field, "name": name, **more}


# What a FELM answer needs on submit (FelmKind.validate_payload): each segment's label, and
# for a segment labelled as an error its type and reason. "$text" reads the segment's text: a
# segment without text (released files have some) needs nothing.
HAS_TEXT = {"$text": {"filled": True}}
IS_ERROR = {"label": [False], **HAS_TEXT}
FELM_COMPLETENESS = [
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

# What a step-1 answer needs on submit (step1.validate_payload): each sentence's
# decontextualised text, importance and checkworthiness, and each claim's text, category and importance.
FACTCHECK_STEP1_COMPLETENESS = [
    rule(
        "sentences",
        "sentence",
        rules=[
            rule("decontext", "decontextualised sentence"),
            rule("importance", "importance"),
            rule("checkworthy", "checkworthiness"),
            rule(
                "claims",
                "claim",
                rules=[rule("text", "text"), rule("category", "category"), rule("importance", "importance")],
            ),
        ],
    ),
]

# What a step-2 claim answer needs on submit (step2.validate_payload, its rules 1-7).
NOT_ENOUGH_EVIDENCE = NEEDS_EDIT[2]
FACTCHECK_STEP2_COMPLETENESS = [
    rule("stances", "stance of passage", each=True),
    rule("reliable", "reliability of passage", each=True, when_each={"stances": {"not": [None, STANCES[3]]}}),
    rule("decided", "whether the evidence decides the claim"),
    rule(
        "manual_evidence",
        "your evidence",
        rules=[
            rule("text", "text"),
            rule("url", "an http(s) URL", filled="http_url"),
            rule("reliable", "reliable"),
            rule("sufficient", "sufficient"),
        ],
    ),
    rule(
        "manual_evidence",
        "evidence you found (the retrieved passages do not decide the claim), or “not enough evidence”",
        when={"decided": DECIDED[1]},
        unless={"needs_edit": NOT_ENOUGH_EVIDENCE},
    ),
    rule("factuality", "factuality"),
    rule("needs_edit", "whether the claim needs an edit"),
    rule("correction", "the corrected claim", when={"needs_edit": NEEDS_EDIT[0]}),
    rule(
        "used_evidence",
        "the evidence the correction uses (tick “correction uses it”)",
        when={"needs_edit": NEEDS_EDIT[0]},
    ),
]

# What a step-3 answer needs on submit (step3.validate_payload): every sentence's revision
# (an empty one deletes the sentence) and a revised response that is not empty.
FACTCHECK_STEP3_COMPLETENESS = [
    rule("sentences", "sentence", rules=[rule("revised", "revision", filled="set")]),
    rule("response", "the revised response"),
]

# What a D-FActScore answer needs on submit (dfactscore.payloads.check_payload); "$name" reads
# the item's passes.
DFACTSCORE_COMPLETENESS = [
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

RULES: dict[tuple[str, int], dict] = {
    ("felm", 1): {
        "choices": {
            "label": labelled((True, False), ("Correct", "Contains an error")),
            "error_type": labelled(
                ERROR_TYPES,
                ("Knowledge error", "Reasoning error", "Irrelevant to the question", "Fooled"),
            ),
        },
        "completeness": FELM_COMPLETENESS,
    },
    ("dfactscore", 1): {
        "choices": {
            "label": labelled(DFACTSCORE_LABELS, ("Supported", "Not supported", "Irrelevant")),
            "any_page": labelled(ANY_PAGE, ("Some page supports it", "No page does")),
            # how a label reads inside a sentence (suggestions, the annotators' answers)
            "label_text": labelled(DFACTSCORE_LABELS, ("supported", "not supported", "irrelevant")),
        },
        "completeness": DFACTSCORE_COMPLETENESS,
    },
    ("factcheck", 1): {
        "choices": {
            "importance": labelled(SENTENCE_IMPORTANCE, ("Yes", "Intermediate", "No")),
            "checkworthy": labelled(SENTENCE_CHECKWORTHY[:2], ("Yes", "No")),
            # the released data uses the claim categories for sentences that are not checkworthy
            "checkworthy_more": labelled(SENTENCE_CHECKWORTHY[2:], ("Opinion", "Not a claim", "Other")),
            "category": labelled(CLAIM_CATEGORIES, ("Factual", "Opinion", "Not a claim", "Other")),
            "claim_importance": labelled(CLAIM_IMPORTANCE, ("Yes", "Intermediate", "No")),
        },
        "completeness": FACTCHECK_STEP1_COMPLETENESS,
    },
    ("factcheck", 2): {
        "choices": {
            "stance": labelled(STANCES, ("Completely supports", "Partially supports", "Refutes", "Irrelevant")),
            "reliable": labelled((True, False), ("Reliable source", "Not reliable")),
            "decided": labelled(DECIDED, ("Yes", "No")),
            "factuality": labelled(FACTUALITY, ("True", "False", "Unknown")),
            "needs_edit": labelled(NEEDS_EDIT, ("Yes", "No", "Not enough evidence")),
            "manual_reliable": labelled(*YES_NO),
            "sufficient": labelled(*YES_NO),
        },
        # factuality follows the edit decision in every released claim: one sets the other
        "factuality_for_edit": FACTUALITY_FOR_EDIT,
        "completeness": FACTCHECK_STEP2_COMPLETENESS,
    },
    ("factcheck", 3): {
        "choices": {
            "verdict": labelled(
                (TRUE, FALSE, UNKNOWN, DELETED, UNVERIFIED),
                ("true", "corrected", "not enough evidence", "deleted", "not checked"),
            ),
        },
        "completeness": FACTCHECK_STEP3_COMPLETENESS,
    },
}


def page_rules(kind: str, stage: int) -> dict:
    """The label lists and rules of a kind's step page (empty for a step without a page)."""
    return RULES.get((kind, stage), {"choices": {}})
