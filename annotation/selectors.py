"""Reads of the annotation domain: who may see what, queues, progress, agreement, export rows."""
from collections import defaultdict
from datetime import date, timedelta
from statistics import median
from itertools import groupby, islice
from typing import Callable, Iterable, Iterator

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, F, Func, JSONField, Q, QuerySet, Sum, Value
from django.utils import timezone

from annotation.research import agreement
from annotation.kinds import get_kind
from annotation.kinds.base import AgreementItem
from annotation.models import (
    Annotation,
    Assignment,
    AssignmentRole,
    AssignmentStatus,
    Consolidation,
    ConsolidationStatus,
    Corpus,
    EvidenceSearch,
    ExportLine,
    GoldRecord,
    GoldSource,
    ImportJob,
    Item,
    ItemStage,
    Membership,
    Project,
    Role,
    StageStatus,
)
from annotation.params import parse_natural

User = get_user_model()
VISIBLE_TO_ANNOTATORS = (StageStatus.ANNOTATING, StageStatus.CONSOLIDATING, StageStatus.DONE, StageStatus.DISCARDED)


# -- access -----------------------------------------------------------------------------------

def user_roles(user, project: Project) -> set[str]:
    if not user.is_authenticated:
        return set()
    roles = set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))
    if user.is_superuser:
        roles.add(Role.ADMIN)
    return roles


def is_project_admin(user, project: Project) -> bool:
    return Role.ADMIN in user_roles(user, project)


def can_consolidate(user, project: Project) -> bool:
    return bool(user_roles(user, project) & {Role.ADMIN, Role.CONSOLIDATOR})


def annotated_by(stage_id: int, user) -> bool:
    """Whether ``user`` annotated the item-stage (as annotator or third rater): they must not
    consolidate it, or the gold record would side with one of its own answers."""
    return Assignment.objects.filter(item_stage_id=stage_id, user=user).exists()


def consolidators_who_annotate(project: Project) -> tuple[int, int]:
    """(users who can consolidate, how many of them also annotate) in the project."""
    roles: dict[int, set[str]] = defaultdict(set)
    for user_id, role in Membership.objects.filter(project=project).values_list("user_id", "role"):
        roles[user_id].add(role)
    able = [u for u, r in roles.items() if r & {Role.ADMIN, Role.CONSOLIDATOR}]
    return len(able), sum(Role.ANNOTATOR in roles[u] for u in able)


def can_create_projects(user) -> bool:
    return user.is_authenticated and (user.is_staff or user.is_superuser)


def can_create_users(user) -> bool:
    """Staff only: an account may be added to any project its creator runs."""
    return can_create_projects(user)


def projects_administered_by(user) -> QuerySet[Project]:
    if user.is_superuser:
        return Project.objects.order_by("name")
    return Project.objects.filter(memberships__user=user, memberships__role=Role.ADMIN).distinct().order_by("name")


def can_change_llm_settings(user) -> bool:
    """Staff only: the LLM endpoint decides where item texts and the stored key are sent."""
    return bool(user is not None and user.is_authenticated and (user.is_staff or user.is_superuser))


MASKED_SECRET = "********"


def masked_pipeline_settings(project: Project) -> dict:
    """The project's pipeline settings as members may read them: every endpoint's api_key masked."""
    settings = dict(project.pipeline_settings or {})
    for name in ("llm", "web_search"):
        section = settings.get(name)
        if isinstance(section, dict) and section.get("api_key"):
            settings[name] = {**section, "api_key": MASKED_SECRET}
    return settings


def projects_for_user(user) -> QuerySet[Project]:
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def members(project: Project) -> QuerySet[Membership]:
    return Membership.objects.filter(project=project).select_related("user").order_by("role", "user__username")


# -- annotator queue --------------------------------------------------------------------------

def assignments_for_user(project: Project, user) -> QuerySet[Assignment]:
    """The caller's own assignments; never anyone else's (blind double annotation)."""
    return (
        Assignment.objects.filter(user=user, item_stage__item__project=project, item_stage__status__in=VISIBLE_TO_ANNOTATORS)
        .select_related("item_stage__item", "annotation")
        .order_by("id")
    )


def next_assignment(project: Project, user, after_id: int | None = None) -> Assignment | None:
    pending = assignments_for_user(project, user).filter(
        item_stage__status=StageStatus.ANNOTATING, status__in=(AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS)
    )
    if after_id is not None:
        later = pending.filter(id__gt=after_id).first()
        if later:
            return later
    return pending.first()


