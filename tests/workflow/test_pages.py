"""Browser pages: they render for the right people, escape user text, and report bad input."""

import json

import pytest

from annotation.models import Assignment, Item, ItemStage
from tests.helpers.builders import felm_line, jsonl, segment

pytestmark = pytest.mark.django_db

XSS = '<script>alert("x")</script>'


def test_login_page_and_login(client, users):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "alice", "password": "test-pass-123"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert b"alice" in client.get("/").content


def test_home_lists_my_projects_with_progress(logged_in, felm_items):
    page = logged_in("alice").get("/").content.decode()
    assert "FELM test" in page and "0/3" in page


def test_staff_create_a_project_in_the_ui(logged_in):
    client = logged_in("admin")
    response = client.post(
        "/projects/new/",
        {"name": "New one", "kind": "felm", "annotators_per_item": 2, "guidelines": ""},
    )
    assert response.status_code == 302
    assert (
        client.post("/projects/new/", {"name": "New one", "kind": "felm", "annotators_per_item": 2}).status_code == 200
    )


def test_non_staff_cannot_create_projects_in_the_ui(logged_in):
    assert logged_in("alice").get("/projects/new/").status_code == 403


def test_user_text_is_escaped_everywhere(logged_in, felm_project, users):
    from annotation.imports.items import import_jsonl

    import_jsonl(felm_project, jsonl([felm_line(1, [XSS, "ok."], prompt=XSS)]), fmt="felm")
    assignment = Assignment.objects.filter(user=users["alice"]).first()
    for name, url in (
        ("alice", f"/assignments/{assignment.id}/"),
        ("alice", f"/projects/{felm_project.id}/"),
        ("admin", f"/projects/{felm_project.id}/"),
    ):
        page = logged_in(name).get(url).content.decode()
        assert XSS not in page, url
    # the JSON handed to the page script cannot close the script element either
    page = logged_in("alice").get(f"/assignments/{assignment.id}/").content.decode()
    assert "\\u003Cscript\\u003E" in page


def test_guidelines_markdown_is_rendered_and_sanitised(logged_in, felm_project):
    felm_project.guidelines = "# Rules\n\n*Be careful*\n\n" + XSS
    felm_project.save()
    page = logged_in("alice").get(f"/projects/{felm_project.id}/guidelines/").content.decode()
    assert "<h1>Rules</h1>" in page and "<em>Be careful</em>" in page and XSS not in page


def test_next_item_walks_the_queue_and_ends_on_the_project(logged_in, felm_items, users):
    client = logged_in("alice")
    first = client.get(f"/projects/{felm_items[0].project_id}/next/")
    mine = list(Assignment.objects.filter(user=users["alice"]).order_by("id"))
    assert first["Location"] == f"/assignments/{mine[0].id}/"
    second = client.get(f"/projects/{felm_items[0].project_id}/next/?after={mine[0].id}")
    assert second["Location"] == f"/assignments/{mine[1].id}/"

    from annotation.services.annotations import save_annotation

    for assignment in mine:
        save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=True)
    done = client.get(f"/projects/{felm_items[0].project_id}/next/")
    assert done["Location"] == f"/projects/{felm_items[0].project_id}/"


def test_annotation_page_carries_state_for_the_script(logged_in, felm_items, users):
    assignment = Assignment.objects.filter(user=users["alice"]).first()
    response = logged_in("alice").get(f"/assignments/{assignment.id}/")
    state = response.context["state"]
    assert state["version"] == 0 and state["api_url"] == f"/api/assignments/{assignment.id}/annotation/"
    assert len(state["content"]["segments"]) == 3 and state["read_only"] is False
    assert "comparison" not in response.content.decode()


@pytest.mark.django_db(transaction=True)  # the import task is queued on commit, as in production
def test_admin_dashboard_import_form_reports_the_bad_line(logged_in, felm_project):
    client = logged_in("admin")
    upload = jsonl([felm_line(1, ["A."]), {"prompt": "x"}])
    response = client.post(
        f"/projects/{felm_project.id}/import/",
        {"file": upload, "format": "felm", "labels_as": "ignore"},
        follow=True,
    )
    page = response.content.decode()
    assert "nothing was imported" in page and "line 2, field response" in page
    assert Item.objects.count() == 0
    response = client.post(
        f"/projects/{felm_project.id}/import/",
        {"file": jsonl([felm_line(1, ["A."])]), "format": "felm", "labels_as": "ignore"},
        follow=True,
    )
    assert "Imported 1 item (" in response.content.decode()


def test_admin_dashboard_shows_progress_and_item_states(logged_in, felm_items):
    page = logged_in("admin").get(f"/projects/{felm_items[0].project_id}/").content.decode()
    assert "Download felm JSONL" in page and "Download annotations JSONL" in page
    assert "1: Annotating" in page and "alice" in page


