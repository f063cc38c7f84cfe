"""The one lifecycle of every background job (models.BackgroundJob): imports, corpus imports,
system runs, LLM rater runs and evidence searches.

- ``claim`` / ``progress`` / ``finish`` / ``fail`` / ``requeue``: the task's conditional updates of
  its job row, so two deliveries of a task, a cancel or a restart never both win. Ending a job
  with an upload removes the upload (``delete_upload``).
- ``run_job``: the task's body runs inside one catch-all. Database outages are retried; anything
  else is logged with its traceback and ends the job failed with the reason, so no job stays
  queued or running because its task raised.
- ``progress_at``: the task's last sign of life, written when it claims the job and as it makes
  progress. A running job silent for ``JOB_STALLED_AFTER_SECONDS`` is *stalled*: its worker died
  (``kill -9``, out of memory). A redelivered task takes such a job over (``claimable``).
- ``status``: what the API and pages show of a job that has not ended: running, stalled, or
  waiting for a worker on its queue.
- ``restart``: put a stalled job back in its queue (API action and button; admins and owners).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation import dispatch
from annotation.exceptions import DomainError
from annotation.models import (
    BackgroundJob,
    Corpus,
    EvidenceSearch,
    ImportJob,
    SystemRun,
    SystemRunSource,
    UploadJob,
)

logger = logging.getLogger(__name__)

# An exception's text kept on the job: enough to tell causes apart, never a page of it.
MAX_REASON_CHARS = 300
# Why a job whose upload vanished failed: the same words for every kind of job.
UPLOAD_GONE = "the uploaded file is gone from the server (web and worker must share DATA_DIR)"


@dataclass(frozen=True)
class JobKind:
    name: str  # as the API names it
    label: str  # as messages name it
    model: type[BackgroundJob]
    task: str  # the Celery task that runs it, by its name in annotation.dispatch (never imported)
    where: Q = Q()  # which rows of ``model`` are of this kind

    @property
    def queued(self) -> str:
        return self.model.QUEUED

    @property
    def running(self) -> tuple[str, ...]:
        return (self.model.RUNNING,)

    @property
    def ended(self) -> tuple[str, ...]:
        return self.model.ENDED_STATES


KINDS = {
    kind.name: kind
    for kind in (
        JobKind("import", "import", ImportJob, "run_import"),
        JobKind("corpus", "corpus import", Corpus, "import_corpus"),
        JobKind(
            "system-run",
            "system run",
            SystemRun,
            "score_system_run",
            Q(source=SystemRunSource.UPLOAD),
        ),
        JobKind(
            "llm-rater",
            "LLM rater run",
            SystemRun,
            "run_llm_rater",
            Q(source=SystemRunSource.LLM_RATER),
        ),
        JobKind("evidence-search", "evidence search", EvidenceSearch, "run_evidence_search"),
    )
}


def kind_of(job) -> JobKind:
    if isinstance(job, SystemRun):
        return KINDS["llm-rater" if job.source == SystemRunSource.LLM_RATER else "system-run"]
    return next(kind for kind in KINDS.values() if isinstance(job, kind.model))


def stalled_after() -> timedelta:
    return timedelta(seconds=settings.JOB_STALLED_AFTER_SECONDS)


def _silent_since(cutoff) -> Q:
    # A row from before progress_at existed has none: its creation is its last sign of life.
    return Q(progress_at__lt=cutoff) | Q(progress_at__isnull=True, created_at__lt=cutoff)


def claimable(kind: JobKind) -> Q:
    """The rows a delivery of the kind's task may take: queued, or running but stalled (its
    worker died). A redelivery while another worker is still at it finds nothing to take (for
    jobs where two runs at once would clash: corpora, evidence searches)."""
    return Q(state=kind.queued) | Q(state__in=kind.running) & _silent_since(timezone.now() - stalled_after())


# -- the lifecycle: what a task writes on its job's row ------------------------------------------


def claim(model: type[BackgroundJob], job_id: int, *, take_running: str = "stalled", **values) -> bool:
    """Queued -> running (``started_at`` and ``progress_at`` now, plus ``values``); False when
    another delivery has it. ``take_running``: which running job a delivery takes over as well:
    "stalled" (silent for JOB_STALLED_AFTER_SECONDS: its worker died), "any" (a job whose writes
    are all-or-nothing, so a second run only repeats work) or "none"."""
    now = timezone.now()
    takes = Q(state=model.QUEUED)
    if take_running == "any":
        takes |= Q(state=model.RUNNING)
    elif take_running == "stalled":
        takes |= Q(state=model.RUNNING) & _silent_since(now - stalled_after())
    return bool(
        model.objects.filter(takes, pk=job_id).update(state=model.RUNNING, started_at=now, progress_at=now, **values)
    )


def progress(model: type[BackgroundJob], job_id: int, **counters) -> bool:
    """Record a running job's counters and its sign of life; False once it is no longer running
    (cancelled, or ended by another run)."""
    return bool(model.objects.filter(pk=job_id, state=model.RUNNING).update(progress_at=timezone.now(), **counters))


def end(
    model: type[BackgroundJob],
    job_id: int,
    state: str,
    *,
    only_from: tuple[str, ...] | None = None,
    remove_upload: bool = True,
    **values,
) -> bool:
    """Move a job that has not ended (or is in one of ``only_from``) to ``state``, with
    ``finished_at`` now; False when it had ended (or moved on) already. Its upload is removed,
    unless ``remove_upload`` is False (an end written inside a transaction that may roll back)."""
    now = timezone.now()
    states = only_from or (model.QUEUED, model.RUNNING)
    ended = bool(
        model.objects.filter(pk=job_id, state__in=states).update(
            state=state, finished_at=now, progress_at=now, **values
        )
    )
    if ended and remove_upload:
        delete_upload(model, job_id)
    return ended


def finish(model: type[BackgroundJob], job_id: int, **values) -> bool:
    return end(model, job_id, model.DONE, **values)


def fail(model: type[BackgroundJob], job_id: int, errors: list, **values) -> bool:
    return end(model, job_id, model.FAILED, errors=errors, **values)


def requeue(model: type[BackgroundJob], job_id: int) -> None:
    """Hand a running job back to its queue before its task retries after a database error."""
    try:
        model.objects.filter(pk=job_id, state=model.RUNNING).update(state=model.QUEUED)
    except Exception:  # still unreachable: the retry takes it once it is stalled
        logger.warning("could not hand %s %s back to the queue", model.__name__, job_id, exc_info=True)


def delete_upload(model: type[BackgroundJob], job_id: int) -> None:
    """Remove a job's stored upload (an ended job never reads it again)."""
    if not issubclass(model, UploadJob):
        return
    job = model.objects.filter(pk=job_id).only("file_path").first()
    if job is not None and job.upload_path is not None:
        job.upload_path.unlink(missing_ok=True)
        if model.FORGETS_UPLOAD:
            model.objects.filter(pk=job_id).update(file_path="")


