"""Projects, members and users."""

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from annotation import selectors
from annotation.exceptions import DomainError, ProjectDeleted
from annotation.kinds import KINDS, get_kind
from annotation.models import Assignment, AssignmentStatus, Membership, Project, Role, ThirdRater

from .assignments import assign_open_stages
from .locks import lock_project_for_change, lock_project_for_delete, lock_project_for_write

User = get_user_model()


SEGMENTATION_METHODS = ("auto", "sentence", "separator")
# Settings sections that name a server and hold its key: where item texts and the key are sent.
# Only staff change them; project admins read them with the key masked.
ENDPOINT_SECTIONS = {
    "llm": ("base_url", "api_key", "model", "timeout", "max_retries", "concurrency", "temperature"),
    "web_search": (
        "base_url",
        "api_key",
        "timeout",
        "max_page_bytes",
        "results_per_query",
        "concurrency",
    ),
}
LLM_SETTING_KEYS = ENDPOINT_SECTIONS["llm"]
# Settings sections a kind owns (e.g. D-FActScore's passes), each checked by its kind.
KIND_SECTIONS = {spec.settings_section: spec for spec in KINDS.values() if spec.settings_section}
PASSAGE_KEYS = ("sentences", "stride")
# What reads show instead of a stored api_key; sent back, it stands for the stored key.
MASKED_SECRET = selectors.MASKED_SECRET
STAFF_ONLY = (
    "only staff may change pipeline_settings.{section} (the endpoint, its key and parameters); project admins see it "
    'read-only: send it back as read (api_key "********") and change only the other settings'
)
LLM_SETTINGS_STAFF_ONLY = STAFF_ONLY.format(section="llm")


def _check_endpoint_section(name: str, section) -> None:
    if not isinstance(section, dict):
        raise ValidationError(f"{name} must be an object")
    unknown = set(section) - set(ENDPOINT_SECTIONS[name])
    if unknown:
        raise ValidationError(f"unknown {name} settings: {', '.join(sorted(unknown))}")
    # A wrong type here would fail every pre-annotation of the project later, far from its cause.
    for key, value in section.items():
        if value is None:
            continue
        if key in ("base_url", "api_key", "model"):
            valid, expected = isinstance(value, str), "a string"
        elif key in ("timeout", "temperature"):
            valid, expected = _is_number(value) and value >= 0, "a number ≥ 0"
        else:
            minimum = 0 if key == "max_retries" else 1
            valid, expected = (
                isinstance(value, int) and not isinstance(value, bool) and value >= minimum,
                f"an integer ≥ {minimum}",
            )
        if not valid:
            raise ValidationError(f"{name}.{key} must be {expected}, not {value!r}")


def validate_pipeline_settings(settings: dict) -> dict:
    """Check a project's pipeline settings; raise ValidationError naming the bad key."""
    if not isinstance(settings, dict):
        raise ValidationError("must be an object")
    unknown = set(settings) - {
        "segmentation",
        "passages",
        "embeddings",
        "revision",
        *KIND_SECTIONS,
        *ENDPOINT_SECTIONS,
    }
    if unknown:
        raise ValidationError(f"unknown settings: {', '.join(sorted(unknown))}")
    if settings.get("segmentation", "auto") not in SEGMENTATION_METHODS:
        raise ValidationError(f"segmentation must be one of {', '.join(SEGMENTATION_METHODS)}")
    for name in ENDPOINT_SECTIONS:
        _check_endpoint_section(name, settings.get(name, {}))
    passages = settings.get("passages", {})
    if not isinstance(passages, dict) or set(passages) - set(PASSAGE_KEYS):
        raise ValidationError(
            f"passages must be an object with {' and '.join(PASSAGE_KEYS)} (web pages' sentence windows)"
        )
    for key, value in passages.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 50:
            raise ValidationError(f"passages.{key} must be a whole number from 1 to 50, not {value!r}")
    if not isinstance(settings.get("embeddings", True), bool):
        raise ValidationError("embeddings must be true or false (rank evidence with embeddings too)")
    revision = settings.get("revision", {})
    if (
        not isinstance(revision, dict)
        or set(revision) - {"with_question"}
        or not isinstance(revision.get("with_question", False), bool)
    ):
        raise ValidationError(
            "revision must be an object with with_question true or false "
            "(step 3: show the model the user's question when it revises a sentence)"
        )
    for name, spec in KIND_SECTIONS.items():
        if name in settings and (message := spec.settings_section_error(settings[name])):
            raise ValidationError(message)
    return settings


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def resolve_secret(stored: dict, new: dict) -> dict:
    """The endpoint settings to store when ``new`` replaces ``stored`` (an llm or web_search section).

    The masked key stands for the stored key only while the base URL stays the one the key was
    entered with; with another base URL the key is dropped, so a stored key never goes to a
    server it was not entered for. Any other api_key value is a key entered now and is kept.
    """
    if not isinstance(new, dict) or new.get("api_key") != MASKED_SECRET:
        return new
    from pipeline.llm import same_base_url  # the openai client loads only where it is used

    stored_key = stored.get("api_key")
    if stored_key and same_base_url(new.get("base_url"), stored.get("base_url")):
        return {**new, "api_key": stored_key}
    return {key: value for key, value in new.items() if key != "api_key"}


