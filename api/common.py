"""What the API's modules share: path ids, error responses, query parameters, the upload limit."""

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import NotFound, ValidationError

from annotation.exceptions import UploadTooLarge
from annotation.kinds import KINDS
from annotation.models import ItemStage, Project
from annotation.params import NATURAL

from . import serializers

STAGES = sorted({stage for kind in KINDS.values() for stage in kind.annotatable_stages})
TRUE_VALUES, FALSE_VALUES = ("true", "1", "yes"), ("false", "0", "no")
ERROR_400 = OpenApiResponse(
    serializers.ErrorSerializer, description="invalid input, or a change the item's state refuses"
)
ERROR_409 = OpenApiResponse(
    serializers.VersionConflictSerializer,
    description="stale version: another save came first (stored_version)",
)
UPLOAD_FRAMING_BYTES = 64 * 1024


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


ID = NATURAL.pattern


def item_stage_of(project: Project, item_id, stage) -> ItemStage:
    item_stage = ItemStage.objects.filter(item__project=project, item_id=item_id, stage=stage).first()
    if item_stage is None:
        raise NotFound("no such item step in this project")
    return item_stage
