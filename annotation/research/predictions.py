"""Automatic fact-checkers' predictions: upload, validation, and scores against the gold data.

A system's predictions are a JSONL file keyed like the project's exports (see
annotation.research.scoring): ``{"item": "q7", "sentence": "sentence1", "checkworthy": "yes"}``,
``{"item": "q7", "sentence": "sentence1", "claim": 0, "evidence": 2, "stance": "refute"}``,
``{"item": "12", "segment": 3, "label": "error"}``… A line's key fields pick the tasks keyed by
exactly those fields; each of them whose ``field`` the line carries takes the label. An item of
a domain is named by ``item`` and ``domain`` (needed where its id repeats across domains; the
upload's ``domain`` option gives it to lines without one). Lines are
read as imports read them (annotation.imports.reading: UTF-8, strict JSON, hostile values named;
the file's reader: annotation.research.prediction_files). A key
must name a unit that exists (scoring.existing_units); one without a gold label of the task
is counted in ``ignored`` and left out.

An upload becomes a SystemRun (QUEUED) and a Celery task (``score_system_run``) checks every
line, stores the predictions and scores them (``run_system_run``): a file with any bad line
stores nothing and the run FAILS with each error (line, field, message), like an import.
LLM-rater runs are scored the same way: a run whose predictions are stored and that has no
file is only scored.

``SystemRun.scores`` is ``{task: scores}``, each as ``score_task`` computes them on every gold
unit, plus:

- ``title``, ``position`` (the task's place in the project's list: JSON objects keep no order
  in PostgreSQL), ``key_fields``, ``field``, ``measure``, ``predicted`` (predictions stored for
  the task), ``ignored`` (predictions of units without a gold label of this task);
- ``fingerprint``: a hash of the scored units and their gold labels. Two runs are comparable
  only when it is the same (the gold changes as consolidation goes on);
- ``baselines``: {name: {"title", "scores"}}: majority label, seeded random, and the
  project's machine pre-annotation where annotation.research.scoring offers it;
- ``differences``: {"run:<id>" | "baseline:<name>": this run minus the other (task_difference:
  a paired bootstrap on the same units)}, to every other run with scores and predictions for
  the task, and to the baselines. A leaderboard reads the difference of any two runs from the
  one scored later (when both have the same fingerprint), so nothing is computed on page load;
- ``agreed``: the same (scores, baselines, differences, fingerprint) on the units all
  annotators agreed on (the per-unit agreement export's ``agreed``), or None when the project
  has no unit annotated by two or more annotators;
- ``paper`` (a task whose paper's figures are over some units, Task.paper_subset): the same on
  those units, with its own ``agreed`` (the agreed ones of them); None when the gold has none.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from django.db import IntegrityError, InterfaceError, OperationalError, transaction

from annotation import dispatch
from annotation.exceptions import ImportFailed
from annotation.exports.formats import agreement_unit_lines
from annotation.imports.reading import check_upload_size, line_error
from annotation.imports.uploads import store_upload, stored_path
from annotation.models import Item, Project, SystemRun, SystemRunSource, SystemRunState
from annotation.research import scoring
from annotation.research.prediction_files import from_stored, read_predictions, stored_form
from annotation.services import jobs
from pipeline.scoring import Scored, difference, means_with_ci

logger = logging.getLogger(__name__)

UPLOAD_DIR = "predictions"
DEFAULT_RESAMPLES = 1000
MAX_RESAMPLES = 10_000
PROGRESS_INTERVAL_SECONDS = 0.5
# The fields of a per-unit agreement line that key its unit (as predictions key it), in key order.
AGREEMENT_LINE_KEYS = ("sentence", "claim", "evidence", "segment", "fact")


class SystemRunExists(ImportFailed):
    """The project already has this system and version (the API answers 400 naming ``version``)."""


# -- options ----------------------------------------------------------------------------------------


def _one_line(value, name: str, limit: int, required: bool) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ImportFailed([line_error(0, name, "must be a string")])
    value = value.strip()
    if required and not value:
        raise ImportFailed([line_error(0, name, "is required: name the system whose predictions these are")])
    if len(value) > limit:
        raise ImportFailed([line_error(0, name, f"is {len(value)} characters long; at most {limit} fit")])
    if any(not ch.isprintable() for ch in value):
        raise ImportFailed([line_error(0, name, "must be one line of printable text")])
    return value


def check_run_options(system, version="", resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> tuple[str, str]:
    """The system name and version, stripped; refused (ImportFailed naming the field) when empty
    or not storable, or when resamples or seed are out of range."""
    system = _one_line(system, "system", SystemRun._meta.get_field("system").max_length, required=True)
    version = _one_line(version, "version", SystemRun._meta.get_field("version").max_length, required=False)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or not 0 <= resamples <= MAX_RESAMPLES:
        raise ImportFailed([line_error(0, "resamples", f"must be a whole number from 0 to {MAX_RESAMPLES:,}")])
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ImportFailed([line_error(0, "seed", "must be a whole number from 0 to 4294967295")])
    return system, version


def run_label(system: str, version: str) -> str:
    return f"{system!r} version {version!r}" if version else f"{system!r} (no version)"


# -- uploads ----------------------------------------------------------------------------------------


def create_system_run(
    *,
    project: Project,
    user,
    upload,
    system,
    version="",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    replace: bool = False,
    queue: bool = True,
    domain="",
) -> SystemRun:
    """Store an upload of predictions and queue their checking and scoring (after commit).

    The same system and version again is refused (SystemRunExists) unless ``replace``: then the
    earlier run and its scores are deleted. A failed upload holds nothing worth keeping and is
    replaced without asking. Of two uploads of the same system and version at once, the unique
    constraint lets exactly one in. ``queue=False`` leaves the scoring to the caller (the
    management command runs it itself). ``domain``: the domain of the lines that name none (a
    file of one FELM domain in a project of several)."""
    system, version = check_run_options(system, version, resamples, seed)
    domain = _one_line(domain, "domain", Item._meta.get_field("domain").max_length, required=False)
    check_upload_size(getattr(upload, "size", None))
    relative, _ = store_upload(upload, UPLOAD_DIR)
    try:
        with transaction.atomic():
            earlier = (
                SystemRun.objects.select_for_update()
                .defer("predictions")
                .filter(project=project, system=system, version=version)
                .first()
            )
            if earlier is not None:
                if not replace and not (earlier.state == SystemRunState.FAILED and earlier.scores is None):
                    raise _exists(system, version, earlier)
                _delete_run(earlier)
            try:
                with transaction.atomic():
                    run = SystemRun.objects.create(
                        project=project,
                        system=system,
                        version=version,
                        source=SystemRunSource.UPLOAD,
                        created_by=user if getattr(user, "is_authenticated", False) else None,
                        options={"resamples": resamples, "seed": seed, **({"domain": domain} if domain else {})},
                        file_path=relative,
                        file_name=os.path.basename(str(getattr(upload, "name", "") or ""))[:255],
                    )
            except IntegrityError:  # a concurrent upload of the same system and version won
                raise _exists(system, version, None) from None
            if queue:
                _queue_scoring(run.id)
    except BaseException:
        stored_path(relative).unlink(missing_ok=True)
        raise
    return run


def _exists(system: str, version: str, earlier: SystemRun | None) -> SystemRunExists:
    which = f" (run {earlier.id}, {earlier.get_state_display().lower()})" if earlier is not None else ""
    return SystemRunExists(
        [
            line_error(
                0,
                "version",
                f"system {run_label(system, version)} was uploaded already{which}: give another version, or replace it",
            )
        ]
    )


def _queue_scoring(run_id: int) -> None:
    dispatch.queue("score_system_run", run_id)


def _delete_run(run: SystemRun) -> None:
    if run.file_path:
        path = stored_path(run.file_path)
        transaction.on_commit(lambda: path.unlink(missing_ok=True))
    run.delete()


def delete_system_run(run: SystemRun) -> None:
    """Delete a run, its predictions and scores (other runs' differences to it are no longer shown)."""
    with transaction.atomic():
        _delete_run(run)


def rescore_system_runs(project: Project, run_ids: Iterable[int] | None = None) -> int:
    """Score ended runs with stored predictions again on the current gold (it changes as
    consolidation goes on): their scores stay shown until the new ones are written. Two
    requests at once queue each run once: the rows one locks, the other skips (and finds them
    queued, no longer done, once it may look)."""
    runs = SystemRun.objects.filter(project=project, state=SystemRunState.DONE)
    if run_ids is not None:
        runs = runs.filter(pk__in=list(run_ids))
    with transaction.atomic():
        ids = list(runs.select_for_update(skip_locked=True).values_list("id", flat=True))
        if ids:
            SystemRun.objects.filter(pk__in=ids).update(state=SystemRunState.QUEUED, units_done=0, finished_at=None)
            for run_id in ids:
                _queue_scoring(run_id)
    return len(ids)


# -- scoring ------------------------------------------------------------------------------------------


def fingerprint(units: Iterable[scoring.GoldUnit]) -> str:
    """Which units, with which gold labels: runs are compared only on the same."""
    digest = hashlib.blake2b(digest_size=12)
    for unit in units:
        digest.update(
            json.dumps([list(unit.key), unit.gold, getattr(unit, "original", None)], ensure_ascii=False).encode()
        )
        digest.update(b"\n")
    return digest.hexdigest()


def _units(task: scoring.Task, only: set | None) -> list[scoring.GoldUnit]:
    return [u for u in task.units if only is None or u.key in only]


def predicted_labels(
    task: scoring.Task, units: list[scoring.GoldUnit], predictions: Mapping[tuple, object]
) -> list[str]:
    """Each unit's prediction as score_task reads it (normalised; MISSING where none)."""
    return [task.normalise(predictions[u.key]) if u.key in predictions else scoring.MISSING for u in units]


def task_difference(
    task: scoring.Task,
    first: Mapping[tuple, object],
    second: Mapping[tuple, object],
    only: set | None,
    resamples: int,
    seed: int,
) -> dict:
    """``first`` minus ``second`` on the same units with a paired bootstrap CI (both scored on the
    same resampled items each time). Labels: pipeline.scoring.difference's metrics, each system
    over the task's labels or, as its score_task takes them, the gold's and those it predicted.
    Revisions: the mean per-unit difference of the distance and overlap to the gold revision."""
    units = _units(task, only)
    if task.measure == "revision":

        def text(predictions, unit):
            value = predictions.get(unit.key)
            return value if isinstance(value, str) else ""  # a missing revision: an empty text, as score_task

        columns = {
            measure: [compare(text(first, u), u.gold) - compare(text(second, u), u.gold) for u in units]
            for measure, compare in scoring.REVISION_MEASURES.items()
        }
        return {
            "units": len(units),
            "resamples": resamples,
            "seed": seed,
            **means_with_ci(columns, resamples, seed, [u.item for u in units]),
        }
    mine, theirs = predicted_labels(task, units, first), predicted_labels(task, units, second)

    def scored_labels(predictions, predicted):
        # each side over the labels its own score_task takes: the Δ is the difference of the shown values
        if task.labels is not None:
            return task.labels
        return sorted({u.gold for u in units} | {p for p, u in zip(predicted, units) if u.key in predictions})

    return difference(
        [Scored(u.item, u.gold, p) for u, p in zip(units, mine)],
        [Scored(u.item, u.gold, p) for u, p in zip(units, theirs)],
        labels=scored_labels(first, mine),
        second_labels=scored_labels(second, theirs),
        resamples=resamples,
        seed=seed,
        balanced_labels=task.balanced_labels,
    )


def agreed_units(project: Project, tasks: Mapping[str, scoring.Task]) -> dict[str, set] | None:
    """Per task, the unit keys all annotators agreed on (per the agreement-units export; a unit
    keyed by fewer fields, e.g. a FELM response, when they agreed on every unit under it), or
    None when no unit of the project was annotated by two or more annotators."""
    field_of = {name: task.agreement_field or task.field for name, task in tasks.items()}
    wanted = set(field_of.values())
    # field → unit-key prefix → did every line under it agree
    verdicts: dict[str, dict[tuple, bool]] = defaultdict(dict)
    overlap = False
    for line in agreement_unit_lines(project):
        if line["agreed"] is None or line["field"] not in wanted:
            continue
        overlap = True
        item = scoring.item_name(line["item"], line["item_id"], line.get("domain", ""))
        key = (item, *(line[name] for name in AGREEMENT_LINE_KEYS if name in line))
        found = verdicts[line["field"]]
        for depth in range(1, len(key) + 1):
            found[key[:depth]] = found.get(key[:depth], True) and bool(line["agreed"])
    if not overlap:
        return None
    return {
        name: {u.key for u in task.units if verdicts[field_of[name]].get(u.key) is True} for name, task in tasks.items()
    }


@dataclass
class _Other:
    """A run already scored, whose predictions this one is compared with."""

    id: int
    predictions: dict[str, dict[tuple, object]]


def _subset_scores(
    task: scoring.Task,
    predictions: Mapping,
    only: set | None,
    baselines: Mapping[str, tuple],
    others: list[_Other],
    resamples: int,
    seed: int,
    step: Callable[[], None],
) -> dict:
    scores = scoring.score_task(task, predictions, resamples=resamples, seed=seed, only=only)
    step()
    result = {
        **scores,
        "fingerprint": fingerprint(_units(task, only)),
        "baselines": {},
        "differences": {},
    }
    for name, (title, predicted) in baselines.items():
        result["baselines"][name] = {
            "title": title,
            "scores": scoring.score_task(task, predicted, resamples=resamples, seed=seed, only=only),
        }
        result["differences"][f"baseline:{name}"] = task_difference(task, predictions, predicted, only, resamples, seed)
        step()
    for other in others:
        if theirs := other.predictions.get(task.name):
            result["differences"][f"run:{other.id}"] = task_difference(task, predictions, theirs, only, resamples, seed)
            step()
    return result


def score_steps(
    tasks: Mapping[str, scoring.Task],
    predictions: Mapping[str, Mapping],
    others: list[_Other],
    agreed: dict[str, set] | None,
    machine: Mapping[str, Mapping],
) -> int:
    """How many computations score_predictions makes: the progress bar's length."""
    steps = 0
    for name, task in tasks.items():
        if not predictions.get(name) or not task.units:
            continue
        baselines = (1 if task.measure == "revision" else 2) + bool(machine.get(name))
        compared = sum(bool(other.predictions.get(name)) for other in others)
        only = agreed.get(name) if agreed else None
        subsets = 1 + bool(only) + bool(task.paper_units) + bool(only and only & task.paper_units)
        steps += (1 + baselines + compared) * subsets
    return steps


def score_predictions(
    project: Project,
    tasks: Mapping[str, scoring.Task],
    predictions: Mapping[str, Mapping],
    *,
    resamples: int,
    seed: int,
    others: list[_Other] = (),
    agreed: dict[str, set] | None = None,
    ignored: Mapping[str, int] | None = None,
    machine: Mapping[str, Mapping] | None = None,
    step: Callable[[], None] = lambda: None,
) -> dict:
    """{task: scores} (the module docstring says what each holds) of every task with gold units
    and predictions. ``machine``: scoring.machine_predictions(project), read here when not given."""
    result = {}
    if machine is None:
        machine = scoring.machine_predictions(project)
    for position, (name, task) in enumerate(tasks.items()):
        mine = predictions.get(name)
        if not mine or not task.units:
            continue
        baselines = scoring.baseline_predictions(task, seed, machine.get(name))

        def on(units: set | None) -> dict | None:  # None: no unit to score on
            return _subset_scores(task, mine, units, baselines, list(others), resamples, seed, step) if units else None

        entry = _subset_scores(task, mine, None, baselines, list(others), resamples, seed, step)
        only = agreed.get(name) if agreed is not None else None
        entry["agreed"] = on(only)
        if task.paper_subset:
            entry["paper"] = paper = on(task.paper_units)
            if paper:
                paper["agreed"] = on(only & task.paper_units if only else None)
        entry.update(
            title=task.title,
            position=position,
            key_fields=list(task.key_fields),
            field=task.field,
            measure=task.measure,
            predicted=len(mine),
            ignored=(ignored or {}).get(name, 0),
        )
        result[name] = entry
    return result


# -- the task's body ------------------------------------------------------------------------------------


class _Progress:
    """units_done / units_total of a run, written at most every PROGRESS_INTERVAL_SECONDS."""

    def __init__(self, run_id: int):
        self.run_id, self.done, self.total, self.next = run_id, 0, 0, 0.0

    def set(self, done: int | None = None, total: int | None = None, force: bool = False) -> None:
        self.done = self.done if done is None else done
        self.total = self.total if total is None else total
        if force or time.monotonic() >= self.next:
            jobs.progress(SystemRun, self.run_id, units_done=self.done, units_total=self.total)
            self.next = time.monotonic() + PROGRESS_INTERVAL_SECONDS

    def step(self) -> None:
        self.set(done=self.done + 1)


def _count_lines(path) -> int:
    count, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _end(run_id: int, state: str, **values) -> bool:
    return jobs.end(SystemRun, run_id, state, only_from=(SystemRunState.RUNNING,), **values)


def run_system_run(run_id: int) -> SystemRun | None:
    """Check, store and score a queued run (the Celery task's body); safe to run again.

    A run with a file is read from it (nothing is stored unless every line is good); a run
    without one (a rescore, an LLM rater's answers) is scored from its stored predictions. The
    result is written in one update when everything is computed, so a worker that dies midway
    leaves the run queued-or-running with its earlier state intact, and a redelivery redoes it.
    Database errors propagate for the task to retry; other errors fail the run."""
    # Any running run is taken: its result is written in one update, so a second run only repeats work.
    if not jobs.claim(SystemRun, run_id, take_running="any", units_done=0):
        return SystemRun.objects.filter(pk=run_id).first()
    run = SystemRun.objects.select_related("project").defer("predictions").get(pk=run_id)
    progress = _Progress(run_id)
    try:
        _score_run(run, progress)
    except FileNotFoundError:
        _end(run_id, SystemRunState.FAILED, errors=[line_error(0, "(file)", jobs.UPLOAD_GONE)])
    except Exception as exc:
        if isinstance(exc, (OperationalError, InterfaceError)):
            raise
        logger.exception("system run %s failed", run_id)
        _end(
            run_id,
            SystemRunState.FAILED,
            errors=[
                line_error(
                    0,
                    "(server)",
                    f"scoring stopped on an internal error ({type(exc).__name__}); nothing was stored",
                )
            ],
        )
    return SystemRun.objects.filter(pk=run_id).defer("predictions").first()


def _score_run(run: SystemRun, progress: _Progress) -> None:
    project = run.project
    tasks = scoring.project_tasks(project)
    ignored: dict[str, int] = {}
    if run.file_path:
        path = stored_path(run.file_path)
        progress.set(done=0, total=_count_lines(path), force=True)
        known = scoring.existing_units(project)
        if not known and not any(task.units for task in tasks.values()):
            _end(
                run.id,
                SystemRunState.FAILED,
                errors=[
                    line_error(
                        0,
                        "(project)",
                        "has no consolidated gold record yet: there is nothing to score against",
                    )
                ],
            )
            return
        with open(path, "rb") as handle:
            read = read_predictions(
                tasks,
                handle,
                on_line=lambda number: progress.set(done=number),
                known=known,
                domain=(run.options or {}).get("domain", ""),
            )
        if read.errors:
            _end(
                run.id,
                SystemRunState.FAILED,
                errors=read.errors,
                predictions={},
                scores=None,
                units_done=read.lines,
                units_total=read.lines,
            )
            return
        predictions, ignored = read.by_task, dict(read.ignored)
        lines = read.lines
    else:
        predictions = from_stored(SystemRun.objects.values_list("predictions", flat=True).get(pk=run.id))
        previous = SystemRun.objects.values_list("scores", flat=True).get(pk=run.id) or {}
        ignored = {name: entry.get("ignored", 0) for name, entry in previous.items() if isinstance(entry, dict)}
        lines = 0
    others = [
        _Other(other_id, from_stored(stored))
        for other_id, stored in SystemRun.objects.filter(project=project, scores__isnull=False)
        .exclude(pk=run.id)
        .values_list("id", "predictions")
    ]
    agreed = agreed_units(project, tasks)
    machine = scoring.machine_predictions(project)
    progress.set(
        done=lines,
        total=lines + score_steps(tasks, predictions, others, agreed, machine),
        force=True,
    )
    options = run.options or {}
    scores = score_predictions(
        project,
        tasks,
        predictions,
        resamples=options.get("resamples", DEFAULT_RESAMPLES),
        seed=options.get("seed", 0),
        others=others,
        agreed=agreed,
        ignored=ignored,
        machine=machine,
        step=progress.step,
    )
    if not scores:
        _end(
            run.id,
            SystemRunState.FAILED,
            errors=[
                line_error(
                    0,
                    "(file)",
                    "no task of the project has both gold units and predictions of this run",
                )
            ],
        )
        return
    _end(
        run.id,
        SystemRunState.DONE,
        predictions=stored_form(predictions),
        scores=scores,
        errors=[],
        units_done=progress.total,
        units_total=progress.total,
    )


def fail_system_run(run_id: int, message: str) -> None:
    """End a run that cannot be scored (e.g. the database stayed unreachable)."""
    jobs.fail(SystemRun, run_id, [line_error(0, "(server)", message)])
