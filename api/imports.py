"""The API of the imports wing: a project's item imports (a ProjectViewSet mixin)."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotation import selectors
from annotation.imports import jobs as import_jobs

from . import job_serializers, serializers
from .common import ID, refuse_oversized_upload
from .openapi import extend_schema
from .permissions import PROJECT_ADMINS


class ImportActions:
    """``/projects/{id}/import/``, ``imports/`` and ``imports/{job_id}/``."""

    @extend_schema(
        request={"multipart/form-data": job_serializers.ImportSerializer},
        responses={
            202: OpenApiResponse(
                job_serializers.ImportJobSerializer,
                description="stored and queued: poll the job's url until its state is done or failed",
            ),
            400: OpenApiResponse(
                serializers.ErrorSerializer,
                description="unknown format, labels_as or on_error, a bad domain, or no file",
            ),
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such project, or not a member of it"),
            413: OpenApiResponse(
                serializers.ErrorSerializer,
                description="the file is larger than IMPORT_MAX_UPLOAD_BYTES (max_bytes says how large)",
            ),
        },
    )
    @action(detail=True, methods=["post"], url_path="import", permission_classes=PROJECT_ADMINS)
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
        data = job_serializers.ImportSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = import_jobs.create_import_job(
            project=project,
            user=request.user,
            upload=data.validated_data["file"],
            fmt=data.validated_data["format"],
            labels_as=data.validated_data["labels_as"],
            on_error=data.validated_data["on_error"],
            domain=data.validated_data["domain"],
        )
        job.refresh_from_db()  # without a broker the task has already run
        body = job_serializers.ImportJobSerializer(job).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(responses=job_serializers.ImportJobSerializer(many=True))
    @action(detail=True, methods=["get"], permission_classes=PROJECT_ADMINS)
    def imports(self, request, pk=None):
        """The project's imports, newest first."""
        page = self.paginate_queryset(selectors.import_jobs(self.get_object()))
        return self.get_paginated_response(job_serializers.ImportJobSerializer(page, many=True).data)

    @extend_schema(
        parameters=[OpenApiParameter("job_id", int, OpenApiParameter.PATH, description="the import job's id")],
        responses={
            200: job_serializers.ImportJobSerializer,
            404: OpenApiResponse(serializers.ErrorSerializer, description="no such job in a project of the caller's"),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=rf"imports/(?P<job_id>{ID})",
        url_name="import-job",
        permission_classes=PROJECT_ADMINS,
    )
    def import_job(self, request, pk=None, job_id=None):
        """One import: state (queued, running, done, failed), lines read, errors and result."""
        job = selectors.import_jobs(self.get_object()).filter(pk=job_id).first()
        if job is None:
            raise NotFound("no such import in this project")
        return Response(job_serializers.ImportJobSerializer(job).data)
