"""What admins see and steer a campaign with: the overview (items per step and state, each
annotator's work and median time per step, stuck work), reassigning, the item page (every
step's suggestion, annotators' work, gold record, history) and correcting a split."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.exceptions import DomainError
from annotation.imports.items import import_jsonl
from annotation.models import Assignment, AssignmentStatus, ItemStage, StageStatus
from annotation.selectors import project_overview
from annotation.services.annotations import save_annotation
from annotation.services.assignments import reassign
from annotation.services.projects import add_member
from tests.helpers.builders import jsonl, segment
from tests.helpers.factcheck import STEP1_CONTENT, STEP1_GOLD

pytestmark = pytest.mark.django_db


def test_the_overview_counts_items_per_step_and_each_annotators_median_time(felm_items, users):
    first, second = (Assignment.objects.get(user=users["alice"], item_stage__item=item) for item in felm_items[:2])
    save_annotation(
        assignment=first,
        payload={"segments": [segment(True)] * 3},
        version=0,
        submit=True,
        active_seconds=30,
    )
    save_annotation(
        assignment=second,
        payload={"segments": [segment(True)] * 3},
        version=0,
        submit=True,
        active_seconds=90,
    )
    overview = project_overview(felm_items[0].project)
    (step,) = overview["steps"]
    assert step["step"] == 1 and step["total"] == 3
    assert {s["status"]: s["count"] for s in step["states"]} == {"annotating": 3}
    alice = next(a for a in overview["annotators"] if a["username"] == "alice")
    assert (alice["step"], alice["assigned"], alice["submitted"], alice["median_seconds"]) == (
        1,
        3,
        2,
        60,
    )
    assert overview["untouched_count"] == 0  # nothing is old yet


def test_untouched_assignments_are_flagged_and_can_be_given_to_another_annotator(
    felm_items, users, make_user, logged_in
):
    project = felm_items[0].project
    stale = Assignment.objects.get(user=users["bob"], item_stage__item=felm_items[0])
    Assignment.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(days=5))
    overview = project_overview(project)
    assert overview["untouched_count"] == 1 and overview["untouched"][0] == stale
    page = logged_in("admin").get(f"/projects/{project.id}/").content.decode()
    assert f"/projects/{project.id}/assignments/{stale.id}/reassign/" in page and "not started for 3 days" in page

    with pytest.raises(DomainError, match="add an annotator"):
        reassign(stale)  # alice already has the item: nobody else is free
    add_member(project=project, user=make_user("dave"), role="annotator")
    # dave joined: every waiting item already had its two annotators, so dave has none
    response = logged_in("admin").post(f"/projects/{project.id}/assignments/{stale.id}/reassign/", follow=True)
    assert "Given to dave" in response.content.decode()
    stale.refresh_from_db()
    assert stale.user.username == "dave" and project_overview(project)["untouched_count"] == 0


def test_started_work_is_never_reassigned(felm_items, users):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=False)
    with pytest.raises(DomainError, match="started"):
        reassign(assignment)


@pytest.mark.parametrize("who, status", [("admin", 200), ("carol", 200), ("alice", 403), ("mallory", 404)])
def test_the_item_page_is_for_admins_and_consolidators(felm_items, logged_in, who, status):
    item = felm_items[0]
    assert logged_in(who).get(f"/projects/{item.project_id}/items/{item.id}/").status_code == status


def test_the_item_page_shows_every_answer_the_gold_and_the_history(felm_items, users, logged_in):
    item = felm_items[0]
    for name, comment in (("alice", "<script>x</script>"), ("bob", "fine")):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=item)
        save_annotation(
            assignment=assignment,
            payload={"segments": [segment(True, comment=comment)] * 3},
            version=0,
            submit=name == "alice",
        )
    page = logged_in("carol").get(f"/projects/{item.project_id}/items/{item.id}/").content.decode()
    assert "submitted, version 1" in page and "draft, version 1" in page
    assert "&lt;script&gt;" in page and "<script>x</script>" not in page
    assert "alice submitted" in page and "assigned to bob" in page
    assert "Correct the split" not in page  # not for consolidators, and the item is started anyway


def test_an_admin_corrects_a_split_before_anyone_starts_and_the_item_is_pre_annotated_again(
    factcheck_project, users, logged_in, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(
            factcheck_project,
            jsonl(
                [
                    {
                        "prompt": "p",
                        "response": "Marie Curie was born in Warsaw. She moved to Paris in 1891. She died in 1934.",
                    }
                ]
            ),
            fmt="plain",
        )
    stage = ItemStage.objects.get(item__project=factcheck_project, stage=1)
    assert stage.status == StageStatus.ANNOTATING and len(stage.content["sentences"]) == 3
    client = logged_in("admin")
    url = f"/projects/{factcheck_project.id}/items/{stage.item_id}/"
    assert "Correct the split" in client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {
                "stage": 1,
                "units": "Marie Curie was born in Warsaw. She moved to Paris in 1891.\n\n  She died in 1934.  \n",
            },
            follow=True,
        )
    assert "has the new split" in response.content.decode()
    stage.refresh_from_db()
    assert stage.content["sentences"] == [
        "Marie Curie was born in Warsaw. She moved to Paris in 1891.",
        "She died in 1934.",
    ]
    assert stage.status == StageStatus.ANNOTATING and len(stage.suggestion["sentences"]) == 2
    assert stage.assignments.count() == 2

    # once an annotator has started, the split stays
    assignment = stage.assignments.first()
    save_annotation(assignment=assignment, payload=get_empty(stage), version=0, submit=False)
    response = client.post(
        url,
        {
            "stage": 1,
            "units": "Marie Curie was born in Warsaw.\nShe moved to Paris in 1891.\nShe died in 1934.",
        },
        follow=True,
    )
    assert "Not changed: an annotator has started" in response.content.decode()
    stage.refresh_from_db()
    assert stage.content["sentences"] == [
        "Marie Curie was born in Warsaw. She moved to Paris in 1891.",
        "She died in 1934.",
    ]
    # annotators and consolidators cannot post one
    assert logged_in("carol").post(url, {"stage": 1, "units": "x"}).status_code == 403


def get_empty(stage):
    from annotation.kinds import get_kind

    return get_kind("factcheck").empty_payload(1, stage.content, stage.suggestion)


def test_an_assignment_started_by_its_annotator_keeps_its_status(felm_items, users):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item=felm_items[0])
    save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=False)
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.IN_PROGRESS


def test_removing_an_annotator_gives_their_open_work_to_the_others_and_keeps_what_they_submitted(
    felm_items, users, make_user, logged_in
):
    project = felm_items[0].project
    add_member(project=project, user=make_user("dave"), role="annotator")
    done = Assignment.objects.get(user=users["bob"], item_stage__item=felm_items[0])
    save_annotation(assignment=done, payload={"segments": [segment(True)] * 3}, version=0, submit=True)
    from annotation.models import Membership

    membership = Membership.objects.get(project=project, user=users["bob"], role="annotator")
    client = logged_in("admin")
    response = client.post(f"/projects/{project.id}/members/", {"remove": membership.id}, follow=True)
    assert "went to the other annotators" in response.content.decode()
    bobs = Assignment.objects.filter(user=users["bob"], item_stage__item__project=project)
    assert list(bobs) == [done]  # the submitted one stays
    for item in felm_items[1:]:  # the others went to dave, who was free
        assert sorted(Assignment.objects.filter(item_stage__item=item).values_list("user__username", flat=True)) == [
            "alice",
            "dave",
        ]


def test_the_last_admin_stays_and_too_few_annotators_are_warned_about(felm_project, users, logged_in):
    from annotation.models import Membership

    admin = Membership.objects.get(project=felm_project, user=users["admin"], role="admin")
    client = logged_in("admin")
    response = client.post(f"/projects/{felm_project.id}/members/", {"remove": admin.id}, follow=True)
    assert "Not removed: a project needs an admin" in response.content.decode()
    assert Membership.objects.filter(pk=admin.pk).exists()
    assert "Items need 2 annotators each" not in response.content.decode()
    alice = Membership.objects.get(project=felm_project, user=users["alice"], role="annotator")
    page = client.post(f"/projects/{felm_project.id}/members/", {"remove": alice.id}, follow=True).content.decode()
    assert "Items need 2 annotators each, but the project has 1" in page


def test_admins_change_a_projects_settings_on_its_page(felm_items, users, make_user, logged_in):
    project = felm_items[0].project
    add_member(project=project, user=make_user("dave"), role="annotator")
    project.pipeline_settings = {"llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "sk-secret"}}
    project.save()
    client = logged_in("admin")
    page = client.get(f"/projects/{project.id}/settings/").content.decode()
    assert "sk-secret" not in page and "***" in page  # the key is masked
    import json

    from annotation.selectors import masked_pipeline_settings

    # what the form shows is sent back: the masked key stands for the stored one
    form = {
        "name": "FELM renamed",
        "annotators_per_item": 3,
        "third_rater": "escalation",
        "guidelines": "# New",
        "pipeline_settings": json.dumps(masked_pipeline_settings(project)),
    }
    response = client.post(f"/projects/{project.id}/settings/", form, follow=True)
    assert "Project settings saved." in response.content.decode()
    project.refresh_from_db()
    assert (project.name, project.annotators_per_item, project.guidelines) == (
        "FELM renamed",
        3,
        "# New",
    )
    assert project.pipeline_settings["llm"]["api_key"] == "sk-secret"  # the masked key kept the stored one
    # more annotators per item: the items already handed out get their third annotator
    assert all(Assignment.objects.filter(item_stage__item=item).count() == 3 for item in felm_items)


def test_project_admins_who_are_not_staff_cannot_change_the_llm_endpoint(felm_project, users, logged_in):
    add_member(project=felm_project, user=users["alice"], role="admin")
    client = logged_in("alice")
    response = client.post(
        f"/projects/{felm_project.id}/settings/",
        {
            "name": felm_project.name,
            "annotators_per_item": 2,
            "third_rater": "escalation",
            "guidelines": "",
            "pipeline_settings": '{"llm": {"base_url": "http://evil.example/v1", "model": "m"}}',
        },
    )
    assert response.status_code == 200 and "staff" in response.content.decode()
    felm_project.refresh_from_db()
    assert "llm" not in felm_project.pipeline_settings
    assert logged_in("bob").get(f"/projects/{felm_project.id}/settings/").status_code == 403


def test_an_admin_reopens_a_gold_record_and_restores_a_discard_with_reasons_in_the_history(
    factcheck_project, users, clients, logged_in, django_capture_on_commit_callbacks
):
    from annotation.models import Consolidation, ConsolidationStatus, GoldRecord
    from annotation.services.consolidation import discard_item_stage, save_consolidation

    item = factcheck_project.items.create(prompt="p", response="r", external_id="x")
    stage = ItemStage.objects.create(item=item, stage=1, status=StageStatus.CONSOLIDATING, content=STEP1_CONTENT)
    consolidation = Consolidation.objects.create(item_stage=stage, draft=STEP1_GOLD)
    with django_capture_on_commit_callbacks(execute=True):
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=STEP1_GOLD,
            version=0,
            submit=True,
        )
    step2 = ItemStage.objects.get(item=item, stage=2)
    url = f"/api/projects/{factcheck_project.id}/items/{item.id}/stages/1/reopen/"
    assert clients["carol"].post(url, {"reason": "x"}, format="json").status_code == 403  # admins only
    assert clients["admin"].post(url, {}, format="json").status_code == 400  # a reason is required

    # the next step has work resting on the gold record: refused, nothing changes
    assignment = step2.assignments.first()
    save_annotation(assignment=assignment, payload=get_kind_empty(step2), version=0, submit=False)
    refused = clients["admin"].post(url, {"reason": "wrong claim split"}, format="json")
    assert refused.status_code == 400 and "next step already has annotations" in refused.json()["detail"]
    stage.refresh_from_db()
    assert stage.status == StageStatus.DONE

    # untouched next step: removed, and it opens again when the gold record is saved again
    assignment.annotation.delete()
    response = clients["admin"].post(url, {"reason": "wrong claim split"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "open"
    stage.refresh_from_db()
    assert stage.status == StageStatus.CONSOLIDATING and not ItemStage.objects.filter(item=item, stage=2).exists()
    consolidation.refresh_from_db()
    assert consolidation.draft == STEP1_GOLD and consolidation.status == ConsolidationStatus.OPEN
    with django_capture_on_commit_callbacks(execute=True):
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=STEP1_GOLD,
            version=consolidation.version,
            submit=True,
        )
    assert (
        ItemStage.objects.filter(item=item, stage=2).exists() and GoldRecord.objects.filter(item_stage=stage).exists()
    )

    # a discard is restored the same way, on the item page
    step2 = ItemStage.objects.get(item=item, stage=2)
    ItemStage.objects.filter(pk=step2.pk).update(status=StageStatus.CONSOLIDATING)
    discard_item_stage(
        consolidation=Consolidation.objects.create(item_stage=step2),
        user=users["carol"],
        reason="unclear",
    )
    client = logged_in("admin")
    page = client.get(f"/projects/{factcheck_project.id}/items/{item.id}/").content.decode()
    assert "Restore the discarded item" in page and "Reopen the gold record" in page
    response = client.post(
        f"/projects/{factcheck_project.id}/items/{item.id}/",
        {"stage": 2, "reopen": "1", "reason": "the question is clear after all"},
        follow=True,
    )
    assert "being consolidated again" in response.content.decode()
    step2.refresh_from_db()
    assert step2.status == StageStatus.CONSOLIDATING and step2.consolidation.status == ConsolidationStatus.OPEN
    history = client.get(f"/projects/{factcheck_project.id}/items/{item.id}/").content.decode()
    assert "gold record reopened by admin: wrong claim split" in history
    assert "discarded item restored by admin: the question is clear after all" in history


def get_kind_empty(stage):
    from annotation.kinds import get_kind

    return get_kind("factcheck").empty_payload(stage.stage, stage.content, stage.suggestion)
