"""Restarting a stalled background job (services.jobs): one action for every kind of job.

Who may: the job's owner (who uploaded the file or typed the search) and the admins of its
project (for a corpus: of one of its projects); staff for every job. Others who can see the job
get 403; those who cannot, 404.
"""
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers as drf_serializers
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.exceptions import DomainError
from annotation.services import jobs

from .serializers import ErrorSerializer, job_fields


class JobStatusSerializer(drf_serializers.Serializer):
    kind = drf_serializers.ChoiceField(choices=sorted(jobs.KINDS))
    id = drf_serializers.IntegerField()
    state = drf_serializers.CharField()
    stalled = drf_serializers.BooleanField(help_text="no progress for JOB_STALLED_AFTER_SECONDS: its worker may have died")
    state_detail = drf_serializers.CharField(help_text="what the job does or waits for, e.g. the queue it waits on")
    progress_at = drf_serializers.DateTimeField(allow_null=True, help_text="the task's last sign of life")


def _visible_job(user, kind: jobs.JobKind, job_id: int):
    """(job, may_restart), or NotFound for a job the user cannot see."""
    job = kind.model.objects.filter(kind.where, pk=job_id).first()
    if job is None:
        raise NotFound(f"no such {kind.label}")
    staff = selectors.can_create_projects(user)
    owner_id = getattr(job, "created_by_id", None) or getattr(job, "user_id", None)
    if kind.name == "corpus":
        projects = list(job.projects.all())
        sees = staff or owner_id == user.id or any(selectors.user_roles(user, p) for p in projects)
        admin = staff or any(selectors.is_project_admin(user, p) for p in projects)
    else:
        roles = selectors.user_roles(user, job.project)
        sees = staff or bool(roles)
        admin = staff or selectors.is_project_admin(user, job.project)
    if not sees:
        raise NotFound(f"no such {kind.label}")
    return job, admin or (owner_id is not None and owner_id == user.id)


class JobRestartView(APIView):
    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=sorted(jobs.KINDS)),
                    OpenApiParameter("job_id", int, OpenApiParameter.PATH)],
        responses={202: JobStatusSerializer,
                   400: OpenApiResponse(ErrorSerializer, description="the job is not stalled, or has ended"),
                   403: OpenApiResponse(ErrorSerializer, description="neither the job's owner nor an admin of its project"),
                   404: OpenApiResponse(ErrorSerializer, description="no such job the caller can see")},
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
