"""Scoring automatic fact-checkers against a project's gold: the tasks, their units, baselines.

A task is a list of gold units, each keyed like the exports: the item (its external id, else
its database id, as ``felm``/``dfactscore`` exports write it), then the released sentence key
(``sentence1``…), the claim's index within its sentence, the evidence passage's index within
its claim, or the FELM segment's index (indexes 0-based, list positions in the export).

Unit definitions (the ones that reproduce Table 3 of the Factcheck-Bench paper from the
released file imported as gold: see tests/test_scoring.py):

- ``checkworthiness`` (subtask 1): every sentence of every item, ``yes`` or ``no`` (the other
  released labels, ``opinion``/``not_a_claim``/``other``, count as ``no``, as the released
  evaluation does); 311 sentences, 277 ``yes``.
- ``claim_category`` (subtask 2): every claim of every sentence with its category; 678 claims.
  Labels, as scikit-learn takes them, are those in the gold or the predictions: the released
  gold holds ``factual``/``opinion``/``not_a_claim`` (the app's ``other`` only if used).
- ``stance4`` / ``stance3`` (subtask 3): each evidence passage of each claim step 2 verified
  (factual claims of checkworthy sentences) that has a gold stance; ``stance3`` merges complete
  and partial support into ``support`` (step2.STANCE3), for the gold and for 4-label predictions.
- ``factuality`` (subtask 4): each verified claim with a gold factuality, ``true``/``false``/
  ``not_enough_evidence`` (the app's ``unknown``); ``factuality_without_nee`` drops the claims
  whose gold is ``not_enough_evidence`` and scores ``true``/``false`` only (a prediction of
  ``not_enough_evidence`` there is a miss).
- ``segment`` (FELM): every labelled segment, ``correct`` or ``error``; ``response``: an item
  whose segments are all labelled is ``error`` when any segment is.

Scores come from pipeline.scoring (bootstrap CIs resample items).
"""
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from pipeline.scoring import DEFAULT_RESAMPLES, Scored, constant_predictions, majority_label, random_predictions, score

from . import selectors
from .kinds.factcheck.step2 import STANCE3, STANCES
from .models import Project

MISSING = "(no prediction)"
# the labels a prediction may carry: the released vocabularies and the app's own
SENTENCE_CHECKWORTHINESS = ("yes", "no", "opinion", "not_a_claim", "other")
CLAIM_CATEGORIES = ("factual", "opinion", "not_a_claim", "other")
FACTUALITY = ("true", "false", "not_enough_evidence", "unknown")


@dataclass(frozen=True)
class GoldUnit:
    key: tuple
    gold: str

    @property
    def item(self) -> Hashable:
        return self.key[0]


@dataclass
class Task:
    name: str
    title: str
    key_fields: tuple[str, ...]
    units: list[GoldUnit] = field(default_factory=list)
    labels: tuple[str, ...] | None = None  # None: those in gold or predictions, as scikit-learn
    normalise: Callable[[str], str] = field(default=lambda label: label)  # a prediction's label in the task's vocabulary
    # the field of a prediction line that holds this task's label, and the labels it may hold
    # (before normalise); a line keyed by key_fields may carry the fields of several tasks
    field: str = "label"
    vocabulary: tuple[str, ...] = ()


def item_key(row: dict) -> str:
    return row["external_id"] or str(row["item_id"])


def checkworthy(label: str) -> str:
    return "yes" if label == "yes" else "no"


def factuality(label: str) -> str:
    return "not_enough_evidence" if label == "unknown" else label


def project_tasks(project: Project) -> dict[str, Task]:
    """The scoring tasks of a project's kind, from its consolidated gold."""
    if project.kind == "factcheck":
        return factcheck_tasks(project)
    if project.kind == "felm":
        return felm_tasks(project)
    return {}


