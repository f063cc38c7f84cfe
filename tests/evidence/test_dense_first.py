"""Dense-first retrieval at large corpora (annotation.evidence.corpus_search.dense_first): the vector
index finds the candidates and full-text search only adds the passages of a query's rare lexemes.
Tried on small corpora with the thresholds lowered."""

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.evidence import corpus_search as corpus_search_module
from annotation.evidence import vector_index
from annotation.evidence.corpora import embed_next_batch
from annotation.evidence.corpus_search import corpus_search, dense_first, rare_term_search, searchable_corpora
from annotation.models import Corpus, CorpusState, Passage
from pipeline.factcheck_step2 import search_queries
from pipeline.retrieval import embed, rank_candidates
from tests.helpers.evidence import add_embedded_passages, clustered_vectors

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vector_index_root")]
DIM = vector_index.DIMENSIONS


def clustered(n, seed=0, centres=8):
    return clustered_vectors(n, DIM, seed, centres)


def text_of(i):
    """Every passage has "tower" and "city"; ten have "harbour"; only passage 7 has "zanzibar"."""
    return (
        f"The tower stands in city {i}." + (" A harbour is near." if i < 10 else "") + (" Zanzibar." if i == 7 else "")
    )


def towers(project, vectors, embedded=None):
    """A corpus of ``text_of`` passages with these vectors, the first ``embedded`` of them embedded
    (all by default) and in its vector index, searchable by full-text search."""
    embedded = len(vectors) if embedded is None else embedded
    corpus = Corpus.objects.create(name="Towers", state=CorpusState.EMBEDDING)
    corpus.projects.set([project])
    ids = add_embedded_passages(corpus, vectors, text=text_of, embedded=embedded)
    vector_index.sync(corpus.id)
    corpus.refresh_from_db()
    return corpus, ids


def nearest(vectors, ids, query, k):
    scores = vectors @ query
    return {ids[i] for i in np.lexsort((ids, -scores))[:k]}


@pytest.mark.postgres_only("dense-first retrieval bounds PostgreSQL's full-text search")
def test_a_large_corpus_is_searched_dense_first_with_only_rare_terms_added(factcheck_project, settings):
    settings.CORPUS_DENSE_FIRST_PASSAGES = 40
    settings.CORPUS_RARE_TERM_PASSAGES = 3
    vectors = clustered(40, seed=3)
    corpus, ids = towers(factcheck_project, vectors)
    query = vectors[30]
    search = corpus_search(factcheck_project)
    assert dense_first(searchable_corpora(factcheck_project), [vector_index.reader(corpus)])
    (found,) = search.many(["harbour tower zanzibar"], [query], 5)
    # The five nearest passages and the only one with the rare "zanzibar"; not the passages whose
    # words ("harbour": ten passages, "tower": all) are in more than three passages.
    assert {c.passage_id for c in found} == nearest(vectors, ids, query, 5) | {ids[7]}
    assert all(c.vector is not None for c in found)
    # Below the threshold, full-text search finds candidates by every word, as before.
    settings.CORPUS_DENSE_FIRST_PASSAGES = 41
    (before,) = search.many(["harbour tower zanzibar"], [query], 5)
    lexical = {c.passage_id for c in before} - nearest(vectors, ids, query, 5)
    assert ids[7] in lexical and len(lexical) > 1


@pytest.mark.postgres_only("dense-first retrieval bounds PostgreSQL's full-text search")
def test_the_bounded_lexical_pass_probes_each_lexeme_and_ranks_only_rare_ones(factcheck_project, settings):
    settings.CORPUS_RARE_TERM_PASSAGES = 10
    corpus, ids = towers(factcheck_project, clustered(40, seed=4))
    found, rows = rare_term_search([corpus], ["harbour zanzibar", "tower city", "Zanzibar harbours?", ""], 50, True)
    assert [pid for pid, _ in found[0]] == [ids[7]] + sorted(ids[:7] + ids[8:10])  # "zanzibar" counts twice
    assert found[1] == [] and found[3] == []  # words of every passage: the dense side's
    assert {pid for pid, _ in found[2]} == set(ids[:10])
    assert set(rows) == set(ids[:10]) and rows[ids[7]][-1] == text_of(7)
    settings.CORPUS_RARE_TERM_PASSAGES = 9  # "harbour" (ten passages) is no longer rare
    assert [[pid for pid, _ in hits] for hits in rare_term_search([corpus], ["harbour zanzibar"], 50)[0]] == [[ids[7]]]


@pytest.fixture(autouse=True)
def _no_lexemes_remembered():
    corpus_search_module.forget_not_rare()
    yield
    corpus_search_module.forget_not_rare()


