"""Scoring automatic fact-checkers against a project's gold: the tasks, their units, baselines.

A task is a list of gold units, each keyed like the exports: the item (its external id, else
its database id, as ``felm``/``dfactscore`` exports write it), then the released sentence key
(``sentence1``…), the claim's index within its sentence, the evidence passage's index within
its claim, the FELM segment's index or the D-FActScore fact's (indexes 0-based, list positions
in the export). ``machine_predictions`` turns the project's own machine pre-annotation into
predictions keyed the same way, scored as the ``machine`` baseline.

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
- ``revision`` (subtask 5, ``measure == "revision"``): each item with a step-3 gold record; the
  prediction is the revised response (free text), compared with the original response and with
  the gold revision by normalised edit distance and word overlap (annotation.kinds.claims, as
  step-3 agreement compares revisions).
- ``support`` / ``global_support`` (D-FActScore): each fact the paper's lists count (the kind's
  ``fact_support``: facts without a label, and irrelevant ones unless the project counts them
  as not supported, are left out), keyed by its index in the export's ``facts``; ``supported``
  or ``not_supported`` by any candidate page (FActScore's decision) or by the page linked to
  the fact's individual (D-FActScore's). Predictions may be JSON booleans. Their results add
  ``paragraph_scores``: the system's FActScore (D-FActScore) per paragraph and per source model
  against the gold's, means as pipeline.dfactscore_scores.model_scores takes them.

Scores come from pipeline.scoring (bootstrap CIs resample items).
"""
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.scoring import (
    DEFAULT_RESAMPLES,
    Scored,
    constant_predictions,
    majority_label,
    means_with_ci,
    random_predictions,
    score,
)

from . import selectors
from .kinds import get_kind
from pipeline.text_measures import normalised_edit_distance, word_overlap
from .kinds.dfactscore import SUPPORT_LABELS, dfactscore_settings, fact_support
from .kinds.factcheck.step2 import STANCE3, STANCES
from .models import ItemStage, Project, StageStatus

MISSING = "(no prediction)"
# the labels a prediction may carry: the released vocabularies and the app's own
SENTENCE_CHECKWORTHINESS = ("yes", "no", "opinion", "not_a_claim", "other")
CLAIM_CATEGORIES = ("factual", "opinion", "not_a_claim", "other")
FACTUALITY = ("true", "false", "not_enough_evidence", "unknown")
SUPPORT = ("not_supported", "supported")
MEASURES = ("labels", "revision")
MACHINE_TITLE = "the project's machine pre-annotation"


@dataclass(frozen=True)
class GoldUnit:
    key: tuple
    gold: str
    original: str | None = None  # revision: the response before it was revised

    @property
    def item(self) -> Hashable:
        return self.key[0]


@dataclass(frozen=True)
class Figure:
    """A number a task's leaderboard shows: a path into score_task's answer (``accuracy``,
    ``macro_f1``, ``per_label.error.f1``, ``against_gold.word_overlap``…), its heading, and
    whether higher is better (the first of a task's headline figures ranks its systems)."""
    name: str
    title: str
    higher_is_better: bool = True


def class_figures(label: str, what: str) -> tuple[Figure, ...]:
    """F1, precision and recall of one label taken as the positive class."""
    return (Figure(f"per_label.{label}.f1", f"F1 ({what})"), Figure(f"per_label.{label}.precision", f"P ({what})"),
            Figure(f"per_label.{label}.recall", f"R ({what})"))


# The figures each paper reports first (docs/measures.md), the task's headline on its leaderboard.
# Factcheck-Bench, Tables 3-4 (subtasks 1-3): accuracy and macro P/R/F1.
ACCURACY_AND_MACRO = (Figure("accuracy", "Accuracy"), Figure("macro_precision", "Macro P"),
                      Figure("macro_recall", "Macro R"), Figure("macro_f1", "Macro F1"))
