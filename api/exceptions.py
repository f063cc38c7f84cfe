"""Turn the domain's errors into API answers that say what and where."""

from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.exceptions import (
    DomainError,
    ImportFailed,
    ProjectDeleted,
    UploadTooLarge,
    VersionConflict,
)
from annotation.kinds import PayloadError


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "the request body is too large"
    default_code = "payload_too_large"


def exception_handler(exc, context):
    if isinstance(exc, VersionConflict):
        return Response(
            {
                "detail": str(exc),
                "stored_version": exc.stored_version,
                "given_version": exc.given_version,
            },
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, ImportFailed):
        return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PayloadError):
        return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, UploadTooLarge):
        return Response(
            {"detail": str(exc), "max_bytes": exc.limit},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, ProjectDeleted):  # deleted while this request waited for it
        return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    # Django's own limits on the bodies it parses (form fields, sizes) would otherwise answer
    # with its HTML 400 page, outside the API's documented JSON errors.
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"detail": f"the request body is larger than the {limit} bytes accepted"},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, (SuspiciousOperation, BadRequest)):
        return Response({"detail": f"bad request: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
