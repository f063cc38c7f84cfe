"""An annotator takes a submission back while the other annotator of the item still works."""

import pytest

from annotation.exceptions import DomainError
from annotation.models import Assignment, AssignmentStatus, Consolidation, StageStatus
from annotation.services.annotations import reopen_annotation, save_annotation
from tests.helpers.builders import segment

pytestmark = pytest.mark.django_db

ALL_CORRECT = {"segments": [segment(True)] * 3}


def first_assignment(users, name, items):
    return Assignment.objects.get(user=users[name], item_stage__item=items[0])


def test_a_submission_is_reopened_edited_and_submitted_again(felm_items, users):
    alice = first_assignment(users, "alice", felm_items)
    save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=True)
    annotation = reopen_annotation(assignment=alice, user=users["alice"])
    assert annotation.submitted is False and annotation.version == 2
    alice.refresh_from_db()
    assert alice.status == AssignmentStatus.IN_PROGRESS and alice.submitted_at is None

    changed = {"segments": [segment(False, "knowledge_error", "wrong year")] + [segment(True)] * 2}
    save_annotation(assignment=alice, payload=changed, version=2, submit=True)
    save_annotation(
        assignment=first_assignment(users, "bob", felm_items),
        payload=ALL_CORRECT,
        version=0,
        submit=True,
    )
    consolidation = Consolidation.objects.get(item_stage__item=felm_items[0])
    assert "segments[0].label" in consolidation.disagreed  # alice's reopened answer was used


def test_once_the_consolidation_has_started_the_submission_is_final(felm_items, users):
    for name in ("alice", "bob"):
        save_annotation(
            assignment=first_assignment(users, name, felm_items),
            payload=ALL_CORRECT,
            version=0,
            submit=True,
        )
    alice = first_assignment(users, "alice", felm_items)
    assert alice.item_stage.status == StageStatus.CONSOLIDATING
    with pytest.raises(DomainError, match="consolidating; the submission is final"):
        reopen_annotation(assignment=alice, user=users["alice"])
    assert alice.annotation.submitted


def test_only_a_submitted_annotation_is_reopened(felm_items, users):
    alice = first_assignment(users, "alice", felm_items)
    with pytest.raises(DomainError, match="not submitted"):
        reopen_annotation(assignment=alice, user=users["alice"])
    save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=False)
    with pytest.raises(DomainError, match="not submitted"):
        reopen_annotation(assignment=alice, user=users["alice"])


def test_nobody_reopens_someone_elses_submission(felm_items, users):
    alice = first_assignment(users, "alice", felm_items)
    save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=True)
    with pytest.raises(Assignment.DoesNotExist):
        reopen_annotation(assignment=alice, user=users["bob"])


def test_the_annotation_page_offers_reopening_while_it_is_possible(client, felm_items, users):
    alice = first_assignment(users, "alice", felm_items)
    client.force_login(users["alice"])
    assert "Reopen to edit" not in client.get(f"/assignments/{alice.id}/").content.decode()
    save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=True)
    assert "Reopen to edit" in client.get(f"/assignments/{alice.id}/").content.decode()

    response = client.post(f"/assignments/{alice.id}/reopen/", follow=True)
    assert "your answer is a draft again" in response.content.decode()
    assert response.context["state"]["read_only"] is False and response.context["state"]["version"] == 2

    save_annotation(assignment=alice, payload=ALL_CORRECT, version=2, submit=True)
    save_annotation(
        assignment=first_assignment(users, "bob", felm_items),
        payload=ALL_CORRECT,
        version=0,
        submit=True,
    )
    page = client.get(f"/assignments/{alice.id}/").content.decode()
    assert "Reopen to edit" not in page
    refused = client.post(f"/assignments/{alice.id}/reopen/", follow=True).content.decode()
    assert "Not reopened: this item is consolidating; the submission is final." in refused


def test_reopening_is_only_for_the_assignee_and_only_by_post(client, felm_items, users):
    alice = first_assignment(users, "alice", felm_items)
    save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=True)
    for name in ("bob", "carol", "admin"):
        client.force_login(users[name])
        assert client.post(f"/assignments/{alice.id}/reopen/").status_code == 404
    client.force_login(users["alice"])
    assert client.get(f"/assignments/{alice.id}/reopen/").status_code == 405
    client.logout()
    assert client.post(f"/assignments/{alice.id}/reopen/").status_code == 302  # to the login page
    alice.annotation.refresh_from_db()
    assert alice.annotation.submitted


def test_the_api_reopens_the_callers_own_submission(clients, felm_items, users):
    alice = first_assignment(users, "alice", felm_items)
    url = f"/api/assignments/{alice.id}/reopen/"
    assert clients["alice"].post(url).json() == {"detail": "this annotation is not submitted"}
    save_annotation(assignment=alice, payload=ALL_CORRECT, version=0, submit=True)
    assert clients["bob"].post(url).status_code == 404
    assert clients["admin"].post(url).status_code == 404
    answer = clients["alice"].post(url)
    assert answer.status_code == 200 and answer.json()["submitted"] is False and answer.json()["version"] == 2
    saved = clients["alice"].put(
        f"/api/assignments/{alice.id}/annotation/",
        {"payload": ALL_CORRECT, "version": 2, "submit": True},
        format="json",
    )
    assert saved.status_code == 200 and saved.json()["submitted"] is True
