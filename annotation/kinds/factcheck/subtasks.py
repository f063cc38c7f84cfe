"""The five subtask files of the released Factcheck-Bench (``subtasks/`` of the Factcheck-GPT
repository), written from items in the released benchmark shape (``benchmark.benchmark_record``):

1. ``subtask1_sentence_checkworthiness.jsonl``: every sentence (decontextualised) and its label;
2. ``subtask2_claim_checkworthiness.jsonl``: every claim and its category;
3. ``subtask3_claim_evidence_stance.jsonl``: each evidence passage of each claim step 2 verified
   (checkworthy sentence, factual claim) with its stance;
4. ``subtask4_claim_factuality.jsonl``: each verified claim, ``true | false | not_enough_evidence``
   and its revision;
5. ``subtask5_revision.jsonl``: each item whose step 3 is done and whose response has a gold
   factuality (``true``/``false``): its factual state, the revised claims in order, the prompt,
   the response and the revised response. As in the release (92 of 94 rows), responses whose
   factuality is ``NA`` (no gold revision) are left out.

A file holds only what the item's consolidated steps give: an item whose step 2 is not done has
no line in files 3–5.
"""

from collections.abc import Iterator

FILES = (
    "subtask1_sentence_checkworthiness.jsonl",
    "subtask2_claim_checkworthiness.jsonl",
    "subtask3_claim_evidence_stance.jsonl",
    "subtask4_claim_factuality.jsonl",
    "subtask5_revision.jsonl",
)
LABEL = {
    True: "true",
    False: "false",
    "true": "true",
    "false": "false",
    "unknown": "not_enough_evidence",
}


def _verified(sentence: dict) -> Iterator[int]:
    """Claims step 2 verified: factual claims of a checkworthy sentence, with a step-2 answer."""
    if sentence["sentence_checkworthiness"] != "yes" or not sentence["if_claim_needs_edit"]:
        return
    for k, category in enumerate(sentence["claim_checkworthiness"]):
        if category == "factual" and sentence["if_claim_needs_edit"][k] != "NA":
            yield k


def lines(name: str, record: dict) -> Iterator[dict]:
    """The lines of subtask file ``name`` that one item gives."""
    sentences = list(record["sentences"].values())
    if name == FILES[0]:
        for s in sentences:
            yield {"sentence": s["decontext"], "checkworthy": s["sentence_checkworthiness"]}
    elif name == FILES[1]:
        for s in sentences:
            for claim, category in zip(s["claims"], s["claim_checkworthiness"]):
                yield {"claim": claim, "checkworthy": category}
    elif name == FILES[2]:
        for s in sentences:
            for k in _verified(s):
                for evidence, stance in zip(s["auto_evidence"][k], s["stance_claim_autoEvid"][k]):
                    yield {"claim": s["claims"][k], "evidence": evidence, "stance": stance}
    elif name == FILES[3]:
        for s in sentences:
            for k in _verified(s):
                label = LABEL.get(s["claims_factuality_label"][k])
                if label:
                    yield {
                        "claim": s["claims"][k],
                        "label": label,
                        "revised_claim": s["revised_claims"][k],
                    }
    elif name == FILES[4]:
        state = record["response_factuality"]
        # the release lists only responses with a gold revision: factuality NA has none
        if state in (True, False, "true", "false"):
            yield {
                "factual state": LABEL.get(state, state),
                "claim list": [c for s in sentences for c in s["revised_claims"]],
                "prompt": record["prompt"],
                "response": record["response"],
                "revised_response": record["revised_response"],
            }
    else:
        raise ValueError(f"no subtask file {name!r}")
