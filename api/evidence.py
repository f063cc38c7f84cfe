"""The API of the evidence wing: evidence searches and retrieving a claim again (a ProjectViewSet mixin)."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotation import selectors
from annotation.evidence import retrieval as evidence_services
from annotation.evidence import search as evidence_search_services
from annotation.kinds import get_kind
from annotation.models import ItemStage

from . import job_serializers, serializers
from .common import ERROR_400, ID
from .openapi import extend_schema
from .permissions import PROJECT_ADMINS, PROJECT_MEMBERS


class EvidenceActions:
    """``/projects/{id}/evidence-searches/`` (and ``{search_id}/``), ``items/{item_id}/claims/{claim}/retrieve/``."""

    @extend_schema(
        request=job_serializers.EvidenceSearchRequestSerializer,
        responses={
            202: OpenApiResponse(
                job_serializers.EvidenceSearchSerializer,
                description="queued: poll the search's url until its state is done or failed",
            ),
            400: ERROR_400,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such project, or not a member of it"),
        },
    )
    @action(detail=True, methods=["post"], url_path="evidence-searches", permission_classes=PROJECT_MEMBERS)
    def evidence_searches(self, request, pk=None):
        """Search the project's corpora (and the web, where configured) for evidence, as the
        step-2 page does: 202 with the search, which a Celery task answers."""
        project = self.get_object()
        if not get_kind(project.kind).searches_evidence:
            raise ValidationError({"detail": "this kind of project has no evidence step"})
        data = job_serializers.EvidenceSearchRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        search = evidence_search_services.start_search(project=project, user=request.user, **data.validated_data)
        search.refresh_from_db()  # without a broker the task has already run
        body = job_serializers.EvidenceSearchSerializer(search).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(
        parameters=[OpenApiParameter("search_id", int, OpenApiParameter.PATH, description="the search's id")],
        responses={
            200: job_serializers.EvidenceSearchSerializer,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no search of the caller's with this id"),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=rf"evidence-searches/(?P<search_id>{ID})",
        url_name="evidence-search",
        permission_classes=PROJECT_MEMBERS,
    )
    def evidence_search(self, request, pk=None, search_id=None):
        """One of the caller's searches: state (queued, running, done, failed) and results."""
        search = selectors.evidence_search(self.get_object(), request.user, search_id)
        if search is None:
            raise NotFound("no such search of yours in this project")
        return Response(job_serializers.EvidenceSearchSerializer(search).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="the item's id"),
            OpenApiParameter(
                "claim",
                int,
                OpenApiParameter.PATH,
                description="the claim's number in the step-2 content (0-based)",
            ),
        ],
        request=None,
        responses={
            202: OpenApiResponse(
                serializers.ErrorSerializer,
                description="queued: the item's step 2 shows the new passages",
            ),
            400: ERROR_400,
            404: OpenApiResponse(
                serializers.ErrorSerializer,
                description="no such item with a step 2 in this project",
            ),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=rf"items/(?P<item_id>{ID})/claims/(?P<claim>{ID})/retrieve",
        url_name="retrieve-claim",
        permission_classes=PROJECT_ADMINS,
    )
    def retrieve_claim(self, request, pk=None, item_id=None, claim=None):
        """Retrieve one step-2 claim's evidence again (e.g. after its web search failed), until
        an annotator of the item submits; the drafts' stances of that claim start again."""
        project = self.get_object()
        stage = ItemStage.objects.filter(
            item__project=project,
            item_id=item_id,
            stage__in=get_kind(project.kind).retrievable_stages,
        ).first()
        if stage is None:
            raise NotFound("no such item with evidence to retrieve in this project")
        evidence_services.request_retrieval(stage=stage, index=int(claim))
        return Response({"detail": "queued"}, status=status.HTTP_202_ACCEPTED)
