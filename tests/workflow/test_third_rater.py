"""The third rater of Factcheck-Bench step 2: on every item (the paper's practice) or only on
items a consolidator escalates; blind, merged into the consolidation, left out of agreement;
who may be one; waiting items get a rater when an annotator joins; the pages and the API."""

import pytest

from annotation.exceptions import DomainError
from annotation.models import (
    AssignmentRole,
    Consolidation,
    ConsolidationStatus,
    ItemStage,
    Role,
    StageStatus,
    ThirdRater,
)
from annotation.research.selectors import project_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import escalate, save_consolidation
from annotation.services.projects import add_member
from tests.helpers.builders import api_client
from tests.helpers.factcheck import CS, IR, RE, step2_item, submit_all
from tests.helpers.factcheck import rated_answer as answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def dave(make_user):
    return make_user("dave")


def test_escalation_mode_opens_the_consolidation_at_once(factcheck_project, users, dave):
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, CS])]}, {"claims": [answer([CS, RE])]}])
    assert stage.status == StageStatus.CONSOLIDATING
    assert stage.consolidation.status == ConsolidationStatus.OPEN
    assert not stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists()


def test_always_mode_waits_for_a_blind_third_rater_then_merges_three_answers(factcheck_project, users, dave):
    factcheck_project.third_rater = ThirdRater.ALWAYS
    factcheck_project.save()
    add_member(project=factcheck_project, user=dave, role=Role.ANNOTATOR)
    stage = step2_item(factcheck_project)
    first_two = [a.user.username for a in stage.assignments.order_by("id")]
    submit_all(stage, [{"claims": [answer([CS, IR])]}, {"claims": [answer([CS, RE])]}])

    assert stage.status == StageStatus.ANNOTATING  # the third rater's saves are accepted
    consolidation = stage.consolidation
    assert consolidation.status == ConsolidationStatus.WAITING
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)
    assert third.user.username not in first_two
    with pytest.raises(DomainError):  # nothing to consolidate yet
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload={"claims": [answer([CS, IR])]},
            version=consolidation.version,
            submit=False,
        )

    save_annotation(assignment=third, payload={"claims": [answer([CS, IR])]}, version=0, submit=True)
    stage.refresh_from_db()
    consolidation.refresh_from_db()
    assert stage.status == StageStatus.CONSOLIDATING and consolidation.status == ConsolidationStatus.OPEN
    # all three agree on passage 0; passage 1 is disputed (irrelevant, refute, irrelevant)
    assert consolidation.draft["claims"][0]["stances"] == [CS, None]
    assert "claims[0].stances[1]" in consolidation.disagreed
    # the alignment of manual evidence has a column per rater
    assert all(len(row) == 3 for row in consolidation.alignment[0])


def test_a_third_rater_is_never_one_of_the_two_nor_given_without_a_free_annotator(factcheck_project, users, dave):
    factcheck_project.third_rater = ThirdRater.ALWAYS
    factcheck_project.save()
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, IR])]}, {"claims": [answer([CS, IR])]}])
    consolidation = stage.consolidation
    assert consolidation.status == ConsolidationStatus.WAITING
    assert not stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists()
    from annotation.selectors import waiting_without_third_rater

    assert list(waiting_without_third_rater(factcheck_project)) == [consolidation]

    # an annotator joins: the waiting item is given to them
    add_member(project=factcheck_project, user=dave, role=Role.ANNOTATOR)
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)
    assert third.user == dave
    assert not waiting_without_third_rater(factcheck_project).exists()


def test_a_consolidator_escalates_with_a_reason_and_is_not_made_the_third_rater(factcheck_project, users, dave):
    # carol consolidates and also annotates: she has seen A and B, so she must not be the third rater
    add_member(project=factcheck_project, user=users["carol"], role=Role.ANNOTATOR)
    add_member(project=factcheck_project, user=dave, role=Role.ANNOTATOR)
    stage = step2_item(factcheck_project)
    annotators = set(stage.assignments.values_list("user__username", flat=True))
    submit_all(stage, [{"claims": [answer([CS, RE])]}, {"claims": [answer([RE, CS])]}])
    consolidation = stage.consolidation
    with pytest.raises(DomainError, match="reason"):
        escalate(consolidation=consolidation, user=users["carol"], reason="  ")
    escalated = escalate(consolidation=consolidation, user=users["carol"], reason="stances contradict")
    assert escalated.status == ConsolidationStatus.WAITING and escalated.escalation_reason == "stances contradict"
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)
    assert third.user.username not in annotators | {"carol"}
    with pytest.raises(DomainError):  # once is enough
        escalate(consolidation=escalated, user=users["carol"], reason="again")


