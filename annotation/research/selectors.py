"""Reads of the research wing: agreement between annotators and with the gold records, the
agreement request's options, and the kind's scores of consolidated items."""

from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import date

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, Func, JSONField, QuerySet, Value
from django.utils import timezone

from annotation.kinds import get_kind
from annotation.kinds.base import AgreementItem
from annotation.models import (
    Annotation,
    AssignmentRole,
    GoldRecord,
    GoldSource,
    ItemStage,
    Project,
    StageStatus,
)
from annotation.params import parse_natural
from annotation.research import agreement, agreement_bootstrap

User = get_user_model()


# -- agreement --------------------------------------------------------------------------------

GOLD = "__gold__"


def _payloads_for_agreement(queryset: QuerySet, kind, *keys: str) -> Iterator[tuple]:
    """(keys…, payload) rows; on PostgreSQL only the parts agreement reads are fetched, which
    saves decoding whole payloads (most of the time at tens of thousands of annotations)."""
    if connection.vendor != "postgresql" or not kind.agreement_paths:
        yield from queryset.values_list(*keys, "payload").iterator(chunk_size=2000)
        return
    names = list(kind.agreement_paths)
    parts = Func(
        *(Func(F("payload"), Value(kind.agreement_paths[name]), function="jsonb_path_query_array") for name in names),
        function="jsonb_build_array",
        output_field=JSONField(),
    )
    # The parts are small: one fetch, no server-side cursor round trips.
    for row in queryset.annotate(agreement_parts=parts).values_list(*keys, "agreement_parts"):
        yield (*row[:-1], dict(zip(names, row[-1])))


def annotated_stage(project: Project, raw: str | None) -> int | None:
    """The stage a request names (``?stage=``), if annotators work in it; the first such stage
    when none is named; None for anything else."""
    stages = get_kind(project.kind).annotatable_stages
    if raw is None:
        return stages[0]
    stage = parse_natural(raw)
    return stage if stage in stages else None


MAX_RESAMPLES = 10_000
DEFAULT_RESAMPLES = 1000


def bootstrap_options(raw_resamples: str | None, raw_seed: str | None) -> tuple[int, int]:
    """``?resamples=`` (default 1000, 0 = no intervals, at most 10,000) and ``?seed=`` (default 0)
    of the agreement page and API; ValueError({parameter: message}) for anything else."""
    resamples = DEFAULT_RESAMPLES if raw_resamples in (None, "") else parse_natural(raw_resamples)
    if resamples is None or resamples > MAX_RESAMPLES:
        raise ValueError({"resamples": f"must be a whole number from 0 to {MAX_RESAMPLES:,}, not {raw_resamples!r}"})
    seed = 0 if raw_seed in (None, "") else parse_natural(raw_seed)
    if seed is None:
        raise ValueError({"seed": f"must be a whole number of at most 18 digits, not {raw_seed!r}"})
    return resamples, seed


