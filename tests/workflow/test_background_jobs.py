"""Every kind of job goes through the one lifecycle of annotation.services.jobs on the one
abstract model (annotation.models.BackgroundJob): claim, progress, stalled, finish or fail,
upload removed on its end."""

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.exceptions import DomainError
from annotation.imports.uploads import store_upload
from annotation.models import (
    BackgroundJob,
    Corpus,
    CorpusState,
    EvidenceSearch,
    ImportJob,
    JobState,
    SystemRun,
    SystemRunSource,
    UploadJob,
)
from annotation.services import jobs

pytestmark = pytest.mark.django_db


def _stored_upload() -> str:
    return store_upload(io.BytesIO(b'{"a": 1}\n'), "jobs-test")[0]


def _import(project, user):
    return ImportJob.objects.create(project=project, created_by=user, format="felm", file_path=_stored_upload())


def _corpus(project, user):
    corpus = Corpus.objects.create(name="C", created_by=user, file_path=_stored_upload())
    corpus.projects.add(project)
    return corpus


def _system_run(project, user):
    return SystemRun.objects.create(
        project=project,
        system="s",
        source=SystemRunSource.UPLOAD,
        created_by=user,
        file_path=_stored_upload(),
    )


def _llm_rater(project, user):
    return SystemRun.objects.create(project=project, system="llm", source=SystemRunSource.LLM_RATER, created_by=user)


def _evidence_search(project, user):
    return EvidenceSearch.objects.create(project=project, user=user, query="Eiffel")


MAKERS = {
    "import": _import,
    "corpus": _corpus,
    "system-run": _system_run,
    "llm-rater": _llm_rater,
    "evidence-search": _evidence_search,
}


def _silent(job, seconds: int = 301):
    type(job).objects.filter(pk=job.pk).update(progress_at=timezone.now() - timedelta(seconds=seconds))
    job.refresh_from_db()


def test_every_job_model_is_a_background_job_with_the_shared_states():
    for model in (ImportJob, Corpus, SystemRun, EvidenceSearch):
        assert issubclass(model, BackgroundJob)
        names = {field.name for field in model._meta.get_fields()}
        assert {
            "state",
            "errors",
            "created_at",
            "started_at",
            "finished_at",
            "progress_at",
        } <= names
    assert all(issubclass(model, UploadJob) for model in (ImportJob, Corpus, SystemRun))
    for model in (
        ImportJob,
        SystemRun,
        EvidenceSearch,
    ):  # one state set, values as the API and JS read them
        assert model._meta.get_field("state").choices == JobState.choices
        assert (model.QUEUED, model.RUNNING, model.DONE, model.FAILED) == (
            "queued",
            "running",
            "done",
            "failed",
        )
    # A corpus keeps its own (its import runs while "importing"; it is searchable once "embedding").
    assert (Corpus.QUEUED, Corpus.RUNNING, Corpus.DONE, Corpus.FAILED) == (
        "queued",
        "importing",
        "embedding",
        "failed",
    )
    assert Corpus(state=CorpusState.READY).ended and not Corpus(state=CorpusState.IMPORTING).ended


@pytest.mark.parametrize("kind", list(MAKERS))
def test_each_kind_goes_through_the_same_lifecycle(kind, felm_project, users, settings):
    settings.JOB_STALLED_AFTER_SECONDS = 300
    job = MAKERS[kind](felm_project, users["admin"])
    model = type(job)
    assert jobs.kind_of(job) is jobs.KINDS[kind]
    assert job.state == model.QUEUED and not job.ended and not job.stalled

    assert jobs.claim(model, job.pk)
    job.refresh_from_db()
    assert job.state == model.RUNNING and job.started_at and job.progress_at and not job.stalled
    assert not jobs.claim(model, job.pk)  # a second delivery while it makes progress takes nothing
    with pytest.raises(DomainError, match="is not stalled"):
        jobs.restart(job)

    _silent(job)
    assert job.stalled and jobs.status(job)["stalled"]
    assert jobs.progress(model, job.pk)  # a sign of life: no longer stalled
    job.refresh_from_db()
    assert not job.stalled

    _silent(job)
    assert jobs.restart(job).state == model.QUEUED  # queued again (its task is sent once this commits)
    assert jobs.claim(model, job.pk)
    _silent(job)
    assert jobs.claim(model, job.pk)  # a redelivery takes over a stalled job
    assert jobs.finish(model, job.pk)
    job.refresh_from_db()
    assert job.state == model.DONE and job.ended and job.finished_at and not job.stalled
    assert jobs.status(job) == {"stalled": False, "progress_at": job.progress_at, "detail": ""}
    # Once ended, nothing moves it again.
    assert not jobs.progress(model, job.pk) and not jobs.claim(model, job.pk, take_running="any")
    assert not jobs.fail(model, job.pk, [{"line": 0, "field": "(server)", "message": "late"}])
    with pytest.raises(DomainError, match="has ended"):
        jobs.restart(job)
    job.refresh_from_db()
    assert job.state == model.DONE and job.errors == []