def test_escalation_without_a_free_annotator_waits_and_the_pages_say_so(factcheck_project, users, make_user, logged_in):
    """The README's rule (issue 21.9): the item waits, the consolidation and project pages say
    why, and the next annotator added is its third rater."""
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, RE])]}, {"claims": [answer([RE, CS])]}])
    consolidation = stage.consolidation
    carol = logged_in("carol")
    before = carol.get(f"/consolidations/{consolidation.id}/").content.decode()
    assert "No annotator is free to be the third rater now: the item will wait" in before
    answer_page = carol.post(f"/consolidations/{consolidation.id}/escalate/", {"reason": "cannot settle"}, follow=True)
    assert "the item waits until an annotator is added" in answer_page.content.decode()
    consolidation.refresh_from_db()
    stage.refresh_from_db()
    assert consolidation.status == ConsolidationStatus.WAITING and stage.status == StageStatus.ANNOTATING
    assert not stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists()
    waiting = carol.get(f"/consolidations/{consolidation.id}/").content.decode()
    assert (
        "Waiting for the third rater" in waiting
        and "No annotator of the project is free to be the third rater yet" in waiting
    )
    project_page = logged_in("admin").get(f"/projects/{factcheck_project.id}/").content.decode()
    assert "1 item waits for a third rater, but no annotator of the project is free" in project_page

    add_member(project=factcheck_project, user=make_user("erin"), role=Role.ANNOTATOR)
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)
    assert third.user.username == "erin"
    assert (
        "no annotator of the project is free"
        not in logged_in("admin").get(f"/projects/{factcheck_project.id}/").content.decode()
    )


def test_step_1_has_no_third_rater(factcheck_project, users, dave):
    add_member(project=factcheck_project, user=dave, role=Role.ANNOTATOR)
    item = factcheck_project.items.create(prompt="p", response="r")
    stage = ItemStage.objects.create(
        item=item, stage=1, status=StageStatus.CONSOLIDATING, content={"sentences": ["A."]}
    )
    consolidation = Consolidation.objects.create(item_stage=stage)
    with pytest.raises(DomainError, match="no third rater"):
        escalate(consolidation=consolidation, user=users["carol"], reason="why not")


def test_agreement_leaves_third_raters_out(factcheck_project, users, dave):
    factcheck_project.third_rater = ThirdRater.ALWAYS
    factcheck_project.save()
    add_member(project=factcheck_project, user=dave, role=Role.ANNOTATOR)
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, IR])]}, {"claims": [answer([CS, IR])]}])
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)
    save_annotation(assignment=third, payload={"claims": [answer([RE, RE])]}, version=0, submit=True)
    result = project_agreement(factcheck_project, stage=2)
    assert result["fields"]["stance"]["observed_agreement"] == 1.0
    assert third.user.username not in {a["username"] for a in result["annotators"]}


