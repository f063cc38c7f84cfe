"""API views: check permissions, parse input, call a service or selector, serialize."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found as html_page_not_found
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.generics import get_object_or_404
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from annotation import selectors
from annotation.research import selectors as research_selectors
from annotation.exports import formats as exports
from annotation.research import leaderboard as leaderboard_selectors
from annotation.exceptions import UploadTooLarge
from annotation.kinds import KINDS, get_kind
from annotation.params import NATURAL, parse_natural
from annotation.models import Assignment, Consolidation, ConsolidationStatus, Item, ItemStage, Project, StageStatus, ThirdRater
from annotation.research import agreement_cache
from annotation.services import annotations as annotation_services
from annotation.services import assignments as assignment_services
from annotation.services import consolidation as consolidation_services
from annotation.evidence import retrieval as evidence_services
from annotation.evidence import search as evidence_search_services
from annotation.services import third_rater as third_rater_services
from annotation.imports import items as import_services
from annotation.research import predictions as prediction_services
from annotation.services import projects as project_services
from annotation.services import stages as stage_services

from config.lockout import lockout_message

from . import serializers
from .parsers import PARSER_CLASSES
from .permissions import CanConsolidate, IsProjectAdmin, IsProjectMember, IsStaff

User = get_user_model()
STAGES = sorted({stage for kind in KINDS.values() for stage in kind.annotatable_stages})
EXPORT_FORMATS = sorted({fmt for kind in KINDS.values() for fmt in kind.export_formats} | set(exports.COMMON_FORMATS))
ERROR_400 = OpenApiResponse(serializers.ErrorSerializer, description="invalid input, or a change the item's state refuses")
ERROR_409 = OpenApiResponse(serializers.VersionConflictSerializer,
                            description="stale version: another save came first (stored_version)")
EXPORT_FORMATS_BY_KIND = "; ".join(
    f"{name}: {', '.join([*kind.export_formats, *exports.COMMON_FORMATS])}" for name, kind in sorted(KINDS.items())
)
UPLOAD_FRAMING_BYTES = 64 * 1024
TRUE_VALUES, FALSE_VALUES = ("true", "1", "yes"), ("false", "0", "no")


def refuse_oversized_upload(request) -> None:
    """413 before the body is read (multipart framing adds a little to the file's size)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.IMPORT_MAX_UPLOAD_BYTES + UPLOAD_FRAMING_BYTES:
        raise UploadTooLarge(length, settings.IMPORT_MAX_UPLOAD_BYTES)


def choice_param(request, name: str, choices) -> str | None:
    """A query filter that must be one of ``choices``; unset or empty means no filter."""
    value = request.query_params.get(name)
    if value and value not in choices:
        raise ValidationError({name: f"must be one of {', '.join(choices)}"})
    return value or None


def bool_param(request, name: str) -> bool:
    """A yes/no query parameter; unset is no, and a value that is neither is a 400, not a silent no."""
    value = request.query_params.get(name)
    if value is None or value.lower() in FALSE_VALUES:
        return False
    if value.lower() in TRUE_VALUES:
        return True
    raise ValidationError({name: f"must be one of {', '.join(TRUE_VALUES + FALSE_VALUES)}"})


class UserViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Staff administrators create annotator accounts here."""

    permission_classes = [IsStaff]
    queryset = User.objects.order_by("username")
    serializer_class = serializers.UserSerializer

    @extend_schema(request=serializers.UserCreateSerializer, responses={201: serializers.UserSerializer})
    def create(self, request, *args, **kwargs):
        data = serializers.UserCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                user = project_services.create_user(**data.validated_data)
        except DjangoValidationError as exc:  # the password's validators, or the name taken in another case
            raise ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"password": exc.messages}) from exc
        except IntegrityError:  # the same name created by a concurrent request
            raise ValidationError({"username": ["a user with this username exists"]}) from None
        return Response(serializers.UserSerializer(user).data, status=status.HTTP_201_CREATED)


# Every id in a path: at most 18 digits (a 64-bit column), so that a longer one is a 404, never a
# lookup the database cannot hold (OverflowError on SQLite: a 500).
ID = NATURAL.pattern


def _item_stage(project: Project, item_id, stage) -> ItemStage:
    item_stage = ItemStage.objects.filter(item__project=project, item_id=item_id, stage=stage).first()
    if item_stage is None:
        raise NotFound("no such item step in this project")
    return item_stage


class ProjectViewSet(viewsets.ModelViewSet):
    """Projects the caller is a member of; staff create them, project admins run them."""

    serializer_class = serializers.ProjectSerializer
    # Only for the schema's path parameter type; rows always come from get_queryset().
    queryset = Project.objects.none()
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return selectors.projects_for_user(self.request.user).order_by("id")

    def get_serializer_class(self):
        if self.action == "partial_update":
            return serializers.ProjectUpdateSerializer
        return super().get_serializer_class()

    def get_permissions(self):
        if self.action == "create":
            return [IsStaff()]
        if self.action in {"partial_update", "destroy", "members", "member", "import_items", "imports", "import_job", "items", "export",
                           "progress", "retrieve_claim", "reopen_stage", "split_stage", "reassign"}:
            return [IsAuthenticated(), IsProjectAdmin()]
        if self.action in {"consolidations", "agreement", "system_runs", "system_run", "leaderboard"}:
            return [IsAuthenticated(), CanConsolidate()]
        # evidence_searches, evidence_search: any member (annotators, consolidators, admins)
        return [IsAuthenticated(), IsProjectMember()]

    def get_object(self):
        project = get_object_or_404(Project, pk=self.kwargs["pk"])
        self.check_object_permissions(self.request, project)
        return project

    def permission_denied(self, request, message=None, code=None):
        # A project the caller does not belong to is reported as not found, not as forbidden.
        if request.user.is_authenticated and self.kwargs.get("pk") and not self._is_member():
            raise NotFound()
        super().permission_denied(request, message, code)

    def _is_member(self):
        project = Project.objects.filter(pk=self.kwargs["pk"]).first()
        return project is not None and bool(selectors.user_roles(self.request.user, project))

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = project_services.create_project(
            name=data["name"], kind=data["kind"], created_by=self.request.user,
            annotators_per_item=data.get("annotators_per_item", 2), guidelines=data.get("guidelines", ""),
            third_rater=data.get("third_rater", ThirdRater.ESCALATION),
            pipeline_settings=data.get("pipeline_settings") or {}, overlap_share=data.get("overlap_share", 1.0),
        )

    def perform_update(self, serializer):
        # Only staff change pipeline_settings.llm: the service answers PermissionDenied (403).
        serializer.instance = project_services.update_project(
            project=serializer.instance, changed_by=self.request.user, **serializer.validated_data
        )

    def perform_destroy(self, instance):
        # Wins over the project's running pre-annotation and saves (annotation/services/locks.py);
        # a project deleted meanwhile by someone else is a 404.
        if not project_services.delete_project(instance):
            raise NotFound("this project was deleted")

    @extend_schema(methods=["GET"], responses=serializers.MembershipSerializer(many=True))
    @extend_schema(methods=["POST"], request=serializers.MembershipSerializer, responses={201: serializers.MembershipSerializer})
    @action(detail=True, methods=["get", "post"])
    def members(self, request, pk=None):
        project = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(selectors.members(project))
            return self.get_paginated_response(serializers.MembershipSerializer(page, many=True).data)
        data = serializers.MembershipSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = project_services.add_member(project=project, user=data.validated_data["user"], role=data.validated_data["role"])
        return Response(serializers.MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["PATCH"], request=serializers.MemberRoleSerializer,
                   responses={200: serializers.MembershipSerializer,
                              400: OpenApiResponse(serializers.ErrorSerializer, description="unknown role, or the last admin")})
    @extend_schema(methods=["DELETE"], responses={204: None, 400: OpenApiResponse(serializers.ErrorSerializer,
                                                                                 description="the project's last admin")})
    @action(detail=True, methods=["patch", "delete"], url_path=rf"members/(?P<membership_id>{ID})", url_name="member")
    def member(self, request, pk=None, membership_id=None):
        """Move a member to another role (PATCH ``{"role"}``) or take the role away (DELETE).

        An annotator's open assignments go back to the pool and on to the other annotators;
        their submitted work stays. A project keeps at least one admin."""
        project = self.get_object()
        membership = project.memberships.select_related("user").filter(pk=int(membership_id)).first()
        if membership is None:
            raise NotFound("no such member of this project")
        if request.method == "DELETE":
            project_services.remove_member(project=project, user=membership.user, role=membership.role)
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = serializers.MemberRoleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = project_services.change_member_role(project=project, membership=membership,
                                                         role=data.validated_data["role"])
        return Response(serializers.MembershipSerializer(membership).data)

    @extend_schema(
        request={"multipart/form-data": serializers.ImportSerializer},
        responses={
            202: OpenApiResponse(serializers.ImportJobSerializer,
                                 description="stored and queued: poll the job's url until its state is done or failed"),
            400: OpenApiResponse(serializers.ErrorSerializer,
                                 description="unknown format, labels_as or on_error, a bad domain, or no file"),
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such project, or not a member of it"),
            413: OpenApiResponse(serializers.ErrorSerializer,
                                 description="the file is larger than IMPORT_MAX_UPLOAD_BYTES (max_bytes says how large)"),
        },
    )
    @action(detail=True, methods=["post"], url_path="import")
    def import_items(self, request, pk=None):
        """Upload a file to import: 202 with the job, which a Celery task runs, all or nothing.

        Poll the job's ``url``. A bad line (invalid JSON, a missing or too long field, NUL, a lone
        surrogate, NaN or infinite numbers, a pretty-printed document instead of JSONL) fails the
        job with each error's line and field, and nothing is imported; with ``on_error=skip`` the
        good lines are imported and the bad ones listed in ``result.skipped``. Exact duplicates (same
        external id, prompt and response, in the file or already in the project) are skipped and
        counted in ``result.duplicates_skipped``.
        """
        project = self.get_object()
        refuse_oversized_upload(request)
        data = serializers.ImportSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = import_services.create_import_job(
            project=project, user=request.user, upload=data.validated_data["file"],
            fmt=data.validated_data["format"], labels_as=data.validated_data["labels_as"],
            on_error=data.validated_data["on_error"], domain=data.validated_data["domain"],
        )
        job.refresh_from_db()  # without a broker the task has already run
        body = serializers.ImportJobSerializer(job).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(responses=serializers.ImportJobSerializer(many=True))
    @action(detail=True, methods=["get"])
    def imports(self, request, pk=None):
        """The project's imports, newest first."""
        page = self.paginate_queryset(selectors.import_jobs(self.get_object()))
        return self.get_paginated_response(serializers.ImportJobSerializer(page, many=True).data)

    @extend_schema(
        parameters=[OpenApiParameter("job_id", int, OpenApiParameter.PATH, description="the import job's id")],
        responses={200: serializers.ImportJobSerializer,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such job in a project of the caller's")},
    )
    @action(detail=True, methods=["get"], url_path=rf"imports/(?P<job_id>{ID})", url_name="import-job")
    def import_job(self, request, pk=None, job_id=None):
        """One import: state (queued, running, done, failed), lines read, errors and result."""
        job = selectors.import_jobs(self.get_object()).filter(pk=job_id).first()
        if job is None:
            raise NotFound("no such import in this project")
        return Response(serializers.ImportJobSerializer(job).data)

    @extend_schema(
        request=serializers.EvidenceSearchRequestSerializer,
        responses={202: OpenApiResponse(serializers.EvidenceSearchSerializer,
                                        description="queued: poll the search's url until its state is done or failed"),
                   400: ERROR_400,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such project, or not a member of it")},
    )
    @action(detail=True, methods=["post"], url_path="evidence-searches")
    def evidence_searches(self, request, pk=None):
        """Search the project's corpora (and the web, where configured) for evidence, as the
        step-2 page does: 202 with the search, which a Celery task answers."""
        project = self.get_object()
        if not get_kind(project.kind).searches_evidence:
            raise ValidationError({"detail": "this kind of project has no evidence step"})
        data = serializers.EvidenceSearchRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        search = evidence_search_services.start_search(project=project, user=request.user, **data.validated_data)
        search.refresh_from_db()  # without a broker the task has already run
        body = serializers.EvidenceSearchSerializer(search).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(
        parameters=[OpenApiParameter("search_id", int, OpenApiParameter.PATH, description="the search's id")],
        responses={200: serializers.EvidenceSearchSerializer,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no search of the caller's with this id")},
    )
    @action(detail=True, methods=["get"], url_path=rf"evidence-searches/(?P<search_id>{ID})", url_name="evidence-search")
    def evidence_search(self, request, pk=None, search_id=None):
        """One of the caller's searches: state (queued, running, done, failed) and results."""
        search = selectors.evidence_search(self.get_object(), request.user, search_id)
        if search is None:
            raise NotFound("no such search of yours in this project")
        return Response(serializers.EvidenceSearchSerializer(search).data)

    @extend_schema(
        parameters=[OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="the item's id"),
                    OpenApiParameter("claim", int, OpenApiParameter.PATH,
                                     description="the claim's number in the step-2 content (0-based)")],
        request=None,
        responses={202: OpenApiResponse(serializers.ErrorSerializer, description="queued: the item's step 2 shows the new passages"),
                   400: ERROR_400,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such item with a step 2 in this project")},
    )
    @action(detail=True, methods=["post"], url_path=rf"items/(?P<item_id>{ID})/claims/(?P<claim>{ID})/retrieve",
            url_name="retrieve-claim")
    def retrieve_claim(self, request, pk=None, item_id=None, claim=None):
        """Retrieve one step-2 claim's evidence again (e.g. after its web search failed), until
        an annotator of the item submits; the drafts' stances of that claim start again."""
        project = self.get_object()
        stage = ItemStage.objects.filter(item__project=project, item_id=item_id, stage__in=get_kind(project.kind).retrievable_stages).first()
        if stage is None:
            raise NotFound("no such item with evidence to retrieve in this project")
        evidence_services.request_retrieval(stage=stage, index=int(claim))
        return Response({"detail": "queued"}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="the item's id"),
                    OpenApiParameter("stage", int, OpenApiParameter.PATH, description="the step")],
        request=serializers.DiscardSerializer,
        responses={200: serializers.ConsolidationSerializer, 400: ERROR_400,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such item step in this project")},
    )
    @action(detail=True, methods=["post"], url_path=rf"items/(?P<item_id>{ID})/stages/(?P<stage>{ID})/reopen",
            url_name="reopen-stage")
    def reopen_stage(self, request, pk=None, item_id=None, stage=None):
        """Reopen a saved gold record, or restore a discarded item, with a reason (kept in the
        item's history): its consolidation opens again. Refused once the next step has
        annotations; an untouched next step is removed and opens again with the new gold record."""
        project = self.get_object()
        item_stage = _item_stage(project, item_id, stage)
        data = serializers.DiscardSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        consolidation = consolidation_services.reopen_stage(stage=item_stage, user=request.user, reason=data.validated_data["reason"])
        return Response(serializers.ConsolidationSerializer(consolidation).data)

    @extend_schema(
        parameters=[OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="the item's id"),
                    OpenApiParameter("stage", int, OpenApiParameter.PATH, description="the step")],
        request=serializers.SplitSerializer,
        responses={200: OpenApiResponse(description="the new split is stored; pre-annotation runs again"),
                   400: ERROR_400,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such item step in this project")},
    )
    @action(detail=True, methods=["post"], url_path=rf"items/(?P<item_id>{ID})/stages/(?P<stage>{ID})/split",
            url_name="split-stage")
    def split_stage(self, request, pk=None, item_id=None, stage=None):
        """Correct an item's sentence split (FELM: segmentation) before any annotator has started it."""
        project = self.get_object()
        item_stage = _item_stage(project, item_id, stage)
        data = serializers.SplitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        stage_services.correct_split(stage=item_stage, units=data.validated_data["units"])
        return Response({"detail": "split corrected; pre-annotation runs again"})

    @extend_schema(
        parameters=[OpenApiParameter("assignment_id", int, OpenApiParameter.PATH, description="the assignment's id")],
        request=None,
        responses={200: serializers.AssignmentSerializer, 400: ERROR_400,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such assignment in this project")},
    )
    @action(detail=True, methods=["post"], url_path=rf"assignments/(?P<assignment_id>{ID})/reassign",
            url_name="reassign")
    def reassign(self, request, pk=None, assignment_id=None):
        """Give an assignment nobody started to another annotator of the project (a stalled item)."""
        project = self.get_object()
        assignment = Assignment.objects.filter(item_stage__item__project=project, pk=assignment_id).first()
        if assignment is None:
            raise NotFound("no such assignment in this project")
        moved = assignment_services.reassign(assignment)
        return Response(serializers.AssignmentSerializer(moved, context={"request": request}).data)

    @extend_schema(responses=serializers.ItemSerializer(many=True),
                   parameters=[OpenApiParameter("status", str, enum=StageStatus.values,
                                                description="only items with a stage in this status")])
    @action(detail=True, methods=["get"])
    def items(self, request, pk=None):
        project = self.get_object()
        stage_status = choice_param(request, "status", StageStatus.values)
        queryset = serializers.ItemSerializer.listing(Item.objects.filter(project=project)).prefetch_related("stages").order_by("id")
        if stage_status:
            queryset = queryset.filter(stages__status=stage_status).distinct()
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializers.ItemSerializer(page, many=True).data)

    @extend_schema(responses=serializers.AssignmentSerializer(many=True),
                   parameters=[OpenApiParameter("mine", bool, description=(
                       f"only the caller's assignments: {', '.join(TRUE_VALUES)} (or {', '.join(FALSE_VALUES)})"))])
    @action(detail=True, methods=["get"])
    def assignments(self, request, pk=None):
        project = self.get_object()
        mine = bool_param(request, "mine")
        if mine or not selectors.is_project_admin(request.user, project):
            queryset = selectors.assignments_for_user(project, request.user)
        else:
            queryset = Assignment.objects.filter(item_stage__item__project=project).select_related("item_stage__item", "user")
        page = self.paginate_queryset(queryset.select_related("user").order_by("id"))
        return self.get_paginated_response(serializers.AssignmentSerializer(page, many=True).data)

    @extend_schema(responses=serializers.ConsolidationSerializer(many=True),
                   parameters=[OpenApiParameter("status", str, enum=ConsolidationStatus.values)])
    @action(detail=True, methods=["get"])
    def consolidations(self, request, pk=None):
        project = self.get_object()
        consolidation_status = choice_param(request, "status", ConsolidationStatus.values)
        page = self.paginate_queryset(selectors.consolidations_for_project(project, consolidation_status))
        return self.get_paginated_response(serializers.ConsolidationSerializer(page, many=True).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT,
                              202: OpenApiResponse(serializers.AgreementPendingSerializer, description=(
                                  "not computed yet for the step's current data: a Celery task computes it (one "
                                  "per project, step, resamples and seed); ask the same address again after "
                                  "Retry-After seconds")),
                              400: ERROR_400},
                   parameters=[OpenApiParameter("stage", int, enum=STAGES, description="one of the project kind's stages"),
                               OpenApiParameter("resamples", int, description="bootstrap resamples of the 95 % intervals "
                                                f"(default {research_selectors.DEFAULT_RESAMPLES}, 0 = none, at most {research_selectors.MAX_RESAMPLES})"),
                               OpenApiParameter("seed", int, description="seed of the bootstrap (default 0)")])
    @action(detail=True, methods=["get"])
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
            resamples, seed = research_selectors.bootstrap_options(request.query_params.get("resamples"), request.query_params.get("seed"))
        except ValueError as error:
            raise ValidationError(error.args[0])
        found = agreement_cache.lookup(project, stage, resamples, seed)
        if found.ready:
            return Response(found.result["agreement"])
        status_body = found.status()
        if found.state == "failed":
            detail = f"the agreement could not be computed: {found.error}"
        else:
            detail = (f"the agreement{f' with {resamples:,}-resample bootstrap intervals' if resamples else ''} is being "
                      "computed; ask this address again in a few seconds")
        url = request.build_absolute_uri()
        body = {"state": found.state, "detail": detail, "step": status_body["step"], "done": status_body["done"],
                "total": status_body["total"], "error": found.error, "url": url}
        retry = agreement_cache.FAILURE_SECONDS if found.state == "failed" else 2
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url, "Retry-After": str(retry)})

    @extend_schema(methods=["GET"], responses=serializers.SystemRunSerializer(many=True))
    @extend_schema(
        methods=["POST"],
        request={"multipart/form-data": serializers.SystemRunCreateSerializer},
        responses={
            202: OpenApiResponse(serializers.SystemRunSerializer,
                                 description="stored and queued: poll the run's url until its state is done or failed"),
            400: OpenApiResponse(serializers.ErrorSerializer, description=(
                "no file or system, a bad option, or this system and version uploaded already (errors names version)")),
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such project, or not a member of it"),
            413: OpenApiResponse(serializers.ErrorSerializer,
                                 description="the file is larger than IMPORT_MAX_UPLOAD_BYTES (max_bytes says how large)"),
        },
    )
    @action(detail=True, methods=["get", "post"], url_path="system-runs", url_name="system-runs")
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
            return self.get_paginated_response(serializers.SystemRunSerializer(page, many=True).data)
        refuse_oversized_upload(request)
        data = serializers.SystemRunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = prediction_services.create_system_run(project=project, user=request.user, upload=data.validated_data["file"],
                                                    **{k: v for k, v in data.validated_data.items() if k != "file"})
        run.refresh_from_db()  # without a broker the task has already run
        body = serializers.SystemRunSerializer(run).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(
        methods=["GET"],
        parameters=[OpenApiParameter("run_id", int, OpenApiParameter.PATH, description="the run's id")],
        responses={200: serializers.SystemRunSerializer,
                   404: OpenApiResponse(serializers.ErrorSerializer, description="no such run in this project")},
    )
    @extend_schema(
        methods=["DELETE"],
        parameters=[OpenApiParameter("run_id", int, OpenApiParameter.PATH, description="the run's id")],
        responses={204: None, 404: OpenApiResponse(serializers.ErrorSerializer, description="no such run in this project")},
    )
    @action(detail=True, methods=["get", "delete"], url_path=rf"system-runs/(?P<run_id>{ID})", url_name="system-run")
    def system_run(self, request, pk=None, run_id=None):
        """One run: state (queued, running, done, failed), progress, errors and scores; DELETE
        removes it with its predictions and scores."""
        run = leaderboard_selectors.system_runs(self.get_object()).filter(pk=int(run_id)).first()
        if run is None:
            raise NotFound("no such run in this project")
        if request.method == "DELETE":
            prediction_services.delete_system_run(run)
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(serializers.SystemRunSerializer(run).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 400: ERROR_400},
                   parameters=[OpenApiParameter("task", str, description="a task of the project with scores (default: "
                                                                         "the first), e.g. checkworthiness, segment"),
                               OpenApiParameter("reference", int, description="the run the differences are to (default: "
                                                                              "the best system on the current gold)"),
                               OpenApiParameter("agreed", bool, description=(
                                   "scores on the units all annotators agreed on: "
                                   f"{', '.join(TRUE_VALUES)} (or {', '.join(FALSE_VALUES)})"))])
    @action(detail=True, methods=["get"])
    def leaderboard(self, request, pk=None):
        """The leaderboard of one task: ``tasks``, ``metrics``, ``differences`` (the columns),
        ``reference`` (a run id) and ``rows``: each system version and baseline with its
        ``metrics`` ({value, low, high}), ``per_label`` scores, ``stale`` (scored on other gold)
        and ``difference`` to the reference (paired bootstrap; null for the reference and for
        runs not scored on the same gold)."""
        project = self.get_object()
        raw = request.query_params.get("reference")
        reference = None
        if raw:
            reference = parse_natural(raw)
            if reference is None:
                raise ValidationError({"reference": "must be a run id in digits 0-9"})
        try:
            board = leaderboard_selectors.leaderboard(project, request.query_params.get("task") or None, reference,
                                                      bool_param(request, "agreed"))
        except ValueError as error:
            raise ValidationError(error.args[0])
        return Response(board)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def progress(self, request, pk=None):
        return Response(selectors.project_progress(self.get_object()))

    @extend_schema(
        responses={(200, "application/jsonl"): OpenApiTypes.STR, (200, "application/zip"): OpenApiTypes.BINARY, 400: ERROR_400},
        parameters=[OpenApiParameter("format", str, enum=EXPORT_FORMATS, required=True,
                                     description=f"one of the project kind's formats, by kind: {EXPORT_FORMATS_BY_KIND}")],
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        project = self.get_object()
        fmt = request.query_params.get("format", "")
        if fmt not in exports.export_formats(project):
            raise ValidationError({"format": f"must be one of {', '.join(exports.export_formats(project))}"})
        return exports.download(project, fmt)


class AssignmentViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """An annotator's own assignments; nobody reads another annotator's work here."""

    serializer_class = serializers.AssignmentSerializer
    # Only for the schema's path parameter type; rows always come from get_queryset().
    queryset = Assignment.objects.none()

    def get_queryset(self):
        return Assignment.objects.filter(user=self.request.user).select_related("item_stage__item__project", "user")

    @extend_schema(methods=["GET"], responses=serializers.AnnotationReadSerializer)
    @extend_schema(methods=["PUT"], request=serializers.AnnotationWriteSerializer,
                   responses={200: serializers.AnnotationReadSerializer, 400: ERROR_400, 409: ERROR_409})
    @action(detail=True, methods=["get", "put"])
    def annotation(self, request, pk=None):
        if request.method == "GET":
            return Response(selectors.annotation_state(self.get_object()))
        data = serializers.AnnotationWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            # The service reads (and locks) the caller's own assignment once.
            saved = annotation_services.save_annotation(assignment=Assignment(pk=pk), user=request.user, **data.validated_data)
        except (Assignment.DoesNotExist, ValueError):
            raise NotFound() from None
        return Response({"payload": saved.payload, "version": saved.version, "submitted": saved.submitted})

    @extend_schema(request=None, responses={200: serializers.AnnotationReadSerializer, 400: ERROR_400})
    @action(detail=True, methods=["post"])
    def reopen(self, request, pk=None):
        """Take a submission back to edit it, until every annotator of the item has submitted."""
        try:
            reopened = annotation_services.reopen_annotation(assignment=Assignment(pk=pk), user=request.user)
        except (Assignment.DoesNotExist, ValueError):
            raise NotFound() from None
        return Response({"payload": reopened.payload, "version": reopened.version, "submitted": reopened.submitted})


class ConsolidationViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Consolidation tasks, for the project's consolidators and admins only."""

    serializer_class = serializers.ConsolidationDetailSerializer
    http_method_names = ["get", "put", "post", "head", "options"]

    def get_queryset(self):
        return Consolidation.objects.select_related("item_stage__item__project", "consolidator")

    def get_object(self):
        consolidation = super().get_object()
        if not selectors.can_consolidate(self.request.user, consolidation.item_stage.item.project):
            raise NotFound()
        consolidation_services.check_not_annotator(consolidation, self.request.user)
        return consolidation

    @extend_schema(request=serializers.ConsolidationWriteSerializer,
                   responses={200: serializers.ConsolidationDetailSerializer, 400: ERROR_400, 409: ERROR_409})
    def update(self, request, pk=None):
        consolidation = self.get_object()
        data = serializers.ConsolidationWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = consolidation_services.save_consolidation(
            consolidation=consolidation, user=request.user, payload=data.validated_data["payload"],
            version=data.validated_data["version"], submit=data.validated_data["submit"],
            draft_rows=data.validated_data["draft_rows"],
        )
        return Response(serializers.ConsolidationDetailSerializer(saved).data)

    @extend_schema(request=serializers.DiscardSerializer, responses={200: serializers.ConsolidationSerializer, 400: ERROR_400})
    @action(detail=True, methods=["post"])
    def discard(self, request, pk=None):
        consolidation = self.get_object()
        data = serializers.DiscardSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = consolidation_services.discard_item_stage(consolidation=consolidation, user=request.user, reason=data.validated_data["reason"])
        return Response(serializers.ConsolidationSerializer(saved).data)

    @extend_schema(request=serializers.EscalateSerializer, responses={200: serializers.ConsolidationSerializer, 400: ERROR_400})
    @action(detail=True, methods=["post"])
    def escalate(self, request, pk=None):
        """Ask for a third rater (steps that allow one): the consolidation waits until the third
        rater has answered blind, then reopens with the three answers merged."""
        consolidation = self.get_object()
        data = serializers.EscalateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = consolidation_services.escalate(consolidation=consolidation, user=request.user, reason=data.validated_data["reason"])
        return Response(serializers.ConsolidationSerializer(saved).data)




class LoginLockedOut(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "locked_out"


class TokenView(ObtainAuthToken):
    """DRF's token login. Its view sets its own parsers (deep JSON was a 500 there) and
    permissions (the schema showed it as needing a token); this one uses the API's."""

    parser_classes = PARSER_CLASSES
    permission_classes = [AllowAny]
    serializer_class = serializers.TokenLoginSerializer

    @extend_schema(request=serializers.TokenLoginSerializer, responses={
        200: serializers.TokenLoginSerializer,
        400: OpenApiResponse(serializers.ErrorSerializer, description="missing fields, or wrong username or password"),
        429: OpenApiResponse(serializers.ErrorSerializer, description="too many failed logins: locked out for a while"),
    })
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        try:
            serializer.is_valid(raise_exception=True)
        except ValidationError:
            # django-axes flags the request it was given (this DRF request) when the username
            # is locked out from this address; its middleware only sees the Django request.
            if getattr(request, "axes_locked_out", False):
                raise LoginLockedOut(lockout_message()) from None
            raise
        user = serializer.validated_data["user"]
        # A token is a login: like the login page, it resets the failure count of this username
        # and address (django-axes), records an access log and updates last_login.
        user_logged_in.send(sender=user.__class__, request=request, user=user)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


@csrf_exempt
def page_not_found(request, exception=None):
    """The site's handler404: JSON under /api/, Django's page elsewhere."""
    if request.path_info.startswith("/api/"):
        return not_found(request)
    return html_page_not_found(request, exception)


@csrf_exempt  # it writes nothing: a session's PUT without a token gets this 404, not the HTML 403
def not_found(request, *args, **kwargs):
    """Any other path under /api/ (e.g. an id with a dot, which the router's patterns refuse):
    a JSON 404 like the API's own, not the site's HTML page."""
    return JsonResponse({"detail": f"no API endpoint at {request.path}"}, status=404)
