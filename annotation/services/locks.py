"""Row locks: the one order every write takes them in, and the project lock that lets a delete win.

On PostgreSQL two writes deadlock when each holds a row lock the other waits for. Every write
of this project takes its locks in this order, and only the locks named here:

1. **The project row.** A write under a project (a save, a submission, a split, a reassignment,
   a consolidation, a reopened step, the pre-annotation and assignment tasks, the stored export
   lines) first takes ``FOR KEY SHARE`` on it with :func:`lock_project_for_write`. Key-share
   locks do not wait for each other nor for a change of the project's fields, so saves never
   queue behind one another here. A change of the project itself (settings, members) takes
   ``FOR NO KEY UPDATE`` (:func:`lock_project_for_change`), which waits for other changes
   only; so does handing out assignments (:func:`lock_project_for_assigning`), so that two
   assigners take turns. Deleting the project takes ``FOR UPDATE``
   (:func:`lock_project_for_delete`) before it reads what to delete: it waits for the writes
   already under way, and a write that starts later waits for the delete and then finds the
   project gone (``ProjectDeleted``: a 404; a task stops without an error) instead of adding
   rows under a deleted parent, which failed the delete's foreign-key check at commit (a 500).
2. **Assignments**, several in id order.
3. **Item-stages**, several in id order.
4. **The consolidation** of an item-stage.

Across the steps of one item, an earlier step's rows come before a later step's (reopening
step 1 deletes step 2's assignments, then step 2).

An annotator's save (services/annotations.py) takes steps 1 and 2 in one statement, ``FOR KEY
SHARE OF`` the project ``FOR UPDATE OF`` the assignment: PostgreSQL locks each row's tables in
the order of the locking clauses, so the order holds.

A lock taken with ``select_for_update`` names its own table (``of=("self",)``): without it,
PostgreSQL also locks every row joined in by ``select_related`` (the item and the project),
out of this order. A sentence-split correction did that: it locked the stage's assignments,
then its stage together with the item and the project ``FOR UPDATE``, while adding an annotator
(a membership row: ``KEY SHARE`` on the project, then new assignments: ``KEY SHARE`` on the
stage) or a settings change that hands out more assignments took the same rows the other way
round: a deadlock (PostgreSQL aborts one of them: a 500). Rows that are changed but never
deleted are locked ``FOR NO KEY UPDATE`` (``no_key=True``), which new rows referencing them
(assignments of a stage, a stage's gold record) do not wait for.

SQLite has a single writer and no row locks: there the helpers only check that the project
still exists. ``docs/concurrency.md`` lists which write takes which locks.
"""

from django.db import connection

from annotation.exceptions import ProjectDeleted
from annotation.models import Assignment, ItemStage, Project


def _lock(project_id: int, mode: str) -> bool:
    if connection.vendor != "postgresql":
        return Project.objects.filter(pk=project_id).exists()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {Project._meta.db_table} WHERE id = %s FOR {mode}", [project_id])
        return cursor.fetchone() is not None


def lock_project_for_write(project_id: int) -> None:
    """Step 1 of the order for a write under the project (in its transaction): the project
    stays until this transaction ends. Raises ProjectDeleted if it is gone."""
    if not _lock(project_id, "KEY SHARE"):
        raise ProjectDeleted(project_id)


def lock_project_of(*, assignment_id: int | None = None, stage_id: int | None = None) -> None:
    """:func:`lock_project_for_write` for the project of an assignment or an item-stage, in one
    statement. Nothing happens if that row is gone: the caller's own lookup then says so."""
    if connection.vendor != "postgresql":
        return
    if assignment_id is not None:
        owner = Assignment.objects.filter(pk=assignment_id).values("item_stage__item__project_id")
    else:
        owner = ItemStage.objects.filter(pk=stage_id).values("item__project_id")
    sql, params = Project.objects.filter(pk__in=owner).values("id").query.sql_with_params()
    with connection.cursor() as cursor:  # a locking clause locks the outer query's rows only
        cursor.execute(f"{sql} FOR KEY SHARE", params)


def project_still_there(project_id: int) -> bool:
    """:func:`lock_project_for_write` for tasks, which stop quietly when the project is gone."""
    return _lock(project_id, "KEY SHARE")


def lock_project_for_assigning(project_id: int) -> bool:
    """Step 1 for handing out assignments: ``FOR NO KEY UPDATE``, so two assigners of a project
    (pre-annotation tasks, a member added, more annotators per item) take turns and the later
    one sees the assignments of the earlier (at the same time both gave the same stage to the
    same annotator: a unique violation). False if the project is gone."""
    return _lock(project_id, "NO KEY UPDATE")


def lock_project_for_change(project_id: int) -> None:
    """Step 1 for a change of the project's own fields or members."""
    if not _lock(project_id, "NO KEY UPDATE"):
        raise ProjectDeleted(project_id)


def lock_project_for_delete(project_id: int) -> bool:
    """Step 1 for deleting the project: waits for the writes under way. False if already gone."""
    return _lock(project_id, "UPDATE")