def annotation_state(assignment: Assignment) -> dict:
    """What the annotation page and API show for an assignment: payload and version."""
    stage = assignment.item_stage
    annotation = getattr(assignment, "annotation", None)
    if annotation is None:
        kind = get_kind(stage.item.project.kind)
        return {"payload": kind.empty_payload(stage.stage, stage.content, stage.suggestion), "version": 0, "submitted": False}
    return {"payload": annotation.payload, "version": annotation.version, "submitted": annotation.submitted}


# -- consolidation ----------------------------------------------------------------------------

def previous_step(stage: ItemStage) -> dict | None:
    """The content and gold record of the item's step before ``stage``, or None."""
    row = (
        ItemStage.objects.filter(item_id=stage.item_id, stage=stage.stage - 1)
        .values("content", "gold__payload")
        .first()
    )
    return {"content": row["content"], "gold": row["gold__payload"]} if row else None


def consolidation_counts(project: Project) -> dict[str, int]:
    """How many consolidations of the project are open, done and discarded."""
    counts = dict(
        Consolidation.objects.filter(item_stage__item__project=project)
        .values_list("status").annotate(n=Count("id")).order_by()
    )
    return {status: counts.get(status, 0) for status in ConsolidationStatus.values}


def gold_counts(project: Project) -> dict:
    """The project's gold records, whether consolidated here or imported with the items: in all,
    imported, and per step. A record under reconsolidation is not counted until saved again."""
    rows = (GoldRecord.objects.filter(item_stage__item__project=project, item_stage__status=StageStatus.DONE)
            .values_list("item_stage__stage", "source").annotate(n=Count("id")).order_by())
    by_step: dict[int, int] = {step: 0 for step in get_kind(project.kind).stages}
    imported = 0
    for step, source, n in rows:
        by_step[step] = by_step.get(step, 0) + n
        imported += n if source == GoldSource.IMPORT else 0
    return {"total": sum(by_step.values()), "imported": imported, "by_step": sorted(by_step.items())}


def export_summary(project: Project) -> dict:
    """How many items the consolidated exports hold and why the others are left out.

    An export has one record per item whose first step has a gold record (gold_rows); later
    steps are joined where done. ``complete`` counts the items with every step done."""
    kind = get_kind(project.kind)
    first, last = min(kind.stages), max(kind.stages)
    by_status = dict(ItemStage.objects.filter(item__project=project, stage=first).values_list("status")
                     .annotate(n=Count("id")).order_by())
    exported = GoldRecord.objects.filter(item_stage__item__project=project, item_stage__stage=first,
                                         item_stage__status=StageStatus.DONE).count()
    discarded = by_status.get(StageStatus.DISCARDED, 0)
    items = project.items.count()
    annotations = dict(Annotation.objects.filter(assignment__item_stage__item__project=project)
                       .values_list("submitted").annotate(n=Count("id")).order_by())
    return {
        "items": items, "exported": exported, "discarded": discarded,
        "not_consolidated": items - exported - discarded,
        "complete": (GoldRecord.objects.filter(item_stage__item__project=project, item_stage__stage=last,
                                               item_stage__status=StageStatus.DONE).count() if last != first else exported),
        "steps": len(kind.stages),
        "annotations": annotations.get(True, 0), "drafts": annotations.get(False, 0),
    }


def waiting_without_third_rater(project: Project) -> QuerySet[Consolidation]:
    """Consolidations waiting for a third rater nobody could be given (no annotator was free)."""
    return (
        Consolidation.objects.filter(item_stage__item__project=project, status=ConsolidationStatus.WAITING)
        .annotate(raters=Count("item_stage__assignments", filter=Q(item_stage__assignments__role=AssignmentRole.THIRD_RATER)))
        .filter(raters=0)
    )


def consolidations_for_project(project: Project, status: str | list[str] | None = None) -> QuerySet[Consolidation]:
    queryset = Consolidation.objects.filter(item_stage__item__project=project).select_related("item_stage__item", "consolidator")
    if isinstance(status, list):
        queryset = queryset.filter(status__in=status)
    elif status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("id")


