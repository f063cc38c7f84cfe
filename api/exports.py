"""The API of the exports wing: a project's export (a ProjectViewSet mixin)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError

from annotation.exports import formats as exports
from annotation.kinds import KINDS

from .common import ERROR_400
from .openapi import extend_schema
from .permissions import PROJECT_ADMINS

EXPORT_FORMATS = sorted({fmt for kind in KINDS.values() for fmt in kind.export_formats} | set(exports.COMMON_FORMATS))
EXPORT_FORMATS_BY_KIND = "; ".join(
    f"{name}: {', '.join([*kind.export_formats, *exports.COMMON_FORMATS])}" for name, kind in sorted(KINDS.items())
)


class ExportActions:
    """``/projects/{id}/export/?format=``."""

    @extend_schema(
        responses={
            (200, "application/jsonl"): OpenApiTypes.STR,
            (200, "application/zip"): OpenApiTypes.BINARY,
            400: ERROR_400,
        },
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=EXPORT_FORMATS,
                required=True,
                description=f"one of the project kind's formats, by kind: {EXPORT_FORMATS_BY_KIND}",
            )
        ],
    )
    @action(detail=True, methods=["get"], permission_classes=PROJECT_ADMINS)
    def export(self, request, pk=None):
        project = self.get_object()
        fmt = request.query_params.get("format", "")
        if fmt not in exports.export_formats(project):
            raise ValidationError({"format": f"must be one of {', '.join(exports.export_formats(project))}"})
        return exports.download(project, fmt)
