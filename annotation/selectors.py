"""Reads of the workflow core: who may see what, queues, progress. (Agreement and scores:
annotation.research.selectors; the gold rows exports and research read: annotation.gold.)"""

from collections import defaultdict
from datetime import timedelta
from statistics import median

from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    Assignment,
    AssignmentRole,
    AssignmentStatus,
    Consolidation,
    ConsolidationStatus,
    Corpus,
    EvidenceSearch,
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

User = get_user_model()
VISIBLE_TO_ANNOTATORS = (
    StageStatus.ANNOTATING,
    StageStatus.CONSOLIDATING,
    StageStatus.DONE,
    StageStatus.DISCARDED,
)


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
        Assignment.objects.filter(
            user=user,
            item_stage__item__project=project,
            item_stage__status__in=VISIBLE_TO_ANNOTATORS,
        )
        .select_related("item_stage__item", "annotation")
        .order_by("id")
    )


def next_assignment(project: Project, user, after_id: int | None = None) -> Assignment | None:
    pending = assignments_for_user(project, user).filter(
        item_stage__status=StageStatus.ANNOTATING,
        status__in=(AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS),
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
        return {
            "payload": kind.empty_payload(stage.stage, stage.content, stage.suggestion),
            "version": 0,
            "submitted": False,
        }
    return {
        "payload": annotation.payload,
        "version": annotation.version,
        "submitted": annotation.submitted,
    }


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
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {status: counts.get(status, 0) for status in ConsolidationStatus.values}


def gold_counts(project: Project) -> dict:
    """The project's gold records, whether consolidated here or imported with the items: in all,
    imported, and per step. A record under reconsolidation is not counted until saved again."""
    rows = (
        GoldRecord.objects.filter(item_stage__item__project=project, item_stage__status=StageStatus.DONE)
        .values_list("item_stage__stage", "source")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_step: dict[int, int] = {step: 0 for step in get_kind(project.kind).stages}
    imported = 0
    for step, source, n in rows:
        by_step[step] = by_step.get(step, 0) + n
        imported += n if source == GoldSource.IMPORT else 0
    return {
        "total": sum(by_step.values()),
        "imported": imported,
        "by_step": sorted(by_step.items()),
    }


def waiting_without_third_rater(project: Project) -> QuerySet[Consolidation]:
    """Consolidations waiting for a third rater nobody could be given (no annotator was free)."""
    return (
        Consolidation.objects.filter(item_stage__item__project=project, status=ConsolidationStatus.WAITING)
        .annotate(
            raters=Count(
                "item_stage__assignments",
                filter=Q(item_stage__assignments__role=AssignmentRole.THIRD_RATER),
            )
        )
        .filter(raters=0)
    )


def consolidations_for_project(project: Project, status: str | list[str] | None = None) -> QuerySet[Consolidation]:
    queryset = Consolidation.objects.filter(item_stage__item__project=project).select_related(
        "item_stage__item", "consolidator"
    )
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
        {
            "slot": chr(ord("A") + i),
            "annotator": row.assignment.user.username,
            "role": row.assignment.role,
            "payload": row.payload,
        }
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
    stages = (
        ItemStage.objects.filter(item=item)
        .select_related("consolidation__consolidator", "gold__consolidated_by")
        .prefetch_related("assignments__user", "assignments__annotation")
        .order_by("stage")
    )
    kind = get_kind(item.project.kind)
    for stage in stages:
        consolidation = getattr(stage, "consolidation", None)
        gold = getattr(stage, "gold", None)
        assignments = list(stage.assignments.all())
        events = []
        for a in assignments:
            events.append(
                (
                    a.created_at,
                    f"assigned to {a.user.username}"
                    + (" (third rater)" if a.role == AssignmentRole.THIRD_RATER else ""),
                )
            )
            if a.started_at:
                events.append((a.started_at, f"{a.user.username} started"))
            if a.submitted_at:
                events.append((a.submitted_at, f"{a.user.username} submitted"))
        if consolidation:
            events.append((consolidation.created_at, "consolidation opened"))
            if consolidation.status != ConsolidationStatus.OPEN:
                who = f" by {consolidation.consolidator.username}" if consolidation.consolidator else ""
                events.append(
                    (
                        consolidation.updated_at,
                        f"consolidation {consolidation.get_status_display().lower()}{who}",
                    )
                )
        if gold:
            source = {
                GoldSource.IMPORT: "imported",
                GoldSource.SINGLE: "taken from the one annotator's submission",
            }.get(gold.source, "saved")
            who = f" by {gold.consolidated_by.username}" if gold.consolidated_by else ""
            events.append((gold.created_at, f"gold record {source}{who}"))
            if gold.updated_at and gold.updated_at > gold.created_at + timedelta(seconds=1):
                events.append((gold.updated_at, "gold record changed"))
        for event in stage.events.select_related("user"):
            who = f" by {event.user.username}" if event.user else ""
            events.append((event.created_at, f"{event.get_action_display().lower()}{who}: {event.reason}"))
        field = kind.split_field(stage.stage)
        steps.append(
            {
                "stage": stage,
                "assignments": [{"assignment": a, "annotation": getattr(a, "annotation", None)} for a in assignments],
                "consolidation": consolidation,
                "gold": gold,
                "events": sorted(events, key=lambda e: e[0]),
                "split_field": field,
                "units": (stage.content or {}).get(field) if field else None,
                "warnings": kind.item_warnings(
                    stage.stage,
                    stage.content or {},
                    item.metadata or {},
                    gold.payload if gold else None,
                ),
                "can_split": bool(field)
                and stage.status in (StageStatus.READY, StageStatus.ANNOTATING, StageStatus.FAILED)
                and not any(getattr(a, "annotation", None) for a in assignments),
            }
        )
    return steps


STUCK_AFTER_DAYS = 3


def project_overview(project: Project, stuck_days: int = STUCK_AFTER_DAYS) -> dict:
    """What an admin steers a campaign by: items per step and state, each annotator's work per
    step with the median active time of a submitted item, and what is stuck (assignments
    nobody started for ``stuck_days``, failed pre-annotations)."""
    kind = get_kind(project.kind)
    by_step: dict[int, dict[str, int]] = {step: {status: 0 for status in StageStatus.values} for step in kind.stages}
    for step, status, n in (
        ItemStage.objects.filter(item__project=project)
        .values_list("stage", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        by_step.setdefault(step, {s: 0 for s in StageStatus.values})[status] = n
    steps = [
        {
            "step": step,
            "total": sum(counts.values()),
            "states": [
                {"status": status, "label": StageStatus(status).label, "count": n} for status, n in counts.items() if n
            ],
        }
        for step, counts in sorted(by_step.items())
    ]
    work: dict[tuple[str, int], dict] = {}
    rows = (
        Assignment.objects.filter(item_stage__item__project=project)
        .values_list("user__username", "item_stage__stage", "status", "active_seconds")
        .order_by()
    )
    for username, step, status, seconds in rows.iterator(chunk_size=5000):
        entry = work.setdefault(
            (username, step),
            {"username": username, "step": step, "assigned": 0, "submitted": 0, "seconds": []},
        )
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
    untouched = (
        Assignment.objects.filter(
            item_stage__item__project=project,
            status=AssignmentStatus.ASSIGNED,
            created_at__lt=cutoff,
            item_stage__status=StageStatus.ANNOTATING,
        )
        .select_related("user", "item_stage__item")
        .order_by("created_at")
    )
    failed = (
        ItemStage.objects.filter(item__project=project, status=StageStatus.FAILED)
        .select_related("item")
        .order_by("item_id")
    )
    return {
        "steps": steps,
        "annotators": annotators,
        "stuck_days": stuck_days,
        "untouched": untouched[:50],
        "untouched_count": untouched.count(),
        "failed": failed[:50],
        "failed_count": failed.count(),
    }


def user_progress(project: Project, user) -> dict:
    counts = assignments_for_user(project, user).aggregate(
        total=Count("id"), submitted=Count("id", filter=Q(status=AssignmentStatus.SUBMITTED))
    )
    return {"total": counts["total"], "submitted": counts["submitted"]}


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
    return (
        Corpus.objects.filter(projects__memberships__user=user, projects__memberships__role=Role.ADMIN)
        .distinct()
        .order_by("-id")
    )
