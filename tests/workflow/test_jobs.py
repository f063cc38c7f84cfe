"""Background jobs end whatever their task raises; stalled jobs show as such and can be restarted
(annotation.services.jobs, api/jobs.py)."""

import json
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.evidence.corpora import create_corpus
from annotation.imports.jobs import create_import_job
from annotation.models import (
    Corpus,
    CorpusState,
    EvidenceSearch,
    EvidenceSearchState,
    ImportJob,
    ImportJobState,
    Passage,
    Role,
    SystemRun,
    SystemRunSource,
    SystemRunState,
)
from annotation.services import jobs
from annotation.services.projects import add_member
from annotation.tasks import (
    import_corpus,
    run_evidence_search,
    run_import,
    run_llm_rater,
    score_system_run,
)
from tests.helpers.builders import api_client, felm_line, jsonl
from tests.helpers.evidence import DOCUMENTS, upload
from tests.helpers.paths import REPO_ROOT

pytestmark = pytest.mark.django_db


def corpus_of(lines, project, user, django_capture_on_commit_callbacks) -> Corpus:
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(name="C", user=user, upload=upload(lines), projects=[project])
    corpus.refresh_from_db()
    return corpus


# -- causes of corpora that never ended -----------------------------------------------------------


def test_an_integer_of_more_than_4300_digits_is_a_line_error_naming_line_column_and_field(
    factcheck_project, users, django_capture_on_commit_callbacks
):
    huge = "9" * 5000
    line = '{"title": "T", "text": "Some text.", "meta": {"n": ' + huge + "}}"
    corpus = corpus_of([DOCUMENTS[0], line], factcheck_project, users["admin"], django_capture_on_commit_callbacks)
    assert corpus.state == CorpusState.FAILED
    error = corpus.errors[0]
    assert error["line"] == 2 and error["field"] == "meta.n"
    assert f"column {line.index(huge) + 1}" in error["message"] and "5,000 digits" in error["message"]
    assert not Passage.objects.filter(corpus=corpus).exists()


def test_a_document_over_the_size_limit_fails_the_corpus_naming_its_line(
    factcheck_project, users, settings, django_capture_on_commit_callbacks
):
    settings.CORPUS_MAX_DOCUMENT_CHARS = 2_000
    long_text = "A sentence of prose. " * 200  # 4,200 characters
    corpus = corpus_of(
        [DOCUMENTS[0], {"title": "Long", "text": long_text}],
        factcheck_project,
        users["admin"],
        django_capture_on_commit_callbacks,
    )
    assert corpus.state == CorpusState.FAILED
    assert corpus.errors[0]["line"] == 2 and corpus.errors[0]["field"] == "text"
    assert "4,200 characters long" in corpus.errors[0]["message"]
    assert "at most 2,000 (CORPUS_MAX_DOCUMENT_CHARS)" in corpus.errors[0]["message"]


def test_the_sentence_splitter_gives_punkt_bounded_pieces(monkeypatch):
    """Punkt's time grows faster than its input (a 1 MB block: 6.5 s, or NLTK's regex timeout);
    a long block goes to it in pieces of at most MAX_PUNKT_CHARS, and no sentence is lost."""
    from pipeline import segmenter

    tokenizer, seen = segmenter._tokenizer(), []
    for name in ("tokenize", "span_tokenize"):
        real = getattr(tokenizer, name)
        monkeypatch.setattr(
            tokenizer,
            name,
            lambda text, *args, real=real: seen.append(len(text)) or real(text, *args),
        )
    text = "The tower is tall. Dr. Smith went home! Did he? " * 2_000  # 96,000 characters, one block
    sentences = segmenter.split_sentences(text)
    assert max(seen) <= segmenter.MAX_PUNKT_CHARS and len(seen) >= 5
    assert len(sentences) == 6_000 and sentences[-1] == "Did he?"
    assert " ".join(sentences) == text.strip()


