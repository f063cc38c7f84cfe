"""Consolidation: from two (or more) submitted annotations to one gold record."""

from django.core.exceptions import PermissionDenied
from django.db import transaction

from annotation import dispatch
from annotation.exceptions import DomainError, VersionConflict
from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    Assignment,
    AssignmentRole,
    AssignmentStatus,
    Consolidation,
    ConsolidationStatus,
    GoldRecord,
    GoldSource,
    ItemStage,
    Project,
    StageEvent,
    StageStatus,
)

from .locks import lock_project_of
from .stages import open_next_stages
from .third_rater import allows_third_rater, always_third_rater, wait_for_third_rater


def enqueue_store_export_lines(project_id: int, item_ids: list[int] | None = None) -> None:
    """Store export lines (the task ``store_export_lines``) once the transaction that changed
    the gold records has committed."""
    if get_kind(Project.objects.values_list("kind", flat=True).get(pk=project_id)).stored_export_formats:
        dispatch.queue("store_export_lines", project_id, item_ids)


def open_consolidation_if_complete(stage: ItemStage) -> Consolidation | None:
    """Open the consolidation once every annotator of the stage has submitted (called with the
    item-stage locked).

    The draft starts with the fields all annotators agree on; the others are left empty and
    listed as disagreed. Where the project wants a third rater on every item of this step, the
    consolidation first waits for one; once the third rater submits, it opens (or reopens,
    after an escalation) with the three answers merged.
    """
    assignments = list(stage.assignments.all())
    annotators = [a for a in assignments if a.role == AssignmentRole.ANNOTATOR]
    project = stage.item.project
    wanted = project.annotators_for(stage.item_id)
    if len(annotators) < wanted:
        return None
    if any(a.status != AssignmentStatus.SUBMITTED for a in assignments):
        return None
    if wanted == 1 and len(assignments) == 1:
        _gold_from_the_one_submission(stage, assignments[0])
        return None
    existing = Consolidation.objects.filter(item_stage=stage).first()
    has_third = len(assignments) > len(annotators)
    payloads = list(
        Annotation.objects.filter(assignment__in=assignments)
        .order_by("assignment_id")
        .values_list("payload", flat=True)
    )
    kind = get_kind(project.kind)
    merged = kind.merge(stage.stage, stage.content, payloads)
    consolidation = existing or Consolidation(item_stage=stage)
    # merged even while it waits: the consolidation list and page show what the two disagree on
    consolidation.draft, consolidation.disagreed, consolidation.alignment = (
        merged.draft,
        merged.disagreed,
        merged.alignment,
    )
    consolidation.draft_rows = None
    if not has_third and always_third_rater(project, stage.stage):
        return wait_for_third_rater(stage, consolidation)
    stage.status = StageStatus.CONSOLIDATING
    stage.save(update_fields=["status", "updated_at"])
    consolidation.status = ConsolidationStatus.OPEN
    # a consolidator's tab opened before the third rater answered holds a stale draft
    consolidation.version += 1 if existing else 0
    consolidation.save()
    return consolidation


def _gold_from_the_one_submission(stage: ItemStage, assignment: Assignment) -> None:
    """An item outside the project's overlap share has one annotator: there is nothing to
    consolidate, and the submission is the gold record (marked so: pages, history and the raw
    export say which gold records no second annotator checked)."""
    payload = Annotation.objects.filter(assignment=assignment).values_list("payload", flat=True).get()
    GoldRecord.objects.update_or_create(
        item_stage=stage,
        defaults={
            "payload": payload,
            "source": GoldSource.SINGLE,
            "consolidated_by": None,
            "disagreed_fields": [],
        },
    )
    stage.status = StageStatus.DONE
    stage.save(update_fields=["status", "updated_at"])
    open_next_stages(stage.item.project, [stage.id])
    enqueue_store_export_lines(stage.item.project_id, [stage.item_id])


def check_not_annotator(consolidation: Consolidation, user) -> None:
    """Nobody consolidates an item they annotated (a 403, not a 400: it is about who asks).
    Checked once per instance and user: the API's view checks before the service it calls."""
    if user is None or getattr(consolidation, "_not_annotator_checked", None) == (user.pk, consolidation.item_stage_id):
        return
    if Assignment.objects.filter(item_stage_id=consolidation.item_stage_id, user=user).exists():
        raise PermissionDenied("you annotated this item: another consolidator consolidates it")
    consolidation._not_annotator_checked = (user.pk, consolidation.item_stage_id)


def lock_open_consolidation(consolidation: Consolidation, version: int | None) -> Consolidation:
    """Lock the item-stage, then the consolidation: the order the last submission of an item
    takes them in (it opens the consolidation), so neither waits for the other in a cycle."""
    lock_project_of(stage_id=consolidation.item_stage_id)  # the lock order: annotation/services/locks.py
    ItemStage.objects.select_for_update(no_key=True).filter(pk=consolidation.item_stage_id).values_list(
        "pk", flat=True
    ).first()
    consolidation = (
        Consolidation.objects.select_for_update(of=("self",))
        .select_related("item_stage__item__project")
        .filter(pk=consolidation.pk)
        .first()
    )
    if consolidation is None:  # deleted while this waited (its project, or the step before reopened)
        raise DomainError("this consolidation is gone: its project was deleted or the step before was reopened")
    if consolidation.status != ConsolidationStatus.OPEN:
        raise DomainError(f"this consolidation is {consolidation.get_status_display().lower()}")
    if version is not None and version != consolidation.version:
        raise VersionConflict(consolidation.version, version)
    return consolidation


