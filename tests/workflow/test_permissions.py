"""Every permission rule, one test each (Zulip style)."""

import pytest

from annotation.models import Assignment, Role
from annotation.services.projects import add_member, create_project
from tests.helpers.builders import jsonl, segment

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_assignment(felm_items, users):
    return Assignment.objects.filter(user=users["alice"]).first()


@pytest.fixture
def bob_assignment(felm_items, users):
    return Assignment.objects.filter(user=users["bob"]).first()


@pytest.mark.parametrize(
    "url",
    [
        "/api/projects/",
        "/api/users/",
        "/api/assignments/1/",
        "/api/consolidations/1/",
    ],
)
def test_anonymous_api_requests_are_refused(clients, felm_items, url):
    assert clients["anonymous"].get(url).status_code == 401


@pytest.mark.parametrize(
    "suffix",
    [
        "",
        "members/",
        "assignments/?mine=1",
        "consolidations/",
        "agreement/",
        "export/?format=felm",
        "items/",
    ],
)
def test_anonymous_project_requests_are_refused(clients, felm_project, suffix):
    assert clients["anonymous"].get(f"/api/projects/{felm_project.id}/{suffix}").status_code == 401


def test_anonymous_pages_redirect_to_login(client, felm_project):
    response = client.get(f"/projects/{felm_project.id}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_annotator_cannot_read_another_annotators_annotation(clients, bob_assignment):
    assert clients["alice"].get(f"/api/assignments/{bob_assignment.id}/annotation/").status_code == 404
    assert clients["alice"].get(f"/api/assignments/{bob_assignment.id}/").status_code == 404


def test_annotator_cannot_write_another_annotators_annotation(clients, bob_assignment):
    response = clients["alice"].put(
        f"/api/assignments/{bob_assignment.id}/annotation/",
        {"payload": {"segments": [segment(True)] * 3}, "version": 0},
        format="json",
    )
    assert response.status_code == 404


def test_annotator_cannot_open_another_annotators_page(client, users, bob_assignment):
    client.force_login(users["alice"])
    assert client.get(f"/assignments/{bob_assignment.id}/").status_code == 404


def test_annotator_assignment_list_never_shows_others_even_without_mine(clients, felm_items):
    rows = clients["alice"].get(f"/api/projects/{felm_items[0].project_id}/assignments/").json()["results"]
    assert rows and {r["username"] for r in rows} == {"alice"}


def test_admin_assignment_list_shows_everyone_without_payloads(clients, felm_items):
    rows = clients["admin"].get(f"/api/projects/{felm_items[0].project_id}/assignments/").json()["results"]
    assert {r["username"] for r in rows} == {"alice", "bob"}
    assert all("payload" not in r for r in rows)


def test_annotator_cannot_read_the_consolidation(clients, open_consolidation):
    project_id = open_consolidation.item_stage.item.project_id
    assert clients["alice"].get(f"/api/projects/{project_id}/consolidations/").status_code == 403
    assert clients["alice"].get(f"/api/consolidations/{open_consolidation.id}/").status_code == 404
    response = clients["alice"].put(
        f"/api/consolidations/{open_consolidation.id}/",
        {"payload": {"segments": [segment(True)] * 3}, "version": 0, "submit": True},
        format="json",
    )
    assert response.status_code == 404
    assert (
        clients["alice"].post(f"/api/consolidations/{open_consolidation.id}/discard/", {"reason": "x"}).status_code
        == 404
    )


def test_annotator_cannot_open_the_consolidation_pages(client, users, open_consolidation):
    client.force_login(users["alice"])
    assert client.get(f"/consolidations/{open_consolidation.id}/").status_code == 403
    assert client.get(f"/projects/{open_consolidation.item_stage.item.project_id}/consolidations/").status_code == 403


def test_consolidator_can_read_the_consolidation(clients, open_consolidation):
    assert clients["carol"].get(f"/api/consolidations/{open_consolidation.id}/").status_code == 200


def test_consolidator_of_another_project_cannot_read_the_consolidation(clients, users, open_consolidation):
    other = create_project(name="other", kind="felm", created_by=users["admin"])
    add_member(project=other, user=users["mallory"], role=Role.CONSOLIDATOR)
    assert clients["mallory"].get(f"/api/consolidations/{open_consolidation.id}/").status_code == 404


def test_non_member_cannot_see_the_project(clients, felm_project, client, users):
    assert clients["mallory"].get(f"/api/projects/{felm_project.id}/").status_code == 404
    assert felm_project.id not in [p["id"] for p in clients["mallory"].get("/api/projects/").json()["results"]]
    assert clients["mallory"].get(f"/api/projects/{felm_project.id}/assignments/?mine=1").status_code == 404
    client.force_login(users["mallory"])
    assert client.get(f"/projects/{felm_project.id}/").status_code == 404


def test_annotator_cannot_export(clients, felm_items, client, users):
    project_id = felm_items[0].project_id
    assert clients["alice"].get(f"/api/projects/{project_id}/export/?format=felm").status_code == 403
    assert clients["carol"].get(f"/api/projects/{project_id}/export/?format=felm").status_code == 403
    client.force_login(users["alice"])
    assert client.get(f"/projects/{project_id}/export/felm/").status_code == 403


def test_annotator_cannot_import_or_add_members(clients, felm_project):
    assert (
        clients["alice"]
        .post(
            f"/api/projects/{felm_project.id}/members/",
            {"username": "mallory", "role": "annotator"},
        )
        .status_code
        == 403
    )
    assert clients["alice"].post(f"/api/projects/{felm_project.id}/import/", {}).status_code == 403
    assert clients["alice"].patch(f"/api/projects/{felm_project.id}/", {"name": "mine"}).status_code == 403


def test_annotator_cannot_see_agreement(clients, felm_project):
    assert clients["alice"].get(f"/api/projects/{felm_project.id}/agreement/").status_code == 403


def test_only_staff_create_projects_and_users(clients):
    assert clients["alice"].post("/api/projects/", {"name": "x", "kind": "felm"}).status_code == 403
    assert clients["alice"].post("/api/users/", {"username": "x", "password": "long-enough-1"}).status_code == 403
    assert clients["alice"].get("/api/users/").status_code == 403


def test_project_admin_role_grants_admin_actions_without_staff(clients, users, felm_project):
    add_member(project=felm_project, user=users["mallory"], role=Role.ADMIN)
    assert clients["mallory"].get(f"/api/projects/{felm_project.id}/export/?format=felm").status_code == 200
    assert (
        clients["mallory"].patch(f"/api/projects/{felm_project.id}/", {"guidelines": "Be careful."}).status_code == 200
    )


def test_annotator_sees_assignment_only_when_stage_is_open(
    clients, users, felm_project, django_capture_on_commit_callbacks
):
    from annotation.imports.items import import_jsonl
    from annotation.models import ItemStage, StageStatus

    import_jsonl(felm_project, jsonl([{"prompt": "q", "response": "One. Two."}]), fmt="plain")  # task not yet run
    assert ItemStage.objects.get(item__project=felm_project).status == StageStatus.PRECOMPUTING
    assert clients["alice"].get(f"/api/projects/{felm_project.id}/assignments/?mine=1").json()["count"] == 0


def test_forms_require_csrf(users, felm_project):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["admin"])
    response = browser.post(f"/projects/{felm_project.id}/members/", {"username": "mallory", "role": "annotator"})
    assert response.status_code == 403


def test_session_api_writes_require_csrf(users, alice_assignment):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["alice"])
    response = browser.put(
        f"/api/assignments/{alice_assignment.id}/annotation/",
        data='{"payload": {"segments": []}, "version": 0}',
        content_type="application/json",
    )
    assert response.status_code == 403
