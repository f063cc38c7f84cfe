"""Giving item-stages to annotators, balanced by load."""
from collections import Counter

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import Assignment, AssignmentRole, AssignmentStatus, ItemStage, Membership, Project, Role, StageStatus
from annotation.selectors import waiting_without_third_rater

OPEN_FOR_ASSIGNMENT = (StageStatus.READY, StageStatus.ANNOTATING)
BATCH_SIZE = 2000


def annotator_ids(project: Project) -> list[int]:
    return list(
        Membership.objects.filter(project=project, role=Role.ANNOTATOR).order_by("user_id").values_list("user_id", flat=True)
    )


def current_load(project: Project, annotators: list[int]) -> Counter:
    load = Counter({user_id: 0 for user_id in annotators})
    load.update(dict(
        Assignment.objects.filter(item_stage__item__project=project, user_id__in=annotators)
        .values_list("user_id").annotate(n=Count("id")).order_by()
    ))
    return load


def _plan(needs: list[tuple[int, set[int], int]], annotators: list[int], load: Counter) -> list[tuple[int, int]]:
    """Each (stage, annotators it has, how many more it needs) gets the least-loaded others;
    returns (stage id, user id) pairs."""
    planned = []
    for stage_id, already, missing in needs:
        candidates = sorted((u for u in annotators if u not in already), key=lambda u: (load[u], u))
        for user_id in candidates[:missing]:
            planned.append((stage_id, user_id))
            load[user_id] += 1
    return planned


def assign_new_stages(project: Project, stage_ids: list[int], annotators: list[int], load: Counter | None = None) -> int:
    """Assign freshly created stages, which have no assignments yet (the import's fast path).

    ``load`` (from ``current_load``) is kept up to date in place, so an import written in
    batches counts the project's assignments once rather than once per batch."""
    if not annotators or not stage_ids:
        return 0
    if project.overlap_share >= 1:
        needs = [(stage_id, set(), project.annotators_per_item) for stage_id in stage_ids]
    else:
        items = dict(ItemStage.objects.filter(id__in=stage_ids).values_list("id", "item_id"))
        needs = [(stage_id, set(), project.annotators_for(items[stage_id])) for stage_id in stage_ids]
    planned = _plan(needs, annotators, current_load(project, annotators) if load is None else load)
    _insert(planned)
    return len(planned)


def _insert(planned: list[tuple[int, int]]) -> None:
    """Write new (stage, user) assignments; on PostgreSQL with COPY, which is several times
    faster than building an INSERT (and a model object) for each of tens of thousands of rows."""
    if connection.vendor != "postgresql":
        Assignment.objects.bulk_create(
            [Assignment(item_stage_id=stage_id, user_id=user_id) for stage_id, user_id in planned], batch_size=BATCH_SIZE
        )
        return
    meta = Assignment._meta
    fields = [meta.get_field(name) for name in ("item_stage", "user", "role", "status", "created_at", "active_seconds")]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    now = timezone.now()
    with connection.cursor() as cursor, cursor.cursor.copy(
        f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN"
    ) as copy:
        role, status = Assignment.role.field.default, Assignment.status.field.default
        for stage_id, user_id in planned:
            copy.write_row((stage_id, user_id, role, status, now, 0))


@transaction.atomic
def assign_open_stages(project: Project, stage_ids: list[int] | None = None) -> int:
    """Give every ready or annotating stage up to ``annotators_per_item`` distinct annotators.

    Each stage goes to the annotators with the fewest assignments in the project so far, so
    work stays balanced when annotators join later. Returns the number of new assignments.
    """
    annotators = annotator_ids(project)
    if not annotators:
        return 0
    stages = ItemStage.objects.filter(
        item__project=project, status__in=OPEN_FOR_ASSIGNMENT, stage__in=get_kind(project.kind).annotatable_stages
    )
    if stage_ids is not None:
        stages = stages.filter(id__in=stage_ids)
    stages = stages.annotate(assigned=Count("assignments", filter=Q(assignments__role=AssignmentRole.ANNOTATOR))).filter(
        assigned__lt=project.annotators_per_item
    )
    needy = [(stage_id, assigned, project.annotators_for(item_id) - assigned)
             for stage_id, assigned, item_id in stages.order_by("id").values_list("id", "assigned", "item_id")]
    needy = [row for row in needy if row[2] > 0]
    if not needy:
        return assign_waiting_third_raters(project)
    taken: dict[int, set[int]] = {}
    for stage_id, user_id in Assignment.objects.filter(item_stage_id__in=[s for s, _, _ in needy]).values_list(
        "item_stage_id", "user_id"
    ):
        taken.setdefault(stage_id, set()).add(user_id)
    needs = [(stage_id, taken.get(stage_id, set()), missing) for stage_id, _, missing in needy]
    planned = _plan(needs, annotators, current_load(project, annotators))
    _insert(planned)
    ItemStage.objects.filter(id__in={stage_id for stage_id, _ in planned}, status=StageStatus.READY).update(
        status=StageStatus.ANNOTATING
    )
    return len(planned) + assign_waiting_third_raters(project)


def assign_third_rater(stage: ItemStage, exclude: set[int]) -> Assignment | None:
    """The least-loaded project annotator who has not worked on the stage, nor is excluded
    (the consolidator who has seen the first two answers); None when nobody is free."""
    project = stage.item.project
    taken = set(stage.assignments.values_list("user_id", flat=True))
    free = [u for u in annotator_ids(project) if u not in taken and u not in exclude]
    if not free:
        return None
    load = current_load(project, free)
    user_id = min(free, key=lambda u: (load[u], u))
    return Assignment.objects.create(item_stage=stage, user_id=user_id, role=AssignmentRole.THIRD_RATER)


def assign_waiting_third_raters(project: Project) -> int:
    """Give a third rater to the waiting consolidations that have none (an annotator joined)."""
    assigned = 0
    for consolidation in waiting_without_third_rater(project).select_related("item_stage__item__project"):
        stage = ItemStage.objects.select_for_update().select_related("item__project").get(pk=consolidation.item_stage_id)
        if stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists():
            continue
        exclude = {consolidation.consolidator_id} if consolidation.consolidator_id else set()
        assigned += assign_third_rater(stage, exclude) is not None
    return assigned


@transaction.atomic
def reassign(assignment: Assignment) -> Assignment:
    """Give an assignment nobody started to the least-loaded other annotator of the project who
    has not worked on the item-stage (the admin's fix for a stalled item)."""
    assignment = Assignment.objects.select_for_update().select_related("item_stage__item__project").get(pk=assignment.pk)
    if assignment.status != AssignmentStatus.ASSIGNED or hasattr(assignment, "annotation"):
        raise DomainError("this assignment was started: its annotator's work would be lost")
    stage = assignment.item_stage
    project = stage.item.project
    taken = set(stage.assignments.values_list("user_id", flat=True))
    free = [u for u in annotator_ids(project) if u not in taken]
    if not free:
        raise DomainError("no other annotator of the project is free to take it: add an annotator first")
    load = current_load(project, free)
    assignment.user_id = min(free, key=lambda u: (load[u], u))
    assignment.created_at = timezone.now()
    assignment.save(update_fields=["user", "created_at"])
    return assignment