def test_admin_adds_a_member_in_the_ui(logged_in, felm_project, users):
    client = logged_in("admin")
    client.post(f"/projects/{felm_project.id}/members/", {"username": "mallory", "role": "annotator"})
    assert felm_project.memberships.filter(user=users["mallory"], role="annotator").exists()
    response = client.post(
        f"/projects/{felm_project.id}/members/",
        {"username": "ghost", "role": "annotator"},
        follow=True,
    )
    assert "Member not added: username: no user named &#x27;ghost&#x27;" in response.content.decode()


def test_the_add_member_form_offers_annotator_first(logged_in, felm_project):
    page = logged_in("admin").get(f"/projects/{felm_project.id}/").content.decode()
    assert '<option value="annotator" selected>' in page


def test_export_download_streams_jsonl(logged_in, felm_project):
    from annotation.imports.items import import_jsonl

    import_jsonl(felm_project, jsonl([felm_line(5, ["A."])]), fmt="felm", labels_as="gold")
    response = logged_in("admin").get(f"/projects/{felm_project.id}/export/felm/")
    assert response.status_code == 200 and response.streaming
    assert "attachment" in response["Content-Disposition"] and "FELM-test-felm.jsonl" in response["Content-Disposition"]
    assert json.loads(b"".join(response.streaming_content))["index"] == "5"


def test_consolidation_and_agreement_pages_render(logged_in, felm_items, users, clients):
    from annotation.services.annotations import save_annotation

    item = felm_items[0]
    for assignment in Assignment.objects.filter(item_stage__item=item):
        labels = (
            [segment(True)] * 3
            if assignment.user.username == "alice"
            else [segment(False, "fooled", "x")] + [segment(True)] * 2
        )
        save_annotation(assignment=assignment, payload={"segments": labels}, version=0, submit=True)
    client = logged_in("carol")
    listing = client.get(f"/projects/{item.project_id}/consolidations/").content.decode()
    consolidation = item.stages.get().consolidation
    assert f"/consolidations/{consolidation.id}/" in listing
    page = client.get(f"/consolidations/{consolidation.id}/")
    assert page.context["state"]["disagreed"] == [
        "segments[0].label",
        "segments[0].error_type",
        "segments[0].comment",
    ]
    assert [a["annotator"] for a in page.context["state"]["annotations"]] == ["alice", "bob"]
    assert "1 segment (3 fields)" in listing
    agreement_page = client.get(f"/projects/{item.project_id}/agreement/").content.decode()
    assert "Krippendorff" in agreement_page and "Cohen" in agreement_page
    assert "Agreement with gold: Segment label" in agreement_page


@pytest.mark.parametrize("stage", ["2", "0", "x"])
def test_agreement_page_refuses_a_stage_the_kind_does_not_annotate(logged_in, felm_project, stage):
    response = logged_in("carol").get(f"/projects/{felm_project.id}/agreement/?stage={stage}")
    assert response.status_code == 404
    assert "annotated in stage 1 only" in response.content.decode()


def test_consolidator_sees_what_waits_for_consolidation(logged_in, felm_items):
    from annotation.services.annotations import save_annotation

    for assignment in Assignment.objects.filter(item_stage__item=felm_items[0]):
        save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=True)
    page = logged_in("carol").get(f"/projects/{felm_items[0].project_id}/").content.decode()
    assert "<b>1</b> waiting for consolidation" in page and "Consolidate the next item" in page
    assert (
        "waiting for consolidation"
        not in logged_in("alice").get(f"/projects/{felm_items[0].project_id}/").content.decode()
    )


def test_a_submitted_annotation_page_is_read_only(logged_in, felm_items, users):
    from annotation.services.annotations import save_annotation

    assignment = Assignment.objects.filter(user=users["alice"]).first()
    save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=True)
    state = logged_in("alice").get(f"/assignments/{assignment.id}/").context["state"]
    assert state["submitted"] is True and state["read_only"] is True


def test_error_pages_say_why_and_lead_home(logged_in, felm_items, users):
    client = logged_in("alice")
    forbidden = client.get(f"/projects/{felm_items[0].project_id}/agreement/")
    assert forbidden.status_code == 403
    assert "Not allowed" in forbidden.content.decode() and "Your role in this project" in forbidden.content.decode()
    bob_assignment = Assignment.objects.filter(user=users["bob"]).first()
    missing = client.get(f"/assignments/{bob_assignment.id}/")
    assert missing.status_code == 404 and 'href="/"' in missing.content.decode()


def test_discard_from_the_consolidation_page(logged_in, felm_items):
    from annotation.services.annotations import save_annotation

    item = felm_items[0]
    for assignment in Assignment.objects.filter(item_stage__item=item):
        save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=True)
    consolidation = item.stages.get().consolidation
    client = logged_in("carol")
    client.post(f"/consolidations/{consolidation.id}/discard/", {"reason": ""})
    consolidation.refresh_from_db()
    assert consolidation.status == "open"
    client.post(f"/consolidations/{consolidation.id}/discard/", {"reason": f"unclear {XSS}"})
    consolidation.refresh_from_db()
    assert consolidation.status == "discarded"
    page = client.get(f"/consolidations/{consolidation.id}/").content.decode()
    assert "<b>Discarded</b> by carol: unclear &lt;script&gt;" in page and XSS not in page


