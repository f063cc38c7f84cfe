"""Serializers: shape the domain's data for JSON; writes go through annotation.services."""
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation import selectors
from annotation.json_values import nul_path
from annotation.kinds import KINDS
from annotation.services.projects import validate_pipeline_settings
from annotation.models import Assignment, Consolidation, Item, ItemStage, Membership, Project, ProjectKind, Role

User = get_user_model()
MASKED_SECRET = "********"
NUL_MESSAGE = "Null characters are not allowed."


def contains_nul(value) -> bool:
    return nul_path(value) is not None


@extend_schema_field(OpenApiTypes.OBJECT)
class PayloadField(serializers.JSONField):
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


class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username", "email", "is_staff"]


class ProjectSerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(choices=[k for k in ProjectKind.values if k in KINDS])
    annotators_per_item = serializers.IntegerField(min_value=1, max_value=10, default=2)
    my_roles = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "name", "kind", "guidelines", "annotators_per_item", "pipeline_settings", "created_at", "my_roles"]
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
        llm = value.get("llm") or {}
        if llm.get("api_key") == MASKED_SECRET and self.instance is not None:
            stored = (self.instance.pipeline_settings.get("llm") or {}).get("api_key")
            value = {**value, "llm": {**llm, "api_key": stored}}
        return value

    def to_representation(self, project):
        data = super().to_representation(project)
        llm = (data.get("pipeline_settings") or {}).get("llm")
        if isinstance(llm, dict) and llm.get("api_key"):
            # The key is write-only: members read the project, not its secrets.
            data["pipeline_settings"] = {**data["pipeline_settings"], "llm": {**llm, "api_key": MASKED_SECRET}}
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


IMPORT_FORMATS = sorted({fmt for kind in KINDS.values() for fmt in kind.import_formats})


class ImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    # Every kind's formats; the import itself refuses one the project's kind does not read.
    format = serializers.ChoiceField(choices=IMPORT_FORMATS, default="plain")
    labels_as = serializers.ChoiceField(choices=["ignore", "gold", "suggestion"], default="ignore")


class ItemStageSerializer(serializers.ModelSerializer):
    class Meta:
        model = ItemStage
        fields = ["id", "stage", "status", "content", "provenance", "precompute_error", "discard_reason"]


class ItemSerializer(serializers.ModelSerializer):
    stages = ItemStageSerializer(many=True, read_only=True)

    class Meta:
        model = Item
        fields = ["id", "external_id", "source", "domain", "prompt", "response", "metadata", "stages"]


class AssignmentSerializer(serializers.ModelSerializer):
    """An assignment with its item and segments; the annotation shown is the caller's own."""

    item = serializers.SerializerMethodField()
    stage = serializers.IntegerField(source="item_stage.stage")
    stage_status = serializers.CharField(source="item_stage.status")
    content = serializers.JSONField(source="item_stage.content")
    username = serializers.CharField(source="user.username")

    class Meta:
        model = Assignment
        fields = [
            "id", "username", "stage", "stage_status", "status", "item", "content",
            "started_at", "submitted_at", "active_seconds",
        ]

    def get_item(self, assignment) -> dict:
        item = assignment.item_stage.item
        return {"id": item.id, "external_id": item.external_id, "prompt": item.prompt, "response": item.response,
                "source": item.source, "domain": item.domain}


class AnnotationWriteSerializer(serializers.Serializer):
    payload = PayloadField()
    version = serializers.IntegerField(min_value=0)
    submit = serializers.BooleanField(default=False)
    active_seconds = serializers.IntegerField(min_value=0, required=False, default=0)


class ConsolidationWriteSerializer(AnnotationWriteSerializer):
    draft_rows = serializers.JSONField(
        required=False, allow_null=True, default=None,
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
        fields = ["id", "stage", "status", "item", "content", "consolidator", "payload", "disagreed", "alignment",
                  "draft_rows", "version", "discard_reason", "updated_at"]

    def get_item(self, consolidation) -> dict:
        item = consolidation.item_stage.item
        return {"id": item.id, "external_id": item.external_id, "prompt": item.prompt, "response": item.response}



class ConsolidationDetailSerializer(ConsolidationSerializer):
    annotations = serializers.SerializerMethodField()

    class Meta(ConsolidationSerializer.Meta):
        fields = [*ConsolidationSerializer.Meta.fields, "annotations"]

    def get_annotations(self, consolidation) -> list[dict]:
        return selectors.consolidation_annotations(consolidation)


class DiscardSerializer(serializers.Serializer):
    reason = serializers.CharField()
