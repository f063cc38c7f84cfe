"""How far the LLM rater is from the human annotators, on a project's own data (the agreement
page's "LLM rater" section).

Per field of a step that a rater predicts, the latest finished run of each rater model against
each annotator: observed agreement and Cohen's κ on the units both labelled (annotators' values
per unit from selectors.agreement_unit_rows, keyed as the exports key them and as the rater's
predictions are), and the same between each pair of annotators for reference. Labels are
compared in the scoring task's vocabulary (e.g. a sentence labelled ``opinion`` is not
checkworthy, step 2's ``unknown`` is ``not_enough_evidence``), so the numbers read like the
run's scores.
"""

from collections import defaultdict
from itertools import combinations

from annotation.exports import selectors
from annotation.kinds import get_kind
from annotation.kinds.base import GOLD_RATER
from annotation.models import Project, SystemRun, SystemRunSource, SystemRunState
from annotation.research import agreement, scoring
from annotation.research.prediction_files import from_stored
from annotation.research.predictions import AGREEMENT_LINE_KEYS

MAX_RUNS = 3


def latest_runs(project: Project, limit: int = MAX_RUNS) -> list[SystemRun]:
    """The latest finished rater run of each model (system), newest first."""
    runs, seen = [], set()
    for run in SystemRun.objects.filter(
        project=project, source=SystemRunSource.LLM_RATER, state=SystemRunState.DONE
    ).order_by("-id"):
        if run.system not in seen:
            seen.add(run.system)
            runs.append(run)
        if len(runs) == limit:
            break
    return runs


def human_values(project: Project, stage: int, wanted: set[str]) -> dict[str, dict[tuple, dict[str, object]]]:
    """field → unit key → {annotator: value} of one step (units keyed (item, *ids), as the
    per-unit agreement export names them; step-1 claims only where the gold record has them)."""
    kind = get_kind(project.kind)
    values: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for row in selectors.agreement_unit_rows(project, stage=stage):
        item = scoring.item_name(row["external_id"], row["item_id"], row["domain"])
        raters = row["payloads"] if row["gold"] is None else {GOLD_RATER: row["gold"], **row["payloads"]}
        for ids, field, by_rater in kind.agreement_unit_values(stage, row["content"], raters):
            key = tuple(ids[name] for name in AGREEMENT_LINE_KEYS if name in ids)
            if field not in wanted or None in key:
                continue
            answers = {name: value for name, value in by_rater.items() if name is not GOLD_RATER and value is not None}
            if answers:
                values[field][(item, *key)] = answers
    return values


def _compare(pairs: dict[tuple, tuple], resamples: int, seed: int) -> dict:
    result = agreement.agreement_with_reference(pairs, resamples=resamples, seed=seed, item_of=lambda key: key[0])
    return {key: result[key] for key in ("units", "observed_agreement", "cohen_kappa", "ci")}


def rater_agreement(project: Project, stage: int, resamples: int = 0, seed: int = 0) -> dict | None:
    """``{"runs": [{"id", "system", "version"}], "fields": [{"name", "label", "task", "rows":
    [{"compared": [a, b], "machine": bool, "units", "observed_agreement", "cohen_kappa", "ci"}]}]}``
    for the step's fields a rater predicts (no runs and no fields before a rater run has
    finished); None where the step has no such field. A row with no common unit is left out."""
    rated = get_kind(project.kind).rated_fields.get(stage)
    if not rated:
        return None
    runs = latest_runs(project)
    if not runs:
        return {"runs": [], "fields": [], "bootstrap": {"resamples": resamples, "seed": seed}}
    tasks = scoring.task_definitions(project.kind)
    humans = human_values(project, stage, set(rated))
    kind = get_kind(project.kind)
    fields = []
    for name, task_name in rated.items():
        normalise = tasks[task_name].normalise
        units = {
            key: {who: normalise(value) for who, value in answers.items()}
            for key, answers in humans.get(name, {}).items()
        }
        annotators = sorted({who for answers in units.values() for who in answers})
        rows = []
        for run in runs:
            stored = from_stored({task_name: (run.predictions or {}).get(task_name, [])}).get(task_name, {})
            predicted = {key: normalise(label) for key, label in stored.items()}
            for who in annotators:
                pairs = {
                    key: (answers[who], predicted[key])
                    for key, answers in units.items()
                    if who in answers and key in predicted
                }
                if pairs:
                    rows.append(
                        {
                            "compared": [run.system, who],
                            "machine": True,
                            **_compare(pairs, resamples, seed),
                        }
                    )
        for first, second in combinations(annotators, 2):
            pairs = {
                key: (answers[first], answers[second])
                for key, answers in units.items()
                if first in answers and second in answers
            }
            if pairs:
                rows.append(
                    {
                        "compared": [first, second],
                        "machine": False,
                        **_compare(pairs, resamples, seed),
                    }
                )
        if rows:
            fields.append(
                {
                    "name": name,
                    "label": kind.agreement_fields_for(stage).get(name, name),
                    "task": task_name,
                    "rows": rows,
                }
            )
    return {
        "runs": [{"id": run.id, "system": run.system, "version": run.version} for run in runs],
        "fields": fields,
        "bootstrap": {"resamples": resamples, "seed": seed},
    }