def consolidation_annotations(consolidation: Consolidation) -> list[dict]:
    """The submitted annotations under consolidation, labelled A, B, … in assignment order."""
    rows = (
        Annotation.objects.filter(assignment__item_stage=consolidation.item_stage, submitted=True)
        .select_related("assignment__user")
        .order_by("assignment_id")
    )
    return [
        {"slot": chr(ord("A") + i), "annotator": row.assignment.user.username, "role": row.assignment.role,
         "payload": row.payload}
        for i, row in enumerate(rows)
    ]


def next_consolidation(project: Project, after_id: int | None = None, user=None) -> Consolidation | None:
    """The next open consolidation, skipping items ``user`` annotated."""
    open_ones = consolidations_for_project(project, ConsolidationStatus.OPEN)
    if user is not None:
        open_ones = open_ones.exclude(item_stage__assignments__user=user)
    if after_id is not None:
        later = open_ones.filter(id__gt=after_id).first()
        if later:
            return later
    return open_ones.first()


# -- progress ---------------------------------------------------------------------------------

def project_progress(project: Project) -> dict:
    by_status = dict(
        ItemStage.objects.filter(item__project=project).values_list("status").annotate(n=Count("id")).order_by()
    )
    annotators = (
        Assignment.objects.filter(item_stage__item__project=project)
        .values("user__username")
        .annotate(
            assigned=Count("id"),
            submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED)),
            active_seconds=Sum("active_seconds", filter=Q(status=AssignmentStatus.SUBMITTED)),
        )
        .order_by("user__username")
    )
    return {
        "items": project.items.count(),
        "stages": {status: by_status.get(status, 0) for status in StageStatus.values},
        "annotators": [
            {
                "username": row["user__username"],
                "assigned": row["assigned"],
                "submitted": row["submitted"],
                "seconds_per_item": (row["active_seconds"] or 0) / row["submitted"] if row["submitted"] else None,
            }
            for row in annotators
        ],
        "open_consolidations": Consolidation.objects.filter(
            item_stage__item__project=project, status=ConsolidationStatus.OPEN
        ).count(),
    }


def item_detail(item: Item) -> list[dict]:
    """Every step of an item as its admins and consolidators see it: content, machine
    suggestion and provenance, each annotator's work, the consolidation, the gold record, and a
    timeline of what happened when. Never shown to annotators."""
    steps = []
    stages = (ItemStage.objects.filter(item=item).select_related("consolidation__consolidator", "gold__consolidated_by")
              .prefetch_related("assignments__user", "assignments__annotation").order_by("stage"))
    kind = get_kind(item.project.kind)
    for stage in stages:
        consolidation = getattr(stage, "consolidation", None)
        gold = getattr(stage, "gold", None)
        assignments = list(stage.assignments.all())
        events = []
        for a in assignments:
            events.append((a.created_at, f"assigned to {a.user.username}" + (" (third rater)" if a.role == AssignmentRole.THIRD_RATER else "")))
            if a.started_at:
                events.append((a.started_at, f"{a.user.username} started"))
            if a.submitted_at:
                events.append((a.submitted_at, f"{a.user.username} submitted"))
        if consolidation:
            events.append((consolidation.created_at, "consolidation opened"))
            if consolidation.status != ConsolidationStatus.OPEN:
                who = f" by {consolidation.consolidator.username}" if consolidation.consolidator else ""
                events.append((consolidation.updated_at, f"consolidation {consolidation.get_status_display().lower()}{who}"))
        if gold:
            source = {GoldSource.IMPORT: "imported", GoldSource.SINGLE: "taken from the one annotator's submission"}.get(
                gold.source, "saved")
            who = f" by {gold.consolidated_by.username}" if gold.consolidated_by else ""
            events.append((gold.created_at, f"gold record {source}{who}"))
            if gold.updated_at and gold.updated_at > gold.created_at + timedelta(seconds=1):
                events.append((gold.updated_at, "gold record changed"))
        for event in stage.events.select_related("user"):
            who = f" by {event.user.username}" if event.user else ""
            events.append((event.created_at, f"{event.get_action_display().lower()}{who}: {event.reason}"))
        field = kind.split_field(stage.stage)
        steps.append({
            "stage": stage, "assignments": [{"assignment": a, "annotation": getattr(a, "annotation", None)} for a in assignments],
            "consolidation": consolidation, "gold": gold, "events": sorted(events, key=lambda e: e[0]),
            "split_field": field, "units": (stage.content or {}).get(field) if field else None,
            "warnings": kind.item_warnings(stage.stage, stage.content or {}, item.metadata or {},
                                           gold.payload if gold else None),
            "can_split": bool(field) and stage.status in (StageStatus.READY, StageStatus.ANNOTATING, StageStatus.FAILED)
                         and not any(getattr(a, "annotation", None) for a in assignments),
        })
    return steps


