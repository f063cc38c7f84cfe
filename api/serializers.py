"""Serializers: shape the domain's data for JSON; writes go through annotation.services."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from annotation import selectors
from annotation.evidence.corpora import MAX_PASSAGE_SENTENCES
from annotation.json_values import MAX_JSON_DEPTH, nul_path, too_deep
from annotation.kinds import KINDS
from annotation.kinds.factcheck.step2_content import RELEASED_EVIDENCE_KEY
from annotation.models import (
    Assignment,
    Consolidation,
    Corpus,
    EvidenceSearch,
    ImportJob,
    Item,
    ItemStage,
    Membership,
    Project,
    ProjectKind,
    Role,
    SystemRun,
)
from annotation.services import jobs
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


IMPORT_FORMATS = sorted({fmt for kind in KINDS.values() for fmt in kind.import_formats})


class ImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    # Every kind's formats; the import itself refuses one the project's kind does not read.
    format = serializers.ChoiceField(choices=IMPORT_FORMATS, default="plain")
    labels_as = serializers.ChoiceField(choices=["ignore", "gold", "suggestion"], default="ignore")
    on_error = serializers.ChoiceField(
        choices=["refuse", "skip"],
        default="refuse",
        help_text="refuse: a bad line fails the file (nothing imported, every bad line listed); "
        "skip: the good lines are imported and the bad ones listed in result.skipped",
    )
    domain = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        max_length=50,
        help_text="fills the domain of items whose line has none (FELM: wk, science, math, reasoning, writing_rec)",
    )


class ImportErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="line of the file (0: the file or the request as a whole)")
    field = serializers.CharField(help_text='e.g. "response", "labels[2]", "(json)", "(file)"')
    message = serializers.CharField()
    column = serializers.IntegerField(
        required=False,
        help_text="where in the line (1-based), for text that is not JSON or not UTF-8",
    )


class ImportResultSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    gold_records = serializers.IntegerField()
    precomputing = serializers.IntegerField(help_text="items whose pre-annotation runs after the import")
    assignments = serializers.IntegerField()
    duplicates_skipped = serializers.IntegerField(
        help_text="exact duplicates (same external id, prompt and response) in the file or already in the project"
    )
    lines = serializers.IntegerField(help_text="lines read")
    skipped_lines = serializers.IntegerField(default=0, help_text="bad lines left out (on_error=skip)")
    skipped = ImportErrorSerializer(many=True, default=list, help_text="each bad line left out, with its reason")
    warnings = serializers.ListField(
        child=serializers.CharField(),
        default=list,
        help_text="what keeps the imported items from moving on (e.g. too few annotators)",
    )


def job_fields(job) -> dict:
    """What every background job's answer says besides its own fields (services.jobs)."""
    found = jobs.status(job)
    return {
        "stalled": found["stalled"],
        "state_detail": found["detail"],
        "progress_at": found["progress_at"],
        "restart_url": reverse("api-job-restart", args=[jobs.kind_of(job).name, job.pk]),
    }


class JobStatusMixin(serializers.Serializer):
    """Stalled or not, what the job waits for, and where to restart it (admins and owners)."""

    stalled = serializers.SerializerMethodField(
        help_text="no progress for JOB_STALLED_AFTER_SECONDS (its worker may have died): restart_url queues it again"
    )
    state_detail = serializers.SerializerMethodField(
        help_text='what a job that has not ended does or waits for, e.g. "queued: waiting for a worker on queue '
        "'interactive'\"; empty once it has ended"
    )
    restart_url = serializers.SerializerMethodField(help_text="POST here to restart the job once it is stalled")

    def get_stalled(self, job) -> bool:
        return job_fields(job)["stalled"]

    def get_state_detail(self, job) -> str:
        return job_fields(job)["state_detail"]

    def get_restart_url(self, job) -> str:
        return job_fields(job)["restart_url"]


JOB_FIELDS = ["progress_at", "stalled", "state_detail", "restart_url"]


