"""Passage corpora: upload → passages → lexical and dense search → step-2 evidence."""

import io
import json
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from annotation.evidence.corpora import create_corpus, embed_next_batch, run_corpus_import
from annotation.evidence.corpus_search import corpus_search, lexical_hits
from annotation.exceptions import DomainError
from annotation.models import Corpus, CorpusState, Passage
from tests.helpers.evidence import DOCUMENTS, upload
from tests.helpers.stack import require_postgresql

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def test_documents_become_sentence_windows_and_the_upload_is_deleted(corpus, data_dir):
    assert corpus.state == CorpusState.EMBEDDING  # searchable; no worker embeds in eager mode
    assert (corpus.documents, corpus.lines_read) == (3, 3)
    eiffel = list(Passage.objects.filter(corpus=corpus, document=1).order_by("position").values_list("text", flat=True))
    assert len(eiffel) == 3 and eiffel[0].startswith("The Eiffel Tower is") and eiffel[1].startswith("Construction")
    assert eiffel[-1].endswith("every year.")
    assert corpus.passages == Passage.objects.filter(corpus=corpus).count() == 3 + 1 + 1
    assert not any((data_dir / "corpora").iterdir())


def test_lexical_search_finds_passages_by_their_words(corpus):
    hits = lexical_hits([corpus], "When was the Eiffel Tower completed?", 5)
    first = Passage.objects.get(id=hits[0][0])
    assert "completed in March 1889" in first.text
    assert all("Bananas" not in Passage.objects.get(id=pid).text for pid, _ in hits)


def test_embedding_batches_fill_vectors_and_make_the_corpus_ready(corpus):
    assert embed_next_batch(corpus.id, size=2) == 2
    corpus.refresh_from_db()
    assert corpus.embedded == 2 and corpus.state == CorpusState.EMBEDDING
    first_two = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True))[:2]
    assert corpus.embedded_through == first_two[-1]
    while embed_next_batch(corpus.id, size=2):
        pass
    corpus.refresh_from_db()
    assert corpus.state == CorpusState.READY and corpus.embedded == corpus.passages
    vector = np.frombuffer(bytes(Passage.objects.filter(corpus=corpus).first().embedding), dtype=np.float32)
    assert vector.shape == (384,) and abs(np.linalg.norm(vector) - 1) < 1e-4


def test_the_search_function_ranks_with_embeddings_of_the_whole_corpus(corpus, factcheck_project):
    from pipeline.retrieval import embed

    while embed_next_batch(corpus.id):
        pass
    search = corpus_search(factcheck_project)
    query_vector = embed(["Who won two Nobel prizes?"])[0]
    candidates = search("Who won two Nobel prizes?", query_vector, 3)
    assert any("Nobel Prize in Chemistry" in c.text for c in candidates)
    assert all(c.vector is not None and c.source == "corpus" for c in candidates)


def test_candidates_without_vectors_are_embedded_when_ranked_and_kept(corpus, factcheck_project):
    from pipeline.retrieval import embed

    search = corpus_search(factcheck_project)
    candidates = search("Eiffel Tower 1889", embed(["Eiffel Tower 1889"])[0], 2)
    assert candidates and all(c.vector is not None for c in candidates)
    stored = Passage.objects.filter(id__in=[c.passage_id for c in candidates], embedding__isnull=False).count()
    assert stored == len(candidates)


def test_a_project_without_a_searchable_corpus_has_no_search(factcheck_project, corpus):
    corpus.state = CorpusState.IMPORTING
    corpus.save()
    assert corpus_search(factcheck_project) is None


@pytest.mark.parametrize(
    "line, field, message",
    [
        ("{not json", "(json)", "is not valid JSON"),
        ("[1, 2]", "(line)", "must be a JSON object"),
        ({"title": "x"}, "text", "is missing or empty"),
        ({"text": "ok", "url": "javascript:alert(1)"}, "url", "must be an http(s) URL"),
        ({"text": "ok", "title": 5}, "title", "must be a string"),
        ({"text": "bad \ud800 text"}, "text", "lone UTF-16 surrogate"),
        ({"text": "ok", "title": "t" * 501}, "title", "longer than 500"),
        ("[" * 5000 + "]" * 5000, "(json)", "too deeply"),
    ],
)
def test_a_bad_line_fails_the_corpus_naming_line_and_field_and_writes_nothing(
    factcheck_project, users, data_dir, django_capture_on_commit_callbacks, line, field, message
):
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(
            name="Broken",
            user=users["admin"],
            upload=upload([DOCUMENTS[2], line]),
            projects=[factcheck_project],
        )
    corpus.refresh_from_db()
    assert corpus.state == CorpusState.FAILED
    assert corpus.errors[0]["line"] == 2 and corpus.errors[0]["field"] == field
    assert message in corpus.errors[0]["message"]
    assert not Passage.objects.filter(corpus=corpus).exists()


