"""API bugs found by property-based fuzzing (schemathesis), one test each."""

import pytest
from django.contrib.auth import get_user_model
from drf_spectacular.generators import SchemaGenerator

from annotation.models import Assignment
from tests.helpers.builders import felm_line, jsonl, post_import, segment

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def alice_assignment(users):
    return Assignment.objects.filter(user=users["alice"]).order_by("id").first()


@pytest.mark.parametrize("suffix", ["", "progress/", "members/", "agreement/", "export/?format=felm"])
def test_a_project_id_that_is_not_a_number_is_not_found(clients, felm_project, suffix):
    # was a 500: the id reached Project.objects.get(pk=...) unconverted
    for name in ("admin", "alice"):
        assert clients[name].get(f"/api/projects/abc/{suffix}").status_code == 404
    assert clients["admin"].delete("/api/projects/null,null/").status_code == 404
    assert clients["alice"].patch("/api/projects/1e-05/", {"name": "x"}, format="json").status_code == 404


def test_path_ids_are_documented_as_integers(schema):
    for path in (
        "/api/projects/{id}/",
        "/api/assignments/{id}/annotation/",
        "/api/consolidations/{id}/",
    ):
        operation = next(iter(schema["paths"][path].values()))
        [param] = [p for p in operation["parameters"] if p["name"] == "id"]
        assert param["schema"]["type"] == "integer", path


