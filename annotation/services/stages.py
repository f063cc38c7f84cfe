"""Moving items from one annotation step to the next."""
from django.db import transaction

from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, ItemStage, Project, StageStatus

from .locks import lock_project_of

MAX_UNITS = 500


def open_next_stages(project: Project, done_stage_ids: list[int]) -> list[int]:
    """Open the following step of items whose stage now has a gold record.

    The new stage starts in ``precomputing``: its pre-annotation (e.g. evidence retrieval for
    the consolidated checkworthy claims) runs in a task after the transaction commits.
    """
    kind = get_kind(project.kind)
    done = ItemStage.objects.filter(id__in=done_stage_ids, status=StageStatus.DONE).values_list("item_id", "stage")
    wanted = [(item_id, stage + 1) for item_id, stage in done if stage + 1 in kind.stages]
    if not wanted:
        return []
    existing = set(
        ItemStage.objects.filter(item_id__in=[i for i, _ in wanted]).values_list("item_id", "stage")
    )
    created = ItemStage.objects.bulk_create(
        [ItemStage(item_id=item_id, stage=stage, status=StageStatus.PRECOMPUTING)
         for item_id, stage in wanted if (item_id, stage) not in existing],
        batch_size=2000,
    )
    stage_ids = [s.id for s in created]
    if stage_ids:
        from annotation.tasks import enqueue_precompute

        transaction.on_commit(lambda: enqueue_precompute(stage_ids))
    return stage_ids


def correct_split(*, stage: ItemStage, units: list[str]) -> ItemStage:
    """An admin's sentence split (or segmentation) of an item, before any annotator has started
    it: the released data shows annotators fixing splits by hand, which no one can compare.

    The stage is pre-annotated again from the new units and handed out again (the untouched
    assignments are dropped, so the assignment that follows is balanced as usual)."""
    units = [" ".join(u.split()) for u in units]
    units = [u for u in units if u]
    if not units:
        raise DomainError("give at least one sentence, one a line")
    if len(units) > MAX_UNITS:
        raise DomainError(f"at most {MAX_UNITS} sentences, not {len(units)}")
    with transaction.atomic():
        # The lock order of annotation/services/locks.py: the project, the stage's assignments (in
        # a save's order: an annotator's first save either lands before the check below, which then
        # refuses, or finds its assignment gone, never deleted with it), then the stage alone: the
        # item and the project locked FOR UPDATE through the join deadlocked with adding an annotator.
        lock_project_of(stage_id=stage.pk)
        list(Assignment.objects.select_for_update(of=("self",)).filter(item_stage_id=stage.pk).order_by("id")
             .values_list("id", flat=True))
        stage = ItemStage.objects.select_for_update(of=("self",), no_key=True).select_related("item__project").get(pk=stage.pk)
        field = get_kind(stage.item.project.kind).split_field(stage.stage)
        if field is None:
            raise DomainError(f"step {stage.stage} takes its units from the step before: nothing to split")
        if stage.status not in (StageStatus.READY, StageStatus.ANNOTATING, StageStatus.FAILED):
            raise DomainError(f"this step is {stage.get_status_display().lower()}")
        if Annotation.objects.filter(assignment__item_stage=stage).exists():
            raise DomainError("an annotator has started this item: their work is about the current split")
        stage.assignments.all().delete()
        stage.content = {**stage.content, field: units}
        stage.suggestion = None
        stage.precompute_error = ""
        stage.status = StageStatus.PRECOMPUTING
        stage.save(update_fields=["content", "suggestion", "precompute_error", "status", "updated_at"])
        from annotation.tasks import enqueue_precompute

        stage_id = stage.id
        transaction.on_commit(lambda: enqueue_precompute([stage_id]))
    return stage