def project_agreement(
    project: Project,
    stage: int = 1,
    resamples: int = 0,
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict:
    """Agreement per field between annotators, and of each annotator with the gold records.

    With ``resamples``, each number gets a 95 % bootstrap interval (``ci``) over resampled
    items (item-stages): units of one item are not independent. ``progress(fields done, fields,
    label of the next field)`` is called before each field (the Celery task shows it).

    Third raters are left out: they answer only some items (those escalated), picked because
    the first two disagreed, so counting them would bias the numbers towards disagreement."""
    kind = get_kind(project.kind)
    annotations = Annotation.objects.filter(
        submitted=True,
        assignment__item_stage__item__project=project,
        assignment__item_stage__stage=stage,
        assignment__role=AssignmentRole.ANNOTATOR,
    ).order_by("assignment__item_stage_id", "assignment_id")
    payloads_by_stage: dict[int, dict[int, dict]] = defaultdict(dict)
    items_by_user: dict[int, int] = defaultdict(int)
    # item-stage → local date of its later submission (agreement over time goes by it)
    submitted_by_stage: dict[int, date | None] = {}
    for stage_id, user_id, submitted_at, payload in _payloads_for_agreement(
        annotations,
        kind,
        "assignment__item_stage_id",
        "assignment__user_id",
        "assignment__submitted_at",
    ):
        payloads_by_stage[stage_id][user_id] = payload
        items_by_user[user_id] += 1
        day = timezone.localdate(submitted_at) if submitted_at else None
        earlier = submitted_by_stage.get(stage_id, day)
        submitted_by_stage[stage_id] = max(day, earlier) if day and earlier else None
    # A gold record taken from an item's one submission would agree with its annotator by construction.
    gold_by_stage = dict(
        _payloads_for_agreement(
            GoldRecord.objects.filter(item_stage__item__project=project, item_stage__stage=stage).exclude(
                source=GoldSource.SINGLE
            ),
            kind,
            "item_stage_id",
        )
    )

    agreement_fields = kind.agreement_fields_for(stage)
    per_field: dict[str, dict] = {name: {} for name in agreement_fields}
    # field → rater → {(item-stage, unit) → (the rater's value, the gold value)}
    with_gold: dict[str, dict] = {name: defaultdict(dict) for name in agreement_fields}
    for stage_id, payloads in payloads_by_stage.items():
        gold = gold_by_stage.get(stage_id)
        together = gold is not None and not kind.agreement_aligns_units
        units_by_field = kind.agreement_units(stage, {**payloads, GOLD: gold} if together else payloads)
        for name, units in units_by_field.items():
            target, tally = per_field[name], with_gold[name]
            for unit, values in units.items():
                reference = values.pop(GOLD, None) if together else None
                target[(stage_id, unit)] = values
                if reference is not None:
                    for rater, value in values.items():
                        tally[rater][(stage_id, unit)] = (value, reference)
        if gold is None or together:
            continue
        for user_id, payload in payloads.items():
            for name, units in kind.agreement_units(stage, {GOLD: gold, user_id: payload}).items():
                tally = with_gold[name][user_id]
                for unit, values in units.items():
                    if len(values) == 2:
                        tally[(stage_id, unit)] = (values[user_id], values[GOLD])

    usernames = dict(User.objects.filter(id__in=items_by_user).values_list("id", "username"))
    fields = {}
    for number, (name, label) in enumerate(agreement_fields.items()):
        if progress is not None:
            progress(number, len(agreement_fields), label)
        order = kind.ordinal_fields.get(name)
        result = agreement.field_agreement(
            per_field[name],
            labels=list(order) if order else None,
            ordinal=bool(order),
            resamples=resamples,
            seed=seed,
            item_of=lambda key: key[0],
        )
        for pair in result["pairs"]:
            # by name, not by user id (observed agreement and κ are symmetric)
            pair["raters"] = sorted(usernames.get(r, str(r)) for r in pair["raters"])
        result["pairs"].sort(key=lambda pair: pair["raters"])
        result["label"] = label
        result["agreement_with_gold"] = {
            usernames.get(rater, str(rater)): {
                "units": len(pairs),
                "agreement": (
                    sum(value == reference for value, reference in pairs.values()) / len(pairs) if pairs else None
                ),
            }
            for rater, pairs in with_gold[name].items()
        }
        result["versus_gold"] = sorted(
            (
                {
                    "annotator": usernames.get(rater, str(rater)),
                    **agreement.agreement_with_reference(
                        pairs,
                        labels=list(order) if order else None,
                        resamples=resamples,
                        seed=seed,
                        item_of=lambda key: key[0],
                    ),
                }
                for rater, pairs in with_gold[name].items()
                if pairs
            ),
            key=lambda row: row["annotator"],
        )
        result["over_time"] = agreement.agreement_over_time(
            per_field[name],
            submitted_by_stage,
            labels=list(order) if order else None,
            ordinal=bool(order),
            resamples=resamples,
            seed=seed,
            item_of=lambda key: key[0],
        )
        fields[name] = result
    suggestions = {}
    if kind.agreement_uses_suggestion:
        suggestions = dict(
            ItemStage.objects.filter(id__in=annotations.values("assignment__item_stage_id")).values_list(
                "id", "suggestion"
            )
        )
    extra = kind.extra_agreement(
        stage,
        (
            AgreementItem({usernames.get(u, str(u)): p for u, p in payloads.items()}, suggestions.get(s))
            for s, payloads in payloads_by_stage.items()
        ),
    )
    return {
        "stage": stage,
        "bootstrap": {
            "resamples": resamples,
            "seed": seed,
            "level": agreement_bootstrap.CI_LEVEL,
            "resampled": "items",
        },
        "fields": fields,
        **extra,
        "annotators": [
            {
                "username": usernames.get(user_id, str(user_id)),
                "items_submitted": count,
                "agreement_with_gold": {
                    name: fields[name]["agreement_with_gold"].get(usernames.get(user_id, str(user_id)))
                    for name in fields
                },
            }
            for user_id, count in sorted(items_by_user.items(), key=lambda kv: usernames.get(kv[0], ""))
        ],
    }


# -- the kind's scores of consolidated items ---------------------------------------------------


def consolidated_scores(project: Project, paragraph_limit: int = 500) -> dict | None:
    """The kind's scores of the consolidated step-1 items (KindSpec.consolidated_scores, e.g.
    D-FActScore's per paragraph and per source model), or None where the kind has none."""
    kind = get_kind(project.kind)
    if not kind.has_paragraph_scores:
        return None
    rows = (
        ItemStage.objects.filter(item__project=project, stage=1, status=StageStatus.DONE, gold__isnull=False)
        .order_by("item_id")
        .values_list("item_id", "item__external_id", "item__source", "content", "suggestion", "gold__payload")
    )
    return kind.consolidated_scores(rows.iterator(chunk_size=500), project.pipeline_settings, paragraph_limit)