def test_demo_loader_is_idempotent_and_gives_a_working_project(db, django_capture_on_commit_callbacks):
    from django.core.management import call_command

    from annotation.models import Project

    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_demo")
    call_command("load_demo")
    project = Project.objects.get(name="Demo FELM")
    assert project.items.count() == 5
    assert Assignment.objects.filter(item_stage__item__project=project).count() == 10
    assert all(stage.content["segments"] for item in project.items.all() for stage in item.stages.all())
    factcheck = Project.objects.get(name="Demo Factcheck-Bench")
    stages = [stage for item in factcheck.items.all() for stage in item.stages.all()]
    assert len(stages) == 3 and all(s.status == "annotating" and s.suggestion["sentences"] for s in stages)
    # step 2: step 1 came as gold, the evidence from the demo corpus, a third rater on every item
    step2 = Project.objects.get(name="Demo Factcheck-Bench step 2")
    assert step2.third_rater == "always" and step2.corpora.get().passages > 0
    stages = list(ItemStage.objects.filter(item__project=step2, stage=2))
    assert len(stages) == 2 and all(s.status == "annotating" for s in stages)
    claims = [claim for stage in stages for claim in stage.content["claims"]]
    assert len(claims) == 6 and all(claim["evidence"] and not claim["problems"] for claim in claims)
    assert all(p["url"].startswith("https://demo.example/") for c in claims for p in c["evidence"])
    # D-FActScore: paragraphs about people who share a name, each with its candidate pages, pre-annotated
    dfactscore = ItemStage.objects.filter(item__project__name="Demo D-FActScore").order_by("item_id")
    assert [s.item.external_id for s in dfactscore] == [
        "mara-quell",
        "tobias-wrenfield",
        "ilse-varga-doon",
    ]
    assert all(
        s.status == "annotating" and len(s.content["candidates"]) >= 2 and s.suggestion["groups"] for s in dfactscore
    )


def test_consolidation_list_filters_by_status_and_shows_the_current_filter(logged_in, felm_items):
    from annotation.services.annotations import save_annotation

    for assignment in Assignment.objects.filter(item_stage__item=felm_items[0]):
        save_annotation(assignment=assignment, payload={"segments": [segment(True)] * 3}, version=0, submit=True)
    client = logged_in("carol")
    base = f"/projects/{felm_items[0].project_id}/consolidations/"
    assert 'aria-current="page" class="current">to do (open or waiting)<' in client.get(base).content.decode()
    assert "Nothing here." in client.get(base + "?status=done").content.decode()
    listing = client.get(base + "?status=all").content.decode()
    assert "/consolidations/" in listing and 'class="current">all<' in listing and "Nothing here." not in listing
    assert client.get(base + "?status=nonsense").status_code == 404


def test_unknown_addresses_and_expired_forms_get_readable_pages(client, users, felm_items):
    missing = client.get("/no/such/page/")
    assert missing.status_code == 404 and "There is nothing at this address." in missing.content.decode()
    assert "Resolver404" not in missing.content.decode()
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(users["alice"])
    expired = strict.post(f"/assignments/{Assignment.objects.filter(user=users['alice']).first().id}/reopen/")
    assert expired.status_code == 403 and "This form has expired" in expired.content.decode()


def test_home_shows_consolidators_what_waits_for_them(logged_in, felm_items):
    page = logged_in("carol").get("/").content.decode()
    assert "0 waiting for consolidation · 0 gold records" in page
    assert "waiting for consolidation" not in logged_in("alice").get("/").content.decode()


def test_home_counts_imported_gold_records_too(logged_in, felm_project):
    from annotation.imports.items import import_jsonl

    import_jsonl(
        felm_project,
        jsonl([felm_line(i, ["One.", "Two."]) for i in range(3)]),
        fmt="felm",
        labels_as="gold",
    )
    assert "0 waiting for consolidation · 3 gold records" in logged_in("carol").get("/").content.decode()


def test_discarding_on_the_page_asks_for_confirmation(logged_in, open_consolidation):
    page = logged_in("carol").get(f"/consolidations/{open_consolidation.id}/").content.decode()
    # forms.js asks before sending a form with data-confirm (no inline handler: the pages are CSP-friendly)
    assert 'class="discard"' in page and 'data-confirm="Discard this item?' in page and "js/forms.js" in page


def test_queues_name_items_not_assignment_ids_and_the_site_has_a_favicon(logged_in, felm_items):
    page = logged_in("alice").get(f"/projects/{felm_items[0].project_id}/").content.decode()
    queue = page[page.index("Your queue") :]
    queue = queue[: queue.index("</table>")]
    assert "<th>Item</th><th>Step</th>" in queue and f"<td>{felm_items[0].external_id}</td>" in queue
    assert "favicon.svg" in page