def test_an_empty_file_and_bad_window_settings_are_refused(
    factcheck_project, users, data_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(name="Empty", user=users["admin"], upload=upload([]), projects=[factcheck_project])
    corpus.refresh_from_db()
    assert corpus.state == CorpusState.FAILED and corpus.errors[0]["message"] == "contains no documents"
    with pytest.raises(DomainError, match="passage_stride must not exceed"):
        create_corpus(
            name="x",
            user=users["admin"],
            upload=upload(DOCUMENTS),
            projects=[],
            passage_sentences=2,
            passage_stride=3,
        )
    with pytest.raises(DomainError, match="passage_sentences must be a whole number"):
        create_corpus(
            name="x",
            user=users["admin"],
            upload=upload(DOCUMENTS),
            projects=[],
            passage_sentences=0,
        )


def test_an_import_run_again_after_a_dead_worker_writes_each_passage_once(factcheck_project, users, data_dir):
    corpus = create_corpus(name="Twice", user=users["admin"], upload=upload(DOCUMENTS), projects=[factcheck_project])
    path = data_dir / corpus.file_path
    saved = path.read_bytes()
    run_corpus_import(corpus.id)
    count = Passage.objects.filter(corpus=corpus).count()
    # The worker died after writing: the task is redelivered while the corpus still says importing.
    Corpus.objects.filter(pk=corpus.pk).update(state=CorpusState.IMPORTING, progress_at=timezone.now())
    path.write_bytes(saved)
    # ... a delivery while the import makes progress (another worker is on it) does nothing,
    assert run_corpus_import(corpus.id).state == CorpusState.IMPORTING
    # once it has been silent for JOB_STALLED_AFTER_SECONDS, it is taken over.
    Corpus.objects.filter(pk=corpus.pk).update(progress_at=timezone.now() - timedelta(seconds=301))
    run_corpus_import(corpus.id)
    assert Passage.objects.filter(corpus=corpus).count() == count
    # A finished import is not run again.
    assert run_corpus_import(corpus.id).state == CorpusState.EMBEDDING


def test_the_management_command_imports_and_embeds_a_corpus(factcheck_project, data_dir, tmp_path):
    from django.core.management import CommandError, call_command

    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS))
    out = io.StringIO()
    call_command(
        "import_corpus",
        str(path),
        "--name",
        "Cli",
        "--project",
        factcheck_project.name,
        "--passage-sentences",
        "3",
        "--embed",
        stdout=out,
    )
    corpus = Corpus.objects.get(name="Cli")
    assert corpus.state == CorpusState.READY and list(corpus.projects.all()) == [factcheck_project]
    assert "3 documents, 5 passages" in out.getvalue() and "is ready" in out.getvalue()

    path.write_text(json.dumps(DOCUMENTS[0]) + "\n{}\n")
    with pytest.raises(CommandError, match="line 2, field text: is missing or empty"):
        call_command("import_corpus", str(path), "--name", "Bad", stdout=io.StringIO())


@pytest.mark.parametrize("query", ["it's O'Brien's \\ tower", "'|&!():* <-> tower", "\\'", "     ", "the of and"])
def test_any_query_text_is_searched_safely(corpus, query):
    hits = lexical_hits([corpus], query, 5)
    assert isinstance(hits, list)


def test_frequent_terms_are_left_out_of_candidate_queries_on_postgresql(
    factcheck_project, users, data_dir, django_capture_on_commit_callbacks, monkeypatch
):
    from annotation.evidence import corpora

    require_postgresql("frequent terms come from PostgreSQL's ts_stat; SQLite ranks with BM25 in memory")
    monkeypatch.setattr(corpora, "FREQUENT_TERM_MIN_PASSAGES", 1)
    docs = [{"title": f"Doc {i}", "text": f"The tower stands in city number {i}. It has {i} floors."} for i in range(4)]
    docs.append({"title": "Odd", "text": "A bridge crosses the river."})
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(name="Towers", user=users["admin"], upload=upload(docs), projects=[factcheck_project])
    corpus.refresh_from_db()
    assert "tower" in corpus.frequent_terms and "bridg" not in corpus.frequent_terms
    # "tower" alone would match four passages; with the rare "bridg" only the passage that has it is a candidate.
    hits = lexical_hits([corpus], "tower bridge", 5)
    assert [Passage.objects.get(id=pid).title for pid, _ in hits] == ["Odd"]
    # A query of frequent terms only asks for all of them.
    assert len(lexical_hits([corpus], "tower city", 5)) == 4


