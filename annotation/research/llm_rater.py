"""The LLM rater: the pipeline's LLM backend answering a project's items as an automatic
annotator, scored like an uploaded system (a SystemRun of source LLM_RATER). This module is its
side the pages and the API use: the run's options, its endpoint, the item-steps it rates and what
it reads of them, the estimate, starting a run and reading runs; annotation.research.llm_rater_run
executes a run.

It rates the item-steps that have a consolidated gold record (the only ones a prediction can
be scored on; their units are the gold record's units), with the pre-annotation functions of
pipeline.llm_rater and the LLM forced: no offline fallback counts as the model's answer. Before
it starts, ``estimate`` plans its calls from the items' texts; the run starts only confirmed.

Endpoint and key: the project's LLM settings over the server's (``LLMConfig.from_env``), as
pre-annotation uses them. Staff may point a run at another model or base URL; the stored key
then goes only to the base URL it was entered for (pipeline.llm.drop_foreign_server_key), and a
key is never taken here, stored in the run or shown: a key for another endpoint belongs in the
project's LLM settings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from urllib.parse import urlsplit

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import dispatch, selectors
from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import (
    ItemStage,
    Project,
    StageStatus,
    SystemRun,
    SystemRunSource,
    SystemRunState,
)
from annotation.services.locks import lock_project_for_change

# Above this many item-steps of one step, the estimate plans an even sample of them and scales.
ESTIMATE_SAMPLE = 200
MAX_SECONDS_PER_CALL = 3600.0
MAX_RESAMPLES = 10_000
DEFAULT_RESAMPLES = 1000
STAFF_ONLY = {
    "model": "only staff may choose another model: the LLM settings, and what a run spends, are theirs",
    "base_url": "only staff may point the rater at another endpoint: it decides where the items' texts go",
}


class RaterOptionsError(DomainError):
    """Options the rater refuses: ``errors`` maps each option to what is wrong with it."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))


@dataclass(frozen=True)
class RaterOptions:
    steps: tuple[int, ...]
    model: str = ""
    base_url: str = ""
    seconds_per_call: float = 2.0
    prompt_price_per_1k: float | None = None
    completion_price_per_1k: float | None = None
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0

    def stored(self) -> dict:
        return {**asdict(self), "steps": list(self.steps)}

    @classmethod
    def from_stored(cls, options: Mapping) -> RaterOptions:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in options.items() if key in known}
        return cls(**{**values, "steps": tuple(values.get("steps") or ())})


# -- options ------------------------------------------------------------------------------------


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _number(
    data: Mapping,
    name: str,
    errors: dict,
    *,
    minimum: float,
    maximum: float,
    default=None,
    whole=False,
):
    raw = data.get(name)
    if _blank(raw):
        return default
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = int(raw) if whole else float(raw)
        if whole and isinstance(raw, float):
            raise ValueError
    except (TypeError, ValueError):
        errors[name] = f"must be a {'whole ' if whole else ''}number, not {str(raw)[:40]!r}"
        return default
    if not math.isfinite(value) or not minimum <= value <= maximum:
        errors[name] = f"must be from {minimum:g} to {maximum:g}, not {value:g}"
        return default
    return value


def _steps(project: Project, raw, errors: dict) -> tuple[int, ...]:
    rated = get_kind(project.kind).rated_steps
    if _blank(raw) or raw == []:
        return rated
    values = raw if isinstance(raw, (list, tuple)) else str(raw).replace(",", " ").split()
    steps = []
    for value in values:
        step = (
            value
            if isinstance(value, int) and not isinstance(value, bool)
            else (int(value) if isinstance(value, str) and value.strip().isdigit() and value.isascii() else None)
        )
        if step not in rated:
            errors["steps"] = (
                f"must be among {', '.join(map(str, rated))} (the steps a model rates in this project), "
                f"not {str(value)[:20]!r}"
            )
            return rated
        if step not in steps:
            steps.append(step)
    return tuple(sorted(steps))


