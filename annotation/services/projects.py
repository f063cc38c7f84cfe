"""Projects, members and users."""
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.kinds import get_kind
from annotation.models import Membership, Project, Role

User = get_user_model()


SEGMENTATION_METHODS = ("auto", "sentence", "separator")
LLM_SETTING_KEYS = ("base_url", "api_key", "model", "timeout", "max_retries", "concurrency", "temperature")


def validate_pipeline_settings(settings: dict) -> dict:
    """Check a project's pipeline settings; raise ValidationError naming the bad key."""
    if not isinstance(settings, dict):
        raise ValidationError("must be an object")
    unknown = set(settings) - {"segmentation", "llm"}
    if unknown:
        raise ValidationError(f"unknown settings: {', '.join(sorted(unknown))}")
    if settings.get("segmentation", "auto") not in SEGMENTATION_METHODS:
        raise ValidationError(f"segmentation must be one of {', '.join(SEGMENTATION_METHODS)}")
    llm = settings.get("llm", {})
    if not isinstance(llm, dict):
        raise ValidationError("llm must be an object")
    unknown = set(llm) - set(LLM_SETTING_KEYS)
    if unknown:
        raise ValidationError(f"unknown llm settings: {', '.join(sorted(unknown))}")
    # A wrong type here would fail every pre-annotation of the project later, far from its cause.
    for key, value in llm.items():
        if value is None:
            continue
        if key in ("base_url", "api_key", "model"):
            valid, expected = isinstance(value, str), "a string"
        elif key in ("timeout", "temperature"):
            valid, expected = _is_number(value) and value >= 0, "a number ≥ 0"
        else:
            minimum = 1 if key == "concurrency" else 0
            valid, expected = isinstance(value, int) and not isinstance(value, bool) and value >= minimum, f"an integer ≥ {minimum}"
        if not valid:
            raise ValidationError(f"llm.{key} must be {expected}, not {value!r}")
    return settings


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@transaction.atomic
def create_project(*, name: str, kind: str, created_by=None, annotators_per_item: int = 2, guidelines: str = "",
                   pipeline_settings: dict | None = None) -> Project:
    get_kind(kind)  # refuse kinds that are not built yet
    project = Project.objects.create(
        name=name,
        kind=kind,
        annotators_per_item=annotators_per_item,
        guidelines=guidelines,
        pipeline_settings=pipeline_settings or {},
        created_by=created_by,
    )
    if created_by is not None:
        Membership.objects.create(project=project, user=created_by, role=Role.ADMIN)
    return project


@transaction.atomic
def add_member(*, project: Project, user, role: str) -> Membership:
    membership, _ = Membership.objects.get_or_create(project=project, user=user, role=role)
    if role == Role.ANNOTATOR:
        from .assignments import assign_open_stages

        assign_open_stages(project)
    return membership


def remove_member(*, project: Project, user, role: str) -> int:
    deleted, _ = Membership.objects.filter(project=project, user=user, role=role).delete()
    return deleted


def create_user(*, username: str, password: str, email: str = "", is_staff: bool = False):
    validate_password(password)
    return User.objects.create_user(username=username, password=password, email=email, is_staff=is_staff)
