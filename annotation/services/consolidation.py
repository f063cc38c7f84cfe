"""Consolidation: from two (or more) submitted annotations to one gold record."""
from django.db import transaction

from annotation.exceptions import DomainError, VersionConflict
from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    AssignmentStatus,
    Consolidation,
    ConsolidationStatus,
    GoldRecord,
    GoldSource,
    ItemStage,
    StageStatus,
)


def open_consolidation_if_complete(stage: ItemStage) -> Consolidation | None:
    """Open the consolidation once every annotator of the stage has submitted.

    The draft starts with the fields all annotators agree on; the others are left empty and
    listed as disagreed.
    """
    assignments = list(stage.assignments.all())
    if len(assignments) < stage.item.project.annotators_per_item:
        return None
    if any(a.status != AssignmentStatus.SUBMITTED for a in assignments):
        return None
    payloads = list(
        Annotation.objects.filter(assignment__in=assignments).order_by("assignment_id").values_list("payload", flat=True)
    )
    kind = get_kind(stage.item.project.kind)
    merged = kind.merge(stage.stage, stage.content, payloads)
    stage.status = StageStatus.CONSOLIDATING
    stage.save(update_fields=["status", "updated_at"])
    consolidation, _ = Consolidation.objects.update_or_create(
        item_stage=stage,
        defaults={"draft": merged.draft, "disagreed": merged.disagreed, "alignment": merged.alignment,
                  "status": ConsolidationStatus.OPEN},
    )
    return consolidation


def _lock_open_consolidation(consolidation: Consolidation, version: int | None) -> Consolidation:
    consolidation = Consolidation.objects.select_for_update(of=("self",)).select_related("item_stage__item__project").get(
        pk=consolidation.pk
    )
    if consolidation.status != ConsolidationStatus.OPEN:
        raise DomainError(f"this consolidation is {consolidation.get_status_display().lower()}")
    if version is not None and version != consolidation.version:
        raise VersionConflict(consolidation.version, version)
    return consolidation


def save_consolidation(*, consolidation: Consolidation, user, payload, version: int, submit: bool) -> Consolidation:
    """Save the consolidator's draft; with ``submit`` it becomes the item-stage's gold record."""
    with transaction.atomic():
        consolidation = _lock_open_consolidation(consolidation, version)
        stage = consolidation.item_stage
        kind = get_kind(stage.item.project.kind)
        normalised = kind.validate_payload(stage.stage, stage.content, payload, complete=submit)
        consolidation.draft = normalised
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
            from .stages import open_next_stages

            open_next_stages(stage.item.project, [stage.id])
        consolidation.save()
    return consolidation


def discard_item_stage(*, consolidation: Consolidation, user, reason: str) -> Consolidation:
    """Discard an item the annotators cannot agree on, as the Factcheck-Bench paper does."""
    if not reason or not reason.strip():
        raise DomainError("a reason is required to discard an item")
    with transaction.atomic():
        consolidation = _lock_open_consolidation(consolidation, None)
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
