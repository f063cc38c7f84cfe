"""Projects, members and users."""
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from annotation import selectors
from annotation.kinds import get_kind
from annotation.models import Membership, Project, Role

User = get_user_model()


SEGMENTATION_METHODS = ("auto", "sentence", "separator")
LLM_SETTING_KEYS = ("base_url", "api_key", "model", "timeout", "max_retries", "concurrency", "temperature")
# What reads show instead of a stored llm.api_key; sent back, it stands for the stored key.
MASKED_SECRET = selectors.MASKED_SECRET
LLM_SETTINGS_STAFF_ONLY = (
    "only staff may change pipeline_settings.llm (the LLM endpoint, key and model); project admins see it "
    "read-only: send it back as read (api_key \"********\") or change only pipeline_settings.segmentation"
)


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


def resolve_llm_secret(stored_llm: dict, new_llm: dict) -> dict:
    """The llm settings to store when ``new_llm`` replaces ``stored_llm``.

    The masked key stands for the stored key only while the base URL stays the one the key was
    entered with; with another base URL the key is dropped, so a stored key never goes to a
    server it was not entered for. Any other api_key value is a key entered now and is kept.
    """
    if not isinstance(new_llm, dict) or new_llm.get("api_key") != MASKED_SECRET:
        return new_llm
    from pipeline.llm import same_base_url  # the openai client loads only where it is used

    stored_key = stored_llm.get("api_key")
    if stored_key and same_base_url(new_llm.get("base_url"), stored_llm.get("base_url")):
        return {**new_llm, "api_key": stored_key}
    return {key: value for key, value in new_llm.items() if key != "api_key"}


def _effective_llm(llm: dict | None) -> dict:
    # An unset value and a null one configure the same thing.
    return {key: value for key, value in (llm or {}).items() if value is not None}


@transaction.atomic
def update_project(*, project: Project, changed_by, **changes) -> Project:
    """Change a project's fields; pipeline_settings.llm only by staff (see can_change_llm_settings).

    The LLM endpoint decides where item texts and the stored key are sent, so project admins,
    who are not server operators, see it read-only.
    """
    project = Project.objects.select_for_update().get(pk=project.pk)
    if "pipeline_settings" in changes:
        new_settings = dict(validate_pipeline_settings(changes["pipeline_settings"] or {}))
        stored_llm = project.pipeline_settings.get("llm") or {}
        if "llm" in new_settings:
            new_settings["llm"] = resolve_llm_secret(stored_llm, new_settings["llm"] or {})
        changed = _effective_llm(new_settings.get("llm")) != _effective_llm(stored_llm)
        if changed and not selectors.can_change_llm_settings(changed_by):
            raise PermissionDenied(LLM_SETTINGS_STAFF_ONLY)
        changes["pipeline_settings"] = new_settings
    for field, value in changes.items():
        setattr(project, field, value)
    if changes:
        project.save(update_fields=list(changes))
    return project


@transaction.atomic
def create_project(*, name: str, kind: str, created_by=None, annotators_per_item: int = 2, guidelines: str = "",
                   pipeline_settings: dict | None = None) -> Project:
    get_kind(kind)  # refuse kinds that are not built yet
    project = Project.objects.create(
        name=name,
        kind=kind,
        annotators_per_item=annotators_per_item,
        guidelines=guidelines,
        pipeline_settings=_without_masked_key(pipeline_settings or {}),
        created_by=created_by,
    )
    if created_by is not None:
        Membership.objects.create(project=project, user=created_by, role=Role.ADMIN)
    return project


def _without_masked_key(settings: dict) -> dict:
    # A new project has no stored key for the masked value to stand for.
    if isinstance(settings.get("llm"), dict):
        return {**settings, "llm": resolve_llm_secret({}, settings["llm"])}
    return settings


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
