"""Hostile input answers a 4xx naming what and where, never a 500; the schema documents those answers."""

import json

import pytest
from drf_spectacular.generators import SchemaGenerator

from annotation.json_values import MAX_JSON_DEPTH
from annotation.models import Assignment
from tests.helpers.builders import segment

pytestmark = pytest.mark.django_db

# Deeper than Python's recursion limit (json.load raised RecursionError), and deeper than the
# API's limit but within the recursion limit (it would recurse out of the stack later on).
DEPTHS = [100_000, MAX_JSON_DEPTH + 1]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture
def alice_assignment(felm_items, users):
    return Assignment.objects.filter(user=users["alice"]).order_by("id").first()


# -- JSON nested too deeply ---------------------------------------------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_json_to_the_anonymous_token_endpoint_is_a_400(clients, depth):
    # was a 500: DRF's token view parses with its own JSONParser, which let RecursionError through
    response = clients["anonymous"].post("/api/auth/token/", nested(depth), content_type="application/json")
    assert response.status_code == 400 and "nest" in response.json()["detail"]


def test_the_token_endpoint_still_logs_in(clients, users):
    for body, content_type in (
        (json.dumps({"username": "alice", "password": "test-pass-123"}), "application/json"),
        ("username=alice&password=test-pass-123", "application/x-www-form-urlencoded"),
    ):
        response = clients["anonymous"].post("/api/auth/token/", body, content_type=content_type)
        assert response.status_code == 200 and response.json()["token"], content_type


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_json_bodies_are_a_400(clients, alice_assignment, depth):
    body = '{"payload": {"segments": %s}, "version": 0}' % nested(depth)
    response = clients["alice"].put(
        f"/api/assignments/{alice_assignment.id}/annotation/", body, content_type="application/json"
    )
    assert response.status_code == 400 and "nest" in response.json()["detail"]
    response = clients["admin"].post(
        "/api/projects/",
        '{"name": "x", "kind": "felm", "pipeline_settings": %s}' % nested(depth),
        content_type="application/json",
    )
    assert response.status_code == 400


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_json_in_form_fields_is_a_400_naming_the_field(clients, alice_assignment, depth):
    # was a 500: a JSON field sent as form text is parsed by the serializer field itself
    response = clients["admin"].post(
        "/api/projects/",
        {"name": "x", "kind": "felm", "pipeline_settings": nested(depth)},
        format="multipart",
    )
    assert response.status_code == 400 and "pipeline_settings" in response.json()
    response = clients["alice"].put(
        f"/api/assignments/{alice_assignment.id}/annotation/",
        {"payload": nested(depth), "version": 0},
        format="multipart",
    )
    assert response.status_code == 400 and "payload" in response.json()


def test_shallow_json_still_saves(clients, alice_assignment):
    response = clients["alice"].put(
        f"/api/assignments/{alice_assignment.id}/annotation/",
        {"payload": {"segments": [segment(True)] * 3}, "version": 0},
        format="json",
    )
    assert response.status_code == 200, response.content


