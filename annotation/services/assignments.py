"""Giving item-stages to annotators, balanced by load."""
from collections import Counter

from django.db import transaction
from django.db.models import Count

from annotation.kinds import get_kind
from annotation.models import Assignment, ItemStage, Membership, Project, Role, StageStatus

OPEN_FOR_ASSIGNMENT = (StageStatus.READY, StageStatus.ANNOTATING)


@transaction.atomic
def assign_open_stages(project: Project, stage_ids: list[int] | None = None) -> int:
    """Give every ready or annotating stage up to ``annotators_per_item`` distinct annotators.

    Each stage goes to the annotators with the fewest assignments in the project so far, so
    work stays balanced when annotators join later. Returns the number of new assignments.
    """
    annotator_ids = list(
        Membership.objects.filter(project=project, role=Role.ANNOTATOR).order_by("user_id").values_list("user_id", flat=True)
    )
    if not annotator_ids:
        return 0
    stages = ItemStage.objects.filter(
        item__project=project, status__in=OPEN_FOR_ASSIGNMENT, stage__in=get_kind(project.kind).annotatable_stages
    )
    if stage_ids is not None:
        stages = stages.filter(id__in=stage_ids)
    stages = stages.annotate(assigned=Count("assignments")).filter(assigned__lt=project.annotators_per_item)
    needy = list(stages.order_by("id").values_list("id", "assigned"))
    if not needy:
        return 0

    load = Counter({user_id: 0 for user_id in annotator_ids})
    load.update(
        Assignment.objects.filter(item_stage__item__project=project, user_id__in=annotator_ids).values_list("user_id", flat=True)
    )
    taken: dict[int, set[int]] = {}
    for stage_id, user_id in Assignment.objects.filter(item_stage_id__in=[s for s, _ in needy]).values_list(
        "item_stage_id", "user_id"
    ):
        taken.setdefault(stage_id, set()).add(user_id)

    new_assignments = []
    for stage_id, assigned in needy:
        already = taken.get(stage_id, set())
        candidates = sorted((u for u in annotator_ids if u not in already), key=lambda u: (load[u], u))
        for user_id in candidates[: project.annotators_per_item - assigned]:
            new_assignments.append(Assignment(item_stage_id=stage_id, user_id=user_id))
            load[user_id] += 1
    Assignment.objects.bulk_create(new_assignments, batch_size=2000)
    ItemStage.objects.filter(
        item__project=project, status=StageStatus.READY, assignments__isnull=False
    ).update(status=StageStatus.ANNOTATING)
    return len(new_assignments)