# Factcheck-Bench, Table 5 (claim factuality): P/R/F1 of false and of true claims, each its own
# positive class; false first (the abstract's "best F1 = 0.53" is on false claims).
FACTUALITY_FIGURES = (*class_figures("false", "false claims"), *class_figures("true", "true claims"))
# FELM: F1 (P, R) of detecting errors, the error class positive, and balanced accuracy, as its
# evaluation code computes them at segment and response level.
FELM_FIGURES = (*class_figures("error", "errors"), Figure("balanced_accuracy", "Balanced accuracy"))
REVISION_FIGURES = (Figure("against_gold.word_overlap", "Word overlap with the gold revision"),
                    Figure("against_gold.normalised_edit_distance", "Edit distance to the gold revision", False),
                    Figure("against_original.word_overlap", "Word overlap with the original"),
                    Figure("against_original.normalised_edit_distance", "Edit distance to the original", False))


def dfactscore_figures(score: str) -> tuple[Figure, ...]:
    """D-FActScore (Chiang & Lee) reports FActScore and D-FActScore per source model: a system is
    as good as its per-model score is close to the human one (``paragraph_comparison``)."""
    return (Figure("paragraph_scores.mean_difference", f"Mean |system − human| {score} over models", False),)


@dataclass
class Task:
    name: str
    title: str
    key_fields: tuple[str, ...]
    units: list[GoldUnit] = field(default_factory=list)
    labels: tuple[str, ...] | None = None  # None: those in gold or predictions, as scikit-learn
    normalise: Callable[[Any], str] = field(default=lambda label: label)  # a prediction's label in the task's vocabulary
    # the field of a prediction line that holds this task's label, and the labels it may hold
    # (before normalise); a line keyed by key_fields may carry the fields of several tasks
    field: str = "label"
    vocabulary: tuple = ()
    # "labels": classification scores; "revision": a free text compared with texts
    measure: str = "labels"
    # D-FActScore: each paragraph's item key → its source model (item order), and which of the
    # paper's scores this task's decisions make ("factscore" | "dfactscore")
    models: dict[Hashable, str] | None = None
    paragraph_score: str = ""
    # the per-unit agreement export's field that says whether the annotators agreed on this
    # task's unit ("" = the prediction field); scores on agreed units only read it
    agreement_field: str = ""
    # the figures the task's paper reports, its leaderboard's headline (the first ranks)
    figures: tuple[Figure, ...] = ACCURACY_AND_MACRO

    def accepts(self, value: Any) -> bool:
        """Whether a prediction line's value can be this task's prediction (before normalise):
        any string for a revision, else one of the vocabulary of the same type (``1`` is not
        ``true``)."""
        if self.measure == "revision":
            return isinstance(value, str)
        return any(type(value) is type(allowed) and value == allowed for allowed in self.vocabulary)


def item_key(row: dict) -> str:
    return row["external_id"] or str(row["item_id"])


def checkworthy(label: str) -> str:
    return "yes" if label == "yes" else "no"


def factuality(label: str) -> str:
    return "not_enough_evidence" if label == "unknown" else label


def support_label(value: Any) -> str:
    """true/false (JSON booleans) as the D-FActScore tasks' labels; strings as they are."""
    return SUPPORT_LABELS[value] if isinstance(value, bool) else value


