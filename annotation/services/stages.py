"""Moving items from one annotation step to the next."""
from django.db import transaction

from annotation.kinds import get_kind
from annotation.models import ItemStage, Project, StageStatus


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
