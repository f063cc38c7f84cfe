"""Passage corpora for step-2 evidence retrieval: upload (a background job), progress, sharing.

Staff manage every corpus. A project admin uploads corpora for the projects they run and sees
the corpora of those projects; attaching a corpus to a project needs admin rights on it.
"""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotation import selectors
from annotation.evidence import corpora as corpus_services
from annotation.models import Corpus
from annotation.params import NATURAL

from .job_serializers import CorpusCreateSerializer, CorpusProjectsSerializer, CorpusSerializer
from .openapi import ExtraActionsWithoutSchema, extend_schema
from .serializers import ErrorSerializer

ERROR_400 = OpenApiResponse(ErrorSerializer, description="invalid input")
ERROR_404 = OpenApiResponse(ErrorSerializer, description="no such corpus, or not one of the caller's projects")


def _check_admin_of(user, projects) -> None:
    if selectors.can_create_projects(user):
        return
    refused = [p.id for p in projects if not selectors.is_project_admin(user, p)]
    if refused:
        raise PermissionDenied(f"you are not an admin of project(s) {', '.join(map(str, refused))}")


class CorpusViewSet(
    ExtraActionsWithoutSchema, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    # Any signed-in user: the rows are the caller's corpora (get_queryset); writes check admin rights.
    permission_classes = [IsAuthenticated]
    serializer_class = CorpusSerializer
    queryset = Corpus.objects.none()  # the schema's path type; rows come from get_queryset()
    lookup_value_regex = NATURAL.pattern

    def get_queryset(self):
        return selectors.corpora_for_user(self.request.user).prefetch_related("projects")

    def get_object(self):
        corpus = self.get_queryset().filter(pk=self.kwargs["pk"]).first()
        if corpus is None:
            raise NotFound("no such corpus")
        return corpus

    @extend_schema(
        request={"multipart/form-data": CorpusCreateSerializer},
        responses={
            202: CorpusSerializer,
            400: ERROR_400,
            403: OpenApiResponse(ErrorSerializer, description="not an admin of every project named"),
            413: OpenApiResponse(ErrorSerializer, description="larger than IMPORT_MAX_UPLOAD_BYTES"),
        },
    )
    def create(self, request):
        """Upload a corpus; a worker cuts it into passages (poll the corpus for its state)."""
        data = CorpusCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        projects = data.validated_data.get("projects", [])
        if not projects and not selectors.can_create_projects(request.user):
            raise PermissionDenied("name at least one project you administer")
        _check_admin_of(request.user, projects)
        corpus = corpus_services.create_corpus(
            name=data.validated_data["name"],
            user=request.user,
            upload=data.validated_data["file"],
            projects=projects,
            passage_sentences=data.validated_data["passage_sentences"],
            passage_stride=data.validated_data["passage_stride"],
        )
        corpus.refresh_from_db()  # without a broker the import has already run
        return Response(CorpusSerializer(corpus).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=CorpusProjectsSerializer,
        responses={
            200: CorpusSerializer,
            400: ERROR_400,
            404: ERROR_404,
            403: OpenApiResponse(ErrorSerializer),
        },
    )
    @action(detail=True, methods=["put"], permission_classes=[IsAuthenticated])
    def projects(self, request, pk=None):
        """Set the projects that search this corpus; changes only to projects the caller administers."""
        corpus = self.get_object()
        data = CorpusProjectsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        wanted, current = set(data.validated_data["projects"]), set(corpus.projects.all())
        _check_admin_of(request.user, wanted ^ current)
        corpus_services.share_corpus(corpus, list(wanted))
        return Response(CorpusSerializer(corpus).data)

    @extend_schema(
        request=None,
        responses={
            200: CorpusSerializer,
            400: ERROR_400,
            404: ERROR_404,
            403: OpenApiResponse(ErrorSerializer),
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def cancel(self, request, pk=None):
        """Cancel a queued or running import: its passages and upload are deleted, the corpus fails
        with a "cancelled" error. A worker that died mid-import resumes after its last batch instead."""
        corpus = self.get_object()
        _check_admin_of(request.user, list(corpus.projects.all()))
        return Response(CorpusSerializer(corpus_services.cancel_corpus_import(corpus.id)).data)
