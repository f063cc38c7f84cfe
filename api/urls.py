from django.urls import include, path, re_path
from django.utils.module_loading import import_string
from django.views.decorators.csrf import csrf_exempt
from rest_framework.permissions import IsAuthenticated
from rest_framework.routers import APIRootView, DefaultRouter

from annotation.params import NATURAL

from . import corpora, jobs, llm_rater, views


class Router(DefaultRouter):
    """Path ids are numbers of at most 18 digits (a 64-bit id). Any other id matches no route
    and gets the JSON 404 below, instead of reaching a lookup that may raise (a 500)."""

    # No format-suffix routes (``imports/1.json/``): undocumented, and every action answered
    # them with a TypeError (an unexpected ``format`` argument: a 500).
    include_format_suffixes = False

    class APIRootView(APIRootView):
        permission_classes = [IsAuthenticated]

    def get_method_map(self, viewset, method_map):
        # Only the methods the viewset serves (not a project's PUT): another method gets no
        # action, hence no action's permission rule, and is answered 405.
        bound = super().get_method_map(viewset, method_map)
        return {method: name for method, name in bound.items() if method in viewset.http_method_names}

    def get_lookup_regex(self, viewset, lookup_prefix=""):
        if getattr(viewset, "lookup_value_regex", None) is None:
            viewset = type(viewset.__name__, (viewset,), {"lookup_value_regex": NATURAL.pattern})
        return super().get_lookup_regex(viewset, lookup_prefix)


def loaded_on_first_request(view_path: str, **initkwargs):
    """The class-based view at `view_path`, imported when a request first reaches it.

    drf-spectacular's views load its schema generator (drf_spectacular.openapi, rest_framework.test,
    django.test, jinja2): several MiB in every web worker that only the schema and docs pages use
    (issue 22). A plain function, so the schema generator leaves it out, as drf-spectacular's
    views leave themselves out (SERVE_INCLUDE_SCHEMA False)."""
    view = None

    @csrf_exempt  # as APIView.as_view()
    def lazy_view(request, *args, **kwargs):
        nonlocal view
        if view is None:
            view = import_string(view_path).as_view(**initkwargs)
        return view(request, *args, **kwargs)

    lazy_view.view_path = view_path  # for tests/api/test_route_permissions.py
    return lazy_view


router = Router()
router.register("users", views.UserViewSet, basename="user")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("assignments", views.AssignmentViewSet, basename="assignment")
router.register("consolidations", views.ConsolidationViewSet, basename="consolidation")
router.register("corpora", corpora.CorpusViewSet, basename="corpus")

urlpatterns = [
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("schema/", loaded_on_first_request("drf_spectacular.views.SpectacularAPIView"), name="api-schema"),
    path(
        "docs/",
        loaded_on_first_request("drf_spectacular.views.SpectacularSwaggerView", url_name="api-schema"),
        name="api-docs",
    ),
    re_path(
        rf"^projects/(?P<project_id>{NATURAL.pattern})/llm-rater/$",
        llm_rater.RaterRunsView.as_view(),
        name="api-llm-rater",
    ),
    re_path(
        rf"^projects/(?P<project_id>{NATURAL.pattern})/llm-rater/estimate/$",
        llm_rater.RaterEstimateView.as_view(),
        name="api-llm-rater-estimate",
    ),
    re_path(
        rf"^projects/(?P<project_id>{NATURAL.pattern})/llm-rater/(?P<run_id>{NATURAL.pattern})/$",
        llm_rater.RaterRunView.as_view(),
        name="api-llm-rater-run",
    ),
    re_path(
        rf"^jobs/(?P<kind>[a-z-]{{1,20}})/(?P<job_id>{NATURAL.pattern})/restart/$",
        jobs.JobRestartView.as_view(),
        name="api-job-restart",
    ),
    path("", include(router.urls)),
    # Last: what no pattern above takes is a JSON 404 (without the slash, Django still redirects).
    # [\s\S], not ".": a path with a newline (%0A in an id) too, not left to the site's HTML 404.
    re_path(r"^[\s\S]*/$", views.not_found),
]
