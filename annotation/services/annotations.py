"""Saving annotators' work: drafts, submission, and the version check against stale tabs."""

import functools
import json

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation.exceptions import DomainError, VersionConflict
from annotation.json_values import dumps_stored
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, AssignmentStatus, ItemStage, Project, StageStatus

from .consolidation import open_consolidation_if_complete
from .locks import lock_project_of

MAX_ACTIVE_SECONDS_PER_SAVE = 3600


def _lock_assignment(assignment: Assignment, user) -> tuple[Assignment, Annotation | None]:
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
    if connection.vendor == "postgresql":
        return _save_on_postgresql(assignment.pk, payload, version, submit, active_seconds, user)
    with transaction.atomic():
        assignment, annotation = _lock_assignment(assignment, user)
        stage = assignment.item_stage
        _check_writable(stage, annotation, version)
        normalised = _validated(assignment, payload, submit)
        _count_work(assignment, active_seconds, submit)
        if annotation is None:
            annotation = Annotation(assignment=assignment, payload=normalised, version=1, submitted=submit)
            annotation.save(force_insert=True)
        else:
            annotation.payload, annotation.version, annotation.submitted = normalised, version + 1, submit
            annotation.save(update_fields=["payload", "version", "submitted", "updated_at"])
        assignment.save(update_fields=["active_seconds", "started_at", "status", "submitted_at"])
        if submit:
            _after_submission(stage)
    return annotation


def _check_writable(stage: ItemStage, annotation: Annotation | None, version: int) -> None:
    if stage.status != StageStatus.ANNOTATING:
        raise DomainError(f"this item is {stage.get_status_display().lower()}; annotations can no longer change")
    stored_version = annotation.version if annotation else 0
    if version != stored_version:
        raise VersionConflict(stored_version, version)
    if annotation and annotation.submitted:
        raise DomainError("this annotation was submitted and is read-only")


def _validated(assignment: Assignment, payload, submit: bool):
    """The payload as the kind stores it (its own rule, checked once)."""
    stage = assignment.item_stage
    kind = get_kind(assignment.project_kind)
    content = kind.payload_content(stage.content, lambda: stage.item.project.pipeline_settings)
    return kind.validate_payload(stage.stage, content, payload, complete=submit)


def _count_work(assignment: Assignment, active_seconds: int, submit: bool) -> None:
    now = timezone.now()
    assignment.active_seconds += max(0, min(int(active_seconds or 0), MAX_ACTIVE_SECONDS_PER_SAVE))
    assignment.started_at = assignment.started_at or now
    assignment.status = AssignmentStatus.SUBMITTED if submit else AssignmentStatus.IN_PROGRESS
    if submit:
        assignment.submitted_at = now


def _after_submission(stage: ItemStage) -> None:
    # Serialise the submissions of one item-stage, so the last one sees all the others.
    ItemStage.objects.select_for_update(no_key=True).filter(pk=stage.pk).values_list("pk", flat=True).get()
    open_consolidation_if_complete(stage)


def _save_on_postgresql(assignment_id: int, payload, version: int, submit: bool, active_seconds: int, user):
    """A draft save of an annotation that exists is three statements within the transaction: lock
    (and read), validate in Python, write both rows, COMMIT (benchmarks/README.md, issue 22).

    The annotation's version and state come from the locking statement's snapshot, which is stale
    when that statement waited for the lock (another save of the same assignment, e.g. a second
    tab): the write therefore repeats the check (``WHERE version = … AND NOT submitted``), and
    whenever the snapshot does not allow the save, or the write finds nothing, the annotation is
    read again under the lock and checked as it stands (every write of it holds that lock).
    """
    with transaction.atomic():
        # A draft is saved again within seconds; not waiting for its WAL flush halves the
        # save's time, and a database crash can lose at most the last moment of a draft.
        # Submissions keep the full durability guarantee.
        assignment, seen = _lock_and_read(assignment_id, user, relaxed_commit=not submit)
        stage = assignment.item_stage
        if stage.status != StageStatus.ANNOTATING:
            raise DomainError(f"this item is {stage.get_status_display().lower()}; annotations can no longer change")
        if seen is None or seen.version != version or seen.submitted:
            seen = Annotation.objects.filter(assignment_id=assignment.pk).first()
            _check_writable(stage, seen, version)
        normalised = _validated(assignment, payload, submit)
        _count_work(assignment, active_seconds, submit)
        if seen is None:
            annotation = Annotation(assignment=assignment, payload=normalised, version=1, submitted=submit)
            annotation.save(force_insert=True)
            assignment.save(update_fields=["active_seconds", "started_at", "status", "submitted_at"])
        else:
            annotation = Annotation(
                pk=seen.pk, assignment=assignment, payload=normalised, version=version + 1, submitted=submit
            )
            annotation.updated_at = timezone.now()
            if not _update_both(annotation, assignment, expected_version=version):
                # The snapshot was stale and another save came first: what is stored decides.
                _check_writable(stage, Annotation.objects.filter(assignment_id=assignment.pk).first(), version)
                raise RuntimeError("the annotation changed under the assignment's lock")  # pragma: no cover
        if submit:
            _after_submission(stage)
    return annotation


