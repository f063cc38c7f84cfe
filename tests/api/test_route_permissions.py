"""Every route of the API names its permission rule where it is defined (api/permissions.py).

The walk goes through the URL resolver, so a view or action added anywhere under /api/ is
listed; each method of each route (OPTIONS too) is asked for its rules the way DRF asks.
"""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.module_loading import import_string
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter
from rest_framework.test import APIRequestFactory, force_authenticate

from api import views
from api.permissions import Undeclared

# Plain Django views under /api/: no DRF rule, and they serve nothing to guard.
PLAIN_VIEWS = {views.not_found: "a JSON 404 for every caller, writing nothing"}


def routes(patterns, prefix=""):
    """(route, view) for every URL pattern below `patterns`."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


def api_routes():
    return [(route, view) for route, view in routes(get_resolver().url_patterns) if route.startswith("api/")]


def undeclared(route, view) -> list[str]:
    """The route's operations that name no permission rule of their own."""
    if view in PLAIN_VIEWS:
        return []
    cls = getattr(view, "cls", None)
    if cls is None and hasattr(view, "view_path"):  # api.urls.loaded_on_first_request
        cls = import_string(view.view_path)
    if cls is None:
        return [f"{route}: not a DRF view (add it to PLAIN_VIEWS with the reason it needs no rule)"]
    initkwargs = getattr(view, "initkwargs", {})
    actions = getattr(view, "actions", None)
    if actions is None:  # an APIView: one rule for its methods, in its own class
        methods = [m for m in cls.http_method_names if hasattr(cls, m)]
        names = dict.fromkeys(methods)
    else:
        names = {**actions, "options": "metadata"}
    missing = []
    for method, name in names.items():
        instance = cls(**initkwargs)
        instance.request = APIRequestFactory().generic(method.upper(), "/" + route)
        instance.action_map = actions or {}
        instance.action = name
        instance.args, instance.kwargs = (), {}
        rules = [type(rule) for rule in instance.get_permissions()]
        where = f"{method.upper()} {route} ({cls.__name__}.{name})"
        if not rules or Undeclared in rules:
            missing.append(where)
        elif hasattr(getattr(cls, name or "", None), "mapping"):
            # An extra action names its rule in its own @action, not by the viewset's default.
            if "permission_classes" not in initkwargs:
                missing.append(f"{where}: no permission_classes in its @action")
    return missing


def test_the_walk_reaches_every_kind_of_api_route():
    found = {route for route, _ in api_routes()}
    assert "api/auth/token/" in found and "api/schema/" in found
    assert any("llm-rater" in route for route in found) and any("restart" in route for route in found)
    assert any("members" in route for route in found) and any("corpora" in route for route in found)
    assert len(found) > 30


def test_every_api_route_and_method_names_its_permission_rule():
    missing = [where for route, view in api_routes() for where in undeclared(route, view)]
    assert missing == []


class Careless(viewsets.ViewSet):
    """An action without a rule, as the next one might be written."""

    permission_classes = [IsAuthenticated]

    def list(self, request):
        return Response([])

    @action(detail=False, methods=["post"])
    def forgotten(self, request):
        return Response({})

    @action(detail=False, methods=["post"], permission_classes=[IsAuthenticated])
    def declared(self, request):
        return Response({})


class Bare(viewsets.ViewSet):
    def list(self, request):
        return Response([])


def careless_routes(viewset):
    router = SimpleRouter()
    router.register("careless", viewset, basename="careless")
    return [("api/" + str(p.pattern), p.callback) for p in router.urls]


def test_an_action_without_its_own_rule_is_reported():
    missing = [where for route, view in careless_routes(Careless) for where in undeclared(route, view)]
    assert missing == ["POST api/^careless/forgotten/$ (Careless.forgotten): no permission_classes in its @action"]


@pytest.mark.django_db
def test_a_view_without_a_rule_is_reported_and_refuses_everyone(users):
    (route, view), *_ = careless_routes(Bare)
    assert undeclared(route, view) == ["GET api/^careless/$ (Bare.list)", "OPTIONS api/^careless/$ (Bare.metadata)"]
    request = APIRequestFactory().get("/api/careless/")
    force_authenticate(request, users["admin"])
    response = view(request)
    assert response.status_code == status.HTTP_403_FORBIDDEN
    assert str(response.data["detail"]) == Undeclared.message


@pytest.mark.django_db
def test_a_method_a_route_does_not_serve_is_405_for_a_member(clients, felm_project):
    # The router routes only what a viewset serves: a project's PUT has no action (no rule).
    response = clients["admin"].put(f"/api/projects/{felm_project.id}/", {}, format="json")
    assert response.status_code == 405
    assert clients["anonymous"].put(f"/api/projects/{felm_project.id}/", {}, format="json").status_code == 401
