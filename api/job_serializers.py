"""Serializers of the background work: item imports, evidence searches, corpora, system runs and the
agreement being computed (each polled until it is done or failed)."""

from django.urls import reverse
from rest_framework import serializers

from annotation.evidence.corpora import MAX_PASSAGE_SENTENCES
from annotation.kinds import KINDS
from annotation.models import Corpus, EvidenceSearch, ImportJob, Project, SystemRun
from annotation.services import jobs

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
        help_text=(
            "what a line held that was read otherwise than given, by line and field (e.g. a FELM list longer "
            "than the segments), and what keeps the imported items from moving on (e.g. too few annotators)"
        ),
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
    domain = serializers.CharField(
        max_length=50,
        required=False,
        default="",
        allow_blank=True,
        help_text="optional: the domain of the lines that name none, for a file of one domain (e.g. FELM's math)",
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
            "{value, low, high}, null where the figure divides by zero; revisions: against_original/against_gold), with title, fingerprint (of the gold units), "
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