STUCK_AFTER_DAYS = 3


def project_overview(project: Project, stuck_days: int = STUCK_AFTER_DAYS) -> dict:
    """What an admin steers a campaign by: items per step and state, each annotator's work per
    step with the median active time of a submitted item, and what is stuck (assignments
    nobody started for ``stuck_days``, failed pre-annotations)."""
    kind = get_kind(project.kind)
    by_step: dict[int, dict[str, int]] = {step: {status: 0 for status in StageStatus.values} for step in kind.stages}
    for step, status, n in (ItemStage.objects.filter(item__project=project).values_list("stage", "status")
                            .annotate(n=Count("id")).order_by()):
        by_step.setdefault(step, {s: 0 for s in StageStatus.values})[status] = n
    steps = [{"step": step, "total": sum(counts.values()),
              "states": [{"status": status, "label": StageStatus(status).label, "count": n} for status, n in counts.items() if n]}
             for step, counts in sorted(by_step.items())]
    work: dict[tuple[str, int], dict] = {}
    rows = (Assignment.objects.filter(item_stage__item__project=project)
            .values_list("user__username", "item_stage__stage", "status", "active_seconds").order_by())
    for username, step, status, seconds in rows.iterator(chunk_size=5000):
        entry = work.setdefault((username, step), {"username": username, "step": step, "assigned": 0, "submitted": 0, "seconds": []})
        entry["assigned"] += 1
        if status == AssignmentStatus.SUBMITTED:
            entry["submitted"] += 1
            entry["seconds"].append(seconds)
    annotators = []
    for key in sorted(work):
        entry = work[key]
        seconds = entry.pop("seconds")
        entry["median_seconds"] = median(seconds) if seconds else None
        annotators.append(entry)
    cutoff = timezone.now() - timedelta(days=stuck_days)
    untouched = (Assignment.objects.filter(item_stage__item__project=project, status=AssignmentStatus.ASSIGNED,
                                           created_at__lt=cutoff, item_stage__status=StageStatus.ANNOTATING)
                 .select_related("user", "item_stage__item").order_by("created_at"))
    failed = (ItemStage.objects.filter(item__project=project, status=StageStatus.FAILED)
              .select_related("item").order_by("item_id"))
    return {"steps": steps, "annotators": annotators, "stuck_days": stuck_days,
            "untouched": untouched[:50], "untouched_count": untouched.count(),
            "failed": failed[:50], "failed_count": failed.count()}


def user_progress(project: Project, user) -> dict:
    counts = assignments_for_user(project, user).aggregate(
        total=Count("id"), submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED))
    )
    return {"total": counts["total"], "submitted": counts["submitted"]}


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