def task_definitions(kind: str) -> dict[str, Task]:
    """The scoring tasks of a project kind, without their gold units."""
    if kind == "factcheck":
        return {
            "checkworthiness": Task("checkworthiness", "Subtask 1: sentence checkworthiness", ("item", "sentence"),
                                    normalise=checkworthy, field="checkworthy", vocabulary=SENTENCE_CHECKWORTHINESS,
                                    agreement_field="sentence_checkworthy"),
            "claim_category": Task("claim_category", "Subtask 2: claim category", ("item", "sentence", "claim"),
                                   field="category", vocabulary=CLAIM_CATEGORIES,
                                   agreement_field="claim_category"),
            "stance4": Task("stance4", "Subtask 3: stance (four labels)", ("item", "sentence", "claim", "evidence"),
                            field="stance", vocabulary=(*STANCES, "support")),
            "stance3": Task("stance3", "Subtask 3: stance (three labels)", ("item", "sentence", "claim", "evidence"),
                            normalise=lambda label: STANCE3.get(label, label), field="stance",
                            vocabulary=(*STANCES, "support"), agreement_field="stance3"),
            "factuality": Task("factuality", "Subtask 4: claim factuality", ("item", "sentence", "claim"),
                               normalise=factuality, field="factuality", vocabulary=FACTUALITY,
                               figures=FACTUALITY_FIGURES),
            "factuality_without_nee": Task("factuality_without_nee",
                                           "Subtask 4: claim factuality without not_enough_evidence",
                                           ("item", "sentence", "claim"), labels=("false", "true"), normalise=factuality,
                                           field="factuality", vocabulary=FACTUALITY, figures=FACTUALITY_FIGURES),
            "revision": Task("revision", "Subtask 5: revised response", ("item",), field="revised_response",
                             measure="revision", agreement_field="revised_response", figures=REVISION_FIGURES),
        }
    if kind == "felm":
        return {
            "segment": Task("segment", "FELM: segment level", ("item", "segment"), vocabulary=("correct", "error"),
                            figures=FELM_FIGURES),
            "response": Task("response", "FELM: response level (wrong when any segment is)", ("item",),
                             field="response_label", vocabulary=("correct", "error"), agreement_field="label",
                             figures=FELM_FIGURES),
        }
    if kind == "dfactscore":
        return {
            "support": Task("support", "D-FActScore: fact supported by any page (FActScore)", ("item", "fact"),
                            labels=SUPPORT, normalise=support_label, field="supported",
                            vocabulary=(*SUPPORT, True, False), models={}, paragraph_score="factscore",
                            agreement_field="label", figures=dfactscore_figures("FActScore")),
            "global_support": Task("global_support",
                                   "D-FActScore: fact supported by its individual's linked page (D-FActScore)",
                                   ("item", "fact"), labels=SUPPORT, normalise=support_label, field="global_supported",
                                   vocabulary=(*SUPPORT, True, False), models={}, paragraph_score="dfactscore",
                                   agreement_field="label", figures=dfactscore_figures("D-FActScore")),
        }
    return {}


def project_tasks(project: Project) -> dict[str, Task]:
    """The scoring tasks of a project's kind, from its consolidated gold."""
    if project.kind == "factcheck":
        return factcheck_tasks(project)
    if project.kind == "felm":
        return felm_tasks(project)
    if project.kind == "dfactscore":
        return dfactscore_tasks(project)
    return {}


def factcheck_tasks(project: Project) -> dict[str, Task]:
    tasks = task_definitions("factcheck")
    for row in selectors.gold_rows(project, stage=1, later_stages=(2, 3), metadata=False):
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
    return tasks


def felm_tasks(project: Project) -> dict[str, Task]:
    tasks = task_definitions("felm")
    segment, response = tasks["segment"], tasks["response"]
    for row in selectors.gold_rows(project, metadata=False):
        item = item_key(row)
        texts = (row.get("content") or {}).get("segments") or []
        labels = [s["label"] for s in row["gold"]["segments"]]
        for index, label in enumerate(labels):
            if label is not None:
                segment.units.append(GoldUnit((item, index), "correct" if label else "error"))
        # an empty segment left unlabelled (nothing to decide) does not hold the response back
        labels = [label for index, label in enumerate(labels)
                  if not (label is None and index < len(texts) and not str(texts[index]).strip())]
        if labels and None not in labels:
            response.units.append(GoldUnit((item,), "correct" if all(labels) else "error"))
    return tasks


def dfactscore_tasks(project: Project) -> dict[str, Task]:
    """Per fact, as the project's ``irrelevant`` setting counts facts in its scores."""
    tasks = task_definitions("dfactscore")
    support, global_support = tasks["support"], tasks["global_support"]
    irrelevant = dfactscore_settings(project.pipeline_settings)["irrelevant"]
    models: dict[Hashable, str] = {}
    for row in selectors.gold_rows(project, metadata=False):
        item = item_key(row)
        models[item] = row["source"]
        for index, supported, global_supported in fact_support(row["content"], row["gold"], irrelevant):
            support.units.append(GoldUnit((item, index), SUPPORT_LABELS[supported]))
            global_support.units.append(GoldUnit((item, index), SUPPORT_LABELS[global_supported]))
    support.models = global_support.models = models
    return tasks


