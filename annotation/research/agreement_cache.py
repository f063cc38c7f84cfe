"""Agreement results computed once, by a Celery task, and kept in Django's cache.

Why: with bootstrap intervals the agreement of a step takes seconds at 10,000 items
(benchmarks/README.md, `agreement_ci.py`), and a web request must not take seconds. The page, its
downloads and the API read a stored result; a miss queues the computation and answers at once.

A result is stored under (project, step, resamples, seed) and a *data stamp*: aggregates over
the step's submitted annotations, gold records and item-stages and the project's finished
LLM-rater runs (counts, largest ids, latest change times, sum of annotation versions), which
change with any write the numbers depend on: a submission, a reopened submission, a
consolidation, a reopened gold record, a discard, an import, a finished rater run; not with
drafts, which annotators save every few seconds. A request with a new stamp misses the old
entry, which then just expires. (A renamed user keeps the old name in a stored result until
the data change.)

One task at a time per (project, step, resamples, seed): a request that misses takes a lock
with ``cache.add`` (atomic in Redis and in local memory) before it queues the task, and the task
keeps its progress in the lock (refreshed at each field, deleted at the end), which is what the
page shows meanwhile. With resamples, the task first stores the point estimates (the entry of
resamples=0), so the page shows the numbers while their intervals are computed.
"""

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass

from django.core.cache import cache
from django.db import OperationalError
from django.db.models import Count, Max, Sum
from django.utils import timezone

from annotation import dispatch
from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    GoldRecord,
    ItemStage,
    Project,
    SystemRun,
    SystemRunSource,
    SystemRunState,
)
from annotation.research import selectors
from annotation.research.rater_agreement import rater_agreement

logger = logging.getLogger(__name__)

# Bump when the shape or the computation of a result changes: older entries are not read again.
RESULT_FORMAT = 1
RESULT_SECONDS = 7 * 24 * 3600
# A lock whose task shows no progress for this long is taken to be dead (its worker died).
LOCK_SECONDS = 300
# After a failed computation, requests show the error for this long before queueing a new try.
FAILURE_SECONDS = 120


@dataclass(frozen=True)
class Lookup:
    """What a request finds: ``state`` is ``ready`` (``result`` holds it), ``queued`` or
    ``running`` (``progress``, and ``points`` once the point estimates are stored) or ``failed``
    (``error``). A result is ``{"agreement": selectors.project_agreement's result,
    "rater_agreement": rater_agreement's, "computed_at", "seconds"}``."""

    state: str
    result: dict | None = None
    points: dict | None = None
    progress: dict | None = None
    error: str | None = None
    points_stored: bool = False  # points not read (a poll), but stored

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def status(self) -> dict:
        """The small JSON the page polls."""
        progress = self.progress or {}
        return {
            "state": self.state,
            "points": self.points is not None or self.points_stored,
            "done": progress.get("done", 0),
            "total": progress.get("total", 0),
            "step": progress.get("step", ""),
            "error": self.error,
        }


def data_stamp(project: Project, stage: int) -> str:
    """A short digest that changes whenever an input of the step's agreement changes (four
    aggregate queries, a few milliseconds at 10,000 items)."""
    # Submitted annotations only: drafts, saved every few seconds while annotators work, count
    # for nothing, and a reopened submission leaves this set.
    annotations = Annotation.objects.filter(
        submitted=True,
        assignment__item_stage__item__project=project,
        assignment__item_stage__stage=stage,
    ).aggregate(
        rows=Count("id"),
        last_id=Max("id"),
        changed=Max("updated_at"),
        versions=Sum("version"),
        last_submission=Max("assignment__submitted_at"),
    )
    gold = GoldRecord.objects.filter(item_stage__item__project=project, item_stage__stage=stage).aggregate(
        rows=Count("id"), last_id=Max("id"), changed=Max("updated_at")
    )
    stages = ItemStage.objects.filter(item__project=project, stage=stage).aggregate(
        rows=Count("id"), last_id=Max("id"), changed=Max("updated_at")
    )
    runs = SystemRun.objects.filter(
        project=project, source=SystemRunSource.LLM_RATER, state=SystemRunState.DONE
    ).aggregate(rows=Count("id"), last_id=Max("id"), finished=Max("finished_at"))
    # measures: agreement cached before the paper's word overlap / edit distance (issue 19) is stale
    parts = [
        ("annotations", annotations),
        ("gold", gold),
        ("stages", stages),
        ("rater_runs", runs),
        ("measures", {"text_measures": "factcheck-bench-paper"}),
    ]
    text = repr([(name, sorted(values.items())) for name, values in parts])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _base_key(project: Project, stage: int, resamples: int, seed: int) -> str:
    # The project's creation time too: a test database (or a restored one) may give a new project
    # the id of a deleted one.
    created = int(project.created_at.timestamp() * 1_000_000) if project.created_at else 0
    return f"agreement:{RESULT_FORMAT}:{project.id}:{created}:{stage}:{resamples}:{seed if resamples else 0}"


def _result_key(base: str, stamp: str) -> str:
    return f"{base}:result:{stamp}"


def _lock_key(base: str) -> str:
    return f"{base}:lock"


def _failure_key(base: str, stamp: str) -> str:
    return f"{base}:failed:{stamp}"