def test_bodies_over_the_size_limit_are_a_413(clients, felm_project, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = "x" * 2000
    # JSON: DRF reads the stream itself, so Django's limit did not apply at all
    response = clients["admin"].post(
        "/api/projects/", json.dumps({"name": big, "kind": "felm"}), content_type="application/json"
    )
    assert response.status_code == 413 and "1000" in response.json()["detail"]
    # a form body: Django's RequestDataTooBig was its HTML 400 page
    response = clients["admin"].post("/api/projects/", {"name": big, "kind": "felm"}, format="multipart")
    assert response.status_code == 413 and "1000" in response.json()["detail"]


# -- numbers in query parameters ----------------------------------------------------------------


@pytest.mark.parametrize("stage", ["\u00b2", "\u0663", "1\u00b2"])
def test_agreement_stage_in_other_digits_is_a_400(clients, felm_project, stage):
    # "²".isdigit() is True but int("²") raises: a 500
    response = clients["carol"].get(f"/api/projects/{felm_project.id}/agreement/", {"stage": stage})
    assert response.status_code == 400 and "stage" in response.json()


def test_agreement_page_with_a_stage_in_other_digits_is_a_404(logged_in, felm_project):
    assert logged_in("carol").get(f"/projects/{felm_project.id}/agreement/", {"stage": "\u00b2"}).status_code == 404


@pytest.mark.parametrize("after", ["\u00b2", "abc", "-1", "9" * 30])
def test_next_links_refuse_an_after_that_is_not_an_id(logged_in, felm_items, after):
    # "²" was a 500 (int("²")); the others were silently ignored
    project_id = felm_items[0].project_id
    response = logged_in("alice").get(f"/projects/{project_id}/next/", {"after": after})
    assert response.status_code == 400 and b"cannot read" in response.content
    assert logged_in("carol").get(f"/projects/{project_id}/consolidations/next/", {"after": after}).status_code == 400


def test_next_links_still_follow_after(logged_in, felm_items, users):
    first, second = Assignment.objects.filter(user=users["alice"]).order_by("id")[:2]
    response = logged_in("alice").get(f"/projects/{felm_items[0].project_id}/next/", {"after": first.id})
    assert response.status_code == 302 and response["Location"] == f"/assignments/{second.id}/"
    response = logged_in("carol").get(f"/projects/{felm_items[0].project_id}/consolidations/next/", {"after": "12"})
    assert response.status_code == 302


@pytest.mark.parametrize("status_filter", ["a\x00b", "bogus"])
def test_project_page_refuses_an_unknown_status_filter(logged_in, felm_items, status_filter):
    # a NUL byte was a 500 on PostgreSQL
    response = logged_in("admin").get(f"/projects/{felm_items[0].project_id}/", {"status": status_filter})
    assert response.status_code == 400


# -- pagination and filters -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, value",
    [
        ("page", "abc"),
        ("page", "0"),
        ("page", "-1"),
        ("page", "\u00b2"),
        ("page", "2"),
        ("page", "last"),
        ("page", ""),
        ("page_size", "-1"),
        ("page_size", "0"),
        ("page_size", "1001"),
        ("page_size", "abc"),
        ("page_size", "9" * 30),
    ],
)
def test_bad_page_parameters_are_a_400_naming_the_parameter(clients, felm_items, name, value):
    # DRF ignored a bad page_size, capped a huge one, and answered 404 to a bad page
    for url in (
        f"/api/projects/{felm_items[0].project_id}/items/",
        "/api/projects/",
        "/api/users/",
    ):
        response = clients["admin"].get(url, {name: value})
        assert response.status_code == 400 and name in response.json(), (url, response.content)


def test_good_page_parameters_still_page(clients, felm_items):
    url = f"/api/projects/{felm_items[0].project_id}/items/"
    page = clients["admin"].get(url, {"page": 2, "page_size": 2}).json()
    assert page["count"] == 3 and len(page["results"]) == 1 and page["next"] is None
    assert clients["admin"].get("/api/users/", {"page": 1}).status_code == 200


def test_an_empty_list_has_a_first_page(clients, users):
    assert clients["alice"].get("/api/projects/", {"page": 1}).json()["count"] == 0


@pytest.mark.parametrize("mine", ["maybe", "2", ""])
def test_mine_refuses_values_that_are_not_yes_or_no(clients, felm_items, mine):
    # anything but 1/true/yes silently meant "no"
    response = clients["admin"].get(f"/api/projects/{felm_items[0].project_id}/assignments/", {"mine": mine})
    assert response.status_code == 400 and "mine" in response.json()


def test_mine_accepts_its_documented_values(clients, felm_items, users):
    project = felm_items[0].project
    from annotation.services.projects import add_member

    add_member(project=project, user=users["admin"], role="annotator")
    url = f"/api/projects/{project.id}/assignments/"
    everyone = clients["admin"].get(url).json()["count"]
    assert everyone == 6
    for value in ("true", "1", "yes", "True"):
        assert clients["admin"].get(url, {"mine": value}).json()["count"] == 0, value
    for value in ("false", "0", "no"):
        assert clients["admin"].get(url, {"mine": value}).json()["count"] == everyone, value


# -- the schema documents it ----------------------------------------------------------------------


def parameter(schema, path, name, method="get"):
    [found] = [p for p in schema["paths"][path][method]["parameters"] if p["name"] == name]
    return found