def existing_units(project: Project) -> set[tuple]:
    """Every unit of the project's consolidated items, labelled in the gold or not, keyed as the
    exports name them: a prediction of a unit that exists but has no gold label of a task (a
    FELM segment left unlabelled, an irrelevant D-FActScore fact, a passage without a gold
    stance, the factuality of an unverified claim) is counted and left out, not refused, since
    a system predicts every unit; a unit that does not exist (a typo, 1-based indexes) refuses
    the file."""
    keys: set[tuple] = set()
    if project.kind == "factcheck":
        for row in selectors.gold_rows(project, stage=1, later_stages=(2,), metadata=False):
            item = item_key(row)
            keys.add((item,))
            for s, sentence in enumerate(row["gold"].get("sentences") or []):
                keys.add((item, f"sentence{s + 1}"))
                keys.update((item, f"sentence{s + 1}", c) for c in range(len(sentence.get("claims") or [])))
            for claim in ((row["stages"].get(2) or {}).get("content") or {}).get("claims") or []:
                keys.update((item, f"sentence{claim['sentence'] + 1}", claim["claim"], e)
                            for e in range(len(claim.get("evidence") or [])))
    elif project.kind in ("felm", "dfactscore"):
        listed = "segments" if project.kind == "felm" else "facts"
        for row in selectors.gold_rows(project, metadata=False):
            item = item_key(row)
            keys.add((item,))
            keys.update((item, index) for index in range(len(row["gold"].get(listed) or [])))
    return keys


def response_predictions(segment_predictions: Mapping[tuple, str]) -> dict[tuple, str]:
    """FELM response-level predictions from segment-level ones: wrong when any segment is."""
    result: dict[tuple, str] = {}
    for (item, _), label in segment_predictions.items():
        result[(item,)] = "error" if label == "error" or result.get((item,)) == "error" else "correct"
    return result


def score_task(task: Task, predictions: Mapping[tuple, Any], resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
               only: Iterable[tuple] | None = None) -> dict:
    """Scores of ``predictions`` (unit key → the prediction line's value for ``task.field``) on
    the task's units (``only``: those keys, e.g. the units all annotators agreed on). Every
    estimate ``{"value", "low", "high"}`` has a 95 % bootstrap CI over items (``low``/``high``
    None when ``resamples`` is 0); raises ValueError when no unit is left to score.

    ``task.measure == "labels"``: pipeline.scoring.score's result (``units``, ``items``,
    ``labels``, ``resamples``, ``seed``, ``accuracy``, ``balanced_accuracy``, ``macro``
    {precision, recall, f1}, ``per_label`` {label: {precision, recall, f1, support}}) plus
    ``measure`` and ``missing``. A unit without a prediction counts as wrong (accuracy, recall)
    but is no label: unless the task fixes its labels, the per-label and macro figures are over
    the labels of the gold and of the predictions made, as scikit-learn's with ``labels=``.
    D-FActScore tasks add ``paragraph_scores`` (``paragraph_comparison``).

    ``task.measure == "revision"``: ``{"measure": "revision", "units", "items", "resamples",
    "seed", "missing", "against_original": {"normalised_edit_distance", "word_overlap"},
    "against_gold": {same}}``, each a mean over units with its CI. A missing revision is
    scored as an empty text (distance 1, overlap 0)."""
    if task.measure not in MEASURES:
        raise ValueError(f"task {task.name!r} has an unknown measure {task.measure!r}")
    keep = set(only) if only is not None else None
    units = [u for u in task.units if keep is None or u.key in keep]
    if task.measure == "revision":
        revised = [predictions.get(u.key) for u in units]
        return {**score_revisions(units, revised, resamples, seed),
                "missing": sum(not isinstance(text, str) for text in revised)}
    missing = sum(u.key not in predictions for u in units)
    predicted = [task.normalise(predictions[u.key]) if u.key in predictions else MISSING for u in units]
    labels = task.labels
    if labels is None:
        labels = sorted({u.gold for u in units} | {p for p, u in zip(predicted, units) if u.key in predictions})
    result = score([Scored(u.item, u.gold, p) for u, p in zip(units, predicted)], labels=labels,
                   resamples=resamples, seed=seed)
    result = {"measure": "labels", **result, "missing": missing}
    if task.models is not None:
        result["paragraph_scores"] = paragraph_comparison(task, units, predicted)
    return result