def _effective(section: dict | None) -> dict:
    # An unset value and a null one configure the same thing.
    return {key: value for key, value in (section or {}).items() if value is not None}


@transaction.atomic
def update_project(*, project: Project, changed_by, **changes) -> Project:
    """Change a project's fields; the endpoint sections of pipeline_settings (llm, web_search)
    only by staff (see can_change_llm_settings).

    An endpoint decides where item texts and the stored key are sent, so project admins, who
    are not server operators, see those sections read-only.
    """
    # NO KEY UPDATE: saves under the project (KEY SHARE) do not wait (annotation/services/locks.py)
    project_id = project.pk
    project = Project.objects.select_for_update(no_key=True).filter(pk=project_id).first()
    if project is None:
        raise ProjectDeleted(project_id)
    if "pipeline_settings" in changes:
        new_settings = dict(validate_pipeline_settings(changes["pipeline_settings"] or {}))
        for name in ENDPOINT_SECTIONS:
            stored = project.pipeline_settings.get(name) or {}
            if name in new_settings:
                new_settings[name] = resolve_secret(stored, new_settings[name] or {})
            changed = _effective(new_settings.get(name)) != _effective(stored)
            if changed and not selectors.can_change_llm_settings(changed_by):
                raise PermissionDenied(STAFF_ONLY.format(section=name))
        changes["pipeline_settings"] = new_settings
    more_annotators = (
        changes.get("annotators_per_item", project.annotators_per_item) > project.annotators_per_item
        or changes.get("overlap_share", project.overlap_share) > project.overlap_share
    )
    for field, value in changes.items():
        setattr(project, field, value)
    if changes:
        project.save(update_fields=list(changes))
    if more_annotators:  # items already handed out get their missing annotators
        assign_open_stages(project)
    return project


@transaction.atomic
def create_project(
    *,
    name: str,
    kind: str,
    created_by=None,
    annotators_per_item: int = 2,
    guidelines: str = "",
    pipeline_settings: dict | None = None,
    third_rater: str = ThirdRater.ESCALATION,
    overlap_share: float = 1.0,
) -> Project:
    spec = get_kind(kind)  # refuses kinds that are not built yet
    project = Project.objects.create(
        name=name,
        kind=kind,
        annotators_per_item=annotators_per_item,
        overlap_share=overlap_share,
        third_rater=third_rater,
        # Left empty, the kind's template: annotators then start with the paper's label definitions.
        guidelines=guidelines if guidelines.strip() else spec.guidelines_template(),
        pipeline_settings=_without_masked_key(pipeline_settings or {}),
        created_by=created_by,
    )
    if created_by is not None:
        Membership.objects.create(project=project, user=created_by, role=Role.ADMIN)
    return project


