"""Retrieving one step-2 claim's evidence again: only that claim changes, drafts drop their
stances of it (with a new version), nothing changes once an annotator has submitted; admins only."""

import pytest

from annotation.evidence.retrieval import retrieve_again
from annotation.kinds.factcheck import step2_content
from annotation.models import Annotation, ItemStage, StageStatus
from annotation.services.annotations import save_annotation
from annotation.services.assignments import assign_open_stages
from tests.helpers.factcheck import CS, IR, content, manual, passage
from tests.helpers.factcheck import answer as full_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage(factcheck_project):
    item = factcheck_project.items.create(prompt="p", response="r")
    stage = ItemStage.objects.create(item=item, stage=2, status=StageStatus.READY, content=content(2, 1))
    assign_open_stages(factcheck_project)
    return stage


@pytest.fixture
def new_passages(monkeypatch):
    """Retrieval answers three new passages, and remembers what it was asked."""
    asked = []

    def fake(claims, settings, search):
        asked.append([c["text"] for c in claims])
        for claim in claims:
            claim.update(queries=["again"], evidence=[passage(k + 10) for k in range(3)], problems=[])
        return {"content": {"claims": claims}, "suggestion": None, "provenance": {}}

    monkeypatch.setattr(step2_content, "retrieve_evidence", fake)
    monkeypatch.setattr("annotation.kinds.factcheck.retrieve_evidence", fake)
    return asked


def url(project, item_id, claim):
    return f"/api/projects/{project.id}/items/{item_id}/claims/{claim}/retrieve/"


def draft(stage, user):
    assignment = stage.assignments.get(user=user)
    payload = {
        "claims": [
            full_answer([CS, IR], reliable=[True, None], manual=[manual()], used=[0, "manual:0"]),
            full_answer([IR]),
        ]
    }
    return save_annotation(assignment=assignment, payload=payload, version=0, submit=False)


def test_one_claim_gets_new_passages_and_drafts_start_its_stances_again(
    clients, factcheck_project, stage, users, new_passages, django_capture_on_commit_callbacks
):
    before = draft(stage, users["alice"])
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["admin"].post(url(factcheck_project, stage.item_id, 0))
    assert response.status_code == 202, response.content
    assert new_passages == [["Claim 0."]]
    stage.refresh_from_db()
    assert [p["text"] for p in stage.content["claims"][0]["evidence"]] == [
        "Passage 10.",
        "Passage 11.",
        "Passage 12.",
    ]
    assert stage.content["claims"][1] == content(2, 1)["claims"][1]  # the other claim is untouched
    after = Annotation.objects.get(pk=before.pk)
    assert after.version == before.version + 1  # an open tab gets a 409 and reloads
    claim = after.payload["claims"][0]
    assert claim["stances"] == [None, None, None] and claim["reliable"] == [None, None, None]
    assert claim["used_evidence"] == ["manual:0"] and claim["manual_evidence"] == [
        manual()
    ]  # the annotator's own stays
    assert after.payload["claims"][1] == before.payload["claims"][1]
    # the draft still validates against the new content and can be completed
    save_annotation(assignment=after.assignment, payload=after.payload, version=after.version, submit=False)


def test_nothing_changes_once_an_annotator_has_submitted(clients, factcheck_project, stage, users, new_passages):
    alice = stage.assignments.get(user=users["alice"])
    complete = {"claims": [full_answer([CS, IR], reliable=[True, None]), full_answer([IR])]}
    save_annotation(assignment=alice, payload=complete, version=0, submit=True)
    response = clients["admin"].post(url(factcheck_project, stage.item_id, 0))
    assert response.status_code == 400 and "submitted" in response.json()["detail"]
    # a task queued before the submission does nothing either
    assert retrieve_again(stage.id, 0) is False
    stage.refresh_from_db()
    assert stage.content == content(2, 1) and not new_passages


@pytest.mark.parametrize(
    "who, claim, status",
    [
        ("alice", 0, 403),
        ("carol", 0, 403),
        ("mallory", 0, 404),
        ("admin", 2, 400),
        ("admin", 99999, 400),
    ],
)
def test_only_admins_retrieve_and_only_existing_claims(
    clients, factcheck_project, stage, who, claim, status, new_passages
):
    assert clients[who].post(url(factcheck_project, stage.item_id, claim)).status_code == status
    assert not new_passages


def test_items_without_a_step_2_and_felm_projects_have_nothing_to_retrieve(
    clients, factcheck_project, felm_project, felm_items, stage
):
    stage1_only = factcheck_project.items.create(prompt="p", response="r")
    assert clients["admin"].post(url(factcheck_project, stage1_only.id, 0)).status_code == 404
    assert clients["admin"].post(url(felm_project, felm_items[0].id, 0)).status_code == 404


def test_the_project_page_offers_it_for_claims_with_problems(
    logged_in, factcheck_project, stage, new_passages, django_capture_on_commit_callbacks
):
    claims = stage.content["claims"]
    claims[1]["problems"] = ["search 'Claim 1.': the search API answered 503"]
    ItemStage.objects.filter(pk=stage.pk).update(content={"claims": claims})
    client = logged_in("admin")
    page = client.get(f"/projects/{factcheck_project.id}/").content.decode()
    action = f"/projects/{factcheck_project.id}/items/{stage.item_id}/claims/1/retrieve/"
    assert action in page and "answered 503" in page
    assert f"/items/{stage.item_id}/claims/0/retrieve/" not in page  # no problem, no button
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(action, follow=True)
    assert "being retrieved again" in response.content.decode()
    stage.refresh_from_db()
    assert stage.content["claims"][1]["problems"] == [] and new_passages == [["Claim 1."]]