def project_agreement(project: Project, stage: int = 1, resamples: int = 0, seed: int = 0,
                      progress: Callable[[int, int, str], None] | None = None) -> dict:
    """Agreement per field between annotators, and of each annotator with the gold records.

    With ``resamples``, each number gets a 95 % bootstrap interval (``ci``) over resampled
    items (item-stages): units of one item are not independent. ``progress(fields done, fields,
    label of the next field)`` is called before each field (the Celery task shows it).

    Third raters are left out: they answer only some items (those escalated), picked because
    the first two disagreed, so counting them would bias the numbers towards disagreement."""
    kind = get_kind(project.kind)
    annotations = Annotation.objects.filter(
        submitted=True, assignment__item_stage__item__project=project, assignment__item_stage__stage=stage,
        assignment__role=AssignmentRole.ANNOTATOR,
    ).order_by("assignment__item_stage_id", "assignment_id")
    payloads_by_stage: dict[int, dict[int, dict]] = defaultdict(dict)
    items_by_user: dict[int, int] = defaultdict(int)
    # item-stage → local date of its later submission (agreement over time goes by it)
    submitted_by_stage: dict[int, date | None] = {}
    for stage_id, user_id, submitted_at, payload in _payloads_for_agreement(
        annotations, kind, "assignment__item_stage_id", "assignment__user_id", "assignment__submitted_at"
    ):
        payloads_by_stage[stage_id][user_id] = payload
        items_by_user[user_id] += 1
        day = timezone.localdate(submitted_at) if submitted_at else None
        earlier = submitted_by_stage.get(stage_id, day)
        submitted_by_stage[stage_id] = max(day, earlier) if day and earlier else None
    # A gold record taken from an item's one submission would agree with its annotator by construction.
    gold_by_stage = dict(_payloads_for_agreement(
        GoldRecord.objects.filter(item_stage__item__project=project, item_stage__stage=stage)
        .exclude(source=GoldSource.SINGLE), kind, "item_stage_id"
    ))

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
        result = agreement.field_agreement(per_field[name], labels=list(order) if order else None, ordinal=bool(order),
                                           resamples=resamples, seed=seed, item_of=lambda key: key[0])
        for pair in result["pairs"]:
            # by name, not by user id (observed agreement and κ are symmetric)
            pair["raters"] = sorted(usernames.get(r, str(r)) for r in pair["raters"])
        result["pairs"].sort(key=lambda pair: pair["raters"])
        result["label"] = label
        result["agreement_with_gold"] = {
            usernames.get(rater, str(rater)): {"units": len(pairs), "agreement": (
                sum(value == reference for value, reference in pairs.values()) / len(pairs) if pairs else None)}
            for rater, pairs in with_gold[name].items()
        }
        result["versus_gold"] = sorted((
            {"annotator": usernames.get(rater, str(rater)),
             **agreement.agreement_with_reference(pairs, labels=list(order) if order else None, resamples=resamples,
                                                  seed=seed, item_of=lambda key: key[0])}
            for rater, pairs in with_gold[name].items() if pairs), key=lambda row: row["annotator"])
        result["over_time"] = agreement.agreement_over_time(
            per_field[name], submitted_by_stage, labels=list(order) if order else None, ordinal=bool(order),
            resamples=resamples, seed=seed, item_of=lambda key: key[0])
        fields[name] = result
    suggestions = {}
    if kind.agreement_uses_suggestion:
        suggestions = dict(
            ItemStage.objects.filter(id__in=annotations.values("assignment__item_stage_id")).values_list("id", "suggestion")
        )
    extra = kind.extra_agreement(
        stage,
        (AgreementItem({usernames.get(u, str(u)): p for u, p in payloads.items()}, suggestions.get(s))
         for s, payloads in payloads_by_stage.items()),
    )
    return {
        "stage": stage,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": agreement.CI_LEVEL, "resampled": "items"},
        "fields": fields,
        **extra,
        "annotators": [
            {
                "username": usernames.get(user_id, str(user_id)),
                "items_submitted": count,
                "agreement_with_gold": {
                    name: fields[name]["agreement_with_gold"].get(usernames.get(user_id, str(user_id))) for name in fields
                },
            }
            for user_id, count in sorted(items_by_user.items(), key=lambda kv: usernames.get(kv[0], ""))
        ],
    }


# -- export -----------------------------------------------------------------------------------

LATER_STAGES_CHUNK = 250


def gold_rows(project: Project, stage: int = 1, later_stages: Iterable[int] = (), metadata: bool = True,
              item_ids: Iterable[int] | None = None) -> Iterator[dict]:
    """Consolidated items of a project, one plain dict each, streamed from the database.

    With ``later_stages``, each row also has ``stages``: {stage: {"content", "gold"}} for those of
    the item's later stages that are done, fetched per chunk of rows (small chunks: a step-2
    content holds every evidence passage). ``metadata=False`` leaves the items' metadata out
    (``row["metadata"]`` is empty) where the export does not write it; ``item_ids`` keeps to those items."""
    rows = _gold_rows(project, stage, metadata, item_ids)
    later_stages = list(later_stages)
    if not later_stages:
        yield from rows
        return
    while chunk := list(islice(rows, LATER_STAGES_CHUNK)):
        later: dict[int, dict] = defaultdict(dict)
        done = GoldRecord.objects.filter(
            item_stage__item_id__in=[row["item_id"] for row in chunk], item_stage__stage__in=later_stages,
            item_stage__status=StageStatus.DONE,
        ).values_list("item_stage__item_id", "item_stage__stage", "item_stage__content", "payload")
        for item_id, number, content, payload in done:
            later[item_id][number] = {"content": content, "gold": payload}
        for row in chunk:
            row["stages"] = later.get(row["item_id"], {})
            yield row


