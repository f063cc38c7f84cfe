"""A draft save on PostgreSQL locks the project and the assignment in one statement and reads the
annotation's version from that statement's snapshot (annotation/services/annotations.py). Two
things that must hold, forced here step by step with a second connection:

- a save that waited for the assignment's lock saw the annotation as it was before the save it
  waited for: it must still answer 409 with the stored version, and overwrite nothing;
- a save that waits for the project (a delete holding it) holds no assignment lock meanwhile (the
  lock order of annotation/services/locks.py: project first).
"""

import threading
import time

import psycopg
import pytest
from django.db import connection

from annotation.exceptions import VersionConflict
from annotation.models import Annotation, Assignment
from annotation.services.annotations import save_annotation
from tests.helpers.builders import segment

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("row locks and snapshots are PostgreSQL's"),
]
DRAFT = {"segments": [segment(True)] * 3}


def other_connection():
    return psycopg.connect(**connection.get_connection_params())


def in_thread(function):
    """Runs ``function`` on a thread (its own Django connection); join() returns its result or raises."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc
        finally:
            from django.db import connections

            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join():
        thread.join(timeout=60)
        assert not thread.is_alive(), "the save never finished"
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return join


def wait_until_someone_waits_for_a_lock(watcher) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
        if row[0]:
            return
        time.sleep(0.05)
    raise AssertionError("the save did not wait for the lock")


def test_a_save_that_waited_for_another_save_of_the_same_version_gets_409(felm_items, users):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    save_annotation(assignment=assignment, payload=DRAFT, version=0, submit=False)
    table, assignments = Annotation._meta.db_table, Assignment._meta.db_table
    with other_connection() as tab, other_connection() as watcher:
        watcher.autocommit = True
        # Another tab's save of version 1, holding the assignment's lock until it commits.
        tab.execute(f"SELECT id FROM {assignments} WHERE id = %s FOR UPDATE", [assignment.id])
        tab.execute(
            f'UPDATE {table} SET version = 2, payload = \'{{"from": "the other tab"}}\' WHERE assignment_id = %s',
            [assignment.id],
        )
        late = in_thread(
            lambda: save_annotation(assignment=assignment, payload=DRAFT, version=1, submit=False, user=users["alice"])
        )
        wait_until_someone_waits_for_a_lock(watcher)
        tab.commit()
        with pytest.raises(VersionConflict) as conflict:
            late()
    assert (conflict.value.stored_version, conflict.value.given_version) == (2, 1)
    stored = Annotation.objects.get(assignment=assignment)
    assert (stored.version, stored.payload) == (2, {"from": "the other tab"})


def test_a_save_waiting_for_the_project_holds_no_assignment_lock(felm_items, users, felm_project):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    with other_connection() as deleter, other_connection() as watcher:
        watcher.autocommit = True
        deleter.execute("SELECT id FROM annotation_project WHERE id = %s FOR UPDATE", [felm_project.id])
        save = in_thread(
            lambda: save_annotation(assignment=assignment, payload=DRAFT, version=0, submit=False, user=users["alice"])
        )
        wait_until_someone_waits_for_a_lock(watcher)
        # The assignment is free: the waiting save has not locked it before the project.
        with watcher.transaction():
            watcher.execute("SELECT id FROM annotation_assignment WHERE id = %s FOR UPDATE NOWAIT", [assignment.id])
        deleter.rollback()
        saved = save()
    assert saved.version == 1
    assert Annotation.objects.get(assignment=assignment).version == 1