@pytest.mark.postgres_only("dense-first retrieval bounds PostgreSQL's full-text search")
def test_lexemes_over_the_bound_are_not_probed_again_and_the_hits_stay_the_same(
    factcheck_project, settings, monkeypatch
):
    settings.CORPUS_RARE_TERM_PASSAGES = 9
    corpus, ids = towers(factcheck_project, clustered(40, seed=9))
    runs = []
    original = corpus_search_module._run_search

    def spy(statement, params, queries, with_text, over=None):
        result = original(statement, params, queries, with_text, over)
        runs.append((list(params["not_rare"]), list(over)))
        return result

    monkeypatch.setattr(corpus_search_module, "_run_search", spy)
    queries = ["harbour zanzibar tower", "city harbours", "tower"]
    first = rare_term_search([corpus], queries, 50, True)
    assert runs[-1][0] == [] and sorted(runs[-1][1]) == ["citi", "harbour", "tower"]  # probed, over the bound
    assert first[0][0] == [(ids[7], first[0][0][0][1])] and first[0][1] == first[0][2] == []
    again = rare_term_search([corpus], queries, 50, True)
    assert again == first
    assert runs[-1] == (["citi", "harbour", "tower"], [])  # not probed: known over the bound
    settings.CORPUS_RARE_TERM_PASSAGES = 10  # another bound: probed afresh ("harbour" is rare now)
    assert {pid for pid, _ in rare_term_search([corpus], ["harbour"], 50)[0][0]} == set(ids[:10])
    assert runs[-1][0] == []
    settings.CORPUS_RARE_TERM_PASSAGES = 9
    corpus.passages += 1  # the corpus changed: probed afresh
    assert rare_term_search([corpus], queries, 50, True) == first
    assert runs[-1][0] == [] and sorted(runs[-1][1]) == ["citi", "harbour", "tower"]


@pytest.mark.postgres_only("dense-first retrieval bounds PostgreSQL's full-text search")
@pytest.mark.parametrize("query", ["it's O'Brien's \\ tower", "'|&!():* <-> tower", "\\'", "     ", "the of and"])
def test_any_query_text_is_searched_safely_by_the_bounded_pass(factcheck_project, query):
    corpus, _ = towers(factcheck_project, clustered(12, seed=5))
    found, _ = rare_term_search([corpus], [query, "zanzibar"], 5)
    assert len(found) == 2 and len(found[1]) == 1


@pytest.mark.postgres_only("dense-first retrieval bounds PostgreSQL's full-text search")
def test_a_claims_queries_take_two_statements_dense_first(factcheck_project, settings):
    settings.CORPUS_DENSE_FIRST_PASSAGES = 1
    vectors = clustered(30, seed=6)
    towers(factcheck_project, vectors)
    search = corpus_search(factcheck_project)
    search.many(["tower"], [vectors[0]], 5)  # opens the index
    with CaptureQueriesContext(connection) as queries:
        found = search.many(["zanzibar", "harbour", "tower city", "stands"], list(vectors[:4]), 5)
    assert len(found) == 4 and all(len(f) >= 5 for f in found)
    # the corpora, the bounded full-text search with its hits' text, the text of the dense-only passages
    assert len(queries.captured_queries) <= 3


@pytest.mark.postgres_only("dense-first retrieval bounds PostgreSQL's full-text search")
def test_a_corpus_not_all_embedded_is_searched_by_full_text_search_as_before(factcheck_project, settings):
    settings.CORPUS_DENSE_FIRST_PASSAGES = 1
    vectors = clustered(30, seed=7)
    corpus, ids = towers(factcheck_project, vectors, embedded=20)
    assert not dense_first([corpus], [vector_index.reader(corpus)])
    (found,) = corpus_search(factcheck_project, embed_missing=False).many(["tower 25"], [vectors[3]], 5)
    assert ids[25] in {c.passage_id for c in found}  # full-text search finds passages not embedded yet
    settings.CORPUS_DENSE_FIRST_PASSAGES = 0  # never
    corpus.embedded = corpus.passages
    assert not dense_first([corpus], [vector_index.reader(corpus)])


def test_the_embedded_default_never_searches_dense_first(factcheck_project, settings):
    settings.CORPUS_DENSE_FIRST_PASSAGES = 1
    vectors = clustered(12, seed=8)
    corpus, _ = towers(factcheck_project, vectors)
    assert dense_first([corpus], [vector_index.reader(corpus)]) == (connection.vendor == "postgresql")


CLAIMS = [
    "The Eiffel Tower was completed in 1889.",
    "Marie Curie won the Nobel Prize in Chemistry.",
    "Bananas are a good source of potassium.",
]


def test_on_a_small_corpus_dense_first_ranks_as_full_text_search_does(corpus, factcheck_project, settings, monkeypatch):
    """Where the dense side's candidates are all of a corpus, the new path ranks the same evidence."""
    while embed_next_batch(corpus.id, size=4):
        pass
    search = corpus_search(factcheck_project)
    queries = {claim: [claim, " ".join(claim.split()[:3]) + "?"] for claim in CLAIMS}
    vectors = dict(zip([q for qs in queries.values() for q in qs], embed([q for qs in queries.values() for q in qs])))

    def ranked():
        return [
            [
                (r.passage_id, round(r.score, 5))
                for r in rank_candidates(claim, search_queries(search, qs, vectors), claim_vector=vectors[claim])
            ]
            for claim, qs in queries.items()
        ]

    settings.CORPUS_DENSE_FIRST_PASSAGES = 0
    before = ranked()
    settings.CORPUS_DENSE_FIRST_PASSAGES = 1
    calls = []
    original = corpus_search_module.rare_term_search
    monkeypatch.setattr(
        corpus_search_module, "rare_term_search", lambda *a, **kw: calls.append(a) or original(*a, **kw)
    )
    assert ranked() == before
    assert len(calls) == (len(CLAIMS) if connection.vendor == "postgresql" else 0)
    tops = [Passage.objects.get(id=r[0][0]).text for r in before]
    assert [words in top for words, top in zip(("completed in March 1889", "Chemistry", "potassium"), tops)] == [
        True
    ] * 3
