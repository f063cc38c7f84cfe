"""A corpus import resumes after its last batch when its worker died, and can be cancelled."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.evidence import corpora as corpus_services
from annotation.evidence.corpora import (
    CANCELLED_MESSAGE,
    cancel_corpus_import,
    create_corpus,
    run_corpus_import,
)
from annotation.exceptions import DomainError
from annotation.models import Corpus, CorpusState, Passage
from tests.helpers.evidence import upload

pytestmark = pytest.mark.django_db

DOCS = [
    {
        "title": f"Doc {n}",
        "url": f"https://w.example/{n}",
        "text": f"Document {n} starts here. It has a second sentence. And a third one about item {n}.",
    }
    for n in range(1, 13)
]


class WorkerDied(Exception):
    pass


@pytest.fixture
def queued(factcheck_project, users, data_dir, django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr(corpus_services, "INSERT_BATCH", 4)  # a batch every 2 documents (2 passages each)
    with django_capture_on_commit_callbacks(execute=False):  # no worker has taken it yet
        corpus = create_corpus(
            name="Big",
            user=users["admin"],
            upload=upload(DOCS),
            projects=[factcheck_project],
            passage_sentences=2,
            passage_stride=1,
        )
    corpus.refresh_from_db()
    assert corpus.state == CorpusState.QUEUED
    return corpus


def dying_after(monkeypatch, line, then=None):
    """The import's reader of the upload, stopping (a dead worker) or calling ``then`` at ``line``
    of the writing pass."""
    original = corpus_services._documents
    passes = []

    def documents(path):
        passes.append(path)  # the first pass checks the file, the second writes it
        for number, document, error in original(path):
            if number == line and len(passes) == 2:
                if then is None:
                    raise WorkerDied
                then()
            yield number, document, error

    monkeypatch.setattr(corpus_services, "_documents", documents)
    return original


def went_silent(corpus) -> None:
    """The broker redelivers a dead worker's task after the visibility timeout: by then the
    import has made no progress for longer than JOB_STALLED_AFTER_SECONDS (a live one is left alone)."""
    Corpus.objects.filter(pk=corpus.pk).update(progress_at=timezone.now() - timedelta(hours=1))


def test_an_import_whose_worker_died_resumes_after_its_last_batch(queued, monkeypatch, data_dir):
    original = dying_after(monkeypatch, 7)
    with pytest.raises(WorkerDied):
        run_corpus_import(queued.id)
    queued.refresh_from_db()
    assert queued.state == CorpusState.IMPORTING and queued.lines_read == 6 and queued.documents == 6
    first_ids = list(Passage.objects.filter(corpus=queued).order_by("id").values_list("id", flat=True))
    assert len(first_ids) == 12
    read = []

    def documents(path):
        for row in original(path):
            read.append(row[0])
            yield row

    monkeypatch.setattr(corpus_services, "_documents", documents)
    went_silent(queued)
    corpus = run_corpus_import(queued.id)  # the task redelivered
    assert corpus.state == CorpusState.EMBEDDING and corpus.documents == 12 and corpus.passages == 24
    passages = Passage.objects.filter(corpus=corpus)
    assert passages.count() == 24 and set(passages.values_list("document", flat=True)) == set(range(1, 13))
    # The first six documents were not written again, and the file was not checked a second time.
    assert list(passages.filter(document__lte=6).order_by("id").values_list("id", flat=True)) == first_ids
    assert read == list(range(1, 13))
    assert not (data_dir / queued.file_path).exists()


def test_passages_written_after_the_last_recorded_batch_are_not_kept_twice(queued, monkeypatch):
    dying_after(monkeypatch, 7)
    with pytest.raises(WorkerDied):
        run_corpus_import(queued.id)
    Passage.objects.create(corpus=queued, document=7, position=0, text="half a batch of a dead worker")
    monkeypatch.undo()
    went_silent(queued)
    monkeypatch.setattr(corpus_services, "INSERT_BATCH", 4)
    corpus = run_corpus_import(queued.id)
    assert corpus.passages == 24 == Passage.objects.filter(corpus=corpus).count()
    assert not Passage.objects.filter(text="half a batch of a dead worker").exists()


def test_a_running_import_is_cancelled_between_batches(queued, monkeypatch, data_dir):
    dying_after(monkeypatch, 5, then=lambda: cancel_corpus_import(queued.id))
    corpus = run_corpus_import(queued.id)
    assert corpus.state == CorpusState.FAILED
    assert corpus.errors == [{"line": 0, "field": "(import)", "message": CANCELLED_MESSAGE}]
    assert not Passage.objects.filter(corpus=corpus).exists()
    assert not (data_dir / queued.file_path).exists()


def test_a_queued_import_is_cancelled_before_any_worker_takes_it(queued, data_dir):
    corpus = cancel_corpus_import(queued.id)
    assert corpus.state == CorpusState.FAILED and not (data_dir / queued.file_path).exists()
    assert run_corpus_import(queued.id).state == CorpusState.FAILED  # the task, delivered later: nothing to do
    assert not Passage.objects.filter(corpus=corpus).exists()


def test_an_imported_corpus_cannot_be_cancelled(queued):
    run_corpus_import(queued.id)
    with pytest.raises(DomainError, match="only a queued or running import can be cancelled"):
        cancel_corpus_import(queued.id)
    assert Corpus.objects.get(pk=queued.id).state == CorpusState.EMBEDDING


def test_the_api_cancels_an_import_for_an_admin_of_its_projects(clients, queued):
    assert clients["alice"].post(f"/api/corpora/{queued.id}/cancel/").status_code in (403, 404)
    response = clients["admin"].post(f"/api/corpora/{queued.id}/cancel/")
    assert response.status_code == 200 and response.json()["state"] == CorpusState.FAILED
    again = clients["admin"].post(f"/api/corpora/{queued.id}/cancel/")
    assert again.status_code == 400 and "only a queued or running import" in again.json()["detail"]
