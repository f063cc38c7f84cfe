"""The corpus vector index on disk (annotation.evidence.vector_index): built and extended by the worker,
mapped read-only by searching processes, rebuilt from the database when missing or corrupt."""

import logging
import subprocess
import sys

import numpy as np
import pytest

from annotation.evidence import corpus_search as corpus_search_module
from annotation.evidence import vector_index
from annotation.evidence.corpora import clear_embeddings
from annotation.evidence.corpus_search import corpus_search, dense_hits_many
from annotation.evidence.vector_files import RowFile
from annotation.models import Corpus, CorpusState, Passage
from tests.helpers.evidence import add_embedded_passages, clustered_vectors

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vector_index_root")]
DIM = vector_index.DIMENSIONS


def clustered(n, seed=0, centres=20):
    return clustered_vectors(n, DIM, seed, centres)


def make_corpus(project, vectors, name="Vectors"):
    corpus = Corpus.objects.create(name=name, state=CorpusState.EMBEDDING)
    corpus.projects.set([project])
    add_passages(corpus, vectors)
    return corpus


def add_passages(corpus, vectors):
    """Passages with these vectors after the corpus's last one, as embedded by the worker."""
    add_embedded_passages(corpus, vectors)
    return vector_index.sync(corpus.id)


def exact(corpus, queries, k):
    rows = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", "embedding"))
    ids = np.array([pid for pid, _ in rows])
    matrix = np.stack([np.frombuffer(bytes(v), dtype=np.float32) for _, v in rows])
    scores = queries @ matrix.T
    return [[(int(ids[i]), float(row[i])) for i in np.lexsort((ids, -row))[:k]] for row in scores]


def near(vectors, seed=1, count=20):
    rng = np.random.default_rng(seed)
    q = vectors[rng.integers(0, len(vectors), count)] + rng.standard_normal((count, DIM)).astype(np.float32) * 0.06
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def same_hits(found, expected):
    assert [pid for pid, _ in found] == [pid for pid, _ in expected]
    assert np.allclose([s for _, s in found], [s for _, s in expected], atol=1e-5)


def test_a_small_corpus_is_searched_exactly_from_the_mapped_files(factcheck_project, vector_index_root):
    vectors = clustered(300)
    corpus = make_corpus(factcheck_project, vectors)
    meta = vector_index.sync(corpus.id)
    assert meta["rows"] == 300 and meta["ann"] is None
    reader = vector_index.reader(corpus)
    # scanned whole: mapped; candidates' rows and ids: read at their offsets
    assert isinstance(reader.exact, np.memmap) and reader.exact.shape == (300, DIM)
    assert isinstance(reader.vectors, RowFile) and isinstance(reader.ids, RowFile)
    assert reader.ids.dtype == np.int64
    queries = near(vectors)
    for found, expected in zip(reader.search(queries, 10), exact(corpus, queries, 10)):
        same_hits(found, expected)
    assert dense_hits_many([corpus], queries[:2], 10)[1] == reader.search(queries[1:2], 10)[0]


def test_a_large_corpus_gets_an_ann_index_whose_recall_at_50_is_at_least_095(factcheck_project, settings):
    settings.VECTOR_INDEX_EXACT_MAX = 1000
    vectors = clustered(4000, centres=40)
    corpus = make_corpus(factcheck_project, vectors)
    meta = vector_index.sync(corpus.id)
    assert meta["ann"] and meta["ann_rows"] == 4000
    reader = vector_index.reader(corpus)
    assert reader.ann is not None
    queries = near(vectors, count=50)
    found, expected = reader.search(queries, 50), exact(corpus, queries, 50)
    recall = np.mean([len({p for p, _ in f} & {p for p, _ in e}) / 50 for f, e in zip(found, expected)])
    assert recall >= 0.95
    for hits, query in zip(found, queries):  # the scores are exact cosines, not 8-bit ones
        truth = dict(exact(corpus, query[None, :], 4000)[0])
        assert all(abs(score - truth[pid]) < 1e-5 for pid, score in hits)