def test_paging_and_filters_are_documented_with_their_bounds(schema):
    path = "/api/projects/{id}/items/"
    assert parameter(schema, path, "page")["schema"] == {"type": "integer", "minimum": 1}
    assert parameter(schema, path, "page_size")["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
    }
    from annotation.models import StageStatus

    assert set(parameter(schema, path, "status")["schema"]["enum"]) == set(StageStatus.values)
    mine = parameter(schema, "/api/projects/{id}/assignments/", "mine")
    assert mine["schema"]["type"] == "boolean" and "yes" in mine["description"]


def test_export_formats_are_documented_per_kind(schema):
    description = parameter(schema, "/api/projects/{id}/export/", "format")["description"]
    assert "felm: felm, agreement-units, annotations" in description
    assert (
        "factcheck: factcheck-bench, factcheck-subtasks, factcheck-evidence, agreement-units, annotations"
        in description
    )


def test_error_answers_are_documented_where_they_can_happen(schema):
    operations = {(method, path): op for path, ops in schema["paths"].items() for method, op in ops.items()}
    error = {"$ref": "#/components/schemas/Error"}
    for (method, path), operation in operations.items():
        responses = operation["responses"]
        assert "401" in responses, (method, path)
        assert ("404" in responses) == ("{" in path), (
            method,
            path,
        )  # any path parameter can name nothing
        assert ("413" in responses) == ("requestBody" in operation), (method, path)
        assert ("415" in responses) == ("requestBody" in operation), (method, path)
        assert ("429" in responses) == (path == "/api/auth/token/"), (method, path)
        assert ("409" in responses) == (
            (method, path) in {("put", "/api/assignments/{id}/annotation/"), ("put", "/api/consolidations/{id}/")}
        ), (method, path)
        if "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", [])):
            assert "400" in responses, (method, path)
        for code in {"401", "404", "413", "415"} & set(responses):
            assert responses[code]["content"]["application/json"]["schema"] == error, (
                method,
                path,
                code,
            )
    # 403 where a signed-in caller can be refused: writes (CSRF too) and role-restricted reads
    assert "403" in operations["get", "/api/projects/{id}/items/"]["responses"]
    assert "403" not in operations["get", "/api/assignments/{id}/"]["responses"]
    assert "403" not in operations["get", "/api/projects/{id}/"]["responses"]
    conflict = operations["put", "/api/consolidations/{id}/"]["responses"]["409"]["content"]["application/json"][
        "schema"
    ]
    assert conflict == {"$ref": "#/components/schemas/VersionConflict"}


def test_the_token_endpoint_is_documented_as_anonymous(schema):
    assert {} in schema["paths"]["/api/auth/token/"]["post"]["security"]


# -- found by the schemathesis run ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/assignments/0.5/annotation/", "/api/projects/1.0/", "/api/nothing/here/"])
def test_paths_no_api_pattern_takes_are_a_json_404(clients, path):
    # was the site's HTML 404 page: the router's id pattern refuses dots; the schema says JSON
    for method in ("get", "put", "post"):
        response = getattr(clients["alice"], method)(path, {}, format="json")
        assert response.status_code == 404 and response["Content-Type"] == "application/json", (
            method,
            path,
        )
        assert response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/corpora/null,null/",
        "/api/corpora/abc/projects/",
        "/api/projects/%s/" % ("9" * 30),
        "/api/consolidations/\u00b2/",
    ],
)
def test_ids_that_are_not_numbers_match_no_route(clients, path):
    # /api/corpora/null,null/ was a 500: the id reached .filter(pk=...) unconverted (ValueError)
    for method in ("get", "put"):
        response = getattr(clients["admin"], method)(path, {}, format="json")
        assert response.status_code == 404 and response["Content-Type"] == "application/json", (
            method,
            path,
        )


def test_api_paths_without_the_slash_still_redirect(clients):
    assert clients["alice"].get("/api/projects").status_code == 301


def test_an_unsupported_body_type_is_a_documented_415(clients, schema):
    response = clients["admin"].post("/api/projects/", "name=x", content_type="text/plain")
    assert response.status_code == 415 and "text/plain" in response.json()["detail"]
    assert "415" in schema["paths"]["/api/projects/"]["post"]["responses"]