class ImportJobSerializer(JobStatusMixin, serializers.ModelSerializer):
    """An import running in the background: poll ``url`` until ``state`` is done or failed."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    errors = ImportErrorSerializer(many=True, read_only=True, help_text="why the import failed; nothing was imported")
    result = ImportResultSerializer(read_only=True, allow_null=True, help_text="the counts of a done import")
    url = serializers.SerializerMethodField()

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "url",
            "state",
            "format",
            "labels_as",
            "options",
            "file_name",
            "file_size",
            "lines_read",
            "bytes_read",
            "errors",
            "result",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            *JOB_FIELDS,
        ]
        read_only_fields = fields

    def get_url(self, job) -> str:
        return reverse("project-import-job", args=[job.project_id, job.id])


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


# Metadata that only an export reads: Factcheck-Bench's released evidence, about 35 KB an item.
EXPORT_ONLY_METADATA = (RELEASED_EVIDENCE_KEY,)


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


class EvidenceSearchRequestSerializer(serializers.Serializer):
    query = serializers.CharField(
        max_length=500, help_text="what to search for in the project's corpora and on the web"
    )
    claim = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=5000,
        help_text="the claim being checked (kept with the search)",
    )


class EvidenceSearchSerializer(JobStatusMixin, serializers.ModelSerializer):
    """A search from the step-2 page: poll ``url`` until ``state`` is done or failed;
    ``results`` are ranked passages (text, url, title, source, query, rank, scores); ``problems``
    lists what could not be used, including pages the outbound guard refused ("<url> was not
    fetched: refused, <reason>"), which are never fetched nor shown as passages."""

    url = serializers.SerializerMethodField()

    class Meta:
        model = EvidenceSearch
        fields = [
            "id",
            "url",
            "query",
            "state",
            "results",
            "problems",
            "created_at",
            "finished_at",
            *JOB_FIELDS,
        ]
        read_only_fields = fields

    def get_url(self, search) -> str:
        return reverse("project-evidence-search", args=[search.project_id, search.id])


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


class CorpusSerializer(JobStatusMixin, serializers.ModelSerializer):
    projects = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    state_display = serializers.CharField(source="get_state_display", read_only=True)
    errors = ImportErrorSerializer(many=True, read_only=True, help_text="why the import failed; nothing was imported")

    class Meta:
        model = Corpus
        fields = [
            "id",
            "name",
            "projects",
            "state",
            "state_display",
            "passage_sentences",
            "passage_stride",
            "file_name",
            "file_size",
            "lines_read",
            "documents",
            "passages",
            "embedded",
            "errors",
            "created_at",
            "imported_at",
            "embedded_at",
            *JOB_FIELDS,
        ]
        read_only_fields = fields


class CorpusCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField(help_text='JSONL, one document a line: {"title", "url", "text"}')
    projects = serializers.PrimaryKeyRelatedField(
        queryset=Project.objects.all(),
        many=True,
        required=False,
        help_text="projects whose retrieval searches this corpus",
    )
    passage_sentences = serializers.IntegerField(default=5, min_value=1, max_value=MAX_PASSAGE_SENTENCES)
    passage_stride = serializers.IntegerField(default=2, min_value=1, max_value=MAX_PASSAGE_SENTENCES)


class CorpusProjectsSerializer(serializers.Serializer):
    projects = serializers.PrimaryKeyRelatedField(queryset=Project.objects.all(), many=True)


class SystemRunCreateSerializer(serializers.Serializer):
    """An upload of a system's predictions (research.predictions)."""

    file = serializers.FileField(
        help_text="JSONL, one line per unit or per group of fields of a unit, keyed like the "
        'exports: e.g. {"item": "q7", "sentence": "sentence1", "claim": 0, '
        '"evidence": 2, "stance": "refute"} or {"item": "12", "segment": 3, "label": "error"}'
    )
    system = serializers.CharField(max_length=100, help_text="the fact-checker's name")
    version = serializers.CharField(
        max_length=50,
        required=False,
        default="",
        allow_blank=True,
        help_text="optional; each version of a system is scored and listed on its own",
    )
    resamples = serializers.IntegerField(
        default=1000,
        min_value=0,
        max_value=10_000,
        help_text="bootstrap resamples of the 95 % intervals (0: no intervals)",
    )
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**32 - 1, help_text="seed of the bootstrap")
    replace = serializers.BooleanField(
        default=False,
        help_text="replace the run of this system and version if there is one (otherwise such an upload is refused)",
    )


class SystemRunSerializer(JobStatusMixin, serializers.ModelSerializer):
    """A system's predictions being checked and scored, or scored: poll ``url`` until ``state``
    is done or failed."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    errors = ImportErrorSerializer(
        many=True,
        read_only=True,
        help_text="why the run failed (each bad line with its field); nothing was stored",
    )
    scores = serializers.JSONField(
        read_only=True,
        allow_null=True,
        help_text=(
            "{task: scores}: score_task's numbers on every gold unit (accuracy, balanced_accuracy, macro, per_label, each "
            "{value, low, high}; revisions: against_original/against_gold), with title, fingerprint (of the gold units), "
            'baselines {name: {title, scores}}, differences {"run:<id>" | "baseline:<name>": this run minus that one, '
            "paired bootstrap} and agreed (the same on the units all annotators agreed on, or null)"
        ),
    )
    url = serializers.SerializerMethodField()
    units_done = serializers.IntegerField(read_only=True, help_text="work done: lines checked, then scores computed")
    units_total = serializers.IntegerField(read_only=True, help_text="work to do, as units_done counts it")

    class Meta:
        model = SystemRun
        fields = [
            "id",
            "url",
            "system",
            "version",
            "source",
            "state",
            "options",
            "file_name",
            "units_done",
            "units_total",
            "errors",
            "scores",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            *JOB_FIELDS,
        ]
        read_only_fields = fields

    def get_url(self, run) -> str:
        return reverse("project-system-run", args=[run.project_id, run.id])


class AgreementPendingSerializer(serializers.Serializer):
    """The 202 of the agreement while a Celery task computes it: ask ``url`` again (the same
    address, also in the Location header) after Retry-After seconds, until it answers 200."""

    state = serializers.ChoiceField(
        choices=["queued", "running", "failed"],
        help_text=(
            "queued: waiting for a worker; running: being computed; failed: the computation failed (error says why), "
            "it is tried again after a few minutes or as soon as the step's data change"
        ),
    )
    detail = serializers.CharField(help_text="what is going on, in words")
    step = serializers.CharField(allow_blank=True, help_text="what the task is computing now")
    done = serializers.IntegerField(help_text="steps done (the point estimates, each field, the LLM rater)")
    total = serializers.IntegerField(help_text="steps to do (0 until a worker starts)")
    error = serializers.CharField(allow_null=True, help_text="why the computation failed, when state is failed")
    url = serializers.URLField(help_text="where to ask again")