def factcheck_tasks(project: Project) -> dict[str, Task]:
    tasks = {
        "checkworthiness": Task("checkworthiness", "Subtask 1: sentence checkworthiness", ("item", "sentence"),
                                normalise=checkworthy, field="checkworthy", vocabulary=SENTENCE_CHECKWORTHINESS),
        "claim_category": Task("claim_category", "Subtask 2: claim category", ("item", "sentence", "claim"),
                               field="category", vocabulary=CLAIM_CATEGORIES),
        "stance4": Task("stance4", "Subtask 3: stance (four labels)", ("item", "sentence", "claim", "evidence"),
                        field="stance", vocabulary=(*STANCES, "support")),
        "stance3": Task("stance3", "Subtask 3: stance (three labels)", ("item", "sentence", "claim", "evidence"),
                        normalise=lambda label: STANCE3.get(label, label), field="stance", vocabulary=(*STANCES, "support")),
        "factuality": Task("factuality", "Subtask 4: claim factuality", ("item", "sentence", "claim"),
                           normalise=factuality, field="factuality", vocabulary=FACTUALITY),
        "factuality_without_nee": Task("factuality_without_nee", "Subtask 4: claim factuality without not_enough_evidence",
                                       ("item", "sentence", "claim"), labels=("false", "true"), normalise=factuality,
                                       field="factuality", vocabulary=FACTUALITY),
    }
    for row in selectors.gold_rows(project, stage=1, later_stages=(2,), metadata=False):
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
    return tasks


def felm_tasks(project: Project) -> dict[str, Task]:
    segment = Task("segment", "FELM: segment level", ("item", "segment"), vocabulary=("correct", "error"))
    response = Task("response", "FELM: response level (wrong when any segment is)", ("item",),
                    field="response_label", vocabulary=("correct", "error"))
    for row in selectors.gold_rows(project, metadata=False):
        item = item_key(row)
        labels = [s["label"] for s in row["gold"]["segments"]]
        for index, label in enumerate(labels):
            if label is not None:
                segment.units.append(GoldUnit((item, index), "correct" if label else "error"))
        if labels and None not in labels:
            response.units.append(GoldUnit((item,), "correct" if all(labels) else "error"))
    return {"segment": segment, "response": response}


def response_predictions(segment_predictions: Mapping[tuple, str]) -> dict[tuple, str]:
    """FELM response-level predictions from segment-level ones: wrong when any segment is."""
    result: dict[tuple, str] = {}
    for (item, _), label in segment_predictions.items():
        result[(item,)] = "error" if label == "error" or result.get((item,)) == "error" else "correct"
    return result


def score_task(task: Task, predictions: Mapping[tuple, str], resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
               only: Iterable[tuple] | None = None) -> dict:
    """Scores of ``predictions`` (unit key → label) on the task's units (``only``: those keys,
    e.g. the units all annotators agreed on). A unit without a prediction counts as wrong."""
    keep = set(only) if only is not None else None
    units = [u for u in task.units if keep is None or u.key in keep]
    scored = [Scored(u.item, u.gold, task.normalise(predictions[u.key]) if u.key in predictions else MISSING)
              for u in units]
    result = score(scored, labels=task.labels, resamples=resamples, seed=seed)
    return {**result, "missing": sum(u.key not in predictions for u in units)}


def baselines(task: Task, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, dict]:
    """The majority-label baseline ("always checkworthy", "always true": the most frequent gold
    label) and a seeded random one drawing labels with the gold's frequencies."""
    gold = [u.gold for u in task.units]
    label = majority_label(gold)
    runs = {
        "majority": (f"always {label}", constant_predictions(gold, label)),
        "random": ("random (gold label frequencies)", random_predictions(gold, seed)),
    }
    return {
        name: {"title": title, "scores": score_task(task, {u.key: p for u, p in zip(task.units, predicted)},
                                                    resamples=resamples, seed=seed)}
        for name, (title, predicted) in runs.items()
    }
