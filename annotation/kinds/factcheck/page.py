"""What Factcheck-Bench's annotation pages are handed (the shapes: annotation/kinds/pages.py):
the kind's name, and for each of its three steps the label lists, the completeness rules and
the keys."""

from ..pages import YES_NO, labelled, rule
from .step1 import CLAIM_CATEGORIES, CLAIM_IMPORTANCE, SENTENCE_CHECKWORTHY, SENTENCE_IMPORTANCE
from .step2 import DECIDED, FACTUALITY, FACTUALITY_FOR_EDIT, NEEDS_EDIT, STANCES
from .step3 import DELETED, FALSE, TRUE, UNKNOWN, UNVERIFIED

TITLE = "Factcheck-Bench"

# What a step-1 answer needs on submit (step1.validate_payload): each sentence's
# decontextualised text, importance and checkworthiness, and each claim's text, category and importance.
STEP1_COMPLETENESS = [
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
STEP2_COMPLETENESS = [
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
STEP3_COMPLETENESS = [
    rule("sentences", "sentence", rules=[rule("revised", "revision", filled="set")]),
    rule("response", "the revised response"),
]

RULES = {
    1: {
        "choices": {
            "importance": labelled(SENTENCE_IMPORTANCE, ("Yes", "Intermediate", "No")),
            "checkworthy": labelled(SENTENCE_CHECKWORTHY[:2], ("Yes", "No")),
            # the released data uses the claim categories for sentences that are not checkworthy
            "checkworthy_more": labelled(SENTENCE_CHECKWORTHY[2:], ("Opinion", "Not a claim", "Other")),
            "category": labelled(CLAIM_CATEGORIES, ("Factual", "Opinion", "Not a claim", "Other")),
            "claim_importance": labelled(CLAIM_IMPORTANCE, ("Yes", "Intermediate", "No")),
        },
        "completeness": STEP1_COMPLETENESS,
    },
    2: {
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
        "completeness": STEP2_COMPLETENESS,
    },
    3: {
        "choices": {
            "verdict": labelled(
                (TRUE, FALSE, UNKNOWN, DELETED, UNVERIFIED),
                ("true", "corrected", "not enough evidence", "deleted", "not checked"),
            ),
        },
        "completeness": STEP3_COMPLETENESS,
    },
}

KEYS = {
    1: {
        "sentences[].decontext": "d",
        "sentences[].importance": ["1", "2", "3"],
        "sentences[].checkworthy": ["y", "n", "O", "T", "H"],
        "sentences[].claims[].text": "Enter, then type",
        "sentences[].claims[].category": ["f", "o", "t", "h"],
        "sentences[].claims[].importance": ["q", "w", "e"],
    },
    2: {
        "stances[]": ["1", "2", "3", "4"],
        "reliable[]": ["r", "R"],
        "decided": ["d", "D"],
        "manual_evidence": "m",
        "manual_evidence[].text": "m, then type",
        "manual_evidence[].url": "m, then type",
        "manual_evidence[].reliable": ["r", "R"],
        "manual_evidence[].sufficient": ["a", "A"],
        "factuality": ["t", "f", "u"],
        "needs_edit": ["Y", "N", "U"],
        "correction": "c",
        "used_evidence": "g",
    },
    3: {"sentences[].revised": "Enter", "response": "r"},
}
