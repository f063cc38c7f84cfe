"""Readying a searching process before its first evidence search (annotation.evidence.prewarm):
indexes opened and searched once, the full-text statement run (PostgreSQL), the query model
loaded; a broken index or a failing step never breaks it; off means nothing is done."""

import logging
import threading
import time

import pytest
from django.db import connection

from annotation.evidence import prewarm, vector_index
from annotation.evidence.corpus_search import corpus_search
from annotation.models import Corpus, CorpusState
from config import celery as celery_config
from tests.helpers.evidence import add_embedded_passages, clustered_vectors

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vector_index_root")]
DIM = vector_index.DIMENSIONS


def make_corpus(project, count, name, seed=0, state=CorpusState.READY):
    """A corpus of ``count`` embedded passages (clustered vectors) and its index on disk."""
    corpus = Corpus.objects.create(name=name, state=state)
    corpus.projects.set([project])
    vectors = clustered_vectors(count, DIM, seed)
    add_embedded_passages(
        corpus,
        vectors,
        text=lambda i: f"the passage number {i} of {name} about towers and bridges",
        title=lambda i: f"{name} {i}",
    )
    vector_index.sync(corpus.id)
    return corpus, vectors


@pytest.fixture
def counted_opens(monkeypatch):
    """How many times this process opened an index (vector_index._open)."""
    opens = []
    real = vector_index._open

    def counting(corpus_id, *args):
        opens.append(corpus_id)
        return real(corpus_id, *args)

    monkeypatch.setattr(vector_index, "_open", counting)
    return opens


def test_prewarm_is_on_by_default_in_celery_workers_only(settings, monkeypatch):
    """Evidence is searched in Celery workers; web workers stay without faiss (issue 22)."""
    settings.VECTOR_INDEX_PREWARM = "worker"  # the default
    assert prewarm.wanted("worker") and not prewarm.wanted("web")
    for value in ("all", "1", True):
        settings.VECTOR_INDEX_PREWARM = value
        assert prewarm.wanted("worker") and prewarm.wanted("web")
    settings.VECTOR_INDEX_PREWARM = "worker"
    assert prewarm.in_background("web") is None
    ran = []
    monkeypatch.setattr(prewarm, "prewarm", lambda: ran.append(threading.current_thread().name))
    thread = prewarm.in_background("worker")
    thread.join(60)
    assert not thread.is_alive() and ran == ["search-prewarm"]  # on a thread of its own


@pytest.mark.parametrize("value", ["0", "none", "off", False])
def test_prewarm_off_does_nothing(factcheck_project, settings, monkeypatch, value, counted_opens):
    make_corpus(factcheck_project, 40, "indexed")
    vector_index._readers.clear()
    settings.VECTOR_INDEX_PREWARM = value
    ran = []
    monkeypatch.setattr(prewarm, "prewarm", lambda: ran.append(True))
    started = threading.active_count()
    celery_config._prewarm_search()  # what a Celery worker process runs once forked
    assert prewarm.in_background("worker") is None and prewarm.in_background("web") is None
    assert threading.active_count() == started
    assert ran == [] and counted_opens == [] and vector_index._readers == {}


def test_prewarm_opens_the_searchable_indexes_and_a_later_search_does_not_reopen_them(
    factcheck_project, settings, counted_opens, caplog
):
    settings.VECTOR_INDEX_EXACT_MAX = 50  # an ANN index (faiss) too
    indexed, vectors = make_corpus(factcheck_project, 80, "indexed")
    small, _ = make_corpus(factcheck_project, 30, "small", seed=3)
    unindexed, _ = make_corpus(factcheck_project, 30, "no index on disk", seed=4)
    vector_index.remove(unindexed.id)
    importing, _ = make_corpus(factcheck_project, 30, "still importing", seed=5, state=CorpusState.IMPORTING)
    vector_index._readers.clear()
    with caplog.at_level(logging.INFO, logger="annotation.evidence"):
        report = prewarm.prewarm()
    assert set(report["corpora"]) == {indexed.id, small.id, unindexed.id}  # the searchable ones
    assert set(report["opened"]) == set(vector_index._readers) == {indexed.id, small.id}
    assert vector_index._readers[indexed.id].ann is not None
    assert report["failed"] == [] and report["model"] is True
    postgresql = connection.vendor == "postgresql"
    assert set(report["full_text"]) == ({indexed.id, small.id} if postgresql else set())
    assert "search prewarm done" in caplog.text and "indexes opened of" in caplog.text
    opened = dict(vector_index._readers)
    opens_by_prewarm = len(counted_opens)

    found = corpus_search(factcheck_project).many(["towers"], [vectors[3]], 8)
    assert found[0]  # searched
    assert len(counted_opens) == opens_by_prewarm + 1  # only the index prewarm found missing (rebuilt)
    assert counted_opens[-1] == unindexed.id
    assert vector_index._readers[indexed.id] is opened[indexed.id]
    assert vector_index._readers[small.id] is opened[small.id]
    assert importing.id not in vector_index._readers