def _gold_rows(project: Project, stage: int, metadata: bool = True, item_ids: Iterable[int] | None = None) -> Iterator[dict]:
    fields = ["payload", "item_stage__content", "item_stage__item_id", "item_stage__item__external_id",
              "item_stage__item__source", "item_stage__item__domain", "item_stage__item__prompt",
              "item_stage__item__response"]
    queryset = (
        GoldRecord.objects.filter(item_stage__item__project=project, item_stage__stage=stage, item_stage__status=StageStatus.DONE)
        .order_by("item_stage__item_id")
        .values(*fields, *(["item_stage__item__metadata"] if metadata else []))
    )
    if item_ids is not None:
        queryset = queryset.filter(item_stage__item_id__in=list(item_ids))
    for row in queryset.iterator(chunk_size=2000):
        yield {
            "item_id": row["item_stage__item_id"],
            "external_id": row["item_stage__item__external_id"],
            "source": row["item_stage__item__source"],
            "domain": row["item_stage__item__domain"],
            "prompt": row["item_stage__item__prompt"],
            "response": row["item_stage__item__response"],
            "metadata": row.get("item_stage__item__metadata") or {},
            "content": row["item_stage__content"],
            "gold": row["payload"],
        }


def _stamps_sql(item_filter: str) -> str:
    """Per item: md5 of the renderer version and of the item's row, steps and gold records as
    last written (ids and ``xmin``, the transaction that wrote each row version) — see ExportLine."""
    item, stage, gold = Item._meta.db_table, ItemStage._meta.db_table, GoldRecord._meta.db_table
    return f"""
        SELECT i.id AS item_id,
               md5(%(version)s || i.xmin::text || ':' || string_agg(
                   s.id::text || '.' || s.xmin::text || '.' || coalesce(g.id::text || '.' || g.xmin::text, ''),
                   ',' ORDER BY s.id)) AS stamp
        FROM {item} i JOIN {stage} s ON s.item_id = i.id LEFT JOIN {gold} g ON g.item_stage_id = s.id
        WHERE {item_filter}
        GROUP BY i.id"""


def export_stamps(item_ids: list[int], version: str) -> dict[int, str]:
    """The current stamp of each of these items (PostgreSQL only)."""
    if not item_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_stamps_sql("i.id = ANY(%(ids)s)"), {"version": version, "ids": list(item_ids)})
        return dict(cursor.fetchall())


def stored_export_lines(project: Project, fmt: str, version: str, chunk: int = 500) -> Iterator[list[tuple[int, str | None]]]:
    """Chunks of (item id, stored line — None when missing or stale) for each item the gold
    export holds (its first step consolidated), in item order (PostgreSQL only)."""
    stage, gold, line = ItemStage._meta.db_table, GoldRecord._meta.db_table, ExportLine._meta.db_table
    sql = f"""
        WITH stamps AS ({_stamps_sql("i.project_id = %(project)s")})
        SELECT st.item_id, e.line
        FROM stamps st
        JOIN {stage} s1 ON s1.item_id = st.item_id AND s1.stage = %(first)s AND s1.status = %(done)s
        JOIN {gold} g1 ON g1.item_stage_id = s1.id
        LEFT JOIN {line} e ON e.item_id = st.item_id AND e.format = %(format)s AND e.stamp = st.stamp
        ORDER BY st.item_id"""
    params = {"version": version, "project": project.id, "first": get_kind(project.kind).stages[0],
              "done": StageStatus.DONE, "format": fmt}
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(chunk):
            yield rows


