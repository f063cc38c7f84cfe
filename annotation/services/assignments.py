"""Giving item-stages to annotators, balanced by load."""

from collections import Counter

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import (
    Assignment,
    AssignmentRole,
    AssignmentStatus,
    ItemStage,
    Membership,
    Project,
    Role,
    StageStatus,
)
from annotation.selectors import waiting_without_third_rater

from .locks import lock_project_for_assigning, lock_project_of

OPEN_FOR_ASSIGNMENT = (StageStatus.READY, StageStatus.ANNOTATING)
BATCH_SIZE = 2000


def annotator_ids(project: Project) -> list[int]:
    return list(
        Membership.objects.filter(project=project, role=Role.ANNOTATOR)
        .order_by("user_id")
        .values_list("user_id", flat=True)
    )


def current_load(project: Project, annotators: list[int]) -> Counter:
    load = Counter({user_id: 0 for user_id in annotators})
    load.update(
        dict(
            Assignment.objects.filter(item_stage__item__project=project, user_id__in=annotators)
            .values_list("user_id")
            .annotate(n=Count("id"))
            .order_by()
        )
    )
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


def assign_new_stages(
    project: Project, stage_ids: list[int], annotators: list[int], load: Counter | None = None
) -> int:
    """Assign freshly created stages, which have no assignments yet (the import's fast path).

    ``load`` (from ``current_load``) is kept up to date in place, so an import written in
    batches counts the project's assignments once rather than once per batch. On PostgreSQL,
    once the loads are level (see ``rotation_offset``) the rest is one ``INSERT ... SELECT``
    that gives the same (stage, user) pairs, in the same order, as ``_plan``."""
    if not annotators or not stage_ids:
        return 0
    load = current_load(project, annotators) if load is None else load
    if project.overlap_share >= 1:
        needs = [(stage_id, set(), project.annotators_per_item) for stage_id in stage_ids]
    else:
        items = dict(ItemStage.objects.filter(id__in=stage_ids).values_list("id", "item_id"))
        needs = [(stage_id, set(), project.annotators_for(items[stage_id])) for stage_id in stage_ids]
    if connection.vendor != "postgresql" or project.overlap_share < 1:
        planned = _plan(needs, annotators, load)
        _insert(planned)
        return len(planned)
    annotators = sorted(annotators)
    planned, start = [], 0
    while start < len(needs) and rotation_offset(annotators, load) is None:  # level the loads first
        planned += _plan(needs[start : start + 1], annotators, load)
        start += 1
    _insert(planned)
    return len(planned) + _insert_rotation(stage_ids[start:], annotators, load, project.annotators_per_item)


def rotation_offset(annotators: list[int], load: Counter) -> int | None:
    """Where the next stage's annotators start in ``annotators`` (sorted by id) when the loads are
    level: the first p annotators have one assignment more than the others, the rest the same.
    From such a state ``_plan`` gives stage i the annotators at positions (p + i*k + j) mod A,
    j < k (k annotators a stage, at most A), and stays in such a state; None otherwise."""
    lowest = min(load[u] for u in annotators)
    ahead = [load[u] - lowest for u in annotators]
    p = sum(ahead)
    return p if ahead == [1] * p + [0] * (len(annotators) - p) else None


def rotation_plan(stage_ids: list[int], annotators: list[int], offset: int, per_stage: int) -> list[tuple[int, int]]:
    """The (stage id, user id) pairs of the rotation (what ``_insert_rotation`` writes in SQL)."""
    count, k = len(annotators), min(per_stage, len(annotators))
    return [
        (stage_id, annotators[(offset + index * k + j) % count])
        for index, stage_id in enumerate(stage_ids)
        for j in range(k)
    ]


def _insert_rotation(stage_ids: list[int], annotators: list[int], load: Counter, per_stage: int) -> int:
    """Assign stages by the rotation in one statement; ``load`` updated as ``_plan`` would."""
    if not stage_ids:
        return 0
    offset = rotation_offset(annotators, load)
    count, k = len(annotators), min(per_stage, len(annotators))
    meta = Assignment._meta
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(meta.db_table)} (item_stage_id, user_id, role, status, created_at, active_seconds) "
            "SELECT s.id, (%s::integer[])[(%s + (s.n - 1) * %s + j) %% %s + 1], %s, %s, %s, 0 "
            "FROM unnest(%s::bigint[]) WITH ORDINALITY AS s(id, n) CROSS JOIN generate_series(0, %s) AS j "
            "ORDER BY s.n, j",
            [
                annotators,
                offset,
                k,
                count,
                Assignment.role.field.default,
                Assignment.status.field.default,
                timezone.now(),
                stage_ids,
                k - 1,
            ],
        )
    total = len(stage_ids) * k
    for position, user_id in enumerate(annotators):
        load[user_id] += total // count + ((position - offset) % count < total % count)
    return total