def test_extending_while_a_search_holds_the_old_view(factcheck_project, settings):
    settings.VECTOR_INDEX_EXACT_MAX = 1000
    settings.VECTOR_INDEX_TAIL_MAX = 250
    vectors = clustered(1500, centres=30)
    corpus = make_corpus(factcheck_project, vectors[:1200])
    old = vector_index.reader(corpus)
    assert old.rows == 1200 and old.meta["ann_rows"] == 1200
    before = old.search(near(vectors, count=5), 20)
    meta = add_passages(corpus, vectors[1200:1400])  # a tail searched exactly, next to the ANN index
    assert meta["rows"] == 1400 and meta["ann_rows"] == 1200
    assert old.search(near(vectors, count=5), 20) == before  # the old mapping is still valid
    new = vector_index.reader(corpus)
    assert new is not old and new.rows == 1400
    newest = Passage.objects.filter(corpus=corpus).order_by("-id").first()
    assert new.search(vectors[1399][None, :], 1)[0][0][0] == newest.id
    meta = add_passages(corpus, vectors[1400:])  # the tail grew past 250: folded into the ANN index
    assert meta["rows"] == meta["ann_rows"] == 1500
    assert old.search(near(vectors, count=5), 20) == before  # its ANN file was replaced, not overwritten
    reader = vector_index.reader(corpus)
    assert (
        reader.search(vectors[1499][None, :], 1)[0][0][0]
        == Passage.objects.filter(corpus=corpus).order_by("-id").first().id
    )


def test_a_restarted_process_reopens_the_index_without_reading_vectors_from_the_database(
    factcheck_project, django_assert_num_queries
):
    vectors = clustered(200)
    corpus = make_corpus(factcheck_project, vectors)
    expected = vector_index.reader(corpus).search(near(vectors), 5)
    vector_index._readers.clear()  # a new process
    with django_assert_num_queries(0):
        assert vector_index.reader(corpus).search(near(vectors), 5) == expected


def test_a_restarted_process_reopens_the_index_from_another_interpreter(factcheck_project, vector_index_root):
    """The files alone (no database) are what another process maps."""
    vectors = clustered(100)
    corpus = make_corpus(factcheck_project, vectors)
    meta = vector_index.sync(corpus.id)
    directory = vector_index.index_dir(corpus.id)
    g = meta["generation"]
    script = (
        f"import numpy as np; ids = np.memmap({str(directory / f'ids-{g}.i64')!r}, dtype=np.int64, mode='r'); "
        f"v = np.memmap({str(directory / f'vectors-{g}.f32')!r}, dtype=np.float32, mode='r').reshape(-1, {DIM}); "
        "print(len(ids), int(ids[0]), float(v[0] @ v[0]))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    first = Passage.objects.filter(corpus=corpus).order_by("id").first()
    assert int(out[0]) == 100 and int(out[1]) == first.id and abs(float(out[2]) - 1) < 1e-5


def test_another_embedding_model_gets_its_own_index_once_re_embedded(
    factcheck_project, monkeypatch, vector_index_root, django_capture_on_commit_callbacks
):
    vectors = clustered(150, seed=3)
    corpus = make_corpus(factcheck_project, vectors)
    old_dir = vector_index.index_dir(corpus.id)
    assert (old_dir / "meta.json").exists()
    monkeypatch.setattr(vector_index, "model_key", lambda: "another-model")
    with django_capture_on_commit_callbacks(execute=True):
        clear_embeddings(corpus.id, enqueue=False)
    assert not old_dir.exists()  # the old model's index went with its vectors
    corpus.refresh_from_db()
    assert vector_index.reader(corpus) is None  # nothing embedded yet: lexical only
    Passage.objects.filter(corpus=corpus).delete()
    Corpus.objects.filter(pk=corpus.pk).update(embedded=0, embedded_through=0, passages=0)
    new_vectors = clustered(150, seed=4)
    add_passages(corpus, new_vectors)
    reader = vector_index.reader(corpus)
    assert reader.meta["model"] == "another-model"
    assert (vector_index_root / f"corpus-{corpus.id}" / "another-model" / "meta.json").exists()
    assert np.array_equal(np.asarray(reader.vectors), new_vectors)


def test_an_index_of_vectors_made_again_elsewhere_is_rebuilt(factcheck_project):
    vectors = clustered(120, seed=5)
    corpus = make_corpus(factcheck_project, vectors)
    again = clustered(120, seed=6)
    for pid, v in zip(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True), again):
        Passage.objects.filter(id=pid).update(embedding=v.tobytes())
    vector_index.sync(corpus.id)
    assert np.array_equal(np.asarray(vector_index.reader(corpus).vectors), again)


def _break(directory, meta, how):
    g = meta["generation"]
    if how == "missing meta":
        (directory / "meta.json").unlink()
    elif how == "garbage meta":
        (directory / "meta.json").write_text("{not json")
    elif how == "short vectors":
        with open(directory / f"vectors-{g}.f32", "r+b") as f:
            f.truncate(DIM * 4 * 3)
    elif how == "missing ann":
        (directory / meta["ann"]).unlink()
    elif how == "garbage ann":
        (directory / meta["ann"]).write_bytes(b"\x00garbage" * 100)
    elif how == "whole directory":
        import shutil

        shutil.rmtree(directory)