def parse_options(project: Project, user, data: Mapping) -> RaterOptions:
    """The rater options a form or API request gives (strings or JSON values), checked: a
    RaterOptionsError names each bad option; PermissionDenied when a project admin who is not
    staff picks another model or endpoint."""
    errors: dict[str, str] = {}
    steps = _steps(project, data.get("steps"), errors)
    text = {}
    for name in ("model", "base_url"):
        raw = data.get(name)
        if _blank(raw):
            text[name] = ""
            continue
        if not isinstance(raw, str) or len(raw) > 300 or not raw.strip().isprintable():
            errors[name] = "must be one line of text of at most 300 characters"
            continue
        text[name] = raw.strip()
        if not selectors.can_change_llm_settings(user):
            raise PermissionDenied(STAFF_ONLY[name])
    if text.get("base_url"):
        try:
            parts = urlsplit(text["base_url"])
            parts.port  # noqa: B018 (a port that is no number raises here)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            errors["base_url"] = "must be an http(s) URL such as https://llm.example.org/v1"
        elif parts.username or parts.password:
            errors["base_url"] = "must not hold a user or key: keys go in the project's LLM settings (staff)"
    options = RaterOptions(
        steps=steps,
        model=text.get("model", ""),
        base_url=text.get("base_url", ""),
        seconds_per_call=_number(
            data,
            "seconds_per_call",
            errors,
            minimum=0.001,
            maximum=MAX_SECONDS_PER_CALL,
            default=2.0,
        ),
        prompt_price_per_1k=_number(data, "prompt_price_per_1k", errors, minimum=0, maximum=1e6),
        completion_price_per_1k=_number(data, "completion_price_per_1k", errors, minimum=0, maximum=1e6),
        resamples=_number(
            data,
            "resamples",
            errors,
            minimum=0,
            maximum=MAX_RESAMPLES,
            default=DEFAULT_RESAMPLES,
            whole=True,
        ),
        seed=_number(data, "seed", errors, minimum=0, maximum=2**32 - 1, default=0, whole=True),
    )
    if errors:
        raise RaterOptionsError(errors)
    return options


def rater_config(project: Project, options: RaterOptions):
    """The LLMConfig of a run: the project's LLM settings over the server's, then the run's model
    and base URL; the stored key stays with the base URL it belongs to."""
    from pipeline.llm import (  # loads the openai client: only where an LLM is called
        LLMConfig,
        drop_foreign_server_key,
        same_base_url,
    )

    section = dict((project.pipeline_settings or {}).get("llm") or {})
    base = LLMConfig.from_env(section)
    if options.base_url and not same_base_url(options.base_url, base.base_url):
        values = asdict(base)
        drop_foreign_server_key(values, {"base_url": options.base_url})
        values["base_url"] = options.base_url
        base = LLMConfig(**values)
    if options.model:
        base = LLMConfig(**{**asdict(base), "model": options.model})
    return base


