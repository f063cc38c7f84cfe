"""Retrieving a unit's evidence again (e.g. one step-2 claim whose web search failed), while
annotators work on the item.

The passages are what annotators judge, so this is refused once any annotator of the item has
submitted (they would have judged other passages), and the drafts' answers about the old
passages are cleared, with a new version, so an open tab reloads instead of saving stale stances.
"""

from functools import partial

from django.db import transaction

from annotation import dispatch
from annotation.evidence.corpus_search import corpus_search
from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, ItemStage, StageStatus
from annotation.services.locks import project_still_there

OPEN = (StageStatus.READY, StageStatus.ANNOTATING)


def _check(stage: ItemStage, index: int) -> None:
    kind = get_kind(stage.item.project.kind)
    if stage.stage not in kind.retrievable_stages:
        raise DomainError(f"step {stage.stage} has no evidence to retrieve")
    if stage.status not in OPEN:
        raise DomainError(
            f"this item is {stage.get_status_display().lower()}: evidence is retrieved again only "
            "before its annotators submit"
        )
    units = (stage.content or {}).get("claims") or []
    if not 0 <= index < len(units):
        raise DomainError(
            f"claim: must be a claim number from 0 to {len(units) - 1}" if units else "this item has no claims"
        )
    if Annotation.objects.filter(assignment__item_stage=stage, submitted=True).exists():
        raise DomainError("an annotator has submitted this item: their stances are about the current passages")


def request_retrieval(*, stage: ItemStage, index: int) -> None:
    """Check the request now (a clear 400), retrieve in a task after the commit."""
    _check(stage, index)
    dispatch.queue("retrieve_unit_again", stage.id, index)


def retrieve_again(stage_id: int, index: int) -> bool:
    """The task's body: retrieve (slow, no lock held), then store under the locks a submission
    takes, in its order (assignments, then the item-stage). False when the item moved on."""
    stage = ItemStage.objects.select_related("item__project").filter(pk=stage_id).first()
    if stage is None:  # its project was deleted
        return False
    project = stage.item.project
    kind = get_kind(project.kind)
    try:
        _check(stage, index)
    except DomainError:
        return False
    unit = kind.retrieve_unit(
        stage.stage,
        stage.content,
        index,
        project.pipeline_settings,
        partial(corpus_search, project),
    )
    with transaction.atomic():
        if not project_still_there(project.pk):  # the lock order: annotation/services/locks.py
            return False
        list(
            Assignment.objects.select_for_update(of=("self",))
            .filter(item_stage_id=stage_id)
            .order_by("id")
            .values_list("id", flat=True)
        )
        stage = (
            ItemStage.objects.select_for_update(of=("self",), no_key=True)
            .select_related("item__project")
            .filter(pk=stage_id)
            .first()
        )
        if stage is None:
            return False
        try:
            _check(stage, index)
        except DomainError:
            return False
        content = dict(stage.content)
        content["claims"] = list(content["claims"])
        content["claims"][index] = unit
        stage.content = content
        stage.save(update_fields=["content", "updated_at"])
        for annotation in Annotation.objects.filter(assignment__item_stage=stage):
            annotation.payload = kind.clear_unit_answer(stage.stage, content, annotation.payload, index)
            annotation.version += 1
            annotation.save(update_fields=["payload", "version", "updated_at"])
    return True
