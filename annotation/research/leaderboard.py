"""Reads of scored systems (selectors): a project's runs and its leaderboard per task.

Everything here reads what the scoring task stored (research.predictions): scores, baselines
and paired differences with their bootstrap intervals. Nothing is computed on page load but a
sort and a sign flip.
"""

import csv
import io
from collections.abc import Iterator

from django.db.models import F, QuerySet

from annotation.exports.downloads import spreadsheet_safe
from annotation.models import Project, SystemRun
from annotation.research import scoring

# Every figure of a measure (annotation.research.scoring): name, heading. A task's own headline figures
# (scoring.Task.figures, the ones its paper reports) lead its table and rank it; the others of
# its measure follow a click away.
METRICS = {
    "labels": (
        ("macro_f1", "Macro F1"),
        ("accuracy", "Accuracy"),
        ("macro_precision", "Macro P"),
        ("macro_recall", "Macro R"),
        ("balanced_accuracy", "Balanced accuracy"),
    ),
    "revision": (
        ("against_gold.word_overlap", "Word overlap with the gold revision"),
        ("against_gold.normalised_edit_distance", "Edit distance to the gold revision"),
        ("against_original.word_overlap", "Word overlap with the original"),
        ("against_original.normalised_edit_distance", "Edit distance to the original"),
    ),
}
# JSON objects keep no order in PostgreSQL: the baselines' rows come in this one
BASELINE_ORDER = ("majority", "random", "machine")
# The differences to the reference a row shows (keys of research.predictions.task_difference).
DIFFERENCES = {
    "labels": (("macro_f1", "Δ macro F1"), ("accuracy", "Δ accuracy")),
    "revision": (
        ("word_overlap", "Δ word overlap with the gold revision"),
        ("normalised_edit_distance", "Δ edit distance to the gold revision"),
    ),
}


def system_runs(project: Project) -> QuerySet[SystemRun]:
    """The project's runs, newest first, without their (large) predictions."""
    return SystemRun.objects.filter(project=project).defer("predictions").select_related("created_by").order_by("-id")


NO_VALUE = {"value": None, "low": None, "high": None}


def metric(scores: dict, name: str) -> dict:
    """{"value", "low", "high"} of a figure in score_task's answer (a path: ``macro_f1``,
    ``per_label.error.f1``, ``against_gold.word_overlap``); no value where the answer has none
    (a label neither the gold nor the system holds, a run scored before the figure existed)."""
    if name.startswith("macro_"):
        name = "macro." + name.removeprefix("macro_")
    for part in name.split("."):
        if not isinstance(scores, dict) or part not in scores:
            return dict(NO_VALUE)
        scores = scores[part]
    return scores if isinstance(scores, dict) and "value" in scores else dict(NO_VALUE)


def task_figures(kind: str, task: str, measure: str) -> tuple[list[scoring.Figure], list[scoring.Figure]]:
    """(headline, others) of a task's table: the figures the task defines (its paper's), then
    the rest of its measure's."""
    definition = scoring.task_definitions(kind).get(task)
    headline = list(definition.figures) if definition is not None and definition.measure == measure else []
    if not headline:
        headline = [scoring.Figure(name, title) for name, title in METRICS[measure][:1]]
    shown = {figure.name for figure in headline}
    lower = {figure.name for figure in scoring.REVISION_FIGURES if not figure.higher_is_better}
    others = [scoring.Figure(name, title, name not in lower) for name, title in METRICS[measure] if name not in shown]
    return headline, others


def _rank_value(scores: dict, figure: scoring.Figure) -> float:
    """A row's primary figure as a number to sort on, higher better; no value ranks last."""
    value = metric(scores, figure.name)["value"]
    if value is None:
        return float("-inf")
    return value if figure.higher_is_better else -value


def measure_of(scores: dict) -> str:
    return scores.get("measure", "labels") if scores.get("measure") in METRICS else "labels"


