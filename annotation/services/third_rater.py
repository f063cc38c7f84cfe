"""A third rater for a consolidation, as the Factcheck-Bench paper used for step 2.

The third rater annotates the item blind, like the first two, on the same page; the
consolidation then waits (``ConsolidationStatus.WAITING``) and reopens with all three answers
merged. Which stages allow one is the kind's ``third_rater_stages``; whether every item gets one
or only those a consolidator escalates is the project's ``third_rater`` setting.
"""

from annotation.kinds import get_kind
from annotation.models import (
    Consolidation,
    ConsolidationStatus,
    ItemStage,
    Project,
    StageStatus,
    ThirdRater,
)

from .assignments import assign_third_rater


def allows_third_rater(project: Project, stage: int) -> bool:
    return stage in get_kind(project.kind).third_rater_stages


def always_third_rater(project: Project, stage: int) -> bool:
    return allows_third_rater(project, stage) and project.third_rater == ThirdRater.ALWAYS


def wait_for_third_rater(
    stage: ItemStage,
    consolidation: Consolidation | None,
    *,
    exclude: set[int] = frozenset(),
    reason: str = "",
) -> Consolidation:
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
    assign_third_rater(
        stage,
        set(exclude) | ({consolidation.consolidator_id} if consolidation.consolidator_id else set()),
    )
    return consolidation
