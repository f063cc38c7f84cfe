"""The LLM rater over the API: estimate a run, start it (confirmed), follow its progress.

Project admins only; staff may also pick another model or base URL (never a key: keys live in
the project's LLM settings). See annotation.research.llm_rater.
"""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from annotation import selectors
from annotation.research import llm_rater as rater_services

from .job_serializers import job_fields
from .openapi import extend_schema
from .serializers import ErrorSerializer


class RaterOptionsSerializer(serializers.Serializer):
    """What the estimate and the start take (checked by the domain's parse_options)."""

    steps = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Steps to rate (default: every step the kind has a rater for)",
    )
    seconds_per_call = serializers.FloatField(required=False, help_text="Assumed seconds per LLM call (default 2)")
    prompt_price_per_1k = serializers.FloatField(
        required=False, allow_null=True, help_text="Price of 1,000 prompt tokens (optional)"
    )
    completion_price_per_1k = serializers.FloatField(
        required=False, allow_null=True, help_text="Price of 1,000 completion tokens (optional)"
    )
    model = serializers.CharField(required=False, allow_blank=True, help_text="Staff only: another model")
    base_url = serializers.CharField(required=False, allow_blank=True, help_text="Staff only: another endpoint")
    resamples = serializers.IntegerField(required=False, help_text="Bootstrap resamples of the scores (default 1000)")
    seed = serializers.IntegerField(required=False)


class RaterStartSerializer(RaterOptionsSerializer):
    confirm = serializers.BooleanField(help_text="True once the estimate was seen: the run makes its calls")


class RaterEstimateSerializer(serializers.Serializer):
    steps = serializers.ListField(child=serializers.IntegerField())
    item_steps = serializers.DictField(child=serializers.IntegerField())
    item_steps_total = serializers.IntegerField()
    sampled = serializers.DictField(child=serializers.IntegerField())
    configured = serializers.BooleanField()
    endpoint = serializers.CharField()
    model = serializers.CharField()
    calls = serializers.DictField(child=serializers.IntegerField())
    calls_total = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField(allow_null=True)
    seconds = serializers.FloatField()
    assumptions = serializers.DictField()


class RaterRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    system = serializers.CharField()
    version = serializers.CharField()
    state = serializers.CharField()
    units_done = serializers.IntegerField()
    units_total = serializers.IntegerField()
    ended = serializers.BooleanField()
    options = serializers.DictField(help_text="The run's options, its estimate and (ended) what it rated; never a key")
    errors = serializers.ListField(child=serializers.DictField())
    scored_tasks = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    progress_at = serializers.DateTimeField(allow_null=True, help_text="the task's last sign of life")
    stalled = serializers.BooleanField(
        help_text="no progress for JOB_STALLED_AFTER_SECONDS: restart_url queues it again"
    )
    state_detail = serializers.CharField(help_text="what the run does or waits for (e.g. the queue); empty once ended")
    restart_url = serializers.CharField()


ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="bad options (each named), or nothing to rate"),
    403: OpenApiResponse(ErrorSerializer, description="not a project admin, or not staff for model/base_url"),
    404: OpenApiResponse(ErrorSerializer, description="no such project (or run) among the caller's"),
}


def admin_project(request, project_id):
    project = selectors.projects_for_user(request.user).filter(pk=project_id).first()
    if project is None:
        raise NotFound("no such project")
    if not selectors.is_project_admin(request.user, project):
        raise PermissionDenied("only the project's admins may run the LLM rater")
    return project


def options_of(request, project):
    data = request.data if hasattr(request.data, "get") else {}
    if hasattr(data, "getlist"):  # a form body: steps may repeat
        data = {**data.dict(), "steps": data.getlist("steps")}
    try:
        return rater_services.parse_options(project, request.user, data)
    except rater_services.RaterOptionsError as exc:
        raise ValidationError({name: [message] for name, message in exc.errors.items()}) from None


def run_data(request, run) -> dict:
    summary = rater_services.run_summary(run)
    summary["url"] = reverse("api-llm-rater-run", args=[run.project_id, run.id], request=request)
    summary.update(job_fields(run))
    return summary


class RaterEstimateView(APIView):
    permission_classes = [IsAuthenticated]  # the project's admins: admin_project()

    @extend_schema(
        request=RaterOptionsSerializer,
        responses={200: RaterEstimateSerializer, **ERRORS},
        summary="What an LLM rater run would call and cost",
    )
    def post(self, request, project_id):
        """LLM calls per kind, prompt and completion tokens (characters / 4), time (assumed
        seconds per call, the endpoint's concurrency) and, with prices, cost of a rater run over
        the project's item-steps that have a gold record."""
        project = admin_project(request, project_id)
        return Response(rater_services.estimate(project, options_of(request, project)))


class RaterRunsView(APIView):
    permission_classes = [IsAuthenticated]  # the project's admins: admin_project()

    @extend_schema(
        responses={200: RaterRunSerializer(many=True), **ERRORS},
        summary="The project's LLM rater runs",
    )
    def get(self, request, project_id):
        """Newest first (at most 50), each with its progress (units_done of units_total)."""
        project = admin_project(request, project_id)
        return Response([run_data(request, run) for run in rater_services.rater_runs(project)[:50]])

    @extend_schema(
        request=RaterStartSerializer,
        responses={202: RaterRunSerializer, **ERRORS},
        summary="Start an LLM rater run",
    )
    def post(self, request, project_id):
        """Start a run with the options of the estimate (``confirm: true``): 202 with the run,
        which a Celery task rates, then scores like an uploaded system. Poll its ``url``."""
        project = admin_project(request, project_id)
        options = options_of(request, project)
        confirm = request.data.get("confirm") if hasattr(request.data, "get") else None
        try:
            run = rater_services.start_run(
                project=project,
                user=request.user,
                options=options,
                confirmed=confirm is True or confirm in ("true", "yes", "1"),
            )
        except rater_services.RaterOptionsError as exc:
            raise ValidationError({name: [message] for name, message in exc.errors.items()}) from None
        run.refresh_from_db()
        return Response(run_data(request, run), status=status.HTTP_202_ACCEPTED)


class RaterRunView(APIView):
    permission_classes = [IsAuthenticated]  # the project's admins: admin_project()

    @extend_schema(responses={200: RaterRunSerializer, **ERRORS}, summary="One LLM rater run and its progress")
    def get(self, request, project_id, run_id):
        project = admin_project(request, project_id)
        run = rater_services.rater_runs(project).filter(pk=run_id).first()
        if run is None:
            raise NotFound("no such LLM rater run in this project")
        return Response(run_data(request, run))
