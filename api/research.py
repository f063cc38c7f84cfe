"""The API of the research wing: agreement, system runs and the leaderboard (a ProjectViewSet mixin)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotation.kinds import get_kind
from annotation.params import parse_natural
from annotation.research import agreement_cache
from annotation.research import leaderboard as leaderboard_selectors
from annotation.research import predictions as prediction_services
from annotation.research import selectors as research_selectors

from . import job_serializers, serializers
from .common import (
    ERROR_400,
    FALSE_VALUES,
    ID,
    STAGES,
    TRUE_VALUES,
    bool_param,
    refuse_oversized_upload,
)
from .openapi import extend_schema
from .permissions import PROJECT_CONSOLIDATORS


class ResearchActions:
    """``/projects/{id}/agreement/``, ``system-runs/`` (and ``{run_id}/``), ``leaderboard/``."""

    @extend_schema(
        responses={
            200: OpenApiTypes.OBJECT,
            202: OpenApiResponse(
                job_serializers.AgreementPendingSerializer,
                description=(
                    "not computed yet for the step's current data: a Celery task computes it (one "
                    "per project, step, resamples and seed); ask the same address again after "
                    "Retry-After seconds"
                ),
            ),
            400: ERROR_400,
        },
        parameters=[
            OpenApiParameter("stage", int, enum=STAGES, description="one of the project kind's stages"),
            OpenApiParameter(
                "resamples",
                int,
                description="bootstrap resamples of the 95 % intervals "
                f"(default {research_selectors.DEFAULT_RESAMPLES}, 0 = none, at most {research_selectors.MAX_RESAMPLES})",
            ),
            OpenApiParameter("seed", int, description="seed of the bootstrap (default 0)"),
        ],
    )
    @action(detail=True, methods=["get"], permission_classes=PROJECT_CONSOLIDATORS)
    def agreement(self, request, pk=None):
        """Agreement per field of one step (admins and consolidators), with 95 % bootstrap intervals.

        Read from a cache a Celery task fills, as the agreement page does: 200 with the numbers
        when they are computed for the step's current data, else 202 while they are computed."""
        project = self.get_object()
        stage = research_selectors.annotated_stage(project, request.query_params.get("stage"))
        if stage is None:
            stages = get_kind(project.kind).annotatable_stages
            raise ValidationError({"stage": f"must be one of {', '.join(map(str, stages))}"})
        try:
            resamples, seed = research_selectors.bootstrap_options(
                request.query_params.get("resamples"), request.query_params.get("seed")
            )
        except ValueError as error:
            raise ValidationError(error.args[0])
        found = agreement_cache.lookup(project, stage, resamples, seed)
        if found.ready:
            return Response(found.result["agreement"])
        status_body = found.status()
        if found.state == "failed":
            detail = f"the agreement could not be computed: {found.error}"
        else:
            detail = (
                f"the agreement{f' with {resamples:,}-resample bootstrap intervals' if resamples else ''} is being "
                "computed; ask this address again in a few seconds"
            )
        url = request.build_absolute_uri()
        body = {
            "state": found.state,
            "detail": detail,
            "step": status_body["step"],
            "done": status_body["done"],
            "total": status_body["total"],
            "error": found.error,
            "url": url,
        }
        retry = agreement_cache.FAILURE_SECONDS if found.state == "failed" else 2
        return Response(
            body,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url, "Retry-After": str(retry)},
        )

    @extend_schema(methods=["GET"], responses=job_serializers.SystemRunSerializer(many=True))
    @extend_schema(
        methods=["POST"],
        request={"multipart/form-data": job_serializers.SystemRunCreateSerializer},
        responses={
            202: OpenApiResponse(
                job_serializers.SystemRunSerializer,
                description="stored and queued: poll the run's url until its state is done or failed",
            ),
            400: OpenApiResponse(
                serializers.ErrorSerializer,
                description=(
                    "no file or system, a bad option, or this system and version uploaded already (errors names version)"
                ),
            ),
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such project, or not a member of it"),
            413: OpenApiResponse(
                serializers.ErrorSerializer,
                description="the file is larger than IMPORT_MAX_UPLOAD_BYTES (max_bytes says how large)",
            ),
        },
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="system-runs",
        url_name="system-runs",
        permission_classes=PROJECT_CONSOLIDATORS,
    )
    def system_runs(self, request, pk=None):
        """Automatic fact-checkers' predictions and their scores (project admins and consolidators).

        POST a JSONL file of predictions keyed like the exports, with a system name (and
        version): 202 with the run, which a Celery task checks and scores. A line that is not
        JSON, has missing or extra key fields, an id that matches no unit, a label outside the
        task's vocabulary or a second prediction of a unit fails the run with every such line
        (line, field, message), and nothing is stored. Every task with predictions is scored
        (bootstrap CIs), also on the units all annotators agreed on, with the baselines and the
        paired differences to the other runs. GET lists the runs, newest first."""
        project = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(leaderboard_selectors.system_runs(project))
            return self.get_paginated_response(job_serializers.SystemRunSerializer(page, many=True).data)
        refuse_oversized_upload(request)
        data = job_serializers.SystemRunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = prediction_services.create_system_run(
            project=project,
            user=request.user,
            upload=data.validated_data["file"],
            **{k: v for k, v in data.validated_data.items() if k != "file"},
        )
        run.refresh_from_db()  # without a broker the task has already run
        body = job_serializers.SystemRunSerializer(run).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(
        methods=["GET"],
        parameters=[OpenApiParameter("run_id", int, OpenApiParameter.PATH, description="the run's id")],
        responses={
            200: job_serializers.SystemRunSerializer,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such run in this project"),
        },
    )
    @extend_schema(
        methods=["DELETE"],
        parameters=[OpenApiParameter("run_id", int, OpenApiParameter.PATH, description="the run's id")],
        responses={
            204: None,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such run in this project"),
        },
    )
    @action(
        detail=True,
        methods=["get", "delete"],
        url_path=rf"system-runs/(?P<run_id>{ID})",
        url_name="system-run",
        permission_classes=PROJECT_CONSOLIDATORS,
    )
    def system_run(self, request, pk=None, run_id=None):
        """One run: state (queued, running, done, failed), progress, errors and scores; DELETE
        removes it with its predictions and scores."""
        run = leaderboard_selectors.system_runs(self.get_object()).filter(pk=int(run_id)).first()
        if run is None:
            raise NotFound("no such run in this project")
        if request.method == "DELETE":
            prediction_services.delete_system_run(run)
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(job_serializers.SystemRunSerializer(run).data)

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, 400: ERROR_400},
        parameters=[
            OpenApiParameter(
                "task",
                str,
                description="a task of the project with scores (default: the first), e.g. checkworthiness, segment",
            ),
            OpenApiParameter(
                "reference",
                int,
                description="the run the differences are to (default: the best system on the current gold)",
            ),
            OpenApiParameter(
                "subset",
                str,
                enum=list(leaderboard_selectors.SUBSETS),
                description=(
                    "the units the figures are over: paper (those the task's paper reports its figures over, "
                    "e.g. Factcheck-Bench subtask 5's false responses; the default where the task has such a "
                    "subset and a run is scored on it) or all; the answer's subset, subsets and subset_title "
                    "say which"
                ),
            ),
            OpenApiParameter(
                "agreed",
                bool,
                description=(
                    "scores on the units all annotators agreed on: "
                    f"{', '.join(TRUE_VALUES)} (or {', '.join(FALSE_VALUES)})"
                ),
            ),
        ],
    )
    @action(detail=True, methods=["get"], permission_classes=PROJECT_CONSOLIDATORS)
    def leaderboard(self, request, pk=None):
        """The leaderboard of one task: ``tasks``, ``metrics``, ``differences`` (the columns),
        ``reference`` (a run id) and ``rows``: each system version and baseline with its
        ``metrics`` ({value, low, high}), ``per_label`` scores, ``stale`` (scored on other gold)
        and ``difference`` to the reference (paired bootstrap; null for the reference and for
        runs not scored on the same gold); ``subset`` (``paper`` or ``all``) and ``subset_title``
        say which units the figures are over, ``subsets`` the task's others (name, title, units)."""
        project = self.get_object()
        raw = request.query_params.get("reference")
        reference = None
        if raw:
            reference = parse_natural(raw)
            if reference is None:
                raise ValidationError({"reference": "must be a run id in digits 0-9"})
        try:
            board = leaderboard_selectors.leaderboard(
                project,
                request.query_params.get("task") or None,
                reference,
                bool_param(request, "agreed"),
                request.query_params.get("subset") or None,
            )
        except ValueError as error:
            raise ValidationError(error.args[0])
        return Response(board)
