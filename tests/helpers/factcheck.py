"""Factcheck-Bench contents and answers shared by the tests: step-2 passages, claims and
answers, a released line with step 2, the step-1/2 gold that step 3 starts from, and step-2
items for the third rater."""

from annotation.models import ItemStage, StageStatus
from annotation.services.annotations import save_annotation
from annotation.services.assignments import assign_open_stages

CS, PS, RE, IR = "completely-support", "partially-support", "refute", "irrelevant"


def passage(k, hint=None):
    found = {
        "text": f"Passage {k}.",
        "url": f"https://e.example/{k}",
        "title": "",
        "source": "corpus",
        "query": "q",
        "rank": k + 1,
        "score": 0.5,
        "lexical_score": 0.5,
        "embedding_score": None,
        "passage_id": k,
    }
    if hint:
        found["stance_hint"] = hint
    return found


def content(*passages):
    return {
        "claims": [
            {
                "sentence": i,
                "claim": 0,
                "text": f"Claim {i}.",
                "queries": [],
                "problems": [],
                "evidence": [passage(k) for k in range(n)],
            }
            for i, n in enumerate(passages)
        ]
    }


def answer(
    stances,
    reliable=None,
    decided="yes",
    manual=(),
    factuality="true",
    needs_edit="no",
    correction="Claim 0.",
    used=(),
):
    return {
        "stances": list(stances),
        "reliable": list(reliable if reliable is not None else [None] * len(stances)),
        "decided": decided,
        "manual_evidence": [dict(m) for m in manual],
        "factuality": factuality,
        "needs_edit": needs_edit,
        "correction": correction,
        "used_evidence": list(used),
    }


def manual(text="It says so.", url="https://m.example/a", query="who", reliable=True, sufficient=True):
    return {
        "text": text,
        "url": url,
        "query": query,
        "reliable": reliable,
        "sufficient": sufficient,
    }


CLAIM = "The Eiffel Tower was completed in 1889."
HUMAN = "https://h.example/eiffel\nIt opened in March 1889."


def released_line():
    """A line in the released shape with step 2, using its quirks: "NA" for a claim step 2 does
    not verify, booleans and "unknown", a NUL in evidence, "1, self-retrieved", a revised
    sentence without claims."""
    return {
        "prompt": "When was the Eiffel Tower built?",
        "response": f"{CLAIM} It is nice.",
        "sentences": {
            "sentence1": {
                "text": CLAIM,
                "decontext": CLAIM,
                "most_importance_sentence": "yes",
                "sentence_checkworthiness": "yes",
                "claims": [CLAIM, "It is lovely."],
                "claim_checkworthiness": ["factual", "opinion"],
                "if_most_important_claim": ["yes", "no"],
                "auto_evidence": [
                    ["Built 1887\u20131889.", "Tour\x00Eiffel"],
                    ["Opinion passage."],
                ],
                "auto_evidence_url": [
                    ["https://a.example/1", "https://a.example/2"],
                    ["https://a.example/3"],
                ],
                "stance_claim_autoEvid": [[CS, RE], []],
                "if_automatic_evidence_enough_to_verify": ["no", "NA"],
                "human_evidence": [HUMAN, "NA"],
                "claims_factuality_label": [False, "unknown"],
                "if_claim_needs_edit": ["yes", "NA"],
                "revised_claims": [
                    "The Eiffel Tower was completed in March 1889.",
                    "It is lovely.",
                ],
                "usedEvidence_index_in_revision": ["1, self-retrieved", "NA"],
            },
            "sentence2": {
                "text": "It is nice.",
                "decontext": "The Eiffel Tower is nice.",
                "most_importance_sentence": "no",
                "sentence_checkworthiness": "opinion",
                "claims": [],
                "claim_checkworthiness": [],
                "if_most_important_claim": [],
                "auto_evidence": [],
                "auto_evidence_url": [],
                "stance_claim_autoEvid": [],
                "if_automatic_evidence_enough_to_verify": [],
                "human_evidence": [],
                "claims_factuality_label": [],
                "if_claim_needs_edit": [],
                "revised_claims": ["The Eiffel Tower is nice to some."],
                "usedEvidence_index_in_revision": [],
            },
        },
    }


S1 = "Marie Curie won the Nobel Prize in Physics in 1911."
S2 = "I admire her."
STEP1_CONTENT = {"sentences": [S1, S2]}
STEP1_GOLD = {
    "sentences": [
        {
            "decontext": S1,
            "importance": "yes",
            "checkworthy": "yes",
            "claims": [
                {"text": S1, "category": "factual", "importance": "yes"},
                {
                    "text": "Marie Curie won a Nobel Prize.",
                    "category": "factual",
                    "importance": "no",
                },
            ],
        },
        {
            "decontext": "I admire Marie Curie.",
            "importance": "no",
            "checkworthy": "opinion",
            "claims": [{"text": S2, "category": "opinion", "importance": "no"}],
        },
    ]
}
STEP2_CONTENT = {
    "claims": [
        {"sentence": 0, "claim": 0, "text": S1, "evidence": []},
        {"sentence": 0, "claim": 1, "text": "Marie Curie won a Nobel Prize.", "evidence": []},
    ]
}
FIXED = "Marie Curie won the Nobel Prize in Physics in 1903."


def verdict(needs_edit, correction=""):
    factuality = {"yes": "false", "no": "true", "not_enough_evidence": "unknown"}[needs_edit]
    found = [
        {
            "text": "She won it in 1903.",
            "url": "https://e.example/1",
            "query": "q",
            "reliable": True,
            "sufficient": True,
        }
    ]
    return {
        "stances": [],
        "reliable": [],
        "decided": "no",
        "manual_evidence": found,
        "factuality": factuality,
        "needs_edit": needs_edit,
        "correction": correction,
        "used_evidence": ["manual:0"] if needs_edit == "yes" else [],
    }


STEP2_GOLD = {"claims": [verdict("yes", FIXED), verdict("no", "Marie Curie won a Nobel Prize.")]}


def rated_answer(stances):
    """A complete step-2 answer with these stances (every relevant passage's source reliable)."""
    return answer(stances, reliable=[None if s == IR else True for s in stances])


def step2_item(project, name="item"):
    """An item whose step 2 is open, assigned to two annotators (step 1's gold is not needed here)."""
    item = project.items.create(prompt="p", response="r", external_id=name)
    stage = ItemStage.objects.create(item=item, stage=2, status=StageStatus.READY, content=content(2))
    assign_open_stages(project)
    return stage


def submit_all(stage, payloads):
    for assignment, payload in zip(stage.assignments.order_by("id"), payloads):
        save_annotation(assignment=assignment, payload=payload, version=0, submit=True)
    stage.refresh_from_db()