def test_project_kind_cannot_be_changed(clients, felm_items):
    project = felm_items[0].project
    response = clients["admin"].patch(
        f"/api/projects/{project.id}/", {"kind": "factcheck", "name": "Renamed"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["kind"] == "felm"
    project.refresh_from_db()
    assert project.kind == "felm" and project.name == "Renamed"


def test_project_kind_is_read_only_in_the_patch_schema(schema):
    assert schema["components"]["schemas"]["PatchedProjectUpdate"]["properties"]["kind"]["readOnly"] is True


@pytest.mark.parametrize("status_filter", ["bogus", "a\x00b"])
def test_item_and_consolidation_status_filters_refuse_unknown_values(clients, felm_project, status_filter):
    # a NUL byte was a 500 on PostgreSQL; any other unknown value silently matched nothing
    for suffix in ("items", "consolidations"):
        response = clients["admin"].get(f"/api/projects/{felm_project.id}/{suffix}/", {"status": status_filter})
        assert response.status_code == 400 and "status" in response.json(), suffix


def test_item_and_consolidation_status_filters_still_filter(clients, felm_items):
    project_id = felm_items[0].project_id
    assert clients["admin"].get(f"/api/projects/{project_id}/items/?status=annotating").json()["count"] == 3
    assert clients["admin"].get(f"/api/projects/{project_id}/items/?status=done").json()["count"] == 0
    assert clients["carol"].get(f"/api/projects/{project_id}/consolidations/?status=open").json()["count"] == 0


def test_member_username_with_a_nul_byte_is_refused(clients, felm_project):
    # was a 500 on PostgreSQL: the lookup reached the database
    response = clients["admin"].post(
        f"/api/projects/{felm_project.id}/members/",
        {"username": "ali\x00ce", "role": "annotator"},
        format="json",
    )
    assert response.status_code == 400 and "username" in response.json()


def test_annotation_payload_with_a_nul_byte_is_refused(clients, felm_items, users):
    # was a 500 on PostgreSQL: jsonb cannot hold \u0000
    assignment = alice_assignment(users)
    payload = {"segments": [segment(False, "knowledge_error", "bad\x00"), segment(True), segment(True)]}
    response = clients["alice"].put(
        f"/api/assignments/{assignment.id}/annotation/",
        {"payload": payload, "version": 0},
        format="json",
    )
    assert response.status_code == 400 and "payload" in response.json()
    assert not hasattr(Assignment.objects.get(pk=assignment.pk), "annotation")


def test_consolidation_payload_with_a_nul_byte_is_refused(clients, open_consolidation):
    consolidation = open_consolidation
    payload = {"segments": [segment(True)] * 2 + [{"label": True, "\x00": 1}]}
    response = clients["carol"].put(
        f"/api/consolidations/{consolidation.id}/",
        {"payload": payload, "version": 0},
        format="json",
    )
    assert response.status_code == 400 and "payload" in response.json()


def test_pipeline_settings_with_a_nul_byte_are_refused(clients, felm_project):
    response = clients["admin"].patch(
        f"/api/projects/{felm_project.id}/",
        {"pipeline_settings": {"llm": {"model": "m\x00"}}},
        format="json",
    )
    assert response.status_code == 400 and "pipeline_settings" in response.json()


def test_a_username_differing_only_in_unicode_form_is_refused(clients, users):
    # "ﬁ" (one ligature character) is stored as "fi": the check missed it and the insert hit the
    # unique constraint (500)
    assert (
        clients["admin"]
        .post("/api/users/", {"username": "fiona", "password": "long-enough-1"}, format="json")
        .status_code
        == 201
    )
    response = clients["admin"].post(
        "/api/users/", {"username": "\ufb01ona", "password": "long-enough-1"}, format="json"
    )
    assert response.status_code == 400 and "username" in response.json()
    assert get_user_model().objects.filter(username="fiona").count() == 1


def test_a_new_username_is_stored_in_its_normal_form(clients, users):
    response = clients["admin"].post(
        "/api/users/", {"username": "\ufb01lip", "password": "long-enough-1"}, format="json"
    )
    assert response.status_code == 201 and response.json()["username"] == "filip"


@pytest.mark.parametrize("username", ["has space", 'quote"d', "semi;colon"])
def test_usernames_follow_the_user_models_rules(clients, users, username):
    # the schema documents ^[\w.@+-]+$ for usernames; the API stored anything
    response = clients["admin"].post("/api/users/", {"username": username, "password": "long-enough-1"}, format="json")
    assert response.status_code == 400 and "username" in response.json()


def test_agreement_refuses_a_stage_the_kind_does_not_have(clients, felm_project):
    url = f"/api/projects/{felm_project.id}/agreement/"
    assert clients["carol"].get(url).status_code == 200
    assert clients["carol"].get(url, {"stage": 1}).status_code == 200
    for stage in ("2", "-1", "99999999999999999999", "1.0"):
        response = clients["carol"].get(url, {"stage": stage})
        assert response.status_code == 400 and "stage" in response.json(), stage


def test_agreement_stages_are_documented(schema):
    operation = schema["paths"]["/api/projects/{id}/agreement/"]["get"]
    [stage] = [p for p in operation["parameters"] if p["name"] == "stage"]
    from annotation.kinds import KINDS

    annotated = sorted({stage for kind in KINDS.values() for stage in kind.annotatable_stages})
    assert stage["schema"]["enum"] == annotated and "400" in operation["responses"]


def test_members_answer_201_and_import_202_as_documented(clients, felm_project, schema):
    # the schema said 200
    responses = schema["paths"]["/api/projects/{id}/members/"]["post"]["responses"]
    assert "201" in responses and "200" not in responses
    responses = schema["paths"]["/api/projects/{id}/import/"]["post"]["responses"]
    assert {"202", "400", "404", "413"} <= set(responses) and "200" not in responses and "201" not in responses
    members = clients["admin"].post(
        f"/api/projects/{felm_project.id}/members/",
        {"username": "carol", "role": "consolidator"},
        format="json",
    )
    assert members.status_code == 201
    imported, job = post_import(clients["admin"], felm_project.id, jsonl([felm_line(1, ["A."])]), "felm")
    assert imported.status_code == 202 and job["state"] == "done" and job["result"]["items"] == 1


def test_consolidator_is_documented_as_nullable(schema):
    # an open consolidation has no consolidator yet: the response said null, the schema a string
    for name in ("Consolidation", "ConsolidationDetail"):
        assert schema["components"]["schemas"][name]["properties"]["consolidator"]["nullable"] is True


def test_version_conflicts_are_documented(schema):
    assert "409" in schema["paths"]["/api/assignments/{id}/annotation/"]["put"]["responses"]
    assert "409" in schema["paths"]["/api/consolidations/{id}/"]["put"]["responses"]


def test_payloads_are_documented_as_objects(schema):
    assert schema["components"]["schemas"]["AnnotationWrite"]["properties"]["payload"]["type"] == "object"


def test_export_and_import_formats_are_documented(schema):
    export = schema["paths"]["/api/projects/{id}/export/"]["get"]
    [fmt] = [p for p in export["parameters"] if p["name"] == "format"]
    assert set(fmt["schema"]["enum"]) == {
        "felm",
        "factcheck-bench",
        "factcheck-subtasks",
        "factcheck-evidence",
        "dfactscore",
        "dfactscore-result",
        "agreement-units",
        "annotations",
    }
    assert "400" in export["responses"]
    ref = schema["components"]["schemas"]["Import"]["properties"]["format"]["allOf"][0]["$ref"]
    assert set(schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["enum"]) >= {
        "felm",
        "plain",
        "factcheck-bench",
    }


def test_import_of_another_kinds_format_still_names_the_format(clients, felm_project):
    response = clients["admin"].post(
        f"/api/projects/{felm_project.id}/import/",
        {"file": jsonl([{"prompt": "Q", "response": "A."}]), "format": "factcheck-bench"},
        format="multipart",
    )
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "format"
    unknown = clients["admin"].post(
        f"/api/projects/{felm_project.id}/import/",
        {"file": jsonl([{"prompt": "Q", "response": "A."}]), "format": "csv"},
        format="multipart",
    )
    assert unknown.status_code == 400 and "format" in unknown.json()


def test_the_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
    assert "/api/assignments/{id}/reopen/" in (tmp_path / "schema.yml").read_text()