_STAGE_FIELDS = ("id", "item_id", "stage", "status", "content")


@functools.cache  # the models do not change while a process runs: built once, not on every save
def _lock_and_read_statement(by_user: bool, relaxed_commit: bool) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """The assignment's field names, the stage's, and the statement of _lock_and_read."""
    fields = tuple(f.attname for f in Assignment._meta.concrete_fields)
    tables = {
        "a": Assignment._meta.db_table,
        "s": ItemStage._meta.db_table,
        "i": ItemStage._meta.get_field("item").related_model._meta.db_table,
        "p": Project._meta.db_table,
        "n": Annotation._meta.db_table,
    }
    columns = [f"a.{Assignment._meta.get_field(name).column}" for name in fields]
    columns += [f"s.{ItemStage._meta.get_field(name).column}" for name in _STAGE_FIELDS]
    columns += ["p.kind", "n.id", "n.version", "n.submitted"]
    if relaxed_commit:
        columns.append("set_config('synchronous_commit', 'off', true)")
    sql = (
        f"SELECT {', '.join(columns)} FROM {tables['a']} a "
        f"JOIN {tables['s']} s ON s.id = a.item_stage_id JOIN {tables['i']} i ON i.id = s.item_id "
        f"JOIN {tables['p']} p ON p.id = i.project_id LEFT JOIN {tables['n']} n ON n.assignment_id = a.id "
        f"WHERE a.id = %s{' AND a.user_id = %s' if by_user else ''} "
        "FOR KEY SHARE OF p FOR UPDATE OF a"
    )
    return fields, _STAGE_FIELDS, sql


def _lock_and_read(assignment_id: int, user, *, relaxed_commit: bool) -> tuple[Assignment, Annotation | None]:
    """One statement: the project ``FOR KEY SHARE``, then the assignment ``FOR UPDATE`` (two
    locking clauses, taken in this order: annotation/services/locks.py; the stage, item and
    annotation rows are not locked), with its stage, the project's kind and the annotation's id,
    version and submitted flag as of this statement's snapshot; ``relaxed_commit``: SET LOCAL
    synchronous_commit TO OFF in the same round trip. Raises Assignment.DoesNotExist."""
    fields, stage_fields, sql = _lock_and_read_statement(user is not None, relaxed_commit)
    params = [assignment_id] if user is None else [assignment_id, user.pk]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist("no such assignment")
    assignment = Assignment.from_db(connection.alias, fields, row[: len(fields)])
    values = list(row[len(fields) : len(fields) + len(stage_fields)])
    content = values[-1]
    values[-1] = json.loads(content) if isinstance(content, str | bytes) else content
    assignment.item_stage = ItemStage.from_db(connection.alias, stage_fields, values)
    kind, annotation_id, annotation_version, submitted = row[len(fields) + len(stage_fields) :][:4]
    assignment.project_kind = kind
    seen = None
    if annotation_id is not None:
        seen = Annotation(
            pk=annotation_id, assignment_id=assignment.pk, version=annotation_version, submitted=submitted
        )
    return assignment, seen


def _update_both(annotation: Annotation, assignment: Assignment, *, expected_version: int) -> bool:
    """Both rows of a save in one statement (one round trip less a save), as the two ``save``s
    with update_fields would write them, if the stored annotation still has ``expected_version``
    and is not submitted; False (nothing written) otherwise."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH saved AS (UPDATE {Annotation._meta.db_table} SET payload = %s::jsonb, version = %s, submitted = %s, "
            f"updated_at = %s WHERE id = %s AND version = %s AND NOT submitted RETURNING id) "
            f"UPDATE {Assignment._meta.db_table} SET active_seconds = %s, started_at = %s, status = %s, submitted_at = %s "
            f"WHERE id = %s AND EXISTS (SELECT 1 FROM saved)",
            [
                dumps_stored(annotation.payload),
                annotation.version,
                annotation.submitted,
                annotation.updated_at,
                annotation.pk,
                expected_version,
                assignment.active_seconds,
                assignment.started_at,
                assignment.status,
                assignment.submitted_at,
                assignment.pk,
            ],
        )
        return cursor.rowcount == 1


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