def negated(diff: dict) -> dict:
    """B − A from A − B: each value negated, its interval's bounds swapped."""
    result = dict(diff)
    for key, value in diff.items():
        if isinstance(value, dict) and "value" in value:
            result[key] = {
                "value": None if value["value"] is None else -value["value"],
                "low": None if value["high"] is None else -value["high"],
                "high": None if value["low"] is None else -value["low"],
            }
    return result


ALL, PAPER = "all", "paper"
SUBSETS = (PAPER, ALL)


def _part(entry, subset: str = ALL, agreed: bool = False) -> dict | None:
    """A task's scores from its entry in SystemRun.scores: on every unit (``all``) or on the
    paper's subset (``paper``), and of those on the agreed units only."""
    if not isinstance(entry, dict):
        return None
    part = entry if subset == ALL else entry.get(subset)
    if not isinstance(part, dict):
        return None
    return part.get("agreed") if agreed else part


def _difference(first_id: int, first: dict | None, second_id: int, second: dict | None) -> dict | None:
    if first is None or second is None or first.get("fingerprint") != second.get("fingerprint"):
        return None
    if found := first.get("differences", {}).get(f"run:{second_id}"):
        return found
    if found := second.get("differences", {}).get(f"run:{first_id}"):
        return negated(found)
    return None


def run_difference(
    first: SystemRun, second: SystemRun, task: str, subset: str = ALL, agreed: bool = False
) -> dict | None:
    """``first`` minus ``second`` (paired bootstrap), from whichever of the two was scored after
    the other; None when they were scored on different gold units."""
    return _difference(
        first.id,
        _part((first.scores or {}).get(task), subset, agreed),
        second.id,
        _part((second.scores or {}).get(task), subset, agreed),
    )


def _row(scores: dict, figures: list[scoring.Figure], **fields) -> dict:
    return {
        **fields,
        "units": scores["units"],
        "items": scores["items"],
        "missing": scores.get("missing", 0),
        "metrics": {figure.name: metric(scores, figure.name) for figure in figures},
        "per_label": scores.get("per_label", {}),
        # D-FActScore: the system's FActScore / D-FActScore per source model against the human one
        "models": (scores.get("paragraph_scores") or {}).get("models", []),
    }


def scored_tasks(project: Project) -> list[dict]:
    """The tasks of the project's kind some run has scores of, in the kind's order."""
    found = []
    for name, task in scoring.task_definitions(project.kind).items():
        if SystemRun.objects.filter(project=project, scores__has_key=name).exists():
            found.append({"name": name, "title": task.title})
    return found


def _subsets(definition: scoring.Task | None, runs: list[dict], agreed: bool) -> list[dict]:
    """The unit sets a task's board can show, the paper's first where its paper reports figures
    over some units only: name, words for pages, units of the newest run scored on it, and
    ``unscored`` when no run has scores on it yet (runs scored before it existed)."""
    found = []
    described = {ALL: "units with a gold record"}
    if definition is not None and definition.paper_subset:
        described = {PAPER: definition.paper_subset, **described}
    for name, words in described.items():
        parts = [part for run in runs if (part := _part(run["entry"], name, agreed))]
        found.append(
            {
                "name": name,
                "title": words,
                "units": parts[0]["units"] if parts else None,
                "available": bool(parts),
                "unscored": name != ALL and not any(isinstance(r["entry"], dict) and name in r["entry"] for r in runs),
            }
        )
    return found


def _describe(board: dict, shown: dict) -> None:
    """``subset_title``: which units the board's figures are over, in words."""
    words = f"the {shown['units']} {shown['title']}" if shown["units"] is not None else shown["title"]
    board["subset_title"] = words + (" (the paper's subset)" if shown["name"] == PAPER else "")