def endpoint_name(base_url: str | None) -> str:
    """A base URL as pages show it: scheme, host, port and path, never a user or key in it."""
    if not base_url:
        return ""
    try:
        parts = urlsplit(base_url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


# -- what is rated ------------------------------------------------------------------------------


def stages_to_rate(project: Project, steps):
    """The item-steps of ``steps`` with a consolidated gold record, in step and item order."""
    return ItemStage.objects.filter(
        item__project=project, stage__in=list(steps), status=StageStatus.DONE, gold__isnull=False
    ).order_by("stage", "item_id")


def with_inputs(queryset, project: Project):
    """The rows the rater reads: an item's metadata (e.g. the released evidence, tens of KB)
    only where the kind reads it (D-FActScore may take the paragraph's name from it)."""
    queryset = queryset.select_related("item", "gold")
    return queryset if get_kind(project.kind).rater_reads_metadata else queryset.defer("item__metadata")


def stage_inputs(project: Project, stage: ItemStage) -> dict:
    """What a kind's rater hooks read of an item-step (KindSpec.rater_plan, rate)."""
    return {
        "prompt": stage.item.prompt,
        "response": stage.item.response,
        "content": stage.content,
        "suggestion": stage.suggestion,
        "gold": stage.gold.payload,
        "metadata": (stage.item.metadata or {}) if get_kind(project.kind).rater_reads_metadata else {},
    }


# -- the estimate -------------------------------------------------------------------------------


def _sample(queryset, total: int):
    """Every item-step, or an even spread of ESTIMATE_SAMPLE of them (ids in order)."""
    if total <= ESTIMATE_SAMPLE:
        return list(queryset)
    ids = list(queryset.values_list("id", flat=True))
    picked = [ids[int(i * total / ESTIMATE_SAMPLE)] for i in range(ESTIMATE_SAMPLE)]
    return list(queryset.filter(id__in=picked))


def _plan(project: Project, step: int, stages: list[ItemStage]) -> list:
    return get_kind(project.kind).rater_plan(
        step, [stage_inputs(project, s) for s in stages], project.pipeline_settings or {}
    )


def estimate(project: Project, options: RaterOptions) -> dict:
    """What a run with ``options`` will do: item-steps per step, LLM calls per kind, tokens,
    time and cost (pipeline.llm_rater.estimate says how), the endpoint and model it will use.
    Projects with more than ESTIMATE_SAMPLE item-steps in a step are planned from a sample."""
    from pipeline import llm_rater as rater  # loads NLTK and scikit-learn: kept out of web start-up

    # loads the openai client: only where an LLM or search API is called
    from pipeline.llm import usable

    config = rater_config(project, options)
    weighted, counts, sampled = [], {}, {}
    for step in options.steps:
        queryset = with_inputs(stages_to_rate(project, [step]), project)
        total = queryset.count()
        counts[step] = total
        if not total:
            continue
        stages = _sample(queryset, total)
        sampled[step] = len(stages)
        weight = total / len(stages)
        weighted += [(batch, weight) for batch in _plan(project, step, stages)]
    numbers = rater.estimate(
        weighted,
        concurrency=config.concurrency,
        seconds_per_call=options.seconds_per_call,
        prompt_price_per_1k=options.prompt_price_per_1k,
        completion_price_per_1k=options.completion_price_per_1k,
    )
    return {
        "steps": list(options.steps),
        "item_steps": {str(step): count for step, count in counts.items()},
        "item_steps_total": sum(counts.values()),
        "sampled": {str(step): n for step, n in sampled.items() if n < counts[step]},
        "scope": "item-steps with a consolidated gold record",
        "configured": usable(config),
        "endpoint": endpoint_name(config.base_url),
        "model": config.model or "",
        "call_kinds": {kind: rater.CALL_KINDS[kind] for kind in numbers["calls"]},
        **numbers,
    }


# -- starting a run -----------------------------------------------------------------------------


def active_run(project: Project) -> SystemRun | None:
    return SystemRun.objects.filter(
        project=project,
        source=SystemRunSource.LLM_RATER,
        state__in=[SystemRunState.QUEUED, SystemRunState.RUNNING],
    ).first()


def start_run(*, project: Project, user, options: RaterOptions, confirmed: bool) -> SystemRun:
    """Queue a rater run (after commit). Refused (DomainError) unconfirmed, without a configured
    endpoint, with nothing to rate, or while another rater run of the project is under way (two
    at once would pay for the same calls twice)."""
    if not confirmed:
        raise RaterOptionsError({"confirm": "look at the estimate first, then confirm to start the run"})
    summary = estimate(project, options)
    if not summary["configured"]:
        raise DomainError(
            "no LLM endpoint is configured for this project: staff set its LLM settings "
            "(base_url, model) or the server's LLM_BASE_URL and LLM_MODEL"
        )
    if not summary["item_steps_total"]:
        steps = ", ".join(map(str, options.steps))
        raise DomainError(f"nothing to rate: no item has a consolidated gold record in step {steps}")
    with transaction.atomic():
        lock_project_for_change(project.pk)  # one start at a time per project
        running = active_run(project)
        if running is not None:
            raise DomainError(
                f"rater run {running.id} ({running.get_state_display().lower()}) is under way: wait for it to end"
            )
        run = _create(project, user, summary, options)
        dispatch.queue("run_llm_rater", run.id)
    return run


def _create(project: Project, user, summary: dict, options: RaterOptions) -> SystemRun:
    system = f"LLM rater ({summary['model']})"[: SystemRun._meta.get_field("system").max_length]
    stamp = timezone.now().strftime("%Y-%m-%d %H:%M:%S")
    for attempt in range(1, 100):
        version = stamp if attempt == 1 else f"{stamp} #{attempt}"
        try:
            with transaction.atomic():
                return SystemRun.objects.create(
                    project=project,
                    system=system,
                    version=version,
                    source=SystemRunSource.LLM_RATER,
                    created_by=user if getattr(user, "is_authenticated", False) else None,
                    options={
                        **options.stored(),
                        "endpoint": summary["endpoint"],
                        "estimate": summary,
                    },
                    units_total=summary["item_steps_total"],
                )
        except IntegrityError:
            continue
    raise DomainError("could not name the run: too many runs of this model started this second")


# -- reading runs -------------------------------------------------------------------------------


def rater_runs(project: Project):
    return (
        SystemRun.objects.filter(project=project, source=SystemRunSource.LLM_RATER).defer("predictions").order_by("-id")
    )


def run_summary(run: SystemRun) -> dict:
    """A run as the page and the API show it (its options hold no secret)."""
    options = dict(run.options or {})
    options.pop("heartbeat", None)
    return {
        "id": run.id,
        "system": run.system,
        "version": run.version,
        "state": run.state,
        "units_done": run.units_done,
        "units_total": run.units_total,
        "ended": run.ended,
        "options": options,
        "errors": run.errors or [],
        "scored_tasks": sorted((run.scores or {}).keys()),
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }
