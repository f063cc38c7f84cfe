"""Restarting a stalled background job (services.jobs): one action for every kind of job.

Who may: the job's owner (who uploaded the file or typed the search) and the admins of its
project (for a corpus: of one of its projects); staff for every job. Consolidators, who see system
runs on the leaderboard, get 403 for those; everyone else 404, as for a job that does not exist.
"""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers as drf_serializers
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.exceptions import DomainError
from annotation.services import jobs

from .job_serializers import job_fields
from .openapi import extend_schema
from .serializers import ErrorSerializer


class JobStatusSerializer(drf_serializers.Serializer):
    kind = drf_serializers.ChoiceField(choices=sorted(jobs.KINDS))
    id = drf_serializers.IntegerField()
    state = drf_serializers.CharField()
    stalled = drf_serializers.BooleanField(
        help_text="no progress for JOB_STALLED_AFTER_SECONDS: its worker may have died"
    )
    state_detail = drf_serializers.CharField(help_text="what the job does or waits for, e.g. the queue it waits on")
    progress_at = drf_serializers.DateTimeField(allow_null=True, help_text="the task's last sign of life")


def _visible_job(user, kind: jobs.JobKind, job_id: int):
    """(job, may_restart), or NotFound for a job the user cannot see where the API shows it:
    their own jobs, and their projects' jobs if they administer the project (system runs: also
    its consolidators, who see the leaderboard but may not restart them)."""
    job = kind.model.objects.filter(kind.where, pk=job_id).first()
    if job is None:
        raise NotFound(f"no such {kind.label}")
    owner_id = getattr(job, "created_by_id", None) or getattr(job, "user_id", None)
    owner = owner_id is not None and owner_id == user.id
    if selectors.can_create_projects(user):
        admin = True
    elif kind.name == "corpus":
        admin = any(selectors.is_project_admin(user, p) for p in job.projects.all())
    else:
        admin = selectors.is_project_admin(user, job.project)
    sees = admin or owner or (kind.name == "system-run" and selectors.can_consolidate(user, job.project))
    if not sees:
        raise NotFound(f"no such {kind.label}")
    return job, admin or owner


class JobRestartView(APIView):
    permission_classes = [IsAuthenticated]  # who may restart which job: _visible_job

    @extend_schema(
        request=None,
        parameters=[
            OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=sorted(jobs.KINDS)),
            OpenApiParameter("job_id", int, OpenApiParameter.PATH),
        ],
        responses={
            202: JobStatusSerializer,
            400: OpenApiResponse(ErrorSerializer, description="the job is not stalled, or has ended"),
            403: OpenApiResponse(ErrorSerializer, description="neither the job's owner nor an admin of its project"),
            404: OpenApiResponse(ErrorSerializer, description="no such job the caller can see"),
        },
        summary="Restart a stalled job",
    )
    def post(self, request, kind, job_id):
        """Queue a stalled job again (one that made no progress for JOB_STALLED_AFTER_SECONDS,
        e.g. after its worker was killed, or one no worker has taken for that long). A job that
        is making progress or has ended is refused (400): it would run twice."""
        found = jobs.KINDS.get(kind)
        if found is None:
            raise NotFound("no such kind of job")
        job, may_restart = _visible_job(request.user, found, int(job_id))
        if not may_restart:
            raise PermissionDenied(f"only the {found.label}'s owner and the project's admins may restart it")
        try:
            job = jobs.restart(job)
        except DomainError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        body = {"kind": found.name, "id": job.pk, "state": job.state, **job_fields(job)}
        body.pop("restart_url")
        return Response(body, status=status.HTTP_202_ACCEPTED)