def test_a_claims_queries_searched_together_find_what_each_finds_alone(corpus, factcheck_project):
    from pipeline.retrieval import embed

    embed_next_batch(corpus.id, size=3)  # some vectors in the process's matrix, the rest embedded when found
    search = corpus_search(factcheck_project)
    queries = ["When was the Eiffel Tower completed?", "Nobel Prize in Chemistry", "potassium"]
    vectors = list(embed(queries))
    vectors[2] = None  # a query without an embedding: lexical candidates only
    together = search.many(queries, vectors, 2)
    assert len(together) == 3
    for query, vector, found in zip(queries, vectors, together):
        alone = search(query, vector, 2)
        assert [(c.passage_id, c.query) for c in found] == [(c.passage_id, c.query) for c in alone]
        assert all(np.array_equal(a.vector, b.vector) for a, b in zip(found, alone))
    assert any("Nobel Prize in Chemistry" in c.text for c in together[1])
    assert [c.text for c in together[2]] == ["Bananas are rich in potassium."]
    assert all(c.vector is not None for found in together for c in found)


@pytest.mark.django_db(transaction=True)
def test_the_passages_are_vacuumed_after_a_corpus_was_rewritten_outside_a_transaction():
    from django.db import connection, transaction

    from annotation.evidence.corpora import tidy_passages

    require_postgresql("VACUUM and the GIN index are PostgreSQL's")
    with transaction.atomic():
        tidy_passages()  # VACUUM cannot run here: the GIN index's pending list is merged instead
    tidy_passages()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_get_last_vacuum_time('annotation_passage'::regclass) IS NOT NULL")
        assert cursor.fetchone()[0]


def test_a_query_of_frequent_words_only_ranks_a_bounded_number_of_matches(
    factcheck_project, users, data_dir, django_capture_on_commit_callbacks, monkeypatch
):
    from annotation.evidence import corpora
    from annotation.evidence import corpus_search as corpus_search_module

    require_postgresql("frequent terms come from PostgreSQL's ts_stat")
    monkeypatch.setattr(corpora, "FREQUENT_TERM_MIN_PASSAGES", 1)
    docs = [{"title": f"Doc {i}", "text": f"The tower stands in city number {i}. It has {i} floors."} for i in range(4)]
    docs.append({"title": "Odd", "text": "A bridge crosses the river near the tower."})
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(name="Towers", user=users["admin"], upload=upload(docs), projects=[factcheck_project])
    corpus.refresh_from_db()
    assert len(lexical_hits([corpus], "tower city", 5)) == 4
    monkeypatch.setattr(corpus_search_module, "COMMON_QUERY_RANKED", 2)
    assert len(lexical_hits([corpus], "tower city", 5)) == 2
    assert len(lexical_hits([corpus], "tower", 5)) == 2
    # A query with a rarer word is not capped: every passage with any of its rare words is ranked.
    assert [Passage.objects.get(id=pid).title for pid, _ in lexical_hits([corpus], "bridge river tower", 5)] == ["Odd"]


def test_lexemes_with_quotes_are_searched_as_themselves(
    factcheck_project, users, data_dir, django_capture_on_commit_callbacks
):
    require_postgresql("PostgreSQL's parser makes the lexeme x.example/a'b of a URL")
    docs = [
        {"title": "Link", "text": "The page http://x.example/a'b is cited."},
        {"title": "Other", "text": "The page http://x.example/ab is cited."},
    ]
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(name="Links", user=users["admin"], upload=upload(docs), projects=[factcheck_project])
    corpus.refresh_from_db()
    hits = lexical_hits([corpus], "http://x.example/a'b", 5)
    assert Passage.objects.get(id=hits[0][0]).title == "Link"
    assert hits[0][1] > max([score for _, score in hits[1:]], default=0)
