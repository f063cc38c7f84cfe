"""Scoring automatic fact-checkers against a project's gold: the tasks, their units, baselines.

A task is a list of gold units, each keyed like the exports: the item (its external id, else
its database id, as ``felm``/``dfactscore`` exports write it; ``(domain, id)`` for an item with a
domain, see kinds.research.item_key), then the released sentence key
(``sentence1``…), the claim's index within its sentence, the evidence passage's index within
its claim, the FELM segment's index or the D-FActScore fact's (indexes 0-based, list positions
in the export). ``machine_predictions`` turns the project's own machine pre-annotation into
predictions keyed the same way, scored as the ``machine`` baseline.

Unit definitions (the ones that reproduce Table 3 of the Factcheck-Bench paper from the
released file imported as gold: see tests/research/test_scoring.py):

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
  the fact's individual (D-FActScore's). A gold imported from a result file keeps the release's
  lists: its ``support`` units are the entries of ``decisions`` and its ``global_support`` units
  those of ``global_decisions``, keyed by their positions in the result export's lists (the two
  lists may hold different atoms). Predictions may be JSON booleans. Their results add
  ``paragraph_scores``: the system's FActScore (D-FActScore) per paragraph and per source model
  against the gold's, means as pipeline.dfactscore_scores.model_scores takes them.

Scores come from pipeline.scoring (bootstrap CIs resample items).
"""

import functools
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from annotation.gold import gold_rows
from annotation.kinds import get_kind
from annotation.kinds.research import (  # noqa: F401 (scoring.Task & co. are read from here too)
    ACCURACY_AND_MACRO,
    CLAIM_CATEGORIES,
    FACTUALITY,
    FACTUALITY_FIGURES,
    FELM_FIGURES,
    REVISION_FIGURES,
    SENTENCE_CHECKWORTHINESS,
    SUPPORT,
    Figure,
    GoldUnit,
    Task,
    checkworthy,
    class_figures,
    dfactscore_figures,
    factuality,
    item_key,
    item_name,
    named_item,
)
from annotation.models import ItemStage, Project, StageStatus
from pipeline.dfactscore_scores import model_scores
from pipeline.scoring import (
    DEFAULT_RESAMPLES,
    Scored,
    constant_predictions,
    majority_label,
    means_with_ci,
    random_predictions,
    score,
)
from pipeline.text_measures import normalised_edit_distance, word_overlap

MISSING = "(no prediction)"
MEASURES = ("labels", "revision")
MACHINE_TITLE = "the project's machine pre-annotation"


def task_definitions(kind: str) -> dict[str, Task]:
    """The scoring tasks of a project kind, without their gold units (KindSpec.scoring_tasks)."""
    return get_kind(kind).scoring_tasks()


def project_tasks(project: Project) -> dict[str, Task]:
    """The scoring tasks of a project's kind, from its consolidated gold (KindSpec.gold_units)."""
    kind = get_kind(project.kind)
    tasks = kind.scoring_tasks()
    kind.gold_units(tasks, functools.partial(gold_rows, project), project.pipeline_settings)
    return tasks


def existing_units(project: Project) -> set[tuple]:
    """Every unit of the project's consolidated items, labelled in the gold or not, keyed as the
    exports name them: a prediction of a unit that exists but has no gold label of a task (a
    FELM segment left unlabelled, an irrelevant D-FActScore fact, a passage without a gold
    stance, the factuality of an unverified claim) is counted and left out, not refused, since
    a system predicts every unit; a unit that does not exist (a typo, 1-based indexes) refuses
    the file."""
    return get_kind(project.kind).existing_units(functools.partial(gold_rows, project))


def response_predictions(segment_predictions: Mapping[tuple, str]) -> dict[tuple, str]:
    """FELM response-level predictions from segment-level ones: wrong when any segment is."""
    result: dict[tuple, str] = {}
    for (item, _), label in segment_predictions.items():
        result[(item,)] = "error" if label == "error" or result.get((item,)) == "error" else "correct"
    return result