def lookup(project: Project, stage: int, resamples: int, seed: int, poll: bool = False) -> Lookup:
    """The stored result for the current data, or: queue its computation (once) and say how far
    it is. In-process Celery (the embedded default, tests) computes it inside this call.

    ``poll``: only the state is wanted (the page's status requests, every second): while a task
    runs, its progress is answered without computing the data stamp."""
    base = _base_key(project, stage, resamples, seed)
    if poll:
        progress = cache.get(_lock_key(base))
        if progress is not None:
            return Lookup(progress["state"], progress=progress, points_stored=progress.get("points", False))
    stamp = data_stamp(project, stage)
    result = cache.get(_result_key(base, stamp))
    if result is not None:
        return Lookup("ready", result=result)
    points_key = _result_key(_base_key(project, stage, 0, 0), stamp) if resamples else None
    error = cache.get(_failure_key(base, stamp))
    if error is None:
        token = uuid.uuid4().hex
        stored = points_key is not None and cache.get(points_key) is not None
        if cache.add(
            _lock_key(base),
            {
                "token": token,
                "state": "queued",
                "done": 0,
                "total": 0,
                "step": "waiting for a worker",
                "points": stored,
            },
            LOCK_SECONDS,
        ):
            _enqueue(project, stage, resamples, seed, token, base)
            # an in-process (eager) task has already stored it, or failed
            result = cache.get(_result_key(base, stamp))
            if result is not None:
                return Lookup("ready", result=result)
            error = cache.get(_failure_key(base, stamp))
    points = cache.get(points_key) if points_key else None
    if error is not None:
        return Lookup("failed", points=points, error=error)
    progress = cache.get(_lock_key(base))
    if progress is None:  # the task ended between the reads above: ask again
        result = cache.get(_result_key(base, stamp))
        if result is not None:
            return Lookup("ready", result=result)
        progress = {"state": "queued", "done": 0, "total": 0, "step": "waiting for a worker"}
    return Lookup(progress["state"], points=points, progress=progress)


def _enqueue(project: Project, stage: int, resamples: int, seed: int, token: str, base: str) -> None:
    try:
        dispatch.send("compute_agreement", project.id, stage, resamples, seed, token)
    except Exception:
        # The broker is unreachable: let the next request try again rather than wait for a task
        # that was never queued.
        cache.delete(_lock_key(base))
        raise


class _Progress:
    """Writes the task's progress into its lock, while the lock is still this task's."""

    def __init__(self, base: str, token: str, total: int):
        self.key, self.token, self.total, self.done = _lock_key(base), token, total, 0

    def mine(self) -> bool:
        held = cache.get(self.key)
        return held is None or held.get("token") == self.token

    def step(self, text: str, done: int | None = None, points: bool = False) -> None:
        if done is not None:
            self.done = done
        if self.mine():
            cache.set(
                self.key,
                {
                    "token": self.token,
                    "state": "running",
                    "done": self.done,
                    "total": self.total,
                    "step": text,
                    "points": points,
                },
                LOCK_SECONDS,
            )

    def release(self) -> None:
        if self.mine():
            cache.delete(self.key)


def compute(project: Project, stage: int, resamples: int, seed: int, progress=None) -> dict:
    """Everything the agreement page and API show for one step (the expensive part)."""
    started = time.perf_counter()
    agreement = selectors.project_agreement(project, stage, resamples=resamples, seed=seed, progress=progress)
    if progress is not None:
        progress(len(agreement["fields"]), len(agreement["fields"]), "LLM rater")
    rater = rater_agreement(project, stage, resamples, seed)
    return {
        "agreement": agreement,
        "rater_agreement": rater,
        "computed_at": timezone.now().isoformat(),
        "seconds": round(time.perf_counter() - started, 3),
    }


def fill(project_id: int, stage: int, resamples: int, seed: int, token: str) -> dict:
    """The Celery task's body: compute and store the result for the data as it is now."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return {"stored": False, "reason": "no such project"}
    base = _base_key(project, stage, resamples, seed)
    stamp = data_stamp(project, stage)
    fields = len(get_kind(project.kind).agreement_fields_for(stage))
    points_key = _result_key(_base_key(project, stage, 0, 0), stamp)
    want_points = resamples > 0 and cache.get(points_key) is None
    # steps: the point estimates (when wanted), each field, the LLM rater
    progress = _Progress(base, token, total=int(want_points) + fields + 1)
    if cache.get(_result_key(base, stamp)) is not None:
        progress.release()
        return {"stored": False, "reason": "already stored"}
    try:
        if want_points:
            progress.step("point estimates")
            cache.set(points_key, compute(project, stage, 0, 0), RESULT_SECONDS)
        offset = int(want_points)
        label = f"intervals ({resamples:,} resamples)" if resamples else "agreement"

        def field_progress(done: int, total: int, field: str) -> None:
            progress.step(f"{label}: {field}", offset + done, points=resamples > 0)

        result = compute(project, stage, resamples, seed, progress=field_progress)
    except OperationalError:
        raise  # the database is unreachable: the task is retried and keeps its lock
    except Exception as exc:  # shown on the page, rather than a page that waits for ever
        logger.exception("agreement of project %s step %s failed", project_id, stage)
        cache.set(
            _failure_key(base, stamp),
            f"the computation failed ({type(exc).__name__}); the server log has the details",
            FAILURE_SECONDS,
        )
        progress.release()
        return {"stored": False, "reason": "failed"}
    cache.set(_result_key(base, stamp), result, RESULT_SECONDS)
    progress.release()
    return {"stored": True, "seconds": result["seconds"]}
