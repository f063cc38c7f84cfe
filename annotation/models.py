"""Domain model: projects, items and their steps, assignments, consolidations (docs/design.md).

Payloads are JSON validated by the project kind (``annotation.kinds``), so one set of tables
serves FELM, Factcheck-Bench and D-FActScore projects.
"""

import hashlib
import re
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from annotation.kinds import kind_choices

# "sentences[1].claims[2].text" -> ("sentences", "1"): the unit a disagreed field belongs to.
_UNIT_OF_PATH = re.compile(r"^([a-z_]+)\[(\d+)\]")


# The kinds of the registry (annotation/kinds/); a migration records a new one's choice.
ProjectKind = models.TextChoices(
    "ProjectKind", [(key.upper(), (key, title)) for key, title in kind_choices()], module=__name__
)


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    ANNOTATOR = "annotator", "Annotator"
    CONSOLIDATOR = "consolidator", "Consolidator"


class ThirdRater(models.TextChoices):
    """When a third annotator joins the consolidation of a stage that allows one
    (``KindSpec.third_rater_stages``, e.g. Factcheck-Bench step 2)."""

    ESCALATION = "escalation", "Only for items a consolidator escalates"
    ALWAYS = "always", "For every item (as the Factcheck-Bench paper did)"


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=20, choices=ProjectKind.choices)
    guidelines = models.TextField(blank=True, help_text="Markdown shown to annotators.")
    annotators_per_item = models.PositiveSmallIntegerField(default=2)
    overlap_share = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of items annotated by annotators_per_item annotators; the others get one annotator, "
        "whose submission is their gold record (D-FActScore double-annotated 10 %).",
    )
    third_rater = models.CharField(max_length=20, choices=ThirdRater.choices, default=ThirdRater.ESCALATION)
    pipeline_settings = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def is_overlap_item(self, item_id: int) -> bool:
        """Whether the item is one of the share annotated by several annotators: drawn from a hash
        of the project and the item, so the draw is random across items yet the same every time
        it is asked (import, reassignment, a later step of the same item)."""
        if self.overlap_share >= 1 or self.annotators_per_item <= 1:
            return True
        digest = hashlib.sha256(f"overlap:{self.pk}:{item_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.overlap_share

    def annotators_for(self, item_id: int) -> int:
        """How many annotators the item gets (see ``overlap_share``)."""
        return self.annotators_per_item if self.is_overlap_item(item_id) else 1


class Membership(models.Model):
    """A user's role in a project; a user may hold several roles in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user", "role"], name="unique_membership_role")]

    def __str__(self):
        return f"{self.user} as {self.role} in {self.project}"


class Item(models.Model):
    """One (prompt, response) pair to fact-check."""

    # db_index=False: the (project, external_id) index serves lookups by project (one index less to
    # write for every imported item)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items", db_index=False)
    external_id = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=200, blank=True)
    domain = models.CharField(max_length=50, blank=True)
    prompt = models.TextField(blank=True)
    response = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["project", "external_id"])]

    def __str__(self):
        return self.external_id or f"item {self.pk}"


class StageStatus(models.TextChoices):
    PRECOMPUTING = "precomputing", "Precomputing"
    READY = "ready", "Ready"
    ANNOTATING = "annotating", "Annotating"
    CONSOLIDATING = "consolidating", "Consolidating"
    DONE = "done", "Done"
    DISCARDED = "discarded", "Discarded"
    FAILED = "failed", "Pre-annotation failed"


class ItemStage(models.Model):
    """One annotation step of an item, with the content annotators label.

    ``content`` is the canonical input of the stage (e.g. FELM segments) and ``suggestion``
    the machine pre-annotation, both produced by precompute tasks.
    """

    # the unique (item, stage) constraint's index serves lookups by item
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="stages", db_index=False)
    stage = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=20, choices=StageStatus.choices, default=StageStatus.PRECOMPUTING)
    content = models.JSONField(default=dict, blank=True)
    suggestion = models.JSONField(null=True, blank=True)
    provenance = models.JSONField(default=dict, blank=True, help_text="Which backend/model produced what.")
    precompute_error = models.TextField(blank=True)
    discard_reason = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item_id", "stage"]
        constraints = [models.UniqueConstraint(fields=["item", "stage"], name="unique_item_stage")]
        indexes = [models.Index(fields=["status"])]

    def __str__(self):
        return f"{self.item} stage {self.stage}"


class AssignmentRole(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    THIRD_RATER = "third_rater", "Third rater"


class AssignmentStatus(models.TextChoices):
    ASSIGNED = "assigned", "Assigned"
    IN_PROGRESS = "in_progress", "In progress"
    SUBMITTED = "submitted", "Submitted"


class Assignment(models.Model):
    """An item-stage given to one annotator, with the annotator's answer on it."""

    # the unique (item_stage, user) constraint and the (user, status) index serve lookups by either
    item_stage = models.ForeignKey(ItemStage, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    role = models.CharField(max_length=20, choices=AssignmentRole.choices, default=AssignmentRole.ANNOTATOR)
    status = models.CharField(max_length=20, choices=AssignmentStatus.choices, default=AssignmentStatus.ASSIGNED)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    active_seconds = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["item_stage", "user"], name="unique_assignment_user")]
        indexes = [models.Index(fields=["user", "status"])]

    def __str__(self):
        return f"{self.item_stage} → {self.user}"