def score_task(
    task: Task,
    predictions: Mapping[tuple, Any],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    only: Iterable[tuple] | None = None,
) -> dict:
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
        return {
            **score_revisions(units, revised, resamples, seed),
            "missing": sum(not isinstance(text, str) for text in revised),
        }
    missing = sum(u.key not in predictions for u in units)
    predicted = [task.normalise(predictions[u.key]) if u.key in predictions else MISSING for u in units]
    labels = task.labels
    if labels is None:
        labels = sorted({u.gold for u in units} | {p for p, u in zip(predicted, units) if u.key in predictions})
    result = score(
        [Scored(u.item, u.gold, p) for u, p in zip(units, predicted)],
        labels=labels,
        resamples=resamples,
        seed=seed,
        balanced_labels=task.balanced_labels,
    )
    result = {"measure": "labels", **result, "missing": missing}
    if task.models is not None:
        result["paragraph_scores"] = paragraph_comparison(task, units, predicted)
    return result


REVISION_MEASURES = {
    "normalised_edit_distance": normalised_edit_distance,
    "word_overlap": word_overlap,
}


def score_revisions(
    units: list[GoldUnit], revised: list[Any], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict:
    """Each system revision (None: missing, scored as an empty text) against the unit's original
    response and its gold revision; means over units with item-bootstrap CIs (the same draws for
    every mean, so they can be compared)."""
    if not units:
        raise ValueError("no units to score")
    texts = [text if isinstance(text, str) else "" for text in revised]
    items = [u.item for u in units]
    references = {
        "against_original": [u.original or "" for u in units],
        "against_gold": [u.gold for u in units],
    }
    columns = {
        (side, measure): [compare(text, reference) for text, reference in zip(texts, references[side])]
        for side in references
        for measure, compare in REVISION_MEASURES.items()
    }
    estimates = means_with_ci(columns, resamples, seed, items)
    return {
        "measure": "revision",
        "units": len(units),
        "items": len(set(items)),
        "resamples": resamples,
        "seed": seed,
        **{side: {measure: estimates[(side, measure)] for measure in REVISION_MEASURES} for side in references},
    }


def paragraph_comparison(task: Task, units: list[GoldUnit], predicted: list[str]) -> dict:
    """The system's FActScore (``support``) or D-FActScore (``global_support``) of each paragraph
    and of each source model against the gold's, over the same facts: the scored units (a fact
    without a prediction counts as not supported). Per model, as the released result files give
    them (pipeline.dfactscore_scores.model_scores): the mean over paragraphs with facts
    (``init_score`` / ``init_global_score``, the paper's numbers) and the length-penalised one
    (``score`` / ``global_score``, the latter by the gold's number of groups, over the paragraphs
    where it is known), with the absolute difference (the paper reports at most 8 points between
    its estimator and humans).

    ``{"score": "factscore" | "dfactscore", "models": [{"model", "paragraphs", "human": {init,
    penalised}, "system": {...}, "difference": {...}}], "paragraphs": [{"item", "model",
    "facts", "human", "system"}]}`` (per paragraph the unpenalised share, None without facts)."""
    gold_of: dict[Hashable, list[bool]] = defaultdict(list)
    system_of: dict[Hashable, list[bool]] = defaultdict(list)
    for unit, label in zip(units, predicted):
        gold_of[unit.item].append(unit.gold == "supported")
        system_of[unit.item].append(label == "supported")
    human: dict[str, list[dict]] = defaultdict(list)
    system: dict[str, list[dict]] = defaultdict(list)
    paragraphs = []
    groups = task.groups or {}
    for item, model in (task.models or {}).items():
        ours = _paragraph(gold_of.get(item, []), groups.get(item))
        theirs = _paragraph(system_of.get(item, []), groups.get(item))
        human[model].append(ours)
        system[model].append(theirs)
        paragraphs.append(
            {
                "item": item,
                "model": model,
                "facts": len(gold_of.get(item, [])),
                "human": ours["factscore"],
                "system": theirs["factscore"],
            }
        )
    init, penalised = (
        ("init_score", "score") if task.paragraph_score == "factscore" else ("init_global_score", "global_score")
    )
    models = []
    for model, scored in human.items():
        # each paragraph's two lists are the task's decisions: init_score == init_global_score
        ours, theirs = model_scores(scored), model_scores(system[model])
        numbers = {
            "human": {init: ours[init], penalised: ours[penalised]},
            "system": {init: theirs[init], penalised: theirs[penalised]},
        }
        models.append(
            {
                "model": model,
                "paragraphs": len(scored),
                **numbers,
                "difference": {
                    key: abs(numbers["human"][key] - numbers["system"][key])
                    if numbers["human"][key] is not None and numbers["system"][key] is not None
                    else None
                    for key in (init, penalised)
                },
            }
        )
    differences = [m["difference"][init] for m in models if m["difference"][init] is not None]
    return {
        "score": task.paragraph_score,
        "models": models,
        "paragraphs": paragraphs,
        # the leaderboard's headline: how far the system's per-model score is from the human one
        "mean_difference": {
            "value": sum(differences) / len(differences) if differences else None,
            "low": None,
            "high": None,
        },
    }


def _paragraph(supported: list[bool], groups: int | None) -> dict:
    """One paragraph's decisions in the shape model_scores takes (``groups``: the gold's number
    of groups, D-FActScore's penalty)."""
    entries = [{"atom": "", "is_supported": flag, "supporting_topic": None} for flag in supported] or None
    share = sum(supported) / len(supported) if supported else None
    return {
        "decisions": entries,
        "global_decisions": entries,
        "factscore": share,
        "dfactscore": share,
        "num_groups": groups,
        "num_supporting_topics": 0,
    }


def machine_predictions(
    project: Project, suggestion_of: Callable[[ItemStage], dict | None] | None = None
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
    stages = (
        ItemStage.objects.filter(item__project=project, status=StageStatus.DONE, gold__isnull=False)
        .select_related("item", "gold")
        .only(
            "id",
            "stage",
            "status",
            "content",
            "suggestion",
            "item_id",
            "item__external_id",
            "item__domain",
            "item__prompt",
            "item__response",
            "item__source",
            "gold__payload",
        )
        .order_by("item_id", "stage")
    )
    for stage in stages.iterator(chunk_size=500):
        if suggestion_of is None:
            suggestion = stage.suggestion
        elif (suggestion := suggestion_of(stage)) is None:
            continue
        item = item_name(stage.item.external_id, stage.item_id, stage.item.domain)
        for name, key, label in kind.suggestion_predictions(stage.stage, stage.content, suggestion, stage.gold.payload):
            task = tasks.get(name)
            if task is not None and task.accepts(label):
                result.setdefault(name, {})[(item, *key)] = label
    return result


def baseline_predictions(
    task: Task, seed: int = 0, machine: Mapping[tuple, Any] | None = None
) -> dict[str, tuple[str, Mapping[tuple, Any]]]:
    """The baselines' predictions, ``{name: (title, {unit key: prediction})}`` (see ``baselines``),
    for comparing a system with them unit by unit."""
    runs: dict[str, tuple[str, Mapping[tuple, Any]]] = {}
    if task.measure == "revision":
        runs["majority"] = (
            "unchanged response (the original)",
            {u.key: u.original or "" for u in task.units},
        )
    else:
        gold = [u.gold for u in task.units]
        label = majority_label(gold)
        runs["majority"] = (
            f"always {label}",
            {u.key: p for u, p in zip(task.units, constant_predictions(gold, label))},
        )
        runs["random"] = (
            "random (gold label frequencies)",
            {u.key: p for u, p in zip(task.units, random_predictions(gold, seed))},
        )
    if machine and any(u.key in machine for u in task.units):
        runs["machine"] = (MACHINE_TITLE, machine)
    return runs


def baselines(
    task: Task,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    machine: Mapping[tuple, Any] | None = None,
) -> dict[str, dict]:
    """Baselines scored as a system is, ``{name: {"title", "scores"}}``. ``majority``: the most
    frequent gold label ("always checkworthy", "always true"), for a revision the unchanged
    response; ``random`` (labels only): labels drawn with the gold's frequencies (seeded);
    ``machine``: ``machine`` (this task's entry of machine_predictions) when it predicts any unit."""
    return {
        name: {
            "title": title,
            "scores": score_task(task, predicted, resamples=resamples, seed=seed),
        }
        for name, (title, predicted) in baseline_predictions(task, seed, machine).items()
    }