def leaderboard(
    project: Project,
    task: str | None = None,
    reference: int | None = None,
    agreed: bool = False,
    subset: str | None = None,
) -> dict:
    """The scored systems of one task (every version its own row) and the baselines, each with
    its scores and, but for the reference system, its paired difference to it.

    ``task`` defaults to the project's first task with scores; ``reference`` (a run id) to the
    system ranked first (by the first of the task's headline figures, scoring.Task.figures:
    the figure its paper reports first) among those
    scored on the current gold (the units and labels of the run finished last). Rows of runs
    scored on other gold are ``stale``: their differences are unknown until they are scored
    again. Systems are ranked by their latest version, the versions of a system newest first;
    the baselines (those scored with the reference) come last. ``agreed``: the scores on the
    units all annotators agreed on. ``subset``: ``paper``, the units the task's paper reports
    its figures over (Task.paper_subset; the default where some run is scored on them), or
    ``all``; ``subsets`` lists the task's, ``subset_title`` says which units the figures are
    over. Only the task's part of each run's scores is read.
    ValueError({parameter: message}) for an unknown task, reference or subset."""
    tasks = scored_tasks(project)
    board = {
        "tasks": tasks,
        "task": None,
        "title": "",
        "measure": "labels",
        "agreed": agreed,
        "agreed_available": False,
        "subset": ALL,
        "subsets": [],
        "subset_title": "",
        "reference": None,
        "current_fingerprint": None,
        "rows": [],
        "metrics": [],
        "other_metrics": [],
        "differences": [],
    }
    if subset is not None and subset not in SUBSETS:
        raise ValueError({"subset": f"must be one of {', '.join(SUBSETS)}"})
    if not tasks:
        if task:
            raise ValueError({"task": "no system has been scored in this project yet"})
        return board
    titles = {t["name"]: t["title"] for t in tasks}
    if task and task not in titles:
        raise ValueError({"task": f"must be one of {', '.join(titles)}"})
    task = task or tasks[0]["name"]
    runs = list(
        SystemRun.objects.filter(project=project, scores__has_key=task)
        .order_by("-created_at", "-id")
        .values(
            "id",
            "system",
            "version",
            "source",
            "state",
            "created_at",
            "finished_at",
            "created_by__username",
            entry=F(f"scores__{task}"),
        )
    )
    subsets = _subsets(scoring.task_definitions(project.kind).get(task), runs, agreed)
    offered = {entry["name"]: entry for entry in subsets}
    if subset is not None and subset not in offered:
        raise ValueError({"subset": f"task {task} is scored on every unit only: must be {ALL}"})
    if subset is None:
        subset = PAPER if offered.get(PAPER, {}).get("available") else ALL
    shown = offered[subset]
    for run in runs:
        run["part"] = _part(run["entry"], subset, agreed)
    scored = [run for run in runs if run["part"]]
    board.update(
        task=task,
        title=titles[task],
        agreed_available=any(_part(run["entry"], subset, True) for run in runs),
        subset=subset,
        subsets=subsets,
    )
    _describe(board, shown)
    if not scored:
        if reference is not None:
            raise ValueError({"reference": "no system is scored on these units"})
        return board
    measure = measure_of(scored[0]["part"])
    headline, others = task_figures(project.kind, task, measure)
    primary = headline[0]
    figures = headline + others

    def listed(found: list[scoring.Figure]) -> list[dict]:
        return [{"name": f.name, "title": f.title, "higher_is_better": f.higher_is_better} for f in found]

    board.update(
        measure=measure,
        metrics=listed(headline),
        other_metrics=listed(others),
        differences=[{"name": n, "title": t} for n, t in DIFFERENCES[measure]],
    )
    latest = max(scored, key=lambda run: (run["finished_at"] or run["created_at"], run["id"]))
    current = latest["part"]["fingerprint"]
    board["current_fingerprint"] = current
    by_id = {run["id"]: run for run in scored}
    if reference is not None:
        if reference not in by_id:
            raise ValueError(
                {
                    "reference": "must be the id of a run scored on this task"
                    + (" on the agreed units" if agreed else "")
                }
            )
        ref = by_id[reference]
    else:
        fresh = [run for run in scored if run["part"]["fingerprint"] == current]
        ref = max(fresh, key=lambda run: (_rank_value(run["part"], primary), run["created_at"], run["id"]))
    board["reference"] = ref["id"]
    for entry in subsets:  # the reference's units: those of the figures the differences are over
        if part := _part(ref["entry"], entry["name"], agreed):
            entry["units"] = part["units"]
    _describe(board, shown)

    def picked(diff: dict | None) -> dict | None:
        return {name: diff[name] for name, _ in DIFFERENCES[measure] if name in diff} if diff else None

    latest_of: dict[str, float] = {}
    for run in scored:  # newest first: the first seen is a system's latest version
        latest_of.setdefault(run["system"], _rank_value(run["part"], primary))
    ranked = sorted(
        scored,
        key=lambda run: (
            -latest_of[run["system"]],
            run["system"],
            -run["created_at"].timestamp(),
            -run["id"],
        ),
    )
    rows = []
    for run in ranked:
        part, is_reference = run["part"], run["id"] == ref["id"]
        rows.append(
            _row(
                part,
                figures,
                kind="system",
                run=run["id"],
                system=run["system"],
                version=run["version"],
                baseline=None,
                label=f"{run['system']} {run['version']}".strip(),
                source=run["source"],
                state=run["state"],
                created_at=run["created_at"].isoformat(),
                created_by=run["created_by__username"],
                resamples=part.get("resamples"),
                seed=part.get("seed"),
                reference=is_reference,
                stale=part["fingerprint"] != current,
                difference=None if is_reference else picked(_difference(run["id"], part, ref["id"], ref["part"])),
            )
        )
    baselines = ref["part"].get("baselines", {})
    for name, baseline in sorted(
        baselines.items(),
        key=lambda kv: (
            BASELINE_ORDER.index(kv[0]) if kv[0] in BASELINE_ORDER else len(BASELINE_ORDER),
            kv[0],
        ),
    ):
        diff = ref["part"].get("differences", {}).get(f"baseline:{name}")
        rows.append(
            _row(
                baseline["scores"],
                figures,
                kind="baseline",
                run=None,
                system=None,
                version="",
                baseline=name,
                label=baseline["title"],
                source=None,
                state=None,
                created_at=None,
                created_by=None,
                resamples=baseline["scores"].get("resamples"),
                seed=baseline["scores"].get("seed"),
                reference=False,
                stale=ref["part"]["fingerprint"] != current,
                difference=picked(negated(diff)) if diff else None,
            )
        )
    board["rows"] = rows
    return board


