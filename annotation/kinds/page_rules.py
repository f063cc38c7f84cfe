"""What an annotation page is handed about its kind and step: the label lists ([value, text],
values from the kinds' own vocabularies) and the rules the page checks before a submit. The
page scripts hold keys and layout only; every label a page shows comes from here."""

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

RULES: dict[tuple[str, int], dict] = {
    ("felm", 1): {
        "choices": {
            "label": labelled((True, False), ("Correct", "Contains an error")),
            "error_type": labelled(
                ERROR_TYPES,
                ("Knowledge error", "Reasoning error", "Irrelevant to the question", "Fooled"),
            ),
        },
        # what a segment labelled as an error needs besides its label: field -> what the page calls it
        "required_for_error": {"error_type": "error type", "comment": "reason"},
    },
    ("dfactscore", 1): {
        "choices": {
            "label": labelled(DFACTSCORE_LABELS, ("Supported", "Not supported", "Irrelevant")),
            "any_page": labelled(ANY_PAGE, ("Some page supports it", "No page does")),
            # how a label reads inside a sentence (suggestions, the annotators' answers)
            "label_text": labelled(DFACTSCORE_LABELS, ("supported", "not supported", "irrelevant")),
        },
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
        # what a submit needs of each sentence and claim (step1.validate_payload): field -> its name
        "required": {
            "sentence": {
                "decontext": "decontextualised sentence",
                "importance": "importance",
                "checkworthy": "checkworthiness",
            },
            "claim": {"text": "text", "category": "category", "importance": "importance"},
        },
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
    },
    ("factcheck", 3): {
        "choices": {
            "verdict": labelled(
                (TRUE, FALSE, UNKNOWN, DELETED, UNVERIFIED),
                ("true", "corrected", "not enough evidence", "deleted", "not checked"),
            ),
        },
    },
}


def page_rules(kind: str, stage: int) -> dict:
    """The label lists and rules of a kind's step page (empty for a step without a page)."""
    return RULES.get((kind, stage), {"choices": {}})
