"""A third rater for a consolidation, as the Factcheck-Bench paper used for step 2.

The third rater annotates the item blind, like the first two, on the same page; the
consolidation then waits (``ConsolidationStatus.WAITING``) and reopens with all three answers
merged. Which stages allow one is the kind's ``third_rater_stages``; whether every item gets one
or only those a consolidator escalates is the project's ``third_rater`` setting.
"""
from django.db import transaction

from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import (
    Assignment,
    AssignmentRole,
    Consolidation,
    ConsolidationStatus,
    ItemStage,
    Project,
    StageStatus,
    ThirdRater,
)

from annotation.selectors import waiting_without_third_rater

from .assignments import annotator_ids, current_load


def allows_third_rater(project: Project, stage: int) -> bool:
    return stage in get_kind(project.kind).third_rater_stages


def always_third_rater(project: Project, stage: int) -> bool:
    return allows_third_rater(project, stage) and project.third_rater == ThirdRater.ALWAYS


def free_annotators(stage: ItemStage, exclude: set[int] = frozenset()) -> list[int]:
    """The project's annotators who could be the stage's third rater."""
    taken = set(stage.assignments.values_list("user_id", flat=True))
    return [u for u in annotator_ids(stage.item.project) if u not in taken and u not in exclude]


def _assign(stage: ItemStage, exclude: set[int]) -> Assignment | None:
    """The least-loaded project annotator who has not worked on the stage, nor is excluded
    (the consolidator who has seen the first two answers); None when nobody is free."""
    project = stage.item.project
    free = free_annotators(stage, exclude)
    if not free:
        return None
    load = current_load(project, free)
    user_id = min(free, key=lambda u: (load[u], u))
    return Assignment.objects.create(item_stage=stage, user_id=user_id, role=AssignmentRole.THIRD_RATER)


def wait_for_third_rater(stage: ItemStage, consolidation: Consolidation | None, *, exclude: set[int] = frozenset(),
                         reason: str = "") -> Consolidation:
    """Hold the consolidation until a third rater has submitted. Called with the item-stage
    locked; the stage goes back to annotating so the third rater's saves are accepted."""
    if consolidation is None:
        consolidation = Consolidation(item_stage=stage)
    consolidation.status = ConsolidationStatus.WAITING
    consolidation.escalation_reason = reason
    consolidation.version += 1
    consolidation.save()
    stage.status = StageStatus.ANNOTATING
    stage.save(update_fields=["status", "updated_at"])
    _assign(stage, set(exclude) | ({consolidation.consolidator_id} if consolidation.consolidator_id else set()))
    return consolidation


def escalate(*, consolidation: Consolidation, user, reason: str) -> Consolidation:
    """A consolidator asks for a third rater on an item the two annotators cannot settle.

    Refused where the stage has no third rater, or when one already answered. With no
    annotator free to be one, the item waits as in the ``always`` mode: the consolidation and
    project pages say so, and the next annotator added is given it
    (``assign_waiting_third_raters``). The consolidation's draft restarts from the three
    answers when the third rater submits."""
    reason = (reason or "").strip()
    if not reason:
        raise DomainError("a reason is required to ask for a third rater")
    from .consolidation import check_not_annotator, lock_open_consolidation

    check_not_annotator(consolidation, user)
    with transaction.atomic():
        consolidation = lock_open_consolidation(consolidation, None)
        stage = consolidation.item_stage
        project = stage.item.project
        if not allows_third_rater(project, stage.stage):
            raise DomainError("this step has no third rater")
        if stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists():
            raise DomainError("a third rater has already answered for this item")
        consolidation.consolidator = user
        consolidation = wait_for_third_rater(stage, consolidation, exclude={user.pk}, reason=reason)
    return consolidation


def assign_waiting_third_raters(project: Project) -> int:
    """Give a third rater to the waiting consolidations that have none (an annotator joined)."""
    assigned = 0
    waiting = waiting_without_third_rater(project).select_related("item_stage__item__project").order_by("item_stage_id")
    for consolidation in waiting:
        # the stage alone, in stage-id order (annotation/services/locks.py)
        stage = ItemStage.objects.select_for_update(of=("self",), no_key=True).select_related("item__project").get(
            pk=consolidation.item_stage_id)
        if stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists():
            continue
        exclude = {consolidation.consolidator_id} if consolidation.consolidator_id else set()
        assigned += _assign(stage, exclude) is not None
    return assigned
