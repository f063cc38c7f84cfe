"""Job restarts and corpus-import cancels raced by real parallel requests (PostgreSQL row locks):
exactly one restart wins and queues the job once; a cancel racing the import's own end leaves
one consistent end state."""

import io
import json
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation import dispatch
from annotation.evidence import corpora as corpus_services
from annotation.evidence.corpora import CANCELLED_MESSAGE, create_corpus, run_corpus_import
from annotation.models import (
    Corpus,
    CorpusState,
    EvidenceSearch,
    ImportJob,
    Passage,
    SystemRun,
    SystemRunSource,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("row-lock races are tested on PostgreSQL"),
]

DOCUMENTS = [
    {
        "title": f"Doc {n}",
        "url": f"https://example.org/{n}",
        "text": " ".join(f"Sentence {k} of document {n} is here." for k in range(6)),
    }
    for n in range(40)
]


@pytest.fixture
def sent(monkeypatch):
    """The tasks the services send (by name), instead of running them: the test runs what it races."""
    tasks: list[tuple] = []
    monkeypatch.setattr(dispatch, "send", lambda name, *args: tasks.append((name, *args)))
    return tasks


def _running_job(kind: str, project, user):
    stalled = {"state": "running", "progress_at": timezone.now() - timedelta(seconds=301)}
    if kind == "import":
        return ImportJob.objects.create(project=project, created_by=user, format="felm", **stalled)
    if kind == "corpus":
        corpus = Corpus.objects.create(name="C", created_by=user, **{**stalled, "state": CorpusState.IMPORTING})
        corpus.projects.add(project)
        return corpus
    if kind == "evidence-search":
        return EvidenceSearch.objects.create(project=project, user=user, query="q", **stalled)
    source = SystemRunSource.LLM_RATER if kind == "llm-rater" else SystemRunSource.UPLOAD
    return SystemRun.objects.create(project=project, system=kind, source=source, created_by=user, **stalled)


TASK_OF = {
    "import": "run_import",
    "corpus": "import_corpus",
    "system-run": "score_system_run",
    "llm-rater": "run_llm_rater",
    "evidence-search": "run_evidence_search",
}


@pytest.mark.parametrize("kind", list(TASK_OF))
def test_two_restarts_at_once_exactly_one_wins_and_the_job_is_queued_once(kind, racer, felm_project, users, sent):
    job = _running_job(kind, felm_project, users["admin"])
    url = f"/api/jobs/{kind}/{job.pk}/restart/"
    for attempt in range(3):
        type(job).objects.filter(pk=job.pk).update(
            state=type(job).RUNNING, progress_at=timezone.now() - timedelta(seconds=301)
        )
        sent.clear()
        answers = racer.race([(users["admin"], "POST", url, {})] * 3)
        statuses = sorted(status for status, _ in answers)
        assert statuses == [202, 400, 400], answers
        losers = [body["detail"] for status, body in answers if status == 400]
        assert all("not stalled" in detail or "moved on meanwhile" in detail for detail in losers), losers
        assert sent == [(TASK_OF[kind], job.pk)], (attempt, sent)
        job.refresh_from_db()
        assert job.state == type(job).QUEUED and not job.stalled


def _upload():
    return io.BytesIO(b"".join((json.dumps(document) + "\n").encode() for document in DOCUMENTS))


# How long the end waits once the cancels are sent: a request takes tens of ms here, so the
# end wins at 0, either may win around 0.05-0.15 s, the cancels win at 1 s.
@pytest.mark.parametrize("cancel_after", [0.0, 0.05, 0.1, 0.15, 1.0])
def test_a_cancel_racing_the_imports_own_end_leaves_one_consistent_end_state(
    cancel_after, racer, factcheck_project, users, sent, monkeypatch, data_dir
):
    """The import's task reaches its end (its passages written, its search vectors made) while
    two cancels arrive: either a cancel wins (failed, cancelled, no passage, no upload) or the
    end does (searchable, every passage, the cancels refused); never a mix."""
    corpus = create_corpus(name="Raced", user=users["admin"], upload=_upload(), projects=[factcheck_project])
    upload_path = data_dir / corpus.file_path
    assert sent == [("import_corpus", corpus.pk)] and upload_path.exists()
    at_the_end = threading.Barrier(2)
    fill = corpus_services._fill_search_vectors

    def fill_then_race(corpus_id):
        fill(corpus_id)
        at_the_end.wait(timeout=30)
        time.sleep(cancel_after)  # at 0 the end and the cancels go at once; at 1 s the cancels come first

    monkeypatch.setattr(corpus_services, "_fill_search_vectors", fill_then_race)
    ended = {}

    def worker():
        try:
            ended["corpus"] = run_corpus_import(corpus.pk)
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    at_the_end.wait(timeout=30)
    answers = racer.race([(users["admin"], "POST", f"/api/corpora/{corpus.pk}/cancel/", {})] * 2)
    thread.join(timeout=60)
    assert not thread.is_alive()

    corpus.refresh_from_db()
    statuses = sorted(status for status, _ in answers)
    passages = Passage.objects.filter(corpus=corpus).count()
    if corpus.state == CorpusState.FAILED:
        assert statuses == [200, 400], answers
        assert corpus.errors == [{"line": 0, "field": "(import)", "message": CANCELLED_MESSAGE}]
        assert passages == 0 and corpus.imported_at is None
    else:
        assert corpus.state == CorpusState.EMBEDDING and corpus.imported_at and corpus.finished_at
        assert statuses == [400, 400], answers
        assert all("only a queued or running import can be cancelled" in body["detail"] for _, body in answers)
        assert passages == corpus.passages > 0 and corpus.documents == len(DOCUMENTS) and corpus.errors == []
    assert ended["corpus"].state == corpus.state  # what the task returned is what was stored
    assert not upload_path.exists()  # removed either way
    if cancel_after >= 1.0:
        assert corpus.state == CorpusState.FAILED  # the cancels came first
