"""Executing an LLM rater run (annotation.research.llm_rater starts it): the Celery task
``run_llm_rater``'s body ``execute``, and ending or requeueing a run the task gives up on.

The run probes the endpoint first (a dead one fails the run at once, nothing rated), then rates
item-step after item-step keeping each answer in the stored suggestion's shape; a failed call or
an unusable answer is recorded in ``errors`` and the run goes on, unless the endpoint stops
answering (probed again after an item that got no answer at all), which fails the run. The
answers become predictions through annotation.research.scoring.machine_predictions, and
research.predictions scores them.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import InterfaceError, OperationalError
from django.db.models import Q
from django.utils import timezone

from annotation.imports.reading import line_error
from annotation.kinds import get_kind
from annotation.models import ItemStage, Project, SystemRun, SystemRunSource, SystemRunState
from annotation.research import predictions as prediction_services
from annotation.research import scoring
from annotation.research.llm_rater import (
    RaterOptions,
    endpoint_name,
    rater_config,
    stage_inputs,
    stages_to_rate,
    with_inputs,
)
from annotation.services import jobs

logger = logging.getLogger(__name__)

MAX_ERRORS = 200
# A RUNNING run whose worker has not reported for this long is taken over by a redelivery.
STALE_AFTER = timedelta(minutes=15)
HEARTBEAT_SECONDS = 30


def _item_key(stage: ItemStage) -> str:
    return stage.item.external_id or str(stage.item_id)


class EndpointDead(Exception):
    pass


class _Run:
    """The state of one executing run: answers so far, errors, progress written to the row."""

    def __init__(self, run: SystemRun, config):
        self.run, self.config = run, config
        self.outputs: dict[int, dict | None] = {}
        self.errors: list[dict] = []
        self.more_errors = 0
        self.done = self.calls = self.answered = 0
        self.options = dict(run.options or {})
        self.beat = timezone.now()

    def record(self, stage: ItemStage, rating) -> None:
        self.outputs[stage.id] = rating.suggestion
        self.calls += rating.calls
        self.answered += rating.answered
        for message in rating.errors:
            if len(self.errors) < MAX_ERRORS:
                self.errors.append(line_error(0, f"item {_item_key(stage)}, step {stage.stage}", message))
            else:
                self.more_errors += 1
        if rating.calls and not rating.answered:
            self.check_endpoint()

    def check_endpoint(self) -> None:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.llm_rater import (
            probe,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        problem = probe(self.config)
        if problem:
            raise EndpointDead(problem)

    def progress(self, count: int = 1) -> None:
        self.done += count
        now = timezone.now()
        values = {"units_done": self.done}
        if (now - self.beat).total_seconds() >= HEARTBEAT_SECONDS:
            self.beat = now
            self.options["heartbeat"] = now.isoformat()
            values["options"] = self.options
        jobs.progress(SystemRun, self.run.pk, **values)

    def all_errors(self) -> list[dict]:
        more = (
            [line_error(0, "(run)", f"and {self.more_errors} more units without an answer")] if self.more_errors else []
        )
        return self.errors + more


def _claim(run_id: int) -> bool:
    """Only the delivery that moves the run to RUNNING rates it; a run left RUNNING by a worker
    that stopped reporting STALE_AFTER ago is taken over (and rated again from the start)."""
    if not SystemRun.objects.filter(pk=run_id, source=SystemRunSource.LLM_RATER).exists():
        return False
    # Not jobs' "stalled" takeover: one LLM call may take longer than JOB_STALLED_AFTER_SECONDS.
    if jobs.claim(SystemRun, run_id, take_running="none", units_done=0):
        return True
    now = timezone.now()
    run = SystemRun.objects.filter(pk=run_id, state=SystemRunState.RUNNING, source=SystemRunSource.LLM_RATER).first()
    if run is None:
        return False
    beat = (run.options or {}).get("heartbeat")
    last = datetime.fromisoformat(beat) if beat else run.started_at
    if last is not None and now - last < STALE_AFTER:
        return False
    return bool(
        SystemRun.objects.filter(Q(started_at=run.started_at), pk=run_id, state=SystemRunState.RUNNING).update(
            started_at=now, units_done=0, progress_at=now
        )
    )


def _fail(run_id: int, errors: list[dict]) -> None:
    jobs.fail(SystemRun, run_id, errors[: MAX_ERRORS + 1], predictions={}, scores=None)


def fail_run(run_id: int, message: str) -> None:
    """End a run that cannot go on (e.g. the database stayed unreachable)."""
    _fail(run_id, [line_error(0, "(server)", message)])


def requeue_run(run_id: int) -> None:
    """Hand a run back to the queue before the task retries (the retry rates from the start)."""
    jobs.requeue(SystemRun, run_id)


def execute(run_id: int) -> SystemRun | None:
    """Rate, convert and score a queued run (the Celery task's body)."""
    if not _claim(run_id):
        return SystemRun.objects.filter(pk=run_id).first()
    run = SystemRun.objects.select_related("project").get(pk=run_id)
    project = run.project
    options = RaterOptions.from_stored(run.options or {})
    config = rater_config(project, options)
    state = _Run(run, config)
    where = f"the LLM endpoint {endpoint_name(config.base_url) or '(none configured)'} (model {config.model or 'none'})"
    try:
        state.check_endpoint()
    except EndpointDead as exc:
        _fail(
            run_id,
            [line_error(0, "(endpoint)", f"{where} did not answer: {exc}; nothing was rated")],
        )
        return SystemRun.objects.get(pk=run_id)
    try:
        _rate(project, options, config, state)
        return _finish(run_id, project, state)
    except EndpointDead as exc:
        _fail(
            run_id,
            [
                line_error(
                    0,
                    "(endpoint)",
                    f"{where} stopped answering after {state.done} item-steps: {exc}; nothing was stored",
                ),
                *state.all_errors(),
            ],
        )
    except Exception as exc:
        if isinstance(exc, (OperationalError, InterfaceError)):
            raise
        logger.exception("LLM rater run %s failed", run_id)
        _fail(
            run_id,
            [
                line_error(
                    0,
                    "(server)",
                    f"the run stopped on an internal error ({type(exc).__name__}); nothing was stored",
                )
            ],
        )
    return SystemRun.objects.get(pk=run_id)


def _rate(project: Project, options: RaterOptions, config, state: _Run) -> None:
    kind = get_kind(project.kind)
    size = kind.rater_batch_size()
    settings = project.pipeline_settings or {}
    for step in options.steps:
        batch: list[ItemStage] = []
        for stage in with_inputs(stages_to_rate(project, [step]), project).iterator(chunk_size=max(size, 50)):
            batch.append(stage)
            if len(batch) == size:
                _rate_batch(kind, step, batch, project, settings, config, state)
                batch = []
        if batch:
            _rate_batch(kind, step, batch, project, settings, config, state)


def _rate_batch(
    kind, step: int, stages: list[ItemStage], project: Project, settings: dict, config, state: _Run
) -> None:
    ratings = kind.rate(step, [stage_inputs(project, s) for s in stages], settings, config)
    for stage, rating in zip(stages, ratings):
        state.record(stage, rating)
    state.progress(len(stages))


def _finish(run_id: int, project: Project, state: _Run) -> SystemRun:
    predicted = scoring.machine_predictions(project, suggestion_of=lambda stage: state.outputs.get(stage.id))
    rated = {"item_steps": state.done, "calls": state.calls, "answered": state.answered}
    options = {**state.options, "rated": rated}
    errors = state.all_errors()
    if not any(predicted.values()):
        _fail(
            run_id,
            [
                line_error(
                    0,
                    "(run)",
                    f"the model gave no usable answer in {state.calls} calls; nothing was stored",
                ),
                *errors,
            ],
        )
        SystemRun.objects.filter(pk=run_id).update(options=options)
        return SystemRun.objects.get(pk=run_id)
    SystemRun.objects.filter(pk=run_id, state=SystemRunState.RUNNING).update(
        predictions=prediction_services.stored_form(predicted), options=options, errors=errors
    )
    # Scoring is research.predictions' (the same as an uploaded system's): the one call site.
    prediction_services.run_system_run(run_id)
    run = SystemRun.objects.get(pk=run_id)
    # Scoring writes its own errors (none when it succeeds): the rater's unanswered units stay listed.
    SystemRun.objects.filter(pk=run_id).update(
        errors=(run.errors or []) + errors if run.state == SystemRunState.FAILED else errors
    )
    run.refresh_from_db()
    return run