class Annotation(models.Model):
    """One annotator's answer for one assignment: a versioned JSON payload.

    ``version`` increases on every save; a save carrying an older version is refused so a
    stale browser tab never overwrites newer work.
    """

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="annotation")
    payload = models.JSONField(default=dict)
    version = models.PositiveIntegerField(default=0)
    submitted = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"annotation of {self.assignment}"


class ConsolidationStatus(models.TextChoices):
    WAITING = "waiting", "Waiting for the third rater"
    OPEN = "open", "Open"
    DONE = "done", "Done"
    DISCARDED = "discarded", "Discarded"


class Consolidation(models.Model):
    """The consolidator's task on an item-stage whose annotators all submitted."""

    item_stage = models.OneToOneField(ItemStage, on_delete=models.CASCADE, related_name="consolidation")
    consolidator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="consolidations",
    )
    status = models.CharField(max_length=20, choices=ConsolidationStatus.choices, default=ConsolidationStatus.OPEN)
    draft = models.JSONField(default=dict, blank=True, help_text="The consolidator's payload so far.")
    disagreed = models.JSONField(default=list, blank=True, help_text="Paths of the fields the annotators disagree on.")
    alignment = models.JSONField(null=True, blank=True, help_text="How the annotators' units line up (e.g. claims).")
    draft_rows = models.JSONField(
        null=True,
        blank=True,
        help_text="Per unit, the alignment row each unit of the draft came from (null: written by the consolidator).",
    )
    version = models.PositiveIntegerField(default=0)
    discard_reason = models.TextField(blank=True)
    escalation_reason = models.TextField(blank=True, help_text="Why the consolidator asked for a third rater.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"consolidation of {self.item_stage}"

    @property
    def disagreement_summary(self) -> str:
        """ "2 segments (5 fields)": consolidators plan their work by units, not by field paths."""
        if not self.disagreed:
            return "none"
        fields = f"{len(self.disagreed)} field{'s' if len(self.disagreed) != 1 else ''}"
        units = {match.groups() for match in map(_UNIT_OF_PATH.match, self.disagreed) if match}
        if not units:
            return fields
        names = {name for name, _ in units}
        unit_name = names.pop() if len(names) == 1 else "units"
        if len(units) == 1:
            unit_name = unit_name.removesuffix("s")
        return f"{len(units)} {unit_name} ({fields})"


class GoldSource(models.TextChoices):
    CONSOLIDATION = "consolidation", "Consolidation"
    IMPORT = "import", "Imported labels"
    SINGLE = "single", "The one annotator's submission (item outside the overlap share)"


class GoldRecord(models.Model):
    """The consolidated answer of an item-stage, which exports and scores are built from."""

    item_stage = models.OneToOneField(ItemStage, on_delete=models.CASCADE, related_name="gold")
    payload = models.JSONField()
    source = models.CharField(max_length=20, choices=GoldSource.choices, default=GoldSource.CONSOLIDATION)
    consolidated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    disagreed_fields = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"gold of {self.item_stage}"


class ExportLine(models.Model):
    """An item's line of a gold export, stored so that exporting a large project streams stored
    text instead of decoding and rebuilding every item (a Factcheck-Bench item carries its
    evidence passages: rebuilding a large project's lines means reading all of them).

    ``stamp`` fingerprints everything the line was built from: the item's row, its steps and
    gold records as PostgreSQL last wrote them (their ids and ``xmin``), and the version of the
    code that renders the format. An export serves a line only while its stamp equals the stamp
    of the rows now; any write to them, by any path, makes the line stale, never wrong."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="export_lines")
    format = models.CharField(max_length=30)
    stamp = models.CharField(max_length=64)
    line = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "format"], name="one_export_line_per_item_and_format")]


class JobState(models.TextChoices):
    """The lifecycle every background job goes through (BackgroundJob)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


# The names each job model had for the same four states (kept: services and tests use them).
ImportJobState = SystemRunState = EvidenceSearchState = JobState


class BackgroundJob(models.Model):
    """What every job a Celery task runs shares: its state, errors, timestamps, last sign of life.

    The lifecycle (claim, progress, finish, fail, restart) is services.jobs'; a model names its
    states through QUEUED / RUNNING / DONE / FAILED and ENDED_STATES (a corpus: its import runs
    while "importing" and is over once "embedding").
    """

    QUEUED, RUNNING, DONE, FAILED = (
        JobState.QUEUED,
        JobState.RUNNING,
        JobState.DONE,
        JobState.FAILED,
    )
    ENDED_STATES = (JobState.DONE, JobState.FAILED)

    state = models.CharField(max_length=12, choices=JobState.choices, default=JobState.QUEUED)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The task's last sign of life (claim, progress): a job silent for JOB_STALLED_AFTER_SECONDS
    # is stalled (its worker died, or no worker serves its queue) and may be restarted.
    progress_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def ended(self) -> bool:
        return self.state in self.ENDED_STATES

    @property
    def last_sign_of_life(self):
        return self.progress_at or self.started_at or self.created_at

    @property
    def stalled(self) -> bool:
        """Queued or running, and silent for JOB_STALLED_AFTER_SECONDS."""
        if self.state not in (self.QUEUED, self.RUNNING) or self.last_sign_of_life is None:
            return False
        return timezone.now() - self.last_sign_of_life > timedelta(seconds=settings.JOB_STALLED_AFTER_SECONDS)


class UploadJob(BackgroundJob):
    """A job that reads an uploaded file kept under ``DATA_DIR`` until the job ends."""

    # Whether removing the upload also empties ``file_path`` (a system run without a file is
    # scored from its stored predictions); other jobs keep naming where their file was.
    FORGETS_UPLOAD = False

    file_path = models.CharField(max_length=300, blank=True, help_text="The stored upload, relative to DATA_DIR.")
    file_name = models.CharField(max_length=255, blank=True, help_text="The name the file was uploaded under.")
    file_size = models.BigIntegerField(default=0)

    class Meta:
        abstract = True

    @property
    def upload_path(self) -> Path | None:
        return Path(settings.DATA_DIR) / self.file_path if self.file_path else None


class ImportJob(UploadJob):
    """An uploaded file being imported by a Celery task, so no web request waits for it.

    ``errors`` holds what ``ImportFailed`` names (line, field, message), ``result`` the counts of
    a finished import.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    format = models.CharField(max_length=30)
    labels_as = models.CharField(max_length=20, default="ignore")
    options = models.JSONField(default=dict, blank=True)
    lines_read = models.PositiveIntegerField(default=0)
    bytes_read = models.BigIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["project", "-id"])]

    def __str__(self):
        return f"import {self.pk} into {self.project_id} ({self.state})"


class CorpusState(models.TextChoices):
    QUEUED = "queued", "Queued"
    IMPORTING = "importing", "Importing"
    EMBEDDING = "embedding", "Searchable, embedding"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Corpus(UploadJob):
    """Documents an admin imported, cut into passages that step-2 evidence retrieval searches.

    A corpus serves one project or is shared by several. It is searchable (lexically) as soon
    as its import ends; embeddings are computed afterwards in batches by a worker, and
    retrieval uses whatever embeddings exist so far (``embedded`` counts them). As a job, the
    corpus is its import: running while importing, done once embedding (``finished_at`` =
    ``imported_at``); the embedding that follows is batches of tasks of their own.
    """

    RUNNING, DONE = CorpusState.IMPORTING, CorpusState.EMBEDDING
    ENDED_STATES = (CorpusState.EMBEDDING, CorpusState.READY, CorpusState.FAILED)

    name = models.CharField(max_length=200)
    projects = models.ManyToManyField(Project, related_name="corpora", blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    passage_sentences = models.PositiveSmallIntegerField(default=5)
    passage_stride = models.PositiveSmallIntegerField(default=2)
    state = models.CharField(max_length=12, choices=CorpusState.choices, default=CorpusState.QUEUED)
    lines_read = models.PositiveIntegerField(default=0)
    documents = models.PositiveIntegerField(default=0)
    passages = models.PositiveIntegerField(default=0)
    embedded = models.PositiveIntegerField(default=0)
    # The embedding worker goes through passages in id order: every passage up to this id has
    # a vector (retrieval may have embedded some beyond it already).
    embedded_through = models.BigIntegerField(default=0)
    frequent_terms = models.JSONField(
        default=list,
        blank=True,
        help_text="Lexemes in more than 1 % of the passages (PostgreSQL): left out of full-text candidate queries, "
        "which would otherwise rank most of the corpus; the ranking still weighs them.",
    )
    imported_at = models.DateTimeField(null=True, blank=True)
    embedded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "corpora"

    def __str__(self):
        return self.name

    @property
    def searchable(self) -> bool:
        return self.state in (CorpusState.EMBEDDING, CorpusState.READY)


class Passage(models.Model):
    """A window of sentences of one document. ``embedding``: float32 bytes of a unit vector
    (all-MiniLM-L6-v2, 384 dimensions), empty until the embedding worker reaches it; ``search``:
    PostgreSQL's text-search vector (GIN-indexed), unused on SQLite, where BM25 runs in memory."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="passage_set")
    document = models.PositiveIntegerField(help_text="The document's line in the corpus file.")
    position = models.PositiveIntegerField(help_text="The passage's number within its document.")
    title = models.CharField(max_length=500, blank=True)
    url = models.CharField(max_length=2000, blank=True)
    text = models.TextField()
    embedding = models.BinaryField(null=True, blank=True)
    search = SearchVectorField(null=True, blank=True)

    class Meta:
        ordering = ["corpus", "document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "document", "position"], name="unique_passage_position")
        ]
        # PostgreSQL also has a GIN index on ``search`` (migration 0004: created only there).
        indexes = [
            models.Index(
                fields=["corpus", "id"],
                condition=models.Q(embedding__isnull=True),
                name="passage_unembedded",
            )
        ]

    def __str__(self):
        return f"{self.title or self.url or 'passage'} #{self.position}"


class EvidenceSearch(BackgroundJob):
    """A query an annotator typed on the step-2 page, answered by a Celery task from the
    project's corpora and, where configured, the web: a web request never waits for the
    embedding model or a web page. ``results``: ranked passages in the step-2 evidence shape."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evidence_searches")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    query = models.CharField(max_length=500)
    claim = models.TextField(blank=True, help_text="The claim being checked: ranking also weighs it.")
    results = models.JSONField(default=list, blank=True)
    problems = models.JSONField(
        default=list,
        blank=True,
        help_text="What went wrong, as the page shows it (a web search that failed, say).",
    )

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"search {self.query!r} ({self.state})"


class StageEvent(models.Model):
    """An admin's decision on an item-stage that the item's history keeps with its reason
    (a gold record reopened, a discarded item restored)."""

    REOPENED = "reopened"
    RESTORED = "restored"

    item_stage = models.ForeignKey(ItemStage, on_delete=models.CASCADE, related_name="events")
    action = models.CharField(
        max_length=20,
        choices=[(REOPENED, "Gold record reopened"), (RESTORED, "Discarded item restored")],
    )
    reason = models.TextField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.item_stage}: {self.action}"


class SystemRunSource(models.TextChoices):
    UPLOAD = "upload", "Uploaded predictions"
    LLM_RATER = "llm_rater", "LLM rater"


class SystemRun(UploadJob):
    """One automatic fact-checker's predictions on a project's units and their scores.

    Kept per system and version so a leaderboard can compare systems and a lab can see a
    system improve; uploaded predictions and the LLM rater's answers are the same thing once
    made. Validation and scoring run in Celery (a file of 10,000 items takes seconds), so the
    row is a job like an ImportJob; its upload's path is emptied once read (a run without a file
    is scored from its stored predictions). ``predictions`` is
    ``{task: [[*unit key, label], ...]}`` with unit keys as the exports write them; ``scores``
    is ``{task: scores}`` as annotation.scoring computes them.
    """

    FORGETS_UPLOAD = True

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="system_runs")
    system = models.CharField(max_length=100)
    version = models.CharField(max_length=50, blank=True)
    source = models.CharField(max_length=20, choices=SystemRunSource.choices, default=SystemRunSource.UPLOAD)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    options = models.JSONField(default=dict, blank=True, help_text="Upload or LLM-rater settings (never secrets).")
    units_total = models.PositiveIntegerField(default=0)
    units_done = models.PositiveIntegerField(default=0)
    predictions = models.JSONField(default=dict, blank=True)
    scores = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "system", "version"], name="system_run_unique_version"),
        ]

    def __str__(self):
        label = f"{self.system} {self.version}".strip()
        return f"{label} on {self.project_id} ({self.state})"