def _without_masked_key(settings: dict) -> dict:
    # A new project has no stored key for the masked value to stand for.
    return {
        name: resolve_secret({}, value) if name in ENDPOINT_SECTIONS and isinstance(value, dict) else value
        for name, value in settings.items()
    }


@transaction.atomic
def add_member(*, project: Project, user, role: str) -> Membership:
    lock_project_for_write(project.pk)
    membership, _ = Membership.objects.get_or_create(project=project, user=user, role=role)
    if role == Role.ANNOTATOR:
        assign_open_stages(project)
    return membership


@transaction.atomic
def delete_project(project: Project) -> bool:
    """Delete a project and everything under it, also while its items are pre-annotated or
    annotated: the project row is locked first (annotation/services/locks.py), so the writes
    under way end before the rows to delete are read, and the writes that come later find the
    project gone instead of adding rows under it. False if it was already deleted."""
    if not lock_project_for_delete(project.pk):
        return False
    Project.objects.get(pk=project.pk).delete()
    return True


@transaction.atomic
def remove_member(*, project: Project, user, role: str) -> int:
    """Take a role from a member. An annotator's open assignments (not submitted) go back to
    the pool and on to the other annotators, balanced; their submitted work stays. A project
    keeps at least one admin."""
    # Locked so that two admins taking each other's role at once cannot leave none.
    lock_project_for_change(project.pk)
    if (
        role == Role.ADMIN
        and not Membership.objects.filter(project=project, role=Role.ADMIN).exclude(user=user).exists()
    ):
        raise DomainError("a project needs an admin: make someone else admin first")
    deleted, _ = Membership.objects.filter(project=project, user=user, role=role).delete()
    if deleted and role == Role.ANNOTATOR:
        # Locked first, in a save's order: a submission that lands while we wait is seen (the lock
        # re-reads the row) and kept; only then are the open ones deleted.
        # Only the assignment rows, in id order: through the join their stages and items were locked
        # too, out of the order of annotation/services/locks.py.
        open_ids = list(
            Assignment.objects.select_for_update(of=("self",))
            .filter(item_stage__item__project=project, user=user)
            .exclude(status=AssignmentStatus.SUBMITTED)
            .order_by("id")
            .values_list("id", flat=True)
        )
        Assignment.objects.filter(id__in=open_ids).delete()
        assign_open_stages(project)
    return deleted


@transaction.atomic
def change_member_role(*, project: Project, membership: Membership, role: str) -> Membership:
    """Move a member from one role to another, as removing the old role and adding the new one
    would: an annotator's open assignments go back to the pool, the project keeps an admin.
    A member who already holds ``role`` just loses the old one."""
    if role not in Role.values:
        raise ValidationError(f"role must be one of {', '.join(Role.values)}, not {role!r}")
    if membership.project_id != project.pk:
        raise ValueError("the membership belongs to another project")
    if role == membership.role:
        return membership
    user = membership.user
    remove_member(project=project, user=user, role=membership.role)
    return add_member(project=project, user=user, role=role)


@transaction.atomic
def create_user(
    *,
    username: str,
    password: str,
    email: str = "",
    is_staff: bool = False,
    project: Project | None = None,
    role: str | None = None,
):
    """A new account, optionally added to ``project`` with ``role`` in the same transaction.

    The password is checked by the configured validators, including its likeness to the
    username and email; a ValidationError names the field (``username`` or ``password``)."""
    username = User.normalize_username(username)
    # Case-insensitive: "Alice" beside "alice" is a second account nobody meant to make.
    if User.objects.filter(username__iexact=username).exists():
        raise ValidationError({"username": "a user with this username exists"})
    try:
        validate_password(password, user=User(username=username, email=email))
    except ValidationError as exc:
        raise ValidationError({"password": exc.messages}) from exc
    user = User.objects.create_user(username=username, password=password, email=email, is_staff=is_staff)
    if project is not None and role:
        add_member(project=project, user=user, role=role)
    return user
