"""The SQL statements of the annotator's and the consolidator's requests in the load test
(benchmarks/campaign_locust.py; issue 22): a fixed number, whatever the number of rows listed, so
that an N+1 cannot creep back. The counts hold on SQLite and PostgreSQL (a save's exact
statements on PostgreSQL: tests/workflow/test_write_statements.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.imports.items import import_jsonl
from annotation.models import Assignment, Consolidation
from annotation.services.annotations import save_annotation
from tests.helpers.builders import felm_line, jsonl, segment

pytestmark = pytest.mark.django_db
ALL_CORRECT = {"segments": [segment(True)] * 3}


def statements(client, method, url, body=None) -> int:
    with CaptureQueriesContext(connection) as captured:
        if method == "GET":
            response = client.get(url)
        else:
            response = client.put(url, body, format="json")
    assert response.status_code == 200, response.content
    return len(captured.captured_queries)


def add_items(project, first: int, count: int) -> None:
    records = [felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(first, first + count)]
    import_jsonl(project, jsonl(records), fmt="felm")


def submit_both(users, items) -> None:
    for item in items:
        for name in ("alice", "bob"):
            assignment = Assignment.objects.get(user=users[name], item_stage__item=item)
            save_annotation(assignment=assignment, payload=ALL_CORRECT, version=0, submit=True)


def test_the_annotators_queue_takes_five_statements_for_one_or_many_assignments(clients, felm_project, users):
    url = f"/api/projects/{felm_project.id}/assignments/?mine=true&page_size=20"
    add_items(felm_project, 0, 1)
    # token, the project, the caller's roles (member?), the count, the page (item and annotation joined)
    assert statements(clients["alice"], "GET", url) == 5
    add_items(felm_project, 1, 15)
    save_annotation(
        assignment=Assignment.objects.filter(user=users["alice"]).order_by("id").first(),
        payload=ALL_CORRECT,
        version=0,
        submit=False,
    )
    assert statements(clients["alice"], "GET", url) == 5


def test_opening_an_assignment_takes_three_statements(clients, felm_items, users):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    url = f"/api/assignments/{assignment.id}/annotation/"
    assert statements(clients["alice"], "GET", url) <= 3  # token, the assignment, its annotation
    save_annotation(assignment=assignment, payload=ALL_CORRECT, version=0, submit=False)
    assert statements(clients["alice"], "GET", url) <= 3


def test_a_draft_save_takes_a_fixed_number_of_statements(clients, felm_items, users):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    url = f"/api/assignments/{assignment.id}/annotation/"
    first = statements(clients["alice"], "PUT", url, {"payload": ALL_CORRECT, "version": 0})
    again = statements(clients["alice"], "PUT", url, {"payload": ALL_CORRECT, "version": 1})
    # PostgreSQL: 5 for a save of an existing annotation; 7 for the first (it reads the annotation
    # again under the lock, inserts it and updates the assignment)
    limit = 5 if connection.vendor == "postgresql" else 8
    assert again <= limit and first <= limit + 2, (first, again)


def test_the_consolidators_list_open_and_save_take_a_fixed_number_of_statements(clients, felm_project, users):
    add_items(felm_project, 0, 1)
    submit_both(users, felm_project.items.all())
    url = f"/api/projects/{felm_project.id}/consolidations/?status=open"
    # token, the project, the caller's roles, the count, the page (stage, item and consolidator joined)
    assert statements(clients["carol"], "GET", url) == 5
    add_items(felm_project, 1, 12)
    submit_both(users, felm_project.items.exclude(stages__consolidation__isnull=False))
    assert Consolidation.objects.filter(item_stage__item__project=felm_project).count() == 13
    assert statements(clients["carol"], "GET", url) == 5

    consolidation = Consolidation.objects.filter(item_stage__item__project=felm_project).order_by("id").first()
    detail = f"/api/consolidations/{consolidation.id}/"
    # token, the consolidation (stage, item, project joined), the caller's roles, "did the caller
    # annotate it?", the annotations under consolidation
    assert statements(clients["carol"], "GET", detail) == 5
    body = {"payload": ALL_CORRECT, "version": consolidation.version, "submit": False}
    # as opening, less nothing; then BEGIN, the project, the stage, the consolidation locked, the
    # write, COMMIT (SQLite: no row locks) — "did the caller annotate it?" asked once, not twice
    limit = 11 if connection.vendor == "postgresql" else 10
    assert statements(clients["carol"], "PUT", detail, body) <= limit
