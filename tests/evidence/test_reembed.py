"""Re-embedding a corpus after the embedding backend or model changed (manage.py reembed_corpus)."""

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.evidence import corpus_search as corpus_search_module
from annotation.evidence import vector_index
from annotation.evidence.corpora import (
    clear_embeddings,
    embed_next_batch,
    embedding_agreement,
    update_vector_index,
)
from annotation.evidence.corpus_search import corpus_search
from annotation.models import Corpus, CorpusState, Passage
from pipeline.retrieval import embed
from tests.helpers.evidence import DOCUMENTS, upload

pytestmark = pytest.mark.django_db


def embed_all(corpus_id):
    while embed_next_batch(corpus_id):
        pass


def as_if_another_model(corpus_id, seed=0):
    """Overwrite the stored vectors with unit vectors no current backend would make."""
    rng = np.random.default_rng(seed)
    for pid in Passage.objects.filter(corpus_id=corpus_id).values_list("id", flat=True):
        vector = rng.standard_normal(384).astype(np.float32)
        Passage.objects.filter(id=pid).update(embedding=(vector / np.linalg.norm(vector)).tobytes())


def stored(corpus_id):
    rows = Passage.objects.filter(corpus_id=corpus_id).order_by("id").values_list("text", "embedding")
    return [(text, None if v is None else np.frombuffer(bytes(v), dtype=np.float32)) for text, v in rows]


def run(*args):
    out = io.StringIO()
    call_command("reembed_corpus", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def test_check_tells_vectors_of_another_model_from_this_backends_and_changes_nothing(corpus):
    assert "no vectors yet" in run(corpus.id, "--check")
    embed_all(corpus.id)
    assert embedding_agreement(corpus.id) > 0.999
    assert "stored vectors match this backend's" in run(corpus.id, "--check")
    as_if_another_model(corpus.id)
    before = stored(corpus.id)
    assert embedding_agreement(corpus.id) < 0.5
    assert "stored vectors differ from this backend's" in run("--all", "--check")
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(before, stored(corpus.id)))


def test_reembedding_now_replaces_every_vector_with_the_current_backends(corpus):
    embed_all(corpus.id)
    as_if_another_model(corpus.id)
    first_ready = Corpus.objects.get(pk=corpus.pk).embedded_at
    output = run(corpus.id, "--now")
    assert "re-embedded: ready" in output
    corpus.refresh_from_db()
    assert corpus.state == CorpusState.READY and corpus.embedded == corpus.passages
    assert corpus.embedded_through == Passage.objects.filter(corpus=corpus).order_by("-id").first().id
    assert corpus.embedded_at > first_ready
    rows = stored(corpus.id)
    fresh = embed([text for text, _ in rows])
    assert all(float(np.dot(vector, f)) > 0.999 for (_, vector), f in zip(rows, fresh))


def test_if_stale_re_embeds_only_the_corpora_whose_vectors_differ(
    corpus, factcheck_project, users, django_capture_on_commit_callbacks
):
    from annotation.evidence.corpora import create_corpus

    with django_capture_on_commit_callbacks(execute=True):
        other = create_corpus(
            name="Other",
            user=users["admin"],
            upload=upload(DOCUMENTS[:2]),
            projects=[factcheck_project],
        )
    embed_all(corpus.id)
    embed_all(other.id)
    as_if_another_model(other.id)
    kept_at = Corpus.objects.get(pk=corpus.pk).embedded_at
    output = run("--all", "--if-stale", "--now")
    assert (
        f"corpus {other.id} (Other) re-embedded" in output
        and f"corpus {corpus.id} (Encyclopedia) re-embedded" not in output
    )
    assert Corpus.objects.get(pk=corpus.pk).embedded_at == kept_at
    assert embedding_agreement(other.id) > 0.999


