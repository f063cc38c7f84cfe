"""Saving annotators' work: drafts, submission, and the version check against stale tabs."""

import json

from django.db import connection, transaction
from django.db.models import CharField, F, Func, Value
from django.utils import timezone

from annotation.exceptions import DomainError, VersionConflict
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, AssignmentStatus, ItemStage, StageStatus

from .consolidation import open_consolidation_if_complete
from .locks import lock_project_of

MAX_ACTIVE_SECONDS_PER_SAVE = 3600


def _lock_assignment(
    assignment: Assignment, user, *, relaxed_commit: bool = False
) -> tuple[Assignment, Annotation | None]:
    """Lock only the assignment row (locking the joined project row too would queue every save
    of a project behind every other), then read its annotation.

    The annotation must be read by a query of its own, after the lock is held: a row joined
    into the locking query keeps the version it had when that query started, so a save that
    waited for the lock would check its version against a stale one and overwrite the save it
    waited for. Every write of an annotation holds this lock, so what is read here is current.
    """
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item_stage")
        .annotate(project_kind=F("item_stage__item__project__kind"))
    )
    if user is not None:
        locked = locked.filter(user=user)
    if relaxed_commit:
        # SET LOCAL synchronous_commit TO OFF within the locking query: one round trip less a save.
        locked = locked.annotate(
            _commit_mode=Func(
                Value("synchronous_commit"),
                Value("off"),
                Value(True),
                function="set_config",
                output_field=CharField(),
            )
        )
    assignment = locked.get(pk=assignment.pk)
    return assignment, Annotation.objects.filter(assignment=assignment).first()


def save_annotation(
    *,
    assignment: Assignment,
    payload,
    version: int,
    submit: bool,
    active_seconds: int = 0,
    user=None,
) -> Annotation:
    """Store a new version of the annotator's payload.

    ``version`` must be the version the client last loaded; anything else means another tab
    saved in between, and the save is refused with the stored version. Submitting demands a
    complete payload and, once every annotator of the item-stage has submitted, opens the
    consolidation. With ``user``, an assignment of anyone else raises Assignment.DoesNotExist.
    """
    on_postgresql = connection.vendor == "postgresql"
    with transaction.atomic():
        lock_project_of(assignment_id=assignment.pk)  # the lock order: annotation/services/locks.py
        # A draft is saved again within seconds; not waiting for its WAL flush halves the
        # save's time, and a database crash can lose at most the last moment of a draft.
        # Submissions keep the full durability guarantee.
        assignment, annotation = _lock_assignment(assignment, user, relaxed_commit=not submit and on_postgresql)
        stage = assignment.item_stage
        if stage.status != StageStatus.ANNOTATING:
            raise DomainError(f"this item is {stage.get_status_display().lower()}; annotations can no longer change")
        stored_version = annotation.version if annotation else 0
        if version != stored_version:
            raise VersionConflict(stored_version, version)
        if annotation and annotation.submitted:
            raise DomainError("this annotation was submitted and is read-only")

        kind = get_kind(assignment.project_kind)
        content = kind.payload_content(stage.content, lambda: stage.item.project.pipeline_settings)
        normalised = kind.validate_payload(stage.stage, content, payload, complete=submit)
        now = timezone.now()
        assignment.active_seconds += max(0, min(int(active_seconds or 0), MAX_ACTIVE_SECONDS_PER_SAVE))
        assignment.started_at = assignment.started_at or now
        assignment.status = AssignmentStatus.SUBMITTED if submit else AssignmentStatus.IN_PROGRESS
        if submit:
            assignment.submitted_at = now
        if annotation is None:
            annotation = Annotation(assignment=assignment, payload=normalised, version=1, submitted=submit)
            annotation.save(force_insert=True)
            assignment.save(update_fields=["active_seconds", "started_at", "status", "submitted_at"])
        else:
            annotation.payload, annotation.version, annotation.submitted = (
                normalised,
                stored_version + 1,
                submit,
            )
            annotation.updated_at = now
            if on_postgresql:
                _update_both(annotation, assignment)
            else:
                annotation.save(update_fields=["payload", "version", "submitted", "updated_at"])
                assignment.save(update_fields=["active_seconds", "started_at", "status", "submitted_at"])

        if submit:
            # Serialise the submissions of one item-stage, so the last one sees all the others.
            ItemStage.objects.select_for_update(no_key=True).filter(pk=stage.pk).values_list("pk", flat=True).get()
            open_consolidation_if_complete(stage)
    return annotation


def _update_both(annotation: Annotation, assignment: Assignment) -> None:
    """Both rows of a save in one statement (one round trip less a save), as the two ``save``s
    with update_fields would write them."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH saved AS (UPDATE {Annotation._meta.db_table} SET payload = %s::jsonb, version = %s, submitted = %s, "
            f"updated_at = %s WHERE id = %s) "
            f"UPDATE {Assignment._meta.db_table} SET active_seconds = %s, started_at = %s, status = %s, submitted_at = %s "
            f"WHERE id = %s",
            [
                json.dumps(annotation.payload),
                annotation.version,
                annotation.submitted,
                annotation.updated_at,
                annotation.pk,
                assignment.active_seconds,
                assignment.started_at,
                assignment.status,
                assignment.submitted_at,
                assignment.pk,
            ],
        )


def reopen_annotation(*, assignment: Assignment, user=None) -> Annotation:
    """Take a submission back to edit it more, while another annotator of the item still works.

    Once every annotator has submitted, the consolidation starts from the submitted work and
    the submissions are final. With ``user``, an assignment of anyone else raises
    Assignment.DoesNotExist.
    """
    with transaction.atomic():
        lock_project_of(assignment_id=assignment.pk)
        assignment, annotation = _lock_assignment(assignment, user)
        # The lock the last submission of the item-stage takes before it opens the consolidation.
        stage = ItemStage.objects.select_for_update(no_key=True).get(pk=assignment.item_stage_id)
        if stage.status != StageStatus.ANNOTATING:
            raise DomainError(f"this item is {stage.get_status_display().lower()}; the submission is final")
        if annotation is None or not annotation.submitted:
            raise DomainError("this annotation is not submitted")
        annotation.submitted = False
        annotation.version += 1
        annotation.save(update_fields=["submitted", "version", "updated_at"])
        assignment.status = AssignmentStatus.IN_PROGRESS
        assignment.submitted_at = None
        assignment.save(update_fields=["status", "submitted_at"])
    return annotation