def test_escalation_through_the_api_and_the_page(factcheck_project, users, dave, clients, client):
    add_member(project=factcheck_project, user=dave, role=Role.ANNOTATOR)
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, RE])]}, {"claims": [answer([RE, CS])]}])
    consolidation = stage.consolidation
    url = f"/api/consolidations/{consolidation.id}/escalate/"
    assert clients["alice"].post(url, {"reason": "x"}, format="json").status_code == 404  # annotators cannot
    assert clients["carol"].post(url, {}, format="json").status_code == 400
    client.force_login(users["carol"])
    page = client.get(f"/consolidations/{consolidation.id}/").content.decode()
    assert "Ask a third rater" in page
    response = clients["carol"].post(url, {"reason": "stances <b>contradict</b>"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "waiting"
    page = client.get(f"/consolidations/{consolidation.id}/").content.decode()
    assert "Waiting for the third rater" in page and "stances &lt;b&gt;contradict&lt;/b&gt;" in page
    assert "Ask a third rater" not in page
    assert clients["carol"].post(url, {"reason": "again"}, format="json").status_code == 400
    listing = client.get(f"/projects/{factcheck_project.id}/consolidations/?status=waiting").content.decode()
    assert f"/consolidations/{consolidation.id}/" in listing

    # the third rater's page says who they are; the consolidation page then shows three columns
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)

    assert api_client(third.user).get(f"/api/assignments/{third.id}/").json()["role"] == "third_rater"
    client.force_login(third.user)
    assert "You are the third rater" in client.get(f"/assignments/{third.id}/").content.decode()
    save_annotation(assignment=third, payload={"claims": [answer([CS, CS])]}, version=0, submit=True)
    detail = clients["carol"].get(f"/api/consolidations/{consolidation.id}/").json()
    assert detail["status"] == "open" and [a["role"] for a in detail["annotations"]] == [
        "annotator",
        "annotator",
        "third_rater",
    ]


def test_the_project_form_and_api_set_the_third_rater(users, logged_in, clients):
    client = logged_in("admin")
    client.post(
        "/projects/new/",
        {"name": "Always", "kind": "factcheck", "annotators_per_item": 2, "third_rater": "always"},
    )
    from annotation.models import Project

    assert Project.objects.get(name="Always").third_rater == ThirdRater.ALWAYS
    created = clients["admin"].post("/api/projects/", {"name": "Via API", "kind": "factcheck"}, format="json").json()
    assert created["third_rater"] == "escalation"
    changed = clients["admin"].patch(f"/api/projects/{created['id']}/", {"third_rater": "always"}, format="json")
    assert changed.json()["third_rater"] == "always"
    bad = clients["admin"].patch(f"/api/projects/{created['id']}/", {"third_rater": "sometimes"}, format="json")
    assert bad.status_code == 400 and "third_rater" in bad.json()
    page = logged_in("admin").get(f"/projects/{created['id']}/").content.decode()
    assert page  # renders with the setting


def test_a_waiting_project_warns_when_nobody_can_be_the_third_rater(factcheck_project, users, logged_in):
    factcheck_project.third_rater = ThirdRater.ALWAYS
    factcheck_project.save()
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, IR])]}, {"claims": [answer([CS, IR])]}])
    page = logged_in("admin").get(f"/projects/{factcheck_project.id}/").content.decode()
    assert "1 waiting for a third rater" in page.replace("<b>", "").replace("</b>", "")
    assert "no annotator of the project is free" in page


def test_nobody_consolidates_an_item_they_annotated(factcheck_project, users, make_user, clients, client):
    """Issue 10: a user who is annotator and consolidator never gets a consolidation of an item
    they annotated (page, next link, API), and the project page warns when everyone who can
    consolidate also annotates."""
    add_member(project=factcheck_project, user=users["carol"], role=Role.ANNOTATOR)
    add_member(project=factcheck_project, user=users["bob"], role=Role.CONSOLIDATOR)
    mine = step2_item(factcheck_project, "carol's")  # alice and bob are least loaded: they get it
    submit_all(mine, [{"claims": [answer([CS, RE])]}, {"claims": [answer([RE, CS])]}])
    consolidation = mine.consolidation
    bob = sorted(mine.assignments.values_list("user__username", flat=True))
    assert "bob" in bob
    url = f"/api/consolidations/{consolidation.id}/"
    assert clients["bob"].get(url).status_code == 403
    assert (
        clients["bob"]
        .put(
            url,
            {
                "payload": {"claims": [answer([CS, RE])]},
                "version": consolidation.version,
                "submit": True,
            },
            format="json",
        )
        .status_code
        == 403
    )
    assert clients["bob"].post(url + "discard/", {"reason": "x"}, format="json").status_code == 403
    assert clients["carol"].get(url).status_code == 200  # carol did not annotate this one
    client.force_login(users["bob"])
    assert client.get(f"/consolidations/{consolidation.id}/").status_code == 403
    response = client.get(f"/projects/{factcheck_project.id}/consolidations/next/")
    assert response.status_code == 302 and f"/consolidations/{consolidation.id}/" not in response["Location"]
    consolidation.refresh_from_db()
    assert consolidation.status == ConsolidationStatus.OPEN

    client.force_login(users["admin"])
    assert "Everyone who can consolidate" not in client.get(f"/projects/{factcheck_project.id}/").content.decode()
    add_member(
        project=factcheck_project, user=users["admin"], role=Role.ANNOTATOR
    )  # admin, carol, bob all annotate now
    assert "Everyone who can consolidate" in client.get(f"/projects/{factcheck_project.id}/").content.decode()
