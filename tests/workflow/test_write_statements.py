"""The SQL statements of one draft save (issue 22: saves under load wait for every round trip)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, Assignment, AssignmentStatus
from tests.helpers.builders import felm_line, jsonl, segment
from tests.helpers.factcheck import released_line


@pytest.mark.django_db
@pytest.mark.postgres_only("the statements are PostgreSQL's")
def test_a_draft_save_on_postgresql_takes_five_statements_and_writes_both_rows(clients, felm_items, users):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    url = f"/api/assignments/{assignment.id}/annotation/"
    first = clients["alice"].put(
        url,
        {"payload": {"segments": [segment(True)] * 3}, "version": 0, "active_seconds": 5},
        format="json",
    )
    assert first.status_code == 200, first.content
    before = Annotation.objects.get(assignment=assignment).updated_at

    payload = {
        "segments": [
            segment(False, "knowledge_error", "wrong: it is 1889"),
            segment(True),
            segment(True),
        ]
    }
    with CaptureQueriesContext(connection) as captured:
        response = clients["alice"].put(url, {"payload": payload, "version": 1, "active_seconds": 7}, format="json")
    assert response.status_code == 200, response.content
    statements = [q["sql"] for q in captured.captured_queries]
    # token, BEGIN, key-share the project and lock the assignment in one statement (the lock
    # order, annotation/services/locks.py; it reads the annotation's version and relaxes the
    # commit too), write both rows if the version is still the one read, COMMIT
    assert len(statements) == 5, "\n".join(s[:120] for s in statements)
    lock = statements[2]
    assert "set_config" in lock and lock.index("FOR KEY SHARE OF p") < lock.index("FOR UPDATE OF a")
    assert "version = 1 AND NOT submitted" in statements[3]

    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.version == 2 and annotation.payload["segments"][0]["comment"] == "wrong: it is 1889"
    assert annotation.updated_at > before and not annotation.submitted
    assignment.refresh_from_db()
    assert assignment.active_seconds == 12 and assignment.status == AssignmentStatus.IN_PROGRESS
    assert assignment.started_at is not None and assignment.submitted_at is None

    # A stale version is still refused, and writes nothing.
    stale = clients["alice"].put(url, {"payload": payload, "version": 1}, format="json")
    assert stale.status_code == 409
    assert Annotation.objects.get(assignment=assignment).version == 2


@pytest.mark.django_db
@pytest.mark.postgres_only("COPY is PostgreSQL's")
def test_an_import_on_postgresql_writes_items_stages_and_gold_with_copy(felm_project):
    from annotation.imports.items import import_jsonl
    from annotation.models import GoldRecord, Item

    with CaptureQueriesContext(connection) as captured:
        result = import_jsonl(
            felm_project,
            jsonl([felm_line(i, [f"Claim {i}.{k}." for k in range(2)]) for i in range(3)]),
            fmt="felm",
            labels_as="gold",
        )
    assert result.items == 3 and result.gold_records == 3
    inserts = [q["sql"][:60] for q in captured.captured_queries if q["sql"].startswith("INSERT")]
    assert inserts == [], inserts  # Django's INSERT ... UNNEST quotes JSON in Python, row by row
    items = list(Item.objects.filter(project=felm_project).order_by("id"))
    assert [i.external_id for i in items] == ["0", "1", "2"] and all(i.created_at for i in items)
    for item in items:
        stage = item.stages.get()
        assert stage.updated_at and stage.content["segments"]
        assert GoldRecord.objects.get(item_stage=stage).payload


@pytest.mark.django_db
@pytest.mark.postgres_only("stored export lines are PostgreSQL's")
def test_export_lines_are_stored_through_copy_and_replaced_in_place(
    factcheck_project, django_capture_on_commit_callbacks
):
    from annotation.exports.lines import store_export_lines
    from annotation.imports.items import import_jsonl
    from annotation.models import ExportLine

    second = released_line() | {"prompt": "Where is the Eiffel Tower?"}
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(
            factcheck_project,
            jsonl([released_line(), second]),
            fmt="factcheck-bench",
            labels_as="gold",
        )
    stored = list(ExportLine.objects.filter(item__project=factcheck_project, format="factcheck-bench").order_by("id"))
    assert len(stored) == 2
    ExportLine.objects.filter(pk=stored[0].pk).update(stamp="stale", line="{}\n")
    ExportLine.objects.filter(pk=stored[1].pk).delete()
    with CaptureQueriesContext(connection) as captured:
        assert store_export_lines(factcheck_project, [line.item_id for line in stored]) == 2
    assert not [q["sql"][:80] for q in captured.captured_queries if "unnest" in q["sql"].lower()]
    again = list(
        ExportLine.objects.filter(item__project=factcheck_project, format="factcheck-bench").order_by("item_id")
    )
    assert [(line.item_id, line.stamp, line.line) for line in again] == [(s.item_id, s.stamp, s.line) for s in stored]
    assert again[0].pk == stored[0].pk  # replaced in place