REVISION_MEASURES = {"normalised_edit_distance": normalised_edit_distance, "word_overlap": word_overlap}


def score_revisions(units: list[GoldUnit], revised: list[Any], resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict:
    """Each system revision (None: missing, scored as an empty text) against the unit's original
    response and its gold revision; means over units with item-bootstrap CIs (the same draws for
    every mean, so they can be compared)."""
    if not units:
        raise ValueError("no units to score")
    texts = [text if isinstance(text, str) else "" for text in revised]
    items = [u.item for u in units]
    references = {"against_original": [u.original or "" for u in units], "against_gold": [u.gold for u in units]}
    columns = {(side, measure): [compare(text, reference) for text, reference in zip(texts, references[side])]
               for side in references for measure, compare in REVISION_MEASURES.items()}
    estimates = means_with_ci(columns, resamples, seed, items)
    return {"measure": "revision", "units": len(units), "items": len(set(items)), "resamples": resamples, "seed": seed,
            **{side: {measure: estimates[(side, measure)] for measure in REVISION_MEASURES} for side in references}}


def paragraph_comparison(task: Task, units: list[GoldUnit], predicted: list[str]) -> dict:
    """The system's FActScore (``support``) or D-FActScore (``global_support``) of each paragraph
    and of each source model against the gold's, over the same facts: the scored units (a fact
    without a prediction counts as not supported). Per model, as the released result files give
    them (pipeline.dfactscore_scores.model_scores): the mean over paragraphs with facts
    (``init_score`` / ``init_global_score``, the paper's numbers) and the length-penalised one
    (``score`` / ``global_score``), with the absolute difference (the paper reports at most 8
    points between its estimator and humans).

    ``{"score": "factscore" | "dfactscore", "models": [{"model", "paragraphs", "human": {init,
    penalised}, "system": {...}, "difference": {...}}], "paragraphs": [{"item", "model",
    "facts", "human", "system"}]}`` (per paragraph the unpenalised share, None without facts)."""
    from pipeline.dfactscore_scores import model_scores

    gold_of: dict[Hashable, list[bool]] = defaultdict(list)
    system_of: dict[Hashable, list[bool]] = defaultdict(list)
    for unit, label in zip(units, predicted):
        gold_of[unit.item].append(unit.gold == "supported")
        system_of[unit.item].append(label == "supported")
    human: dict[str, list[dict]] = defaultdict(list)
    system: dict[str, list[dict]] = defaultdict(list)
    paragraphs = []
    for item, model in (task.models or {}).items():
        ours, theirs = _paragraph(gold_of.get(item, [])), _paragraph(system_of.get(item, []))
        human[model].append(ours)
        system[model].append(theirs)
        paragraphs.append({"item": item, "model": model, "facts": len(gold_of.get(item, [])),
                           "human": ours["factscore"], "system": theirs["factscore"]})
    init, penalised = ("init_score", "score") if task.paragraph_score == "factscore" else ("init_global_score",
                                                                                            "global_score")
    models = []
    for model, scored in human.items():
        # each paragraph's two lists are the same here: model_scores' FActScore keys hold the numbers
        ours, theirs = model_scores(scored), model_scores(system[model])
        numbers = {"human": {init: ours["init_score"], penalised: ours["score"]},
                   "system": {init: theirs["init_score"], penalised: theirs["score"]}}
        models.append({"model": model, "paragraphs": len(scored), **numbers, "difference": {
            key: abs(numbers["human"][key] - numbers["system"][key])
            if numbers["human"][key] is not None and numbers["system"][key] is not None else None
            for key in (init, penalised)}})
    differences = [m["difference"][init] for m in models if m["difference"][init] is not None]
    return {"score": task.paragraph_score, "models": models, "paragraphs": paragraphs,
            # the leaderboard's headline: how far the system's per-model score is from the human one
            "mean_difference": {"value": sum(differences) / len(differences) if differences else None,
                                "low": None, "high": None}}


def _paragraph(supported: list[bool]) -> dict:
    """One paragraph's decisions in the shape model_scores takes."""
    entries = [{"atom": "", "is_supported": flag, "supporting_topic": None} for flag in supported] or None
    share = sum(supported) / len(supported) if supported else None
    return {"decisions": entries, "global_decisions": entries, "factscore": share, "dfactscore": share,
            "num_groups": None, "num_supporting_topics": 0}


def machine_predictions(project: Project, suggestion_of: Callable[[ItemStage], dict | None] | None = None
                        ) -> dict[str, dict[tuple, Any]]:
    """The project's machine pre-annotation as predictions: task name → {unit key → label},
    keyed as project_tasks keys the gold units, for the item-stages that have a gold record (the
    only ones scored). Each kind says what its suggestions predict (KindSpec.suggestion_predictions):
    Factcheck-Bench step 1 checkworthiness and claim categories (the machine's claims aligned to
    the gold's by text), step 2 stances (the stance hints beside each passage) and factuality,
    step 3 the revised response; FELM segment and response labels; D-FActScore support per fact.
    Labels outside a task's vocabulary are left out (missing, so wrong).

    ``suggestion_of(item_stage)``, when given, returns the suggestion to use instead of the stored
    one, in the same shape (an LLM rater's answers; step 2 as ``{"claims": [{"stances",
    "factuality"}]}``); None leaves that item-stage without predictions."""
    kind = get_kind(project.kind)
    tasks = task_definitions(project.kind)
    result: dict[str, dict[tuple, Any]] = {}
    stages = (ItemStage.objects.filter(item__project=project, status=StageStatus.DONE, gold__isnull=False)
              .select_related("item", "gold")
              .only("id", "stage", "status", "content", "suggestion", "item_id", "item__external_id", "item__prompt",
                    "item__response", "item__source", "gold__payload")
              .order_by("item_id", "stage"))
    for stage in stages.iterator(chunk_size=500):
        if suggestion_of is None:
            suggestion = stage.suggestion
        elif (suggestion := suggestion_of(stage)) is None:
            continue
        item = stage.item.external_id or str(stage.item_id)
        for name, key, label in kind.suggestion_predictions(stage.stage, stage.content, suggestion, stage.gold.payload):
            task = tasks.get(name)
            if task is not None and task.accepts(label):
                result.setdefault(name, {})[(item, *key)] = label
    return result


def baseline_predictions(task: Task, seed: int = 0, machine: Mapping[tuple, Any] | None = None
                         ) -> dict[str, tuple[str, Mapping[tuple, Any]]]:
    """The baselines' predictions, ``{name: (title, {unit key: prediction})}`` (see ``baselines``),
    for comparing a system with them unit by unit."""
    runs: dict[str, tuple[str, Mapping[tuple, Any]]] = {}
    if task.measure == "revision":
        runs["majority"] = ("unchanged response (the original)", {u.key: u.original or "" for u in task.units})
    else:
        gold = [u.gold for u in task.units]
        label = majority_label(gold)
        runs["majority"] = (f"always {label}", {u.key: p for u, p in zip(task.units, constant_predictions(gold, label))})
        runs["random"] = ("random (gold label frequencies)",
                          {u.key: p for u, p in zip(task.units, random_predictions(gold, seed))})
    if machine and any(u.key in machine for u in task.units):
        runs["machine"] = (MACHINE_TITLE, machine)
    return runs


def baselines(task: Task, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
              machine: Mapping[tuple, Any] | None = None) -> dict[str, dict]:
    """Baselines scored as a system is, ``{name: {"title", "scores"}}``. ``majority``: the most
    frequent gold label ("always checkworthy", "always true"), for a revision the unchanged
    response; ``random`` (labels only): labels drawn with the gold's frequencies (seeded);
    ``machine``: ``machine`` (this task's entry of machine_predictions) when it predicts any unit."""
    return {name: {"title": title, "scores": score_task(task, predicted, resamples=resamples, seed=seed)}
            for name, (title, predicted) in baseline_predictions(task, seed, machine).items()}