def _number(value) -> str:
    return "" if value is None else f"{value:.6g}"


def leaderboard_csv(board: dict) -> Iterator[str]:
    """The leaderboard table as CSV lines: one row per system version and baseline, each metric
    and difference with its interval, and the subset of units they are over."""
    header = [
        "kind",
        "system",
        "version",
        "baseline",
        "label",
        "run",
        "reference",
        "stale",
        "units",
        "items",
        "missing",
    ]
    figures = board["metrics"] + board.get("other_metrics", [])
    for entry in figures:
        header += [entry["name"], f"{entry['name']}_low", f"{entry['name']}_high"]
    for entry in board["differences"]:
        header += [
            f"difference_{entry['name']}",
            f"difference_{entry['name']}_low",
            f"difference_{entry['name']}_high",
        ]
    header.append("subset")  # which units the figures are over; last, so the other columns keep their places
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def take() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(header)
    yield take()
    for row in board["rows"]:
        line = [
            row["kind"],
            spreadsheet_safe(row["system"] or ""),
            spreadsheet_safe(row["version"]),
            row["baseline"] or "",
            spreadsheet_safe(row["label"]),
            row["run"] or "",
            int(row["reference"]),
            int(row["stale"]),
            row["units"],
            row["items"],
            row["missing"],
        ]
        for entry in figures:
            value = row["metrics"][entry["name"]]
            line += [_number(value["value"]), _number(value["low"]), _number(value["high"])]
        for entry in board["differences"]:
            value = (row["difference"] or {}).get(entry["name"]) or {
                "value": None,
                "low": None,
                "high": None,
            }
            line += [_number(value["value"]), _number(value["low"]), _number(value["high"])]
        line.append(board["subset"])
        writer.writerow(line)
        yield take()