@pytest.mark.parametrize(
    "how",
    [
        "missing meta",
        "garbage meta",
        "short vectors",
        "missing ann",
        "garbage ann",
        "whole directory",
    ],
)
def test_a_missing_or_corrupt_index_is_rebuilt_with_a_log_line(factcheck_project, settings, caplog, how):
    settings.VECTOR_INDEX_EXACT_MAX = 500
    vectors = clustered(1000, seed=7)
    corpus = make_corpus(factcheck_project, vectors)
    meta = vector_index.sync(corpus.id)
    assert meta["ann"]
    queries = near(vectors, count=3)
    expected = vector_index.reader(corpus).search(queries, 10)
    vector_index._readers.clear()
    _break(vector_index.index_dir(corpus.id), meta, how)
    with caplog.at_level(logging.WARNING, logger="annotation.evidence.vector_index"):
        found = vector_index.reader(corpus).search(queries, 10)
    assert any("rebuilding it here" in r.getMessage() for r in caplog.records)
    assert found == expected


def test_a_large_corrupt_index_is_rebuilt_by_a_task_and_search_goes_on_lexically(
    factcheck_project, settings, caplog, monkeypatch
):
    monkeypatch.setattr(vector_index, "REBUILD_INLINE_MAX", 10)
    vectors = clustered(50, seed=8)
    corpus = make_corpus(factcheck_project, vectors)
    (vector_index.index_dir(corpus.id) / "meta.json").write_text("[]")
    vector_index._readers.clear()
    search = corpus_search(factcheck_project)
    with caplog.at_level(logging.WARNING, logger="annotation.evidence.vector_index"):
        candidates = search("passage number 7", vectors[7], 5)  # no exception: lexical hits at least
    assert any("rebuild queued" in r.getMessage() for r in caplog.records)
    assert candidates and any(c.passage_id for c in candidates)
    # The task ran (eager here; a worker elsewhere): the next search has the index again.
    assert vector_index.reader(corpus).rows == 50
    pid = Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True)[7]
    assert search("", vectors[7], 1)[0].passage_id == pid


def test_the_step2_search_over_the_index_equals_exact_search_on_a_small_corpus(factcheck_project):
    vectors = clustered(250, seed=9)
    corpus = make_corpus(factcheck_project, vectors)
    queries = near(vectors, count=4)
    found = corpus_search(factcheck_project).many(["", "", "", ""], list(queries), 8)
    vector_of = dict(
        zip(
            Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True),
            vectors,
        )
    )
    for candidates, expected in zip(found, exact(corpus, queries, 8)):
        assert {c.passage_id for c in candidates} == {pid for pid, _ in expected}
        assert all(np.array_equal(c.vector, vector_of[c.passage_id]) for c in candidates)  # from the mapped file


def test_faiss_is_not_imported_when_the_web_application_starts():
    script = (
        "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); import django; "
        "django.setup(); import config.urls, annotation.evidence.corpus_search, annotation.tasks; "
        "print('faiss' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_forget_vectors_drops_this_processes_view(factcheck_project):
    corpus = make_corpus(factcheck_project, clustered(30))
    assert vector_index.reader(corpus) is not None
    corpus_search_module.forget_vectors(corpus.id)
    assert corpus.id not in vector_index._readers


def test_an_index_left_by_another_corpus_with_the_same_id_is_not_used(factcheck_project):
    """A database reset (a test run, a restore) reuses ids; the index directory outlives it."""
    corpus = make_corpus(factcheck_project, clustered(40, seed=10))
    Corpus.objects.filter(pk=corpus.pk).update(imported_at="2026-01-01T00:00:00Z")
    for pid, v in zip(
        Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True),
        clustered(40, seed=11),
    ):
        Passage.objects.filter(id=pid).update(embedding=v.tobytes())
    vector_index._readers.clear()
    corpus.refresh_from_db()
    assert np.array_equal(np.asarray(vector_index.reader(corpus).vectors), clustered(40, seed=11))


def test_the_vectors_of_a_searchs_results_read_next_equal_the_files(factcheck_project, settings):
    """Reader.search keeps its results' rows and vectors for the read that follows (corpus_search)."""
    settings.VECTOR_INDEX_EXACT_MAX = 50
    vectors = clustered(120, seed=4)
    corpus = make_corpus(factcheck_project, vectors)
    reader = vector_index.reader(corpus)
    found = reader.search(near(vectors[:3]), 10)
    ids = [pid for hits in found for pid, _ in hits]
    rows = reader.row_of(np.array(ids))
    everything = np.asarray(reader.vectors)
    assert reader.vectors.recent and (rows >= 0).all()
    for row in rows:
        assert np.array_equal(reader.vectors[int(row)], everything[row])
    reader.recent.clear()
    assert np.array_equal(reader.row_of(np.array(ids)), rows)  # through the ids file: the same rows