def _check_draft_rows(rows, alignment) -> None:
    """``rows[i][j]``: the alignment row of the j-th unit of the draft's i-th part, or None."""
    if rows is None:
        return
    parts = alignment or []
    if not isinstance(rows, list) or len(rows) != len(parts):
        raise DomainError(f"draft_rows must be a list with one list per aligned part ({len(parts)})")
    for i, part_rows in enumerate(rows):
        if not isinstance(part_rows, list):
            raise DomainError(f"draft_rows[{i}] must be a list")
        for j, row in enumerate(part_rows):
            valid = row is None or (isinstance(row, int) and not isinstance(row, bool) and 0 <= row < len(parts[i]))
            if not valid:
                raise DomainError(f"draft_rows[{i}][{j}] must be null or an alignment row number below {len(parts[i])}")


def save_consolidation(
    *, consolidation: Consolidation, user, payload, version: int, submit: bool, draft_rows=None
) -> Consolidation:
    """Save the consolidator's draft; with ``submit`` it becomes the item-stage's gold record.

    ``draft_rows`` (optional) records which alignment row each unit of the draft came from, so
    the page links a rewritten claim to its annotators' claims again after a reload.
    """
    check_not_annotator(consolidation, user)
    with transaction.atomic():
        consolidation = lock_open_consolidation(consolidation, version)
        stage = consolidation.item_stage
        kind = get_kind(stage.item.project.kind)
        content = kind.payload_content(stage.content, lambda: stage.item.project.pipeline_settings)
        normalised = kind.validate_payload(stage.stage, content, payload, complete=submit)
        _check_draft_rows(draft_rows, consolidation.alignment)
        consolidation.draft = normalised
        if draft_rows is not None:
            consolidation.draft_rows = draft_rows
        consolidation.version += 1
        consolidation.consolidator = user
        if submit:
            consolidation.status = ConsolidationStatus.DONE
            GoldRecord.objects.update_or_create(
                item_stage=stage,
                defaults={
                    "payload": normalised,
                    "source": GoldSource.CONSOLIDATION,
                    "consolidated_by": user,
                    "disagreed_fields": consolidation.disagreed,
                },
            )
            stage.status = StageStatus.DONE
            stage.save(update_fields=["status", "updated_at"])
            open_next_stages(stage.item.project, [stage.id])
            enqueue_store_export_lines(stage.item.project_id, [stage.item_id])
        consolidation.save()
    return consolidation


def discard_item_stage(*, consolidation: Consolidation, user, reason: str) -> Consolidation:
    """Discard an item the annotators cannot agree on, as the Factcheck-Bench paper does."""
    check_not_annotator(consolidation, user)
    if not reason or not reason.strip():
        raise DomainError("a reason is required to discard an item")
    with transaction.atomic():
        consolidation = lock_open_consolidation(consolidation, None)
        consolidation.status = ConsolidationStatus.DISCARDED
        consolidation.discard_reason = reason.strip()
        consolidation.consolidator = user
        consolidation.version += 1
        consolidation.save()
        stage = consolidation.item_stage
        stage.status = StageStatus.DISCARDED
        stage.discard_reason = reason.strip()
        stage.save(update_fields=["status", "discard_reason", "updated_at"])
    return consolidation


def reopen_stage(*, stage: ItemStage, user, reason: str) -> Consolidation:
    """An admin takes back a saved gold record (the consolidation opens again from it) or a
    discard (the consolidation opens again from its draft), with a reason the history keeps.

    The next step was opened from this gold record: while nobody has worked on it, it is
    removed and opens again when the gold record is saved again; once it has annotations the
    reopening is refused (they would rest on a record that may change)."""
    reason = (reason or "").strip()
    if not reason:
        raise DomainError("a reason is required: the item's history keeps it")
    with transaction.atomic():
        lock_project_of(stage_id=stage.pk)  # then the stage alone (annotation/services/locks.py)
        stage = (
            ItemStage.objects.select_for_update(of=("self",), no_key=True)
            .select_related("item__project")
            .get(pk=stage.pk)
        )
        if stage.status not in (StageStatus.DONE, StageStatus.DISCARDED):
            raise DomainError(
                f"this step is {stage.get_status_display().lower()}: only a gold record or a discard is reopened"
            )
        later = ItemStage.objects.filter(item_id=stage.item_id, stage__gt=stage.stage)
        if Annotation.objects.filter(assignment__item_stage__in=later).exists():
            raise DomainError("the next step already has annotations resting on this gold record")
        restoring = stage.status == StageStatus.DISCARDED
        gold = GoldRecord.objects.filter(item_stage=stage).first()
        consolidation = Consolidation.objects.select_for_update(no_key=True).filter(item_stage=stage).first()
        if consolidation is None:  # an imported gold record: its consolidation starts from it
            consolidation = Consolidation(item_stage=stage, draft=gold.payload if gold else {}, disagreed=[])
        elif gold is not None:
            consolidation.draft = {k: v for k, v in gold.payload.items() if k != "released"}
        consolidation.status = ConsolidationStatus.OPEN
        consolidation.discard_reason = ""
        consolidation.version += 1
        consolidation.save()
        later.delete()
        stage.status = StageStatus.CONSOLIDATING
        stage.discard_reason = ""
        stage.save(update_fields=["status", "discard_reason", "updated_at"])
        StageEvent.objects.create(
            item_stage=stage,
            action=StageEvent.RESTORED if restoring else StageEvent.REOPENED,
            reason=reason,
            user=user,
        )
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
