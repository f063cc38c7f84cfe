"""The FELM campaign through the REST API: set-up, blind double annotation, consolidation, export."""

import json

import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, GoldRecord, ItemStage, StageStatus
from tests.helpers.builders import PASSWORD, felm_line, jsonl, post_import, segment

pytestmark = pytest.mark.django_db


def assignment_of(project, user, item):
    return Assignment.objects.get(user=user, item_stage__item=item)


def put_annotation(client, assignment_id, segments, version, submit=False):
    return client.put(
        f"/api/assignments/{assignment_id}/annotation/",
        {"payload": {"segments": segments}, "version": version, "submit": submit},
        format="json",
    )


def test_token_endpoint_returns_a_token(users, client):
    response = client.post("/api/auth/token/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 200
    assert response.json()["token"] == Token.objects.get(user=users["alice"]).key


def test_token_endpoint_refuses_a_wrong_password(users, client):
    assert client.post("/api/auth/token/", {"username": "alice", "password": "wrong"}).status_code == 400


def test_admin_sets_up_a_project_through_the_api(clients, users):
    admin = clients["admin"]
    created = admin.post("/api/users/", {"username": "dave", "password": "long-enough-1"}, format="json")
    assert created.status_code == 201, created.content
    project = admin.post("/api/projects/", {"name": "P", "kind": "felm", "annotators_per_item": 2}, format="json")
    assert project.status_code == 201, project.content
    project_id = project.json()["id"]
    assert project.json()["my_roles"] == ["admin"]
    for username, role in (
        ("alice", "annotator"),
        ("dave", "annotator"),
        ("carol", "consolidator"),
    ):
        response = admin.post(
            f"/api/projects/{project_id}/members/",
            {"username": username, "role": role},
            format="json",
        )
        assert response.status_code == 201, response.content

    records = [
        {"prompt": "Q?", "response": "First sentence here. Second one follows.*****Third part."},
        {
            "prompt": "Q2?",
            "response": "Dr. Smith lives in the U.S. and works there. He is a doctor.",
        },
    ]
    response, job = post_import(admin, project_id, jsonl(records), "plain")
    assert response.status_code == 202, response.content
    assert job["state"] == "done" and job["result"]["items"] == 2 and job["result"]["precomputing"] == 2
    items = admin.get(f"/api/projects/{project_id}/items/").json()["results"]
    assert [i["stages"][0]["status"] for i in items] == ["annotating", "annotating"]
    assert items[0]["stages"][0]["content"]["segments"] == [
        "First sentence here. Second one follows.",
        "Third part.",
    ]
    assert items[1]["stages"][0]["content"]["segments"] == [
        "Dr. Smith lives in the U.S. and works there.",
        "He is a doctor.",
    ]
    assert items[0]["stages"][0]["provenance"] == {"segments": "pipeline:auto"}
    assert Assignment.objects.filter(item_stage__item__project_id=project_id).count() == 4


def test_members_and_users_reject_bad_input(clients, felm_project):
    admin = clients["admin"]
    assert admin.post("/api/users/", {"username": "x", "password": "short"}, format="json").status_code == 400
    assert (
        admin.post("/api/users/", {"username": "alice", "password": "long-enough-1"}, format="json").status_code == 400
    )
    bad_role = admin.post(
        f"/api/projects/{felm_project.id}/members/",
        {"username": "alice", "role": "boss"},
        format="json",
    )
    assert bad_role.status_code == 400 and "role" in bad_role.json()
    nobody = admin.post(
        f"/api/projects/{felm_project.id}/members/",
        {"username": "nobody", "role": "annotator"},
        format="json",
    )
    assert nobody.status_code == 400 and "username" in nobody.json()
    bad_kind = admin.post("/api/projects/", {"name": "Q", "kind": "poetry"}, format="json")
    assert bad_kind.status_code == 400 and "kind" in bad_kind.json()


def test_assignments_are_balanced_and_distinct(felm_project, users, make_user):
    from annotation.imports.items import import_jsonl
    from annotation.models import Role
    from annotation.services.projects import add_member

    add_member(project=felm_project, user=make_user("erin"), role=Role.ANNOTATOR)
    import_jsonl(felm_project, jsonl([felm_line(i, ["A.", "B."]) for i in range(9)]), fmt="felm")
    per_stage = {}
    for stage_id, user_id in Assignment.objects.values_list("item_stage_id", "user_id"):
        per_stage.setdefault(stage_id, []).append(user_id)
    assert all(len(v) == 2 and len(set(v)) == 2 for v in per_stage.values())
    load = {}
    for users_of_stage in per_stage.values():
        for u in users_of_stage:
            load[u] = load.get(u, 0) + 1
    assert sorted(load.values()) == [6, 6, 6]


def test_annotator_joining_later_gets_the_unfilled_items(users, make_user):
    from annotation.imports.items import import_jsonl
    from annotation.models import Role
    from annotation.services.projects import add_member, create_project

    project = create_project(name="late", kind="felm", created_by=users["admin"])
    add_member(project=project, user=users["alice"], role=Role.ANNOTATOR)
    import_jsonl(project, jsonl([felm_line(i, ["A."]) for i in range(3)]), fmt="felm")
    assert Assignment.objects.filter(item_stage__item__project=project).count() == 3
    add_member(project=project, user=users["bob"], role=Role.ANNOTATOR)
    assert Assignment.objects.filter(item_stage__item__project=project, user=users["bob"]).count() == 3


def test_my_assignments_list_only_the_callers_items_with_segments(clients, felm_items, users):
    response = clients["alice"].get(f"/api/projects/{felm_items[0].project_id}/assignments/?mine=1")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert {row["username"] for row in body["results"]} == {"alice"}
    assert body["results"][0]["content"]["segments"][0] == "Sentence 0.0 is a claim."
    assert body["results"][0]["item"]["prompt"] == "Question 0?"


def test_pagination_accepts_page_size_up_to_1000(clients, felm_items):
    project_id = felm_items[0].project_id
    page = clients["alice"].get(f"/api/projects/{project_id}/assignments/?mine=1&page_size=2&page=2").json()
    assert page["count"] == 3 and len(page["results"]) == 1
    assert len(clients["admin"].get(f"/api/projects/{project_id}/items/?page_size=1000").json()["results"]) == 3
    # above the cap was silently cut to 1000; now it is refused, naming the parameter
    too_many = clients["admin"].get(f"/api/projects/{project_id}/items/?page_size=5000")
    assert too_many.status_code == 400 and "page_size" in too_many.json()


def test_draft_save_version_check_and_submit(clients, felm_items, users):
    assignment = assignment_of(felm_items[0].project, users["alice"], felm_items[0])
    url = f"/api/assignments/{assignment.id}/annotation/"
    initial = clients["alice"].get(url).json()
    assert initial["version"] == 0 and initial["payload"]["segments"][0] == segment(None)

    draft = [
        segment(True),
        segment(None),
        segment(False, "knowledge_error", "wrong year", ["https://example.org/a"]),
    ]
    saved = put_annotation(clients["alice"], assignment.id, draft, version=0)
    assert saved.status_code == 200, saved.content
    assert saved.json()["version"] == 1

    stale = put_annotation(clients["alice"], assignment.id, draft, version=0)
    assert stale.status_code == 409
    assert stale.json()["stored_version"] == 1

    incomplete = put_annotation(clients["alice"], assignment.id, draft, version=1, submit=True)
    assert incomplete.status_code == 400
    assert incomplete.json()["errors"] == [
        {"field": "segments[1].label", "message": "is required: mark the segment correct or wrong"}
    ]

    draft[1] = segment(True)
    submitted = put_annotation(clients["alice"], assignment.id, draft, version=1, submit=True)
    assert submitted.status_code == 200 and submitted.json()["submitted"] is True
    assignment.refresh_from_db()
    assert assignment.status == "submitted" and assignment.submitted_at is not None

    after = put_annotation(clients["alice"], assignment.id, draft, version=2)
    assert after.status_code == 400 and "read-only" in after.json()["detail"]


@pytest.mark.parametrize(
    "bad_segment, field, message",
    [
        (
            segment(False, None, "why"),
            "segments[0].error_type",
            "is required when the segment contains an error",
        ),
        (
            segment(False, "knowledge_error", "  "),
            "segments[0].comment",
            "a reason is required when the segment contains an error",
        ),
        (
            segment(False, "typo", "why"),
            "segments[0].error_type",
            "must be one of knowledge_error, reasoning_error, irrelevant_with_qst, fooled",
        ),
        (
            segment("yes"),
            "segments[0].label",
            "must be true (correct), false (contains an error) or null",
        ),
        (
            segment(True, refs=["not a url"]),
            "segments[0].refs[0]",
            "'not a url' is not a valid http(s) URL",
        ),
        (
            segment(True, refs=["javascript:alert(1)"]),
            "segments[0].refs[0]",
            "'javascript:alert(1)' is not a valid http(s) URL",
        ),
    ],
)
def test_submit_names_the_bad_field(clients, felm_items, users, bad_segment, field, message):
    assignment = assignment_of(felm_items[0].project, users["alice"], felm_items[0])
    response = put_annotation(
        clients["alice"], assignment.id, [bad_segment, segment(True), segment(True)], 0, submit=True
    )
    assert response.status_code == 400
    assert {"field": field, "message": message} in response.json()["errors"]


def test_payload_with_wrong_segment_count_is_refused(clients, felm_items, users):
    assignment = assignment_of(felm_items[0].project, users["alice"], felm_items[0])
    response = put_annotation(clients["alice"], assignment.id, [segment(True)], 0)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "segments"


def submit_both(clients, users, item, alice_segments, bob_segments):
    for name, segments in (("alice", alice_segments), ("bob", bob_segments)):
        assignment = assignment_of(item.project, users[name], item)
        response = put_annotation(clients[name], assignment.id, segments, 0, submit=True)
        assert response.status_code == 200, response.content


def test_consolidation_opens_after_both_submit_with_agreed_fields_prefilled(clients, felm_items, users):
    item = felm_items[0]
    project_id = item.project_id
    alice = [
        segment(True),
        segment(False, "knowledge_error", "wrong", ["https://a.example"]),
        segment(True),
    ]
    bob = [
        segment(True),
        segment(False, "reasoning_error", "bad step", ["https://a.example"]),
        segment(False, "fooled", "premise"),
    ]

    assignment = assignment_of(item.project, users["alice"], item)
    put_annotation(clients["alice"], assignment.id, alice, 0, submit=True)
    assert clients["carol"].get(f"/api/projects/{project_id}/consolidations/").json()["count"] == 0

    assignment = assignment_of(item.project, users["bob"], item)
    put_annotation(clients["bob"], assignment.id, bob, 0, submit=True)
    listing = clients["carol"].get(f"/api/projects/{project_id}/consolidations/").json()
    assert listing["count"] == 1
    consolidation_id = listing["results"][0]["id"]
    detail = clients["carol"].get(f"/api/consolidations/{consolidation_id}/").json()
    assert detail["disagreed"] == [
        "segments[1].error_type",
        "segments[1].comment",
        "segments[2].label",
        "segments[2].error_type",
        "segments[2].comment",
    ]
    prefilled = detail["payload"]["segments"]
    assert prefilled[0] == segment(True)
    assert (
        prefilled[1]["label"] is False
        and prefilled[1]["error_type"] is None
        and prefilled[1]["refs"] == ["https://a.example"]
    )
    assert prefilled[2]["label"] is None
    assert [a["annotator"] for a in detail["annotations"]] == ["alice", "bob"]
    assert ItemStage.objects.get(item=item).status == StageStatus.CONSOLIDATING

    gold = [
        segment(True),
        segment(False, "knowledge_error", "wrong date", ["https://a.example"]),
        segment(True),
    ]
    incomplete = clients["carol"].put(
        f"/api/consolidations/{consolidation_id}/",
        {"payload": {"segments": prefilled}, "version": 0, "submit": True},
        format="json",
    )
    assert incomplete.status_code == 400
    saved = clients["carol"].put(
        f"/api/consolidations/{consolidation_id}/",
        {"payload": {"segments": gold}, "version": 0, "submit": True},
        format="json",
    )
    assert saved.status_code == 200, saved.content
    record = GoldRecord.objects.get(item_stage__item=item)
    assert record.payload == {"segments": gold}
    assert record.consolidated_by == users["carol"]
    assert "segments[2].label" in record.disagreed_fields
    assert ItemStage.objects.get(item=item).status == StageStatus.DONE
    again = clients["carol"].put(
        f"/api/consolidations/{consolidation_id}/",
        {"payload": {"segments": gold}, "version": 1, "submit": True},
        format="json",
    )
    assert again.status_code == 400


def test_consolidation_draft_version_conflict(clients, felm_items, users):
    item = felm_items[0]
    same = [segment(True)] * 3
    submit_both(clients, users, item, same, same)
    consolidation_id = (
        clients["carol"].get(f"/api/projects/{item.project_id}/consolidations/").json()["results"][0]["id"]
    )
    first = clients["carol"].put(
        f"/api/consolidations/{consolidation_id}/",
        {"payload": {"segments": same}, "version": 0},
        format="json",
    )
    assert first.status_code == 200 and first.json()["version"] == 1
    stale = clients["admin"].put(
        f"/api/consolidations/{consolidation_id}/",
        {"payload": {"segments": same}, "version": 0},
        format="json",
    )
    assert stale.status_code == 409 and stale.json()["stored_version"] == 1


def test_discard_needs_a_reason_and_marks_the_item(clients, felm_items, users):
    item = felm_items[0]
    submit_both(clients, users, item, [segment(True)] * 3, [segment(True)] * 3)
    consolidation_id = (
        clients["carol"].get(f"/api/projects/{item.project_id}/consolidations/").json()["results"][0]["id"]
    )
    assert (
        clients["carol"]
        .post(f"/api/consolidations/{consolidation_id}/discard/", {"reason": ""}, format="json")
        .status_code
        == 400
    )
    response = clients["carol"].post(
        f"/api/consolidations/{consolidation_id}/discard/",
        {"reason": "ambiguous prompt"},
        format="json",
    )
    assert response.status_code == 200 and response.json()["status"] == "discarded"
    stage = ItemStage.objects.get(item=item)
    assert stage.status == StageStatus.DISCARDED and stage.discard_reason == "ambiguous prompt"
    assert not GoldRecord.objects.filter(item_stage=stage).exists()


def read_jsonl(response):
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_export_felm_is_the_released_shape_field_for_field(clients, felm_items, users):
    item = felm_items[0]
    alice = [
        segment(True),
        segment(False, "knowledge_error", "It is 1953.", ["https://a.example/x"]),
        segment(True, refs=["https://b.example"]),
    ]
    submit_both(clients, users, item, alice, alice)
    consolidation_id = (
        clients["carol"].get(f"/api/projects/{item.project_id}/consolidations/").json()["results"][0]["id"]
    )
    clients["carol"].put(
        f"/api/consolidations/{consolidation_id}/",
        {"payload": {"segments": alice}, "version": 0, "submit": True},
        format="json",
    )

    response = clients["admin"].get(f"/api/projects/{item.project_id}/export/?format=felm")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/jsonl")
    records = read_jsonl(response)
    assert records == [
        {
            "index": "0",
            "source": "test",
            "prompt": "Question 0?",
            "response": item.response,
            "segmented_response": [
                "Sentence 0.0 is a claim.",
                "Sentence 0.1 is a claim.",
                "Sentence 0.2 is a claim.",
            ],
            "labels": [True, False, True],
            "comment": ["", "It is 1953.", ""],
            "type": [None, "knowledge_error", None],
            "ref": ["https://a.example/x", "https://b.example"],
            "domain": "wk",
        }
    ]


def test_export_annotations_has_every_annotator_with_times(clients, felm_items, users):
    item = felm_items[0]
    submit_both(
        clients,
        users,
        item,
        [segment(True)] * 3,
        [segment(False, "fooled", "no")] + [segment(True)] * 2,
    )
    records = read_jsonl(clients["admin"].get(f"/api/projects/{item.project_id}/export/?format=annotations"))
    assert [r["annotator"] for r in records] == ["alice", "bob"]
    assert records[1]["payload"]["segments"][0]["error_type"] == "fooled"
    assert all(r["submitted_at"] and r["started_at"] and r["external_id"] == "0" for r in records)


def test_export_rejects_an_unknown_format(clients, felm_items):
    response = clients["admin"].get(f"/api/projects/{felm_items[0].project_id}/export/?format=csv")
    assert response.status_code == 400 and "format" in response.json()


def test_openapi_schema_and_docs_are_served(client, users):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/assignments/{id}/annotation/" in schema.content
    client.force_login(users["alice"])
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


def test_pipeline_settings_are_validated_and_the_api_key_is_never_shown(clients, felm_project):
    url = f"/api/projects/{felm_project.id}/"
    bad = clients["admin"].patch(url, {"pipeline_settings": {"segmentation": "words"}}, format="json")
    assert bad.status_code == 400 and "segmentation" in str(bad.json()["pipeline_settings"])
    bad = clients["admin"].patch(url, {"pipeline_settings": {"llm": {"url": "x"}}}, format="json")
    assert bad.status_code == 400 and "unknown llm settings: url" in str(bad.json()["pipeline_settings"])
    settings = {"llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "secret-key"}}
    assert clients["admin"].patch(url, {"pipeline_settings": settings}, format="json").status_code == 200
    felm_project.refresh_from_db()
    assert felm_project.pipeline_settings["llm"]["api_key"] == "secret-key"
    for name in ("admin", "alice"):
        shown = clients[name].get(url).json()["pipeline_settings"]["llm"]
        assert shown["api_key"] == "********" and shown["model"] == "m"
    # sending the masked value back keeps the stored key
    shown = clients["admin"].get(url).json()["pipeline_settings"]
    assert clients["admin"].patch(url, {"pipeline_settings": shown}, format="json").status_code == 200
    felm_project.refresh_from_db()
    assert felm_project.pipeline_settings["llm"]["api_key"] == "secret-key"


@pytest.mark.parametrize(
    "llm, message",
    [
        ({"timeout": "abc"}, "llm.timeout must be a number ≥ 0, not 'abc'"),
        ({"temperature": -1}, "llm.temperature must be a number ≥ 0, not -1"),
        ({"concurrency": 0}, "llm.concurrency must be an integer ≥ 1, not 0"),
        ({"concurrency": "x"}, "llm.concurrency must be an integer ≥ 1, not 'x'"),
        ({"max_retries": True}, "llm.max_retries must be an integer ≥ 0, not True"),
        ({"model": 3}, "llm.model must be a string, not 3"),
    ],
)
def test_llm_settings_of_the_wrong_type_are_refused_before_any_item_fails(clients, felm_project, llm, message):
    bad = clients["admin"].patch(
        f"/api/projects/{felm_project.id}/", {"pipeline_settings": {"llm": llm}}, format="json"
    )
    assert bad.status_code == 400 and message in str(bad.json()["pipeline_settings"])


def test_llm_settings_of_the_right_types_are_kept(clients, felm_project):
    llm = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "timeout": 2.5,
        "temperature": 0,
        "max_retries": 0,
        "concurrency": 3,
        "api_key": None,
    }
    ok = clients["admin"].patch(f"/api/projects/{felm_project.id}/", {"pipeline_settings": {"llm": llm}}, format="json")
    assert ok.status_code == 200
