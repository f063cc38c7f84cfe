"""Path ids beyond 64 bits on every route: a 404 (JSON under /api/), never a 500.

SQLite raises OverflowError for a lookup with an integer it cannot hold, so every id in a path
(top-level and nested, API and pages) is limited to 18 digits by the route itself. The test walks
every URL pattern the project has, so a route added later with an unlimited id fails here.
"""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db

TOO_LONG = "468163111782223374286879571901939712"  # the id schemathesis sent (36 digits)
JUST_TOO_LONG = "10000000000000000000"  # 2**63 < this < 2**64: past SQLite's INTEGER

GROUP = re.compile(r"\(\?P<(?P<name>\w+)>(?P<regex>[^()]*(?:\([^()]*\))?[^()]*?)\)")
CONVERTER = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>")
SAMPLE = {"fmt": "felm", "format": "json", "app_label": "annotation", "content_type_id": "1"}


def _is_id(name: str) -> bool:
    return name in {"pk", "claim", "stage", "object_id"} or name.endswith("_id")


def _routes(patterns, prefix=""):
    """(path template with {name} holes, [id names], is_admin) for every pattern."""
    for entry in patterns:
        raw = str(entry.pattern)
        if isinstance(entry.pattern.regex, re.Pattern) and raw.startswith("^"):
            text = raw.lstrip("^").rstrip("$").replace("\\.", ".").replace("/?", "/")
            names = [(m["name"], m["regex"]) for m in GROUP.finditer(text)]
            text = GROUP.sub(lambda m: "{" + m["name"] + "}", text)
        else:
            names = [(m["name"], m["conv"] or "str") for m in CONVERTER.finditer(raw)]
            text = CONVERTER.sub(lambda m: "{" + m["name"] + "}", raw)
        if isinstance(entry, URLResolver):
            for template, ids, params in _routes(entry.url_patterns, prefix + text):
                yield template, ids, params | dict(names)
        elif isinstance(entry, URLPattern):
            yield prefix + text, [n for n, r in names if _is_id(n)], dict(names)


def _cases(known_id: int):
    """Each route once per id parameter, that id over-long and the others ``known_id``."""
    cases = []
    for template, ids, params in _routes(get_resolver().url_patterns):
        if ".*" in template:  # the API's catch-all JSON 404
            continue
        for name in ids:
            values = {p: SAMPLE.get(p, str(known_id)) for p in params}
            for too_long in (TOO_LONG, JUST_TOO_LONG):
                cases.append("/" + template.format(**(values | {name: too_long})))
    return cases


def test_the_walk_finds_the_nested_routes():
    """The walk sees the routes schemathesis broke (the test below would pass vacuously otherwise)."""
    paths = _cases(1)
    assert f"/api/projects/1/items/{TOO_LONG}/stages/1/reopen/" in paths
    assert f"/api/projects/1/items/1/stages/{JUST_TOO_LONG}/split/" in paths
    assert f"/projects/1/items/{TOO_LONG}/claims/1/retrieve/" in paths
    assert f"/admin/annotation/project/{TOO_LONG}/change/" in paths
    assert len(paths) > 200


def test_an_over_long_path_id_is_a_404_never_a_500(users, felm_items, client):
    """As a superuser who admins the project, so each request gets as far as its lookups."""
    project = felm_items[0].project
    users["admin"].is_superuser = True  # the admin site's pages too
    users["admin"].save()
    client.force_login(users["admin"])
    client.raise_request_exception = False  # a 500 is counted below, not raised
    wrong = []
    for path in _cases(project.id):
        for method in ("get", "post", "put", "patch", "delete"):
            response = getattr(client, method)(path, data={}, content_type="application/json")
            if path.startswith("/admin/"):
                # Django's admin answers an object it cannot find with a redirect to its index.
                ok = response.status_code in (302, 404)
            elif path.startswith("/api/"):
                ok = response.status_code == 404 and response["Content-Type"].startswith("application/json")
            else:
                ok = response.status_code == 404
            if not ok:
                wrong.append((method.upper(), path, response.status_code, response.get("Content-Type")))
    assert wrong == []


def test_every_route_with_ids_in_range_answers_without_a_500(users, felm_items, client):
    """The same walk with ids that fit (the format-suffix forms such as ``imports/1.json/``
    included): whatever the answer, not a 500."""
    project = felm_items[0].project
    users["admin"].is_superuser = True
    users["admin"].save()
    client.force_login(users["admin"])
    client.raise_request_exception = False
    wrong = []
    paths = {
        "/" + template.format(**{p: SAMPLE.get(p, str(project.id)) for p in params})
        for template, ids, params in _routes(get_resolver().url_patterns)
        if ids and ".*" not in template
    }
    for path in sorted(paths):
        for method in ("get", "post", "put", "patch", "delete"):
            response = getattr(client, method)(path, data={}, content_type="application/json")
            if response.status_code >= 500:
                wrong.append((method.upper(), path, response.status_code))
    assert wrong == []
