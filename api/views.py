"""API views: check permissions, parse input, call a service or selector, serialize."""

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found as html_page_not_found
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import mixins, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.generics import get_object_or_404
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from annotation import selectors
from annotation.models import (
    Assignment,
    Consolidation,
    ConsolidationStatus,
    Item,
    Project,
    StageStatus,
    ThirdRater,
)
from annotation.services import annotations as annotation_services
from annotation.services import assignments as assignment_services
from annotation.services import consolidation as consolidation_services
from annotation.services import projects as project_services
from annotation.services import stages as stage_services
from config.lockout import lockout_message

from . import serializers
from .common import (
    ERROR_400,
    ERROR_409,
    FALSE_VALUES,
    ID,
    TRUE_VALUES,
    bool_param,
    choice_param,
    item_stage_of,
)
from .evidence import EvidenceActions
from .exports import ExportActions
from .imports import ImportActions
from .openapi import ExtraActionsWithoutSchema, extend_schema
from .parsers import PARSER_CLASSES
from .permissions import PROJECT_ADMINS, PROJECT_CONSOLIDATORS, PROJECT_MEMBERS, IsStaff
from .research import ResearchActions

User = get_user_model()


class UserViewSet(ExtraActionsWithoutSchema, mixins.CreateModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
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
            raise ValidationError(
                exc.message_dict if hasattr(exc, "error_dict") else {"password": exc.messages}
            ) from exc
        except IntegrityError:  # the same name created by a concurrent request
            raise ValidationError({"username": ["a user with this username exists"]}) from None
        return Response(serializers.UserSerializer(user).data, status=status.HTTP_201_CREATED)


# Every id in a path: at most 18 digits (a 64-bit column), so that a longer one is a 404, never a
# lookup the database cannot hold (OverflowError on SQLite: a 500).
# The wings' actions come from their mixins (api/imports.py, evidence.py, research.py, exports.py);
# the docstring below is the schema's description of every project operation.
class ProjectViewSet(
    ExtraActionsWithoutSchema, ImportActions, EvidenceActions, ResearchActions, ExportActions, viewsets.ModelViewSet
):
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

    # The router's own actions (and "metadata", OPTIONS on any of the project's routes); each
    # extra action names its rule in its @action.
    action_permissions = {
        "list": PROJECT_MEMBERS,
        "retrieve": PROJECT_MEMBERS,
        "metadata": PROJECT_MEMBERS,
        "create": [IsStaff],
        "partial_update": PROJECT_ADMINS,
        "destroy": PROJECT_ADMINS,
    }

    def get_permissions(self):
        if self.action is None:  # a method the route does not serve: 405 once signed in
            return [IsAuthenticated()]
        if self.action in self.action_permissions:
            return [permission() for permission in self.action_permissions[self.action]]
        return super().get_permissions()

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
            name=data["name"],
            kind=data["kind"],
            created_by=self.request.user,
            annotators_per_item=data.get("annotators_per_item", 2),
            guidelines=data.get("guidelines", ""),
            third_rater=data.get("third_rater", ThirdRater.ESCALATION),
            pipeline_settings=data.get("pipeline_settings") or {},
            overlap_share=data.get("overlap_share", 1.0),
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
    @extend_schema(
        methods=["POST"],
        request=serializers.MembershipSerializer,
        responses={201: serializers.MembershipSerializer},
    )
    @action(detail=True, methods=["get", "post"], permission_classes=PROJECT_ADMINS)
    def members(self, request, pk=None):
        project = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(selectors.members(project))
            return self.get_paginated_response(serializers.MembershipSerializer(page, many=True).data)
        data = serializers.MembershipSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = project_services.add_member(
            project=project, user=data.validated_data["user"], role=data.validated_data["role"]
        )
        return Response(serializers.MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        methods=["PATCH"],
        request=serializers.MemberRoleSerializer,
        responses={
            200: serializers.MembershipSerializer,
            400: OpenApiResponse(serializers.ErrorSerializer, description="unknown role, or the last admin"),
        },
    )
    @extend_schema(
        methods=["DELETE"],
        responses={
            204: None,
            400: OpenApiResponse(serializers.ErrorSerializer, description="the project's last admin"),
        },
    )
    @action(
        detail=True,
        methods=["patch", "delete"],
        url_path=rf"members/(?P<membership_id>{ID})",
        url_name="member",
        permission_classes=PROJECT_ADMINS,
    )
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
        membership = project_services.change_member_role(
            project=project, membership=membership, role=data.validated_data["role"]
        )
        return Response(serializers.MembershipSerializer(membership).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="the item's id"),
            OpenApiParameter("stage", int, OpenApiParameter.PATH, description="the step"),
        ],
        request=serializers.DiscardSerializer,
        responses={
            200: serializers.ConsolidationSerializer,
            400: ERROR_400,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such item step in this project"),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=rf"items/(?P<item_id>{ID})/stages/(?P<stage>{ID})/reopen",
        url_name="reopen-stage",
        permission_classes=PROJECT_ADMINS,
    )
    def reopen_stage(self, request, pk=None, item_id=None, stage=None):
        """Reopen a saved gold record, or restore a discarded item, with a reason (kept in the
        item's history): its consolidation opens again. Refused once the next step has
        annotations; an untouched next step is removed and opens again with the new gold record."""
        project = self.get_object()
        item_stage = item_stage_of(project, item_id, stage)
        data = serializers.DiscardSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        consolidation = consolidation_services.reopen_stage(
            stage=item_stage, user=request.user, reason=data.validated_data["reason"]
        )
        return Response(serializers.ConsolidationSerializer(consolidation).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="the item's id"),
            OpenApiParameter("stage", int, OpenApiParameter.PATH, description="the step"),
        ],
        request=serializers.SplitSerializer,
        responses={
            200: OpenApiResponse(description="the new split is stored; pre-annotation runs again"),
            400: ERROR_400,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such item step in this project"),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=rf"items/(?P<item_id>{ID})/stages/(?P<stage>{ID})/split",
        url_name="split-stage",
        permission_classes=PROJECT_ADMINS,
    )
    def split_stage(self, request, pk=None, item_id=None, stage=None):
        """Correct an item's sentence split (FELM: segmentation) before any annotator has started it."""
        project = self.get_object()
        item_stage = item_stage_of(project, item_id, stage)
        data = serializers.SplitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        stage_services.correct_split(stage=item_stage, units=data.validated_data["units"])
        return Response({"detail": "split corrected; pre-annotation runs again"})

    @extend_schema(
        parameters=[OpenApiParameter("assignment_id", int, OpenApiParameter.PATH, description="the assignment's id")],
        request=None,
        responses={
            200: serializers.AssignmentSerializer,
            400: ERROR_400,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such assignment in this project"),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=rf"assignments/(?P<assignment_id>{ID})/reassign",
        url_name="reassign",
        permission_classes=PROJECT_ADMINS,
    )
    def reassign(self, request, pk=None, assignment_id=None):
        """Give an assignment nobody started to another annotator of the project (a stalled item)."""
        project = self.get_object()
        assignment = Assignment.objects.filter(item_stage__item__project=project, pk=assignment_id).first()
        if assignment is None:
            raise NotFound("no such assignment in this project")
        moved = assignment_services.reassign(assignment)
        return Response(serializers.AssignmentSerializer(moved, context={"request": request}).data)

    @extend_schema(
        responses=serializers.ItemSerializer(many=True),
        parameters=[
            OpenApiParameter(
                "status",
                str,
                enum=StageStatus.values,
                description="only items with a stage in this status",
            )
        ],
    )
    @action(detail=True, methods=["get"], permission_classes=PROJECT_ADMINS)
    def items(self, request, pk=None):
        project = self.get_object()
        stage_status = choice_param(request, "status", StageStatus.values)
        queryset = (
            serializers.ItemSerializer.listing(Item.objects.filter(project=project))
            .prefetch_related("stages")
            .order_by("id")
        )
        if stage_status:
            queryset = queryset.filter(stages__status=stage_status).distinct()
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializers.ItemSerializer(page, many=True).data)

    @extend_schema(
        responses=serializers.AssignmentSerializer(many=True),
        parameters=[
            OpenApiParameter(
                "mine",
                bool,
                description=(f"only the caller's assignments: {', '.join(TRUE_VALUES)} (or {', '.join(FALSE_VALUES)})"),
            )
        ],
    )
    @action(detail=True, methods=["get"], permission_classes=PROJECT_MEMBERS)
    def assignments(self, request, pk=None):
        project = self.get_object()
        mine = bool_param(request, "mine")
        if mine or not selectors.is_project_admin(request.user, project):
            queryset = selectors.assignments_for_user(project, request.user)
        else:
            queryset = Assignment.objects.filter(item_stage__item__project=project).select_related(
                "item_stage__item", "user"
            )
        # The list shows neither the item's metadata nor the annotation's payload: not read.
        queryset = queryset.select_related("user").defer(*serializers.AssignmentSerializer.NOT_LISTED)
        page = self.paginate_queryset(queryset.order_by("id"))
        return self.get_paginated_response(serializers.AssignmentSerializer(page, many=True).data)

    @extend_schema(
        responses=serializers.ConsolidationSerializer(many=True),
        parameters=[OpenApiParameter("status", str, enum=ConsolidationStatus.values)],
    )
    @action(detail=True, methods=["get"], permission_classes=PROJECT_CONSOLIDATORS)
    def consolidations(self, request, pk=None):
        project = self.get_object()
        consolidation_status = choice_param(request, "status", ConsolidationStatus.values)
        consolidations = selectors.consolidations_for_project(project, consolidation_status)
        page = self.paginate_queryset(consolidations.defer("item_stage__item__metadata"))
        return self.get_paginated_response(serializers.ConsolidationSerializer(page, many=True).data)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"], permission_classes=PROJECT_ADMINS)
    def progress(self, request, pk=None):
        return Response(selectors.project_progress(self.get_object()))


