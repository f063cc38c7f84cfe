"""Serializers of the workflow (users, projects, members, items, assignments, annotations, consolidations) and of
the error bodies: shape the domain's data for JSON; writes go through annotation.services. Background work's are
in api.job_serializers."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from annotation import selectors
from annotation.json_values import MAX_JSON_DEPTH, nul_path, too_deep
from annotation.kinds import KINDS
from annotation.models import Assignment, Consolidation, Item, ItemStage, Membership, Project, ProjectKind, Role
from annotation.services.projects import validate_pipeline_settings

User = get_user_model()
MASKED_SECRET = selectors.MASKED_SECRET
NUL_MESSAGE = "Null characters are not allowed."


def contains_nul(value) -> bool:
    return nul_path(value) is not None


class JSONValueField(serializers.JSONField):
    """A JSON value. Form and multipart bodies carry it as text parsed here, where input nested
    too deeply raised RecursionError (a 500) instead of a ValidationError."""

    default_error_messages = {"too_deep": f"Nested deeper than {MAX_JSON_DEPTH} levels."}

    def to_internal_value(self, data):
        try:
            value = super().to_internal_value(data)
        except RecursionError:
            self.fail("too_deep")
        if too_deep(value):
            self.fail("too_deep")
        return value


@extend_schema_field(OpenApiTypes.OBJECT)
class PayloadField(JSONValueField):
    """A payload (documented as an object); NUL characters answer 400, not a database error."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if contains_nul(value):
            raise serializers.ValidationError(NUL_MESSAGE)
        return value


class UsernameField(serializers.SlugRelatedField):
    """A user by username; NUL characters would reach the database lookup as an error."""

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            raise serializers.ValidationError(NUL_MESSAGE)
        return super().to_internal_value(data)


class UserCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150, validators=[User.username_validator])
    password = serializers.CharField(write_only=True, min_length=8)
    email = serializers.EmailField(required=False, allow_blank=True)
    is_staff = serializers.BooleanField(required=False, default=False)

    def validate_username(self, value):
        # create_user stores the NFKC form: check (and return) that one, or a look-alike
        # of an existing name passes here and fails on the unique constraint.
        value = User.normalize_username(value)
        if User.objects.filter(username=value).exists():
            raise serializers.ValidationError("a user with this username exists")
        return value


class TokenLoginSerializer(AuthTokenSerializer):
    """DRF's token login form, with the username no longer than a username can be: a longer
    one failed the login-attempt record (django-axes, 255 characters) with a 500."""

    username = serializers.CharField(
        label="Username",
        write_only=True,
        max_length=User._meta.get_field(User.USERNAME_FIELD).max_length,
    )


class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username", "email", "is_staff"]


class ProjectSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.JSONField: JSONValueField,
    }
    kind = serializers.ChoiceField(choices=[k for k in ProjectKind.values if k in KINDS])
    annotators_per_item = serializers.IntegerField(min_value=1, max_value=10, default=2)
    overlap_share = serializers.FloatField(
        min_value=0,
        max_value=1,
        default=1.0,
        help_text="share of items annotated by annotators_per_item annotators; the others get one, whose "
        "submission is their gold record",
    )
    my_roles = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "kind",
            "guidelines",
            "annotators_per_item",
            "overlap_share",
            "third_rater",
            "pipeline_settings",
            "created_at",
            "my_roles",
        ]
        read_only_fields = ["created_at"]

    def get_my_roles(self, project) -> list[str]:
        return sorted(selectors.user_roles(self.context["request"].user, project))

    def validate_pipeline_settings(self, value):
        if contains_nul(value):
            raise serializers.ValidationError(NUL_MESSAGE)
        try:
            value = validate_pipeline_settings(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        # A masked api_key is resolved against the stored key by services.projects.update_project.
        return value

    def to_representation(self, project):
        data = super().to_representation(project)
        # The key is write-only: members read the project, not its secrets.
        data["pipeline_settings"] = selectors.masked_pipeline_settings(project)
        return data


class ProjectUpdateSerializer(ProjectSerializer):
    # Declared fields ignore Meta.read_only_fields: the kind must be redeclared read-only, or
    # a PATCH turns e.g. a FELM project with FELM items into a Factcheck-Bench one.
    kind = serializers.CharField(read_only=True)

    class Meta(ProjectSerializer.Meta):
        read_only_fields = ["kind", "created_at"]


class MembershipSerializer(serializers.ModelSerializer):
    username = UsernameField(source="user", slug_field="username", queryset=User.objects.all())
    role = serializers.ChoiceField(choices=Role.choices)

    class Meta:
        model = Membership
        fields = ["id", "username", "role"]


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class ItemStageSerializer(serializers.ModelSerializer):
    class Meta:
        model = ItemStage
        fields = [
            "id",
            "stage",
            "status",
            "content",
            "provenance",
            "precompute_error",
            "discard_reason",
        ]


# Metadata that only an export reads (KindSpec.export_only_metadata), of every kind.
EXPORT_ONLY_METADATA = tuple(key for spec in KINDS.values() for key in spec.export_only_metadata)


class WithoutKeys(models.Func):
    """A JSON object without the given top-level keys, computed by the database (the big values
    are neither sent to the web worker nor decoded there)."""

    output_field = models.JSONField()

    def __init__(self, expression, keys):
        self.keys = list(keys)
        super().__init__(expression)

    def as_sql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        if connection.vendor == "postgresql":
            return f"({column} - %s::text[])", [*params, self.keys]
        paths = ", ".join("%s" for _ in self.keys)
        return f"JSON_REMOVE({column}, {paths})", [*params, *(f'$."{key}"' for key in self.keys)]


class ItemSerializer(serializers.ModelSerializer):
    """An item in the list: ``metadata`` without what only an export needs (EXPORT_ONLY_METADATA)."""

    stages = ItemStageSerializer(many=True, read_only=True)
    metadata = serializers.SerializerMethodField()

    class Meta:
        model = Item
        fields = [
            "id",
            "external_id",
            "source",
            "domain",
            "prompt",
            "response",
            "metadata",
            "stages",
        ]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_metadata(self, item) -> dict:
        if hasattr(item, "listed_metadata"):
            return item.listed_metadata
        return {k: v for k, v in item.metadata.items() if k not in EXPORT_ONLY_METADATA}

    @staticmethod
    def listing(queryset):
        """``queryset`` reading the listed metadata only."""
        return queryset.defer("metadata").annotate(listed_metadata=WithoutKeys("metadata", EXPORT_ONLY_METADATA))


class AssignmentSerializer(serializers.ModelSerializer):
    """An assignment with its item and segments; the annotation shown is the caller's own."""

    # What a list of assignments need not read (large JSON, shown elsewhere)
    NOT_LISTED = ("item_stage__item__metadata", "item_stage__suggestion", "item_stage__provenance")

    item = serializers.SerializerMethodField()
    stage = serializers.IntegerField(source="item_stage.stage")
    stage_status = serializers.CharField(source="item_stage.status")
    content = serializers.JSONField(source="item_stage.content")
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Assignment
        fields = [
            "id",
            "username",
            "role",
            "stage",
            "stage_status",
            "status",
            "item",
            "content",
            "started_at",
            "submitted_at",
            "active_seconds",
        ]

    def get_item(self, assignment) -> dict:
        item = assignment.item_stage.item
        return {
            "id": item.id,
            "external_id": item.external_id,
            "prompt": item.prompt,
            "response": item.response,
            "source": item.source,
            "domain": item.domain,
        }


class AnnotationWriteSerializer(serializers.Serializer):
    payload = PayloadField()
    version = serializers.IntegerField(min_value=0)
    submit = serializers.BooleanField(default=False)
    active_seconds = serializers.IntegerField(min_value=0, required=False, default=0)


class ConsolidationWriteSerializer(AnnotationWriteSerializer):
    draft_rows = JSONValueField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Per aligned part (e.g. sentence), the alignment row of each unit (claim) of the payload, or null",
    )


class AnnotationReadSerializer(serializers.Serializer):
    payload = serializers.JSONField()
    version = serializers.IntegerField()
    submitted = serializers.BooleanField()


class ConsolidationSerializer(serializers.ModelSerializer):
    item = serializers.SerializerMethodField()
    content = serializers.JSONField(source="item_stage.content")
    stage = serializers.IntegerField(source="item_stage.stage")
    consolidator = serializers.CharField(source="consolidator.username", default=None, allow_null=True, read_only=True)
    payload = serializers.JSONField(source="draft")

    class Meta:
        model = Consolidation
        fields = [
            "id",
            "stage",
            "status",
            "item",
            "content",
            "consolidator",
            "payload",
            "disagreed",
            "alignment",
            "draft_rows",
            "version",
            "discard_reason",
            "escalation_reason",
            "updated_at",
        ]

    def get_item(self, consolidation) -> dict:
        item = consolidation.item_stage.item
        return {
            "id": item.id,
            "external_id": item.external_id,
            "prompt": item.prompt,
            "response": item.response,
        }


class ConsolidationDetailSerializer(ConsolidationSerializer):
    annotations = serializers.SerializerMethodField()

    class Meta(ConsolidationSerializer.Meta):
        fields = [*ConsolidationSerializer.Meta.fields, "annotations"]

    def get_annotations(self, consolidation) -> list[dict]:
        return selectors.consolidation_annotations(consolidation)


class DiscardSerializer(serializers.Serializer):
    reason = serializers.CharField()


class SplitSerializer(serializers.Serializer):
    units = serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=10_000),
        allow_empty=False,
        help_text="the item's sentences (FELM: segments) in order, one string each",
    )


class EscalateSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="why the two annotators' answers cannot be settled")


class ErrorSerializer(serializers.Serializer):
    """The body of every 4xx answer: ``detail``, or each refused input's name with its messages."""

    detail = serializers.CharField(required=False, help_text="What went wrong, when no single input is to blame")
    errors = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Of a refused import or payload: each problem with its line or path and field",
    )


class VersionConflictSerializer(serializers.Serializer):
    """A 409: another save came first; reload at ``stored_version`` and save again."""

    detail = serializers.CharField()
    stored_version = serializers.IntegerField()
    given_version = serializers.IntegerField()
