"""Turn the domain's errors into API answers that say what and where."""
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.exceptions import DomainError, ImportFailed, VersionConflict
from annotation.kinds import PayloadError


def exception_handler(exc, context):
    if isinstance(exc, VersionConflict):
        return Response(
            {"detail": str(exc), "stored_version": exc.stored_version, "given_version": exc.given_version},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, ImportFailed):
        return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PayloadError):
        return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