def _insert(planned: list[tuple[int, int]], ignore_conflicts: bool = False) -> None:
    """Write new (stage, user) assignments; on PostgreSQL with COPY, which is several times
    faster than building an INSERT (and a model object) for each of tens of thousands of rows.
    ``ignore_conflicts``: an assignment that exists already is left as it is (ON CONFLICT DO
    NOTHING; COPY cannot), for stages other writers may be assigning too."""
    if not planned:
        return
    if connection.vendor != "postgresql" or ignore_conflicts:
        Assignment.objects.bulk_create(
            [Assignment(item_stage_id=stage_id, user_id=user_id) for stage_id, user_id in planned],
            batch_size=BATCH_SIZE,
            ignore_conflicts=ignore_conflicts,
        )
        return
    meta = Assignment._meta
    fields = [meta.get_field(name) for name in ("item_stage", "user", "role", "status", "created_at", "active_seconds")]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    now = timezone.now()
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {connection.ops.quote_name(meta.db_table)} ({columns}) FROM STDIN") as copy,
    ):
        role, status = Assignment.role.field.default, Assignment.status.field.default
        for stage_id, user_id in planned:
            copy.write_row((stage_id, user_id, role, status, now, 0))


@transaction.atomic
def assign_open_stages(project: Project, stage_ids: list[int] | None = None) -> int:
    """Give every ready or annotating stage up to ``annotators_per_item`` distinct annotators.

    Each stage goes to the annotators with the fewest assignments in the project so far, so
    work stays balanced when annotators join later. Returns the number of new assignments.

    Idempotent under concurrency: pre-annotation tasks of one project end at the same moment and
    each assigns the project's open stages. Without a lock they plan from the same snapshot and
    collide on the (stage, user) uniqueness, or give a stage more annotators than it needs; with
    the project row locked, each caller reads what the one before it wrote. NO KEY UPDATE, the
    weakest lock that serializes them: the foreign-key checks of rows inserted into the project
    (FOR KEY SHARE on its row, when an import commits) do not wait for it, nor it for them.
    """
    if not lock_project_for_assigning(project.pk):  # deleted while a task was about to assign its items
        return 0
    annotators = annotator_ids(project)
    if not annotators:
        return 0
    stages = ItemStage.objects.filter(
        item__project=project,
        status__in=OPEN_FOR_ASSIGNMENT,
        stage__in=get_kind(project.kind).annotatable_stages,
    )
    if stage_ids is not None:
        stages = stages.filter(id__in=stage_ids)
    stages = stages.annotate(
        assigned=Count("assignments", filter=Q(assignments__role=AssignmentRole.ANNOTATOR))
    ).filter(assigned__lt=project.annotators_per_item)
    needy = [
        (stage_id, assigned, project.annotators_for(item_id) - assigned)
        for stage_id, assigned, item_id in stages.order_by("id").values_list("id", "assigned", "item_id")
    ]
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
    _insert(planned, ignore_conflicts=True)
    ItemStage.objects.filter(id__in={stage_id for stage_id, _ in planned}, status=StageStatus.READY).update(
        status=StageStatus.ANNOTATING
    )
    return len(planned) + assign_waiting_third_raters(project)


def free_annotators(stage: ItemStage, exclude: set[int] = frozenset()) -> list[int]:
    """The project's annotators who could be the stage's third rater."""
    taken = set(stage.assignments.values_list("user_id", flat=True))
    return [u for u in annotator_ids(stage.item.project) if u not in taken and u not in exclude]


def assign_third_rater(stage: ItemStage, exclude: set[int]) -> Assignment | None:
    """The least-loaded project annotator who has not worked on the stage, nor is excluded
    (the consolidator who has seen the first two answers); None when nobody is free."""
    project = stage.item.project
    free = free_annotators(stage, exclude)
    if not free:
        return None
    load = current_load(project, free)
    user_id = min(free, key=lambda u: (load[u], u))
    return Assignment.objects.create(item_stage=stage, user_id=user_id, role=AssignmentRole.THIRD_RATER)


def assign_waiting_third_raters(project: Project) -> int:
    """Give a third rater to the waiting consolidations that have none (an annotator joined)."""
    assigned = 0
    waiting = waiting_without_third_rater(project).select_related("item_stage__item__project").order_by("item_stage_id")
    for consolidation in waiting:
        # the stage alone, in stage-id order (annotation/services/locks.py)
        stage = (
            ItemStage.objects.select_for_update(of=("self",), no_key=True)
            .select_related("item__project")
            .get(pk=consolidation.item_stage_id)
        )
        if stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists():
            continue
        exclude = {consolidation.consolidator_id} if consolidation.consolidator_id else set()
        assigned += assign_third_rater(stage, exclude) is not None
    return assigned


@transaction.atomic
def reassign(assignment: Assignment) -> Assignment:
    """Give an assignment nobody started to the least-loaded other annotator of the project who
    has not worked on the item-stage (the admin's fix for a stalled item)."""
    lock_project_of(assignment_id=assignment.pk)  # then the assignment alone (annotation/services/locks.py)
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item_stage__item__project")
        .filter(pk=assignment.pk)
        .first()
    )
    if assignment is None:  # deleted while this waited for its lock (a split, a member removed)
        raise DomainError("this assignment is gone: its item was split again or its annotator removed")
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