# -- the catch-all --------------------------------------------------------------------------------


def reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > MAX_REASON_CHARS:
        text = text[: MAX_REASON_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_job(task, run, fail, job_id: int, nothing_was: str, before_retry=None, label: str = "job"):
    """``(run(job_id), False)``, or ``(None, True)`` once ``fail(job_id, message)`` ended the job.

    Database outages are retried with backoff (the task's ``max_retries``); after the last retry,
    or on any other exception, the job fails with the reason, logged with its traceback."""
    try:
        return run(job_id), False
    except (OperationalError, InterfaceError) as exc:
        if task.request.retries >= task.max_retries:
            fail(job_id, f"the database stayed unreachable ({exc}); nothing was {nothing_was}")
            return None, True
        if before_retry is not None:
            before_retry(job_id)
        raise task.retry(exc=exc, countdown=min(60, 2**task.request.retries))
    except Exception as exc:  # whatever the body raised, the job ends with the reason
        logger.exception("%s %s stopped on an unexpected error", label, job_id)
        fail(job_id, f"stopped on an unexpected error ({reason(exc)}); nothing was {nothing_was}")
        return None, True


# -- what the pages and the API show ---------------------------------------------------------------


def task_queue(task_name: str) -> str:
    """The queue a task is sent to (settings.CELERY_TASK_ROUTES, else the default queue)."""
    route = (current_app.conf.task_routes or {}).get(task_name) or {}
    return route.get("queue") or current_app.conf.task_default_queue


def queue_length(queue: str) -> int | None:
    """Tasks waiting on a queue of the Redis broker; None with another broker or when it cannot
    be asked (a status must never fail on it)."""
    if not str(current_app.conf.broker_url or "").startswith(("redis://", "rediss://")):
        return None
    try:
        with current_app.pool.acquire(block=True, timeout=1) as connection:
            return int(connection.default_channel.client.llen(queue))
    except Exception:  # the broker is down or slow: say less, not fail
        logger.warning("could not read the length of queue %s", queue, exc_info=True)
        return None


def status(job) -> dict:
    """``{"stalled", "progress_at", "detail"}``: what a job that has not ended waits for or does."""
    kind = kind_of(job)
    last, stalled = job.last_sign_of_life, job.stalled
    if job.state == kind.queued:
        if current_app.conf.task_always_eager:  # no broker: the web process runs it at once
            return {"stalled": False, "progress_at": job.progress_at, "detail": "queued"}
        queue = task_queue(f"{dispatch.TASKS}.{kind.task}")
        detail = f"queued: waiting for a worker on queue '{queue}'"
        if stalled:
            detail += f" for {_duration(timezone.now() - last)}"
        if (waiting := queue_length(queue)) is not None:
            detail += f" ({waiting:,} task{'s' if waiting != 1 else ''} waiting there)"
        if stalled:
            detail += ": is a worker running for that queue? (a restart sends the job again)"
    elif job.state in kind.running:
        if stalled:
            detail = (
                f"stalled: no progress for {_duration(timezone.now() - last)} (its worker may have died); "
                "restart it, or wait for the broker to deliver it again"
            )
        else:
            detail = "running"
    else:
        detail = ""
    return {"stalled": stalled, "progress_at": job.progress_at, "detail": detail}


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


# -- restart -------------------------------------------------------------------------------------


def restart(job):
    """Queue a stalled job again. Only a stalled one: a live worker's job would run twice."""
    kind = kind_of(job)
    if job.state in kind.ended:
        raise DomainError(f"this {kind.label} has ended ({job.state}): there is nothing to restart")
    if not status(job)["stalled"]:
        raise DomainError(
            f"this {kind.label} is not stalled: it made progress in the last "
            f"{settings.JOB_STALLED_AFTER_SECONDS} s (or waits for less long than that)"
        )
    cutoff = timezone.now() - stalled_after()
    with transaction.atomic():
        taken = kind.model.objects.filter(
            kind.where,
            Q(state=kind.queued) | Q(state__in=kind.running),
            _silent_since(cutoff),
            pk=job.pk,
        ).update(state=kind.queued, progress_at=timezone.now())
        if not taken:
            raise DomainError(f"this {kind.label} moved on meanwhile: reload it")
        dispatch.queue(kind.task, job.pk)
    logger.info("%s %s restarted", kind.label, job.pk)
    job.refresh_from_db()
    return job
