"""Factcheck-Bench's scoring tasks (the paper's subtasks 1-5) and their gold units, for
annotation.scoring (see its module docstring for the unit definitions)."""

from collections.abc import Callable, Iterable

from ..research import (
    CLAIM_CATEGORIES,
    FACTUALITY,
    FACTUALITY_FIGURES,
    REVISION_FIGURES,
    SENTENCE_CHECKWORTHINESS,
    GoldUnit,
    Task,
    checkworthy,
    factuality,
    item_key,
)
from .step2 import STANCE3, STANCES
from .step3 import derived_labels

# The responses the paper's revision figures are over: false by its rule (step3.derived_labels),
# not by a released label (the released response_factuality says false of 68 of the 94).
PAPER_REVISION_SUBSET = "responses the paper counts as false (a claim step 2 verified needs an edit or lacks evidence)"

# step -> agreement field -> the scoring task whose predictions answer it (the LLM rater's agreement)
RATED_FIELDS = {
    1: {"sentence_checkworthy": "checkworthiness", "claim_category": "claim_category"},
    2: {"stance": "stance4", "stance3": "stance3", "factuality": "factuality"},
}


def scoring_tasks() -> dict[str, Task]:
    return {
        "checkworthiness": Task(
            "checkworthiness",
            "Subtask 1: sentence checkworthiness",
            ("item", "sentence"),
            normalise=checkworthy,
            field="checkworthy",
            vocabulary=SENTENCE_CHECKWORTHINESS,
            agreement_field="sentence_checkworthy",
        ),
        "claim_category": Task(
            "claim_category",
            "Subtask 2: claim category",
            ("item", "sentence", "claim"),
            field="category",
            vocabulary=CLAIM_CATEGORIES,
            agreement_field="claim_category",
        ),
        "stance4": Task(
            "stance4",
            "Subtask 3: stance (four labels)",
            ("item", "sentence", "claim", "evidence"),
            field="stance",
            vocabulary=(*STANCES, "support"),
        ),
        "stance3": Task(
            "stance3",
            "Subtask 3: stance (three labels)",
            ("item", "sentence", "claim", "evidence"),
            normalise=lambda label: STANCE3.get(label, label),
            field="stance",
            vocabulary=(*STANCES, "support"),
            agreement_field="stance3",
        ),
        "factuality": Task(
            "factuality",
            "Subtask 4: claim factuality",
            ("item", "sentence", "claim"),
            normalise=factuality,
            field="factuality",
            vocabulary=FACTUALITY,
            figures=FACTUALITY_FIGURES,
        ),
        "factuality_without_nee": Task(
            "factuality_without_nee",
            "Subtask 4: claim factuality without not_enough_evidence",
            ("item", "sentence", "claim"),
            labels=("false", "true"),
            normalise=factuality,
            field="factuality",
            vocabulary=FACTUALITY,
            figures=FACTUALITY_FIGURES,
        ),
        "revision": Task(
            "revision",
            "Subtask 5: revised response",
            ("item",),
            field="revised_response",
            measure="revision",
            agreement_field="revised_response",
            figures=REVISION_FIGURES,
            # Wang et al. report the revision figures over the false responses only (61 of 94)
            paper_subset=PAPER_REVISION_SUBSET,
        ),
    }


def gold_units(tasks: dict[str, Task], rows_of: Callable[..., Iterable[dict]]) -> None:
    false_responses = set()
    for row in rows_of(stage=1, later_stages=(2, 3), metadata=False):
        item = item_key(row)
        for s, sentence in enumerate(row["gold"]["sentences"]):
            sentence_key = f"sentence{s + 1}"
            tasks["checkworthiness"].units.append(GoldUnit((item, sentence_key), checkworthy(sentence["checkworthy"])))
            for c, claim in enumerate(sentence["claims"]):
                tasks["claim_category"].units.append(GoldUnit((item, sentence_key, c), claim["category"]))
        stage2 = row["stages"].get(2)
        if not stage2:
            continue
        for claim, answer in zip(stage2["content"].get("claims", []), stage2["gold"].get("claims", [])):
            key = (item, f"sentence{claim['sentence'] + 1}", claim["claim"])
            for e, stance in enumerate(answer.get("stances") or []):
                if stance:
                    tasks["stance4"].units.append(GoldUnit((*key, e), stance))
                    tasks["stance3"].units.append(GoldUnit((*key, e), STANCE3[stance]))
            if answer.get("factuality"):
                label = factuality(answer["factuality"])
                tasks["factuality"].units.append(GoldUnit(key, label))
                if label != "not_enough_evidence":
                    tasks["factuality_without_nee"].units.append(GoldUnit(key, label))
        stage3 = row["stages"].get(3)
        if stage3:  # step 3 opens only after step 2
            tasks["revision"].units.append(GoldUnit((item,), stage3["gold"].get("response") or "", row["response"]))
            if derived_labels(row["gold"], stage2["content"], stage2["gold"])["response"] is False:
                false_responses.add((item,))
    tasks["revision"].paper_units = frozenset(false_responses)