@pytest.mark.parametrize("kind", list(MAKERS))
def test_each_kind_fails_with_its_errors_and_a_failed_job_is_never_stalled(kind, felm_project, users):
    job = MAKERS[kind](felm_project, users["admin"])
    model = type(job)
    jobs.claim(model, job.pk)
    errors = [{"line": 0, "field": "(server)", "message": "boom"}]
    assert jobs.fail(model, job.pk, errors)
    _silent(job, seconds=10_000)
    assert job.state == model.FAILED and job.errors == errors and job.ended and not job.stalled


@pytest.mark.parametrize("kind", ["import", "corpus", "system-run"])
@pytest.mark.parametrize("ending", ["finish", "fail"])
def test_the_upload_is_removed_when_the_job_ends(kind, ending, felm_project, users):
    job = MAKERS[kind](felm_project, users["admin"])
    path = job.upload_path
    assert path.exists()
    model = type(job)
    jobs.claim(model, job.pk)
    jobs.progress(model, job.pk)
    assert path.exists()  # kept while the job runs
    if ending == "finish":
        jobs.finish(model, job.pk)
    else:
        jobs.fail(model, job.pk, [])
    job.refresh_from_db()
    assert not path.exists()
    # A system run without a file is scored from its stored predictions: its path is emptied.
    assert (job.file_path == "") == (kind == "system-run")


def test_an_end_inside_a_transaction_that_may_roll_back_keeps_the_upload(felm_project, users):
    job = _import(felm_project, users["admin"])
    jobs.claim(ImportJob, job.pk)
    assert jobs.finish(ImportJob, job.pk, remove_upload=False)
    assert job.upload_path.exists()
    jobs.delete_upload(ImportJob, job.pk)
    assert not job.upload_path.exists()


def test_a_job_is_stalled_after_the_setting_whatever_its_last_sign_of_life(felm_project, users, settings):
    settings.JOB_STALLED_AFTER_SECONDS = 60
    long_ago = timezone.now() - timedelta(seconds=61)
    job = _import(felm_project, users["admin"])
    assert not job.stalled
    # A queued job no worker took: its creation is its last sign of life.
    ImportJob.objects.filter(pk=job.pk).update(created_at=long_ago)
    job.refresh_from_db()
    assert job.stalled and job.last_sign_of_life == job.created_at
    # A running one from before progress_at existed: its start.
    ImportJob.objects.filter(pk=job.pk).update(state=JobState.RUNNING, started_at=long_ago, progress_at=None)
    job.refresh_from_db()
    assert job.stalled
    ImportJob.objects.filter(pk=job.pk).update(started_at=timezone.now())
    job.refresh_from_db()
    assert not job.stalled
    settings.JOB_STALLED_AFTER_SECONDS = 0
    assert job.stalled


def test_a_job_handed_back_before_a_retry_is_queued_again(felm_project, users):
    for kind in MAKERS:
        job = MAKERS[kind](felm_project, users["admin"])
        model = type(job)
        jobs.claim(model, job.pk)
        jobs.requeue(model, job.pk)
        job.refresh_from_db()
        assert job.state == model.QUEUED, kind


@pytest.mark.django_db(transaction=True)
def test_migration_0013_keeps_every_job_and_its_state_and_dates_ended_corpus_imports():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = (
        [("annotation", "0012_jobs_progress_at")],
        [("annotation", "0013_background_jobs")],
    )
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    imported, failed = timezone.now() - timedelta(days=2), timezone.now() - timedelta(days=1)
    project = old.get_model("annotation", "Project").objects.create(name="P", kind="felm")
    user = old.get_model("auth", "User").objects.create(username="u")
    old_corpus = old.get_model("annotation", "Corpus")
    ready = old_corpus.objects.create(name="ready", state="ready", imported_at=imported, file_name="r.jsonl")
    broken = old_corpus.objects.create(name="failed", state="failed", progress_at=failed)
    queued = old_corpus.objects.create(name="queued", state="queued")
    job = old.get_model("annotation", "ImportJob").objects.create(
        project=project, format="felm", state="running", file_path="imports/x.upload", lines_read=7
    )
    run = old.get_model("annotation", "SystemRun").objects.create(project=project, system="s", state="done")
    search = old.get_model("annotation", "EvidenceSearch").objects.create(
        project=project, user=user, query="q", state="failed", problems=["down"]
    )

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    try:
        assert Corpus.objects.get(pk=ready.pk).finished_at == imported
        assert Corpus.objects.get(pk=broken.pk).finished_at == failed
        assert Corpus.objects.get(pk=queued.pk).finished_at is None
        assert [Corpus.objects.get(pk=c.pk).state for c in (ready, broken, queued)] == [
            "ready",
            "failed",
            "queued",
        ]
        migrated = ImportJob.objects.get(pk=job.pk)
        assert (migrated.state, migrated.file_path, migrated.lines_read, migrated.errors) == (
            "running",
            "imports/x.upload",
            7,
            [],
        )
        assert SystemRun.objects.get(pk=run.pk).state == "done" and SystemRun.objects.get(pk=run.pk).file_size == 0
        assert EvidenceSearch.objects.get(pk=search.pk).ended and EvidenceSearch.objects.get(pk=search.pk).problems == [
            "down"
        ]
    finally:
        MigrationExecutor(connection).migrate(leaves)