class AssignmentViewSet(ExtraActionsWithoutSchema, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """An annotator's own assignments; nobody reads another annotator's work here."""

    permission_classes = [IsAuthenticated]  # the rows are the caller's own (get_queryset)
    serializer_class = serializers.AssignmentSerializer
    # Only for the schema's path parameter type; rows always come from get_queryset().
    queryset = Assignment.objects.none()

    def get_queryset(self):
        return Assignment.objects.filter(user=self.request.user).select_related("item_stage__item__project", "user")

    @extend_schema(methods=["GET"], responses=serializers.AnnotationReadSerializer)
    @extend_schema(
        methods=["PUT"],
        request=serializers.AnnotationWriteSerializer,
        responses={200: serializers.AnnotationReadSerializer, 400: ERROR_400, 409: ERROR_409},
    )
    @action(detail=True, methods=["get", "put"], permission_classes=[IsAuthenticated])
    def annotation(self, request, pk=None):
        if request.method == "GET":
            return Response(selectors.annotation_state(self.get_object()))
        data = serializers.AnnotationWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            # The service reads (and locks) the caller's own assignment once.
            saved = annotation_services.save_annotation(
                assignment=Assignment(pk=pk), user=request.user, **data.validated_data
            )
        except (Assignment.DoesNotExist, ValueError):
            raise NotFound() from None
        return Response({"payload": saved.payload, "version": saved.version, "submitted": saved.submitted})

    @extend_schema(request=None, responses={200: serializers.AnnotationReadSerializer, 400: ERROR_400})
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def reopen(self, request, pk=None):
        """Take a submission back to edit it, until every annotator of the item has submitted."""
        try:
            reopened = annotation_services.reopen_annotation(assignment=Assignment(pk=pk), user=request.user)
        except (Assignment.DoesNotExist, ValueError):
            raise NotFound() from None
        return Response(
            {
                "payload": reopened.payload,
                "version": reopened.version,
                "submitted": reopened.submitted,
            }
        )


class ConsolidationViewSet(ExtraActionsWithoutSchema, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Consolidation tasks, for the project's consolidators and admins only."""

    permission_classes = [IsAuthenticated]  # get_object answers 404 to anyone else
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

    @extend_schema(
        request=serializers.ConsolidationWriteSerializer,
        responses={200: serializers.ConsolidationDetailSerializer, 400: ERROR_400, 409: ERROR_409},
    )
    def update(self, request, pk=None):
        consolidation = self.get_object()
        data = serializers.ConsolidationWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = consolidation_services.save_consolidation(
            consolidation=consolidation,
            user=request.user,
            payload=data.validated_data["payload"],
            version=data.validated_data["version"],
            submit=data.validated_data["submit"],
            draft_rows=data.validated_data["draft_rows"],
        )
        return Response(serializers.ConsolidationDetailSerializer(saved).data)

    @extend_schema(
        request=serializers.DiscardSerializer,
        responses={200: serializers.ConsolidationSerializer, 400: ERROR_400},
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def discard(self, request, pk=None):
        consolidation = self.get_object()
        data = serializers.DiscardSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = consolidation_services.discard_item_stage(
            consolidation=consolidation, user=request.user, reason=data.validated_data["reason"]
        )
        return Response(serializers.ConsolidationSerializer(saved).data)

    @extend_schema(
        request=serializers.EscalateSerializer,
        responses={200: serializers.ConsolidationSerializer, 400: ERROR_400},
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def escalate(self, request, pk=None):
        """Ask for a third rater (steps that allow one): the consolidation waits until the third
        rater has answered blind, then reopens with the three answers merged."""
        consolidation = self.get_object()
        data = serializers.EscalateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        saved = consolidation_services.escalate(
            consolidation=consolidation, user=request.user, reason=data.validated_data["reason"]
        )
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

    @extend_schema(
        request=serializers.TokenLoginSerializer,
        responses={
            200: serializers.TokenLoginSerializer,
            400: OpenApiResponse(
                serializers.ErrorSerializer,
                description="missing fields, or wrong username or password",
            ),
            429: OpenApiResponse(
                serializers.ErrorSerializer,
                description="too many failed logins: locked out for a while",
            ),
        },
    )
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
