"""Moving items from one annotation step to the next, and pre-annotating each step."""

import logging
from collections.abc import Callable
from functools import partial

from django.db import OperationalError, transaction

from annotation import dispatch
from annotation.exceptions import DomainError
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, ItemStage, Project, StageStatus

from .assignments import assign_open_stages
from .locks import lock_project_of

logger = logging.getLogger(__name__)
MAX_UNITS = 500
CHUNK_SIZE = 200

# The evidence wing's corpus search (annotation.evidence.corpus_search), handed to the kinds when
# they pre-annotate; plugged in by AnnotationConfig.ready, since the core never imports a wing.
_corpus_search: Callable | None = None


def use_corpus_search(search: Callable) -> None:
    """Set the search ``(project, query, ...) -> passages`` that pre-annotation retrieves with."""
    global _corpus_search
    _corpus_search = search


def corpus_search(project: Project, *args, **kwargs):
    """The plugged-in corpus search (see use_corpus_search)."""
    if _corpus_search is None:
        raise RuntimeError("no corpus search plugged in (AnnotationConfig.ready does it)")
    return _corpus_search(project, *args, **kwargs)


def enqueue_precompute(stage_ids: list[int]) -> None:
    """Queue the pre-annotation of item-stages (the task ``precompute_stages``), in chunks."""
    for start in range(0, len(stage_ids), CHUNK_SIZE):
        dispatch.send("precompute_stages", stage_ids[start : start + CHUNK_SIZE])


def precompute_stages(stage_ids: list[int]) -> dict:
    """Compute the content and suggestions of item-stages, then hand them to annotators.

    Idempotent (a stage that is no longer ``precomputing`` is skipped); each stage is written in
    its own transaction, so a worker that dies mid-task leaves no stage half written. Database
    and connection errors propagate (the task retries); any other error fails the one stage.
    """
    done, failed = 0, 0
    stages = ItemStage.objects.filter(id__in=stage_ids, status=StageStatus.PRECOMPUTING).select_related("item__project")
    for stage in stages:
        project = stage.item.project
        kind = get_kind(project.kind)
        earlier = {}
        if stage.stage > kind.stages[0]:
            earlier = {
                number: {"content": content, "gold": gold}
                for number, content, gold in ItemStage.objects.filter(
                    item_id=stage.item_id, stage__lt=stage.stage
                ).values_list("stage", "content", "gold__payload")
            }
        previous_gold = (earlier.get(stage.stage - 1) or {}).get("gold")
        try:
            result = kind.precompute(
                stage.stage,
                stage.item.prompt,
                stage.item.response,
                stage.content,
                project.pipeline_settings,
                previous_gold=previous_gold,
                evidence_search=partial(corpus_search, project),
                item_metadata=stage.item.metadata,
                earlier=earlier,
            )
        except (OperationalError, ConnectionError, TimeoutError):
            raise
        except Exception as exc:  # a bad item must not stop the others; its error is shown in the UI
            logger.exception("pre-annotation of %s failed", stage)
            ItemStage.objects.filter(pk=stage.pk, status=StageStatus.PRECOMPUTING).update(
                status=StageStatus.FAILED, precompute_error=f"{type(exc).__name__}: {exc}"
            )
            failed += 1
            continue
        with transaction.atomic():
            updated = ItemStage.objects.filter(pk=stage.pk, status=StageStatus.PRECOMPUTING).update(
                status=StageStatus.READY,
                content=result["content"],
                suggestion=result.get("suggestion"),
                provenance=result.get("provenance", {}),
                precompute_error="",
            )
        done += updated
    # Also the stages an earlier run of this task wrote before its worker died: they are ready
    # but may not be assigned yet.
    for project in Project.objects.filter(items__stages__id__in=stage_ids).distinct():
        assign_open_stages(project)
    return {"done": done, "failed": failed}


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
    existing = set(ItemStage.objects.filter(item_id__in=[i for i, _ in wanted]).values_list("item_id", "stage"))
    created = ItemStage.objects.bulk_create(
        [
            ItemStage(item_id=item_id, stage=stage, status=StageStatus.PRECOMPUTING)
            for item_id, stage in wanted
            if (item_id, stage) not in existing
        ],
        batch_size=2000,
    )
    stage_ids = [s.id for s in created]
    if stage_ids:
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
        list(
            Assignment.objects.select_for_update(of=("self",))
            .filter(item_stage_id=stage.pk)
            .order_by("id")
            .values_list("id", flat=True)
        )
        stage = (
            ItemStage.objects.select_for_update(of=("self",), no_key=True)
            .select_related("item__project")
            .get(pk=stage.pk)
        )
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
        stage_id = stage.id
        transaction.on_commit(lambda: enqueue_precompute([stage_id]))
    return stage