def test_prewarm_caps_the_corpora(factcheck_project, settings):
    for number in range(3):
        make_corpus(factcheck_project, 20, f"corpus {number}", seed=number)
    vector_index._readers.clear()
    settings.VECTOR_INDEX_PREWARM_CORPORA = 2
    report = prewarm.prewarm()
    assert len(report["corpora"]) == len(report["opened"]) == len(vector_index._readers) == 2


def test_a_missing_or_corrupt_index_does_not_break_prewarm(factcheck_project, settings, caplog):
    settings.VECTOR_INDEX_EXACT_MAX = 50
    good, _ = make_corpus(factcheck_project, 80, "good")
    bad_meta, _ = make_corpus(factcheck_project, 80, "corrupt meta", seed=1)
    bad_ann, _ = make_corpus(factcheck_project, 80, "corrupt faiss file", seed=2)
    missing, _ = make_corpus(factcheck_project, 80, "missing", seed=3)
    (vector_index.index_dir(bad_meta.id) / "meta.json").write_text("{not json")
    ann = next(vector_index.index_dir(bad_ann.id).glob("ann-*.faiss"))
    ann.write_bytes(b"\0" * 100)
    vector_index.remove(missing.id)
    vector_index._readers.clear()
    with caplog.at_level(logging.INFO, logger="annotation.evidence"):
        report = prewarm.prewarm()  # never raises
    assert report["opened"] == [good.id] and report["failed"] == []
    assert f"corpus {bad_meta.id} not opened (meta.json unreadable" in caplog.text
    assert f"corpus {bad_ann.id} not opened" in caplog.text
    assert vector_index.reader(bad_ann) is not None  # the first search rebuilds it, as without prewarm


def test_a_failing_step_is_logged_and_the_others_still_run(factcheck_project, monkeypatch, caplog):
    corpus, _ = make_corpus(factcheck_project, 30, "indexed")
    vector_index._readers.clear()

    def broken(*_args, **_kwargs):
        raise RuntimeError("no model here")

    monkeypatch.setattr("pipeline.retrieval.embed", broken)
    monkeypatch.setattr("annotation.evidence.corpus_search.warm_dense", broken)
    with caplog.at_level(logging.INFO, logger="annotation.evidence"):
        report = prewarm.prewarm()
    assert report["failed"] == ["dense", "embedding model"] and report["model"] is False
    assert report["opened"] == [corpus.id]
    assert "search prewarm: embedding model failed" in caplog.text and "no model here" in caplog.text


def test_a_search_while_prewarm_opens_the_index_waits_for_that_opening_only(factcheck_project, monkeypatch):
    corpus, _ = make_corpus(factcheck_project, 40, "indexed")
    vector_index._readers.clear()
    real, opens, release = vector_index._open, [], threading.Event()

    def slow_open(*args):
        opens.append(threading.current_thread().name)
        release.wait(10)  # the prewarm's opening takes until the test lets it end
        return real(*args)

    monkeypatch.setattr(vector_index, "_open", slow_open)
    result = {}
    thread = threading.Thread(
        target=lambda: result.setdefault("reader", vector_index.open_for_prewarm(corpus)), name="search-prewarm"
    )
    thread.start()
    while not opens:
        time.sleep(0.01)

    def let_it_end():
        time.sleep(0.3)
        release.set()

    threading.Thread(target=let_it_end).start()
    began = time.perf_counter()
    found = vector_index.reader(corpus)  # a search arriving meanwhile
    waited = time.perf_counter() - began
    thread.join(10)
    assert found is result["reader"] and found is vector_index._readers[corpus.id]
    assert opens == ["search-prewarm"]  # one opening: the prewarm's
    assert 0.2 < waited < 5  # until the opening ended, not the whole prewarm or the wait's limit