def test_with_a_broker_the_vectors_are_cleared_and_the_embedding_task_queued(
    corpus, monkeypatch, django_capture_on_commit_callbacks
):
    from config.celery import app

    embed_all(corpus.id)
    queued = []
    monkeypatch.setattr(app, "send_task", lambda name, args: queued.append((name, args)))
    app.conf.task_always_eager = False
    try:
        with django_capture_on_commit_callbacks(execute=True):
            output = run(corpus.id)
    finally:
        app.conf.task_always_eager = True
    assert "vectors cleared, embedding queued" in output and queued == [("annotation.tasks.embed_corpus", [corpus.id])]
    corpus.refresh_from_db()
    assert (corpus.state, corpus.embedded, corpus.embedded_through, corpus.embedded_at) == (
        CorpusState.EMBEDDING,
        0,
        0,
        None,
    )
    assert not Passage.objects.filter(corpus=corpus, embedding__isnull=False).exists()
    # Meanwhile the corpus stays searchable, lexically.
    assert corpus_search(corpus.projects.first())("Eiffel Tower 1889", None, 3)


def test_only_imported_corpora_can_be_re_embedded_and_the_arguments_are_checked(corpus):
    Corpus.objects.filter(pk=corpus.pk).update(state=CorpusState.IMPORTING)
    with pytest.raises(CommandError, match="is importing: only an imported corpus"):
        run(corpus.id)
    with pytest.raises(CommandError, match="no corpus with id 999999"):
        run(999999)
    with pytest.raises(CommandError, match="name corpus ids or --all"):
        run()
    with pytest.raises(CommandError, match="name corpus ids or --all"):
        run(corpus.id, "--all")


def test_a_process_that_loaded_the_old_vectors_searches_with_the_new_ones(corpus, factcheck_project, monkeypatch):
    """Another process (web, worker) keeps its copy of the vectors; re-embedded, it must not rank
    with the old model's vectors, whether it looks again during the re-embedding or after it."""
    embed_all(corpus.id)
    as_if_another_model(corpus.id)
    update_vector_index(corpus.id)  # the index notices its first row is no longer stored: rebuilt
    query = "Who won two Nobel prizes?"
    search = corpus_search(factcheck_project)
    search(query, embed([query])[0], 3)  # maps the old vectors in this process
    old_rows = np.array(vector_index._readers[corpus.id].vectors)
    # What another process does: clear and embed again, without touching this process's cache.
    monkeypatch.setattr(corpus_search_module, "forget_vectors", lambda corpus_id: None)
    clear_embeddings(corpus.id, enqueue=False)
    embed_all(corpus.id)
    monkeypatch.undo()
    candidates = corpus_search(factcheck_project)(query, embed([query])[0], 3)
    fresh = {
        pid: vector
        for pid, vector in zip(
            Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True),
            [v for _, v in stored(corpus.id)],
        )
    }
    assert candidates and all(np.array_equal(c.vector, fresh[c.passage_id]) for c in candidates)
    assert not np.array_equal(np.array(vector_index._readers[corpus.id].vectors), old_rows)


def test_a_cache_loaded_mid_embedding_notices_a_re_embedding_that_passed_it(corpus, factcheck_project):
    assert embed_next_batch(corpus.id, size=2) == 2
    as_if_another_model(corpus.id)  # the first two vectors are "old"; the rest are not made yet
    Passage.objects.filter(corpus=corpus, id__gt=Corpus.objects.get(pk=corpus.pk).embedded_through).update(
        embedding=None
    )
    search = corpus_search(factcheck_project)
    search("Eiffel", embed(["Eiffel"])[0], 3)
    assert vector_index._readers[corpus.id].rows == 2
    Passage.objects.filter(corpus=corpus).update(embedding=None)  # re-embedded from scratch elsewhere
    Corpus.objects.filter(pk=corpus.pk).update(embedded=0, embedded_through=0)
    embed_next_batch(corpus.id, size=3)  # further than this process had got, still embedding
    candidates = corpus_search(factcheck_project)("Eiffel", embed(["Eiffel"])[0], 5)
    new = dict(stored(corpus.id))
    assert all(c.vector is None or np.array_equal(c.vector, new[c.text]) for c in candidates)
    assert vector_index._readers[corpus.id].rows == 3