def annotation_rows(project: Project) -> Iterator[dict]:
    """Every annotator's submitted annotation, for agreement studies outside the app."""
    queryset = (
        Annotation.objects.filter(submitted=True, assignment__item_stage__item__project=project)
        .order_by("assignment__item_stage__item_id", "assignment__item_stage__stage", "assignment_id")
        .values(
            "payload", "version", "updated_at", "assignment__user__username", "assignment__role", "assignment__started_at",
            "assignment__submitted_at", "assignment__active_seconds", "assignment__item_stage__stage",
            "assignment__item_stage__content", "assignment__item_stage__item_id", "assignment__item_stage__item__external_id",
        )
    )
    for row in queryset.iterator(chunk_size=2000):
        yield {
            "item_id": row["assignment__item_stage__item_id"],
            "external_id": row["assignment__item_stage__item__external_id"],
            "stage": row["assignment__item_stage__stage"],
            "annotator": row["assignment__user__username"],
            "role": row["assignment__role"],
            "content": row["assignment__item_stage__content"],
            "payload": row["payload"],
            "version": row["version"],
            "started_at": _iso(row["assignment__started_at"]),
            "submitted_at": _iso(row["assignment__submitted_at"]),
            "active_seconds": row["assignment__active_seconds"],
            # False: one of the items outside the overlap share, whose one submission is its gold record
            "double_annotated": project.is_overlap_item(row["assignment__item_stage__item_id"]),
        }


def _iso(value):
    return value.isoformat() if value else None


def evidence_search(project: Project, user, search_id) -> "EvidenceSearch | None":
    """One of ``user``'s own searches in the project (a search says what its author looks into)."""
    return EvidenceSearch.objects.filter(project=project, user=user, pk=search_id).first()


def import_jobs(project: Project) -> QuerySet:
    """The project's import jobs, newest first."""
    return ImportJob.objects.filter(project=project).select_related("created_by").order_by("-id")


def corpora_for_user(user) -> QuerySet:
    """Every corpus for staff; for others, the corpora of the projects they administer."""
    if can_create_projects(user):
        return Corpus.objects.order_by("-id")
    return Corpus.objects.filter(projects__memberships__user=user, projects__memberships__role=Role.ADMIN).distinct().order_by("-id")


# -- the kind's scores of consolidated items ---------------------------------------------------

def consolidated_scores(project: Project, paragraph_limit: int = 500) -> dict | None:
    """The kind's scores of the consolidated step-1 items (KindSpec.consolidated_scores, e.g.
    D-FActScore's per paragraph and per source model), or None where the kind has none."""
    kind = get_kind(project.kind)
    if not kind.has_paragraph_scores:
        return None
    rows = (ItemStage.objects.filter(item__project=project, stage=1, status=StageStatus.DONE, gold__isnull=False)
            .order_by("item_id")
            .values_list("item_id", "item__external_id", "item__source", "content", "suggestion", "gold__payload"))
    return kind.consolidated_scores(rows.iterator(chunk_size=500), project.pipeline_settings, paragraph_limit)


UNIT_ROWS_CHUNK = 250


def agreement_unit_rows(project: Project, stage: int | None = None) -> Iterator[dict]:
    """Each item-stage with submitted annotations, in item and step order: its content, each
    annotator's payload by username (assignment order, so a third rater comes last), the third
    rater's username, and the gold record's payload (None until the step is consolidated).
    Contents and gold records are fetched per chunk of item-stages (a step-2 content is large).
    ``stage``: that step's item-stages only."""
    annotations = (
        Annotation.objects.filter(submitted=True, assignment__item_stage__item__project=project,
                                  **({"assignment__item_stage__stage": stage} if stage is not None else {}))
        .order_by("assignment__item_stage__item_id", "assignment__item_stage__stage", "assignment_id")
        .values_list("assignment__item_stage_id", "assignment__user__username", "assignment__role", "payload")
        .iterator(chunk_size=2000)
    )
    groups = ((stage_id, list(rows)) for stage_id, rows in groupby(annotations, key=lambda row: row[0]))
    while chunk := list(islice(groups, UNIT_ROWS_CHUNK)):
        ids = [stage_id for stage_id, _ in chunk]
        stages = {row[0]: row[1:] for row in ItemStage.objects.filter(id__in=ids).values_list(
            "id", "stage", "content", "item_id", "item__external_id")}
        gold = dict(GoldRecord.objects.filter(item_stage_id__in=ids, item_stage__status=StageStatus.DONE)
                    .values_list("item_stage_id", "payload"))
        for stage_id, rows in chunk:
            stage, content, item_id, external_id = stages[stage_id]
            yield {
                "item_id": item_id, "external_id": external_id, "stage": stage, "content": content,
                "payloads": {username: payload for _, username, _, payload in rows},
                "third_rater": next((username for _, username, role, _ in rows if role == AssignmentRole.THIRD_RATER), None),
                "gold": gold.get(stage_id),
            }