def existing_units(rows_of: Callable[..., Iterable[dict]]) -> set[tuple]:
    keys: set[tuple] = set()
    for row in rows_of(stage=1, later_stages=(2,), metadata=False):
        item = item_key(row)
        keys.add((item,))
        for s, sentence in enumerate(row["gold"].get("sentences") or []):
            keys.add((item, f"sentence{s + 1}"))
            keys.update((item, f"sentence{s + 1}", c) for c in range(len(sentence.get("claims") or [])))
        for claim in ((row["stages"].get(2) or {}).get("content") or {}).get("claims") or []:
            keys.update(
                (item, f"sentence{claim['sentence'] + 1}", claim["claim"], e)
                for e in range(len(claim.get("evidence") or []))
            )
    return keys


# -- the LLM rater (services.llm_rater through FactcheckKind.rater_plan / rate) ----------------


def _step1_inputs(item: dict) -> tuple[list[str], list[list[str]]]:
    sentences = list(item["content"].get("sentences") or [])
    gold = item["gold"].get("sentences") or []
    return sentences, [
        [c.get("text", "") for c in (gold[i].get("claims") or [])] if i < len(gold) else []
        for i in range(len(sentences))
    ]


def _step3_sentences(item: dict):
    from pipeline.revision import (  # loads the openai client: only where an LLM is called
        ClaimOutcome,
        SentenceToRevise,
    )

    return [
        SentenceToRevise(s["decontext"], s["checkworthy"], [ClaimOutcome(**c) for c in s["claims"]])
        for s in item["content"].get("sentences") or []
    ]


def _with_question(settings: dict) -> bool:
    return bool(((settings or {}).get("revision") or {}).get("with_question"))


def rater_plan(step: int, items: list[dict], settings: dict) -> list:
    from pipeline import llm_rater as rater  # loads NLTK and scikit-learn: kept out of web start-up

    batches = []
    for item in items:
        if step == 1:
            sentences, gold_claims = _step1_inputs(item)
            suggested = (item["suggestion"] or {}).get("sentences")
            own = None
            if isinstance(suggested, list) and len(suggested) == len(sentences):
                own = [
                    [c.get("text", "") for c in (s.get("claims") or []) if isinstance(c, dict)]
                    if isinstance(s, dict)
                    else []
                    for s in suggested
                ]
            batches += rater.plan_factcheck_step1(item["response"], sentences, gold_claims, own)
        elif step == 2:
            batches += rater.plan_factcheck_step2(item["content"].get("claims") or [])
        else:
            batches += rater.plan_factcheck_step3(
                _step3_sentences(item),
                question=item["prompt"],
                with_question=_with_question(settings),
            )
    return batches


def rate(step: int, items: list[dict], settings: dict, config) -> list:
    from pipeline import llm_rater as rater  # loads NLTK and scikit-learn: kept out of web start-up

    ratings = []
    for item in items:
        if step == 1:
            sentences, gold_claims = _step1_inputs(item)
            ratings.append(rater.rate_factcheck_step1(item["response"], sentences, gold_claims, config))
        elif step == 2:
            ratings.append(rater.rate_factcheck_step2(item["content"].get("claims") or [], config))
        else:
            ratings.append(
                rater.rate_factcheck_step3(
                    _step3_sentences(item),
                    config,
                    question=item["prompt"],
                    with_question=_with_question(settings),
                )
            )
    return ratings