def test_a_splitter_timeout_fails_the_corpus_with_the_reason(
    factcheck_project, users, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    def times_out(*args, **kwargs):
        raise TimeoutError("regular-expression match exceeded its 5.0s time limit")

    monkeypatch.setattr("pipeline.retrieval.split_passages", times_out)
    with caplog.at_level(logging.ERROR):
        corpus = corpus_of(DOCUMENTS, factcheck_project, users["admin"], django_capture_on_commit_callbacks)
    assert corpus.state == CorpusState.FAILED and corpus.passages == 0
    assert "TimeoutError: regular-expression match exceeded" in corpus.errors[0]["message"]
    assert not Passage.objects.filter(corpus=corpus).exists()
    record = next(r for r in caplog.records if "stopped on an unexpected error" in r.getMessage())
    assert record.exc_info  # logged with its traceback


# -- every kind of job ends, whatever its task raises ----------------------------------------------


def _boom(*args, **kwargs):
    raise RuntimeError("boom")


def _import_job(project, users, monkeypatch):
    project = project.__class__.objects.get(kind="felm")
    job = create_import_job(project=project, user=users["admin"], upload=jsonl([felm_line(1, ["A."])]), fmt="felm")
    monkeypatch.setattr("annotation.imports.jobs._ProgressWriter", _boom)
    return run_import, job


def _corpus(project, users, monkeypatch):
    corpus = create_corpus(name="C", user=users["admin"], upload=upload(DOCUMENTS), projects=[project])
    monkeypatch.setattr("annotation.evidence.corpora.upload_path", _boom)
    return import_corpus, corpus


def _system_run(project, users, monkeypatch):
    run = SystemRun.objects.create(project=project, system="s", source=SystemRunSource.UPLOAD)
    monkeypatch.setattr("annotation.research.predictions._Progress", _boom)
    return score_system_run, run


def _llm_rater(project, users, monkeypatch):
    run = SystemRun.objects.create(
        project=project, system="llm", source=SystemRunSource.LLM_RATER, options={"steps": [1]}
    )
    monkeypatch.setattr("annotation.research.llm_rater_run.rater_config", _boom)
    return run_llm_rater, run


def _evidence_search(project, users, monkeypatch):
    search = EvidenceSearch.objects.create(project=project, user=users["alice"], query="Eiffel")
    # What the search found cannot be stored (here: not JSON): the final save raises.
    monkeypatch.setattr(
        "pipeline.evidence_search.search_passages",
        lambda *args, **kwargs: {"evidence": [], "problems": [{"not", "json"}]},
    )
    return run_evidence_search, search


@pytest.mark.django_db(transaction=True)  # as in a worker: no test transaction around the task
@pytest.mark.parametrize(
    "make",
    [_import_job, _corpus, _system_run, _llm_rater, _evidence_search],
    ids=["import", "corpus", "system-run", "llm-rater", "evidence-search"],
)
def test_an_unexpected_error_in_each_kind_of_job_ends_it_failed_with_the_reason(
    make, factcheck_project, felm_project, users, monkeypatch
):
    for sent in (run_import, import_corpus):  # the test runs the task itself, below
        monkeypatch.setattr(sent, "delay", lambda job_id: None)
    task, job = make(factcheck_project, users, monkeypatch)
    task.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.state == "failed"
    reasons = json.dumps(getattr(job, "errors", None) or getattr(job, "problems", None))
    assert "stopped on an unexpected error" in reasons and ("RuntimeError: boom" in reasons or "TypeError" in reasons)
    assert job.state not in jobs.kind_of(job).running and not jobs.status(job)["stalled"]


# -- stalled jobs -----------------------------------------------------------------------------------


def stalled_import(project, user, seconds=301) -> ImportJob:
    job = create_import_job(project=project, user=user, upload=jsonl([felm_line(1, ["A."])]), fmt="felm")
    ImportJob.objects.filter(pk=job.pk).update(
        state=ImportJobState.RUNNING, progress_at=timezone.now() - timedelta(seconds=seconds)
    )
    job.refresh_from_db()
    return job


def test_a_running_job_without_progress_for_the_setting_is_stalled(felm_project, users, settings):
    settings.JOB_STALLED_AFTER_SECONDS = 300
    job = stalled_import(felm_project, users["admin"], seconds=299)
    assert jobs.status(job) == {
        "stalled": False,
        "progress_at": job.progress_at,
        "detail": "running",
    }
    job = stalled_import(felm_project, users["admin"], seconds=301)
    found = jobs.status(job)
    assert found["stalled"] and found["detail"].startswith("stalled: no progress for 5 min")
    settings.JOB_STALLED_AFTER_SECONDS = 600
    assert not jobs.status(job)["stalled"]


def test_the_api_says_what_a_queued_job_waits_for_and_that_a_running_one_stalled(felm_project, users, settings):
    from celery import current_app

    current_app.conf.task_always_eager = False  # as with a broker: the job waits for a worker
    try:
        job = create_import_job(
            project=felm_project,
            user=users["admin"],
            upload=jsonl([felm_line(1, ["A."])]),
            fmt="felm",
        )  # inside the test's transaction: the task is never sent
        body = api_client(users["admin"]).get(f"/api/projects/{felm_project.id}/imports/{job.id}/").json()
    finally:
        current_app.conf.task_always_eager = True
    assert (
        body["state_detail"].startswith("queued: waiting for a worker on queue 'interactive'") and not body["stalled"]
    )
    assert body["restart_url"] == f"/api/jobs/import/{job.id}/restart/"
    job = stalled_import(felm_project, users["admin"])
    body = api_client(users["admin"]).get(f"/api/projects/{felm_project.id}/imports/{job.id}/").json()
    assert body["stalled"] and "stalled: no progress" in body["state_detail"]


def test_interactive_work_and_bulk_work_go_to_different_queues(settings):
    assert jobs.task_queue("annotation.tasks.run_import") == settings.INTERACTIVE_QUEUE == "interactive"
    for name in (
        "import_corpus",
        "run_evidence_search",
        "compute_agreement",
        "score_system_run",
        "run_llm_rater",
    ):
        assert jobs.task_queue(f"annotation.tasks.{name}") == "interactive"
    assert jobs.task_queue("annotation.tasks.precompute_stages") == settings.CELERY_TASK_DEFAULT_QUEUE == "celery"


def test_restarting_a_stalled_import_runs_it_to_the_end(felm_project, users, django_capture_on_commit_callbacks):
    job = stalled_import(felm_project, users["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client(users["admin"]).post(f"/api/jobs/import/{job.id}/restart/")
    assert answer.status_code == 202, answer.content
    job.refresh_from_db()
    assert job.state == ImportJobState.DONE and job.result["items"] == 1


def test_a_job_that_makes_progress_or_has_ended_is_not_restarted(felm_project, users):
    job = stalled_import(felm_project, users["admin"], seconds=5)
    answer = api_client(users["admin"]).post(f"/api/jobs/import/{job.id}/restart/")
    assert answer.status_code == 400 and "not stalled" in answer.json()["detail"]
    ImportJob.objects.filter(pk=job.pk).update(state=ImportJobState.DONE)
    answer = api_client(users["admin"]).post(f"/api/jobs/import/{job.id}/restart/")
    assert answer.status_code == 400 and "has ended" in answer.json()["detail"]
    assert api_client(users["admin"]).post(f"/api/jobs/nothing/{job.id}/restart/").status_code == 404


def test_a_stalled_corpus_import_is_restarted_and_ends(factcheck_project, users, django_capture_on_commit_callbacks):
    corpus = create_corpus(name="C", user=users["admin"], upload=upload(DOCUMENTS), projects=[factcheck_project])
    Corpus.objects.filter(pk=corpus.pk).update(
        state=CorpusState.IMPORTING, progress_at=timezone.now() - timedelta(hours=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client(users["admin"]).post(f"/api/jobs/corpus/{corpus.id}/restart/")
    assert answer.status_code == 202, answer.content
    corpus.refresh_from_db()
    assert corpus.state in (CorpusState.EMBEDDING, CorpusState.READY) and corpus.passages > 0


def test_a_stalled_evidence_search_is_restarted_by_its_owner(
    factcheck_project, users, django_capture_on_commit_callbacks
):
    search = EvidenceSearch.objects.create(
        project=factcheck_project,
        user=users["alice"],
        query="Eiffel",
        state=EvidenceSearchState.RUNNING,
        progress_at=timezone.now() - timedelta(hours=1),
    )
    assert api_client(users["bob"]).post(f"/api/jobs/evidence-search/{search.id}/restart/").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client(users["alice"]).post(f"/api/jobs/evidence-search/{search.id}/restart/")
    assert answer.status_code == 202, answer.content
    search.refresh_from_db()
    assert search.state == EvidenceSearchState.DONE


@pytest.mark.parametrize(
    "who, code",
    [
        ("admin", 202),
        ("owner", 202),
        ("project_admin", 202),
        ("alice", 404),
        ("carol", 404),
        ("mallory", 404),
    ],
)
def test_who_may_restart_a_stalled_import(felm_project, users, make_user, who, code, monkeypatch):
    monkeypatch.setattr(run_import, "delay", lambda job_id: None)
    owner, project_admin = make_user("owner"), make_user("padmin")
    add_member(project=felm_project, user=owner, role=Role.ANNOTATOR)  # once an admin, since demoted
    add_member(project=felm_project, user=project_admin, role=Role.ADMIN)
    job = stalled_import(felm_project, owner)
    user = {"owner": owner, "project_admin": project_admin}.get(who) or users[who]
    answer = api_client(user).post(f"/api/jobs/import/{job.id}/restart/")
    assert answer.status_code == code, answer.content
    job.refresh_from_db()
    assert job.state == (ImportJobState.QUEUED if code == 202 else ImportJobState.RUNNING)


@pytest.mark.parametrize("who, code", [("admin", 202), ("project_admin", 202), ("carol", 403), ("mallory", 404)])
def test_who_may_restart_a_stalled_corpus_system_run_and_llm_rater_run(
    factcheck_project, users, make_user, who, code, monkeypatch
):
    for task in (import_corpus, score_system_run, run_llm_rater):
        monkeypatch.setattr(task, "delay", lambda job_id: None)
    project_admin = make_user("padmin")
    add_member(project=factcheck_project, user=project_admin, role=Role.ADMIN)
    user = project_admin if who == "project_admin" else users[who]
    long_ago = timezone.now() - timedelta(hours=1)
    corpus = create_corpus(name="C", user=users["admin"], upload=upload(DOCUMENTS), projects=[factcheck_project])
    Corpus.objects.filter(pk=corpus.pk).update(state=CorpusState.IMPORTING, progress_at=long_ago)
    upload_run = SystemRun.objects.create(
        project=factcheck_project,
        system="s",
        state=SystemRunState.RUNNING,
        progress_at=long_ago,
        created_by=users["admin"],
    )
    rater_run = SystemRun.objects.create(
        project=factcheck_project,
        system="llm",
        source=SystemRunSource.LLM_RATER,
        state=SystemRunState.RUNNING,
        progress_at=long_ago,
        created_by=users["admin"],
    )
    for kind, job in (("corpus", corpus), ("system-run", upload_run), ("llm-rater", rater_run)):
        answer = api_client(user).post(f"/api/jobs/{kind}/{job.id}/restart/")
        # consolidators see system runs (the leaderboard), not corpora or LLM rater runs
        expected = 404 if who == "carol" and kind != "system-run" else code
        assert answer.status_code == expected, (kind, answer.content)
    # a run is restarted under its own kind only
    assert api_client(users["admin"]).post(f"/api/jobs/llm-rater/{upload_run.id}/restart/").status_code == 404


def test_make_worker_consumes_every_queue(tmp_path):
    import subprocess

    repo = REPO_ROOT

    def command(**env):
        result = subprocess.run(
            ["make", "--no-print-directory", "-n", "worker", f"VENV={tmp_path}"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", **env},
        )
        return next(line for line in result.stdout.splitlines() if " worker " in line)

    assert "-Q interactive,celery " in command()
    assert "-Q interactive,celery,embedding " in command(EMBEDDING_QUEUE="embedding")
    assert "-Q interactive " in command(WORKER_QUEUES="interactive")


def test_an_unexpected_error_while_embedding_leaves_the_corpus_searchable_with_the_reason(
    factcheck_project, users, monkeypatch, django_capture_on_commit_callbacks
):
    from annotation.tasks import embed_corpus

    corpus = corpus_of(DOCUMENTS, factcheck_project, users["admin"], django_capture_on_commit_callbacks)
    assert corpus.state == CorpusState.EMBEDDING  # without a broker, retrieval embeds as it goes
    monkeypatch.setattr("pipeline.retrieval.embed", _boom)
    embed_corpus.apply(args=[corpus.pk])
    corpus.refresh_from_db()
    assert corpus.state == CorpusState.READY and corpus.searchable
    assert corpus.errors[0]["field"] == "(embedding)" and "RuntimeError: boom" in corpus.errors[0]["message"]


def test_the_llm_rater_page_shows_a_stalled_run_with_its_restart_button(factcheck_project, users, client):
    run = SystemRun.objects.create(
        project=factcheck_project,
        system="LLM rater <m>",
        source=SystemRunSource.LLM_RATER,
        state=SystemRunState.RUNNING,
        options={"steps": [1]},
        progress_at=timezone.now() - timedelta(minutes=7),
    )
    client.force_login(users["admin"])
    page = client.get(f"/projects/{factcheck_project.id}/llm-rater/").content.decode()
    assert "stalled: no progress for 7 min" in page
    assert f'data-restart-url="/api/jobs/llm-rater/{run.id}/restart/"' in page and "LLM rater &lt;m&gt;" in page
    SystemRun.objects.filter(pk=run.pk).update(progress_at=timezone.now())
    page = client.get(f"/projects/{factcheck_project.id}/llm-rater/").content.decode()
    assert "restart-job" not in page and ">running</span>" in page


def test_a_queued_job_says_how_many_tasks_wait_on_its_queue(felm_project, users, monkeypatch):
    from celery import current_app

    job = create_import_job(project=felm_project, user=users["admin"], upload=jsonl([felm_line(1, ["A."])]), fmt="felm")
    lengths = {"interactive": 3}
    monkeypatch.setattr(jobs, "queue_length", lengths.get)
    current_app.conf.task_always_eager = False  # as with a broker
    try:
        assert (
            jobs.status(job)["detail"] == "queued: waiting for a worker on queue 'interactive' (3 tasks waiting there)"
        )
        ImportJob.objects.filter(pk=job.pk).update(progress_at=timezone.now() - timedelta(minutes=9))
        job.refresh_from_db()
        found = jobs.status(job)
    finally:
        current_app.conf.task_always_eager = True
    assert found["stalled"] and found["detail"] == (
        "queued: waiting for a worker on queue 'interactive' for 9 min (3 tasks waiting there): is a worker running for "
        "that queue? (a restart sends the job again)"
    )


def test_the_length_of_a_redis_queue_is_read_from_the_broker(settings):
    import os

    import redis
    from celery import current_app

    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith("redis://"):
        pytest.skip("needs the Redis broker (set CELERY_BROKER_URL)")
    client, queue = redis.Redis.from_url(url), "test-jobs-queue-length"
    client.delete(queue)
    client.rpush(queue, "a", "b")
    try:
        assert current_app.conf.broker_url == url and jobs.queue_length(queue) == 2
    finally:
        client.delete(queue)
