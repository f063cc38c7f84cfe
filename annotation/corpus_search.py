"""Searching a project's corpora (reads): the search function step-2 retrieval is given.

Lexical candidates come from PostgreSQL full-text search (the GIN-indexed ``search`` vector,
with the query's words OR-ed, ranked by ``ts_rank_cd``) or, on SQLite, from a BM25 index kept
in this process per corpus. Dense candidates come from a scan of the passages' embeddings,
loaded into this process once and extended as the embedding worker fills in more (it embeds in
id order and records how far it got, ``Corpus.embedded_through``). Passages the worker has not reached
are embedded when retrieval ranks them and their vectors are kept, so the embedded default,
which has no worker, still ranks with embeddings.
"""
import threading
from dataclasses import dataclass, field

import numpy as np
from django.db import connection

from annotation.models import Corpus, Passage, Project

_lock = threading.Lock()


@dataclass
class _Vectors:
    """The embedded passages of one corpus in this process."""

    ids: list[int] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 384), dtype=np.float32))
    row_of: dict[int, int] = field(default_factory=dict)
    last_id: int = 0


@dataclass
class _Lexical:
    passages: int
    ids: list[int]
    index: object


_vectors: dict[int, _Vectors] = {}
_lexical: dict[int, _Lexical] = {}


def searchable_corpora(project: Project) -> list[Corpus]:
    return [c for c in project.corpora.order_by("id") if c.searchable]


def _refresh_vectors(corpus: Corpus) -> _Vectors:
    """The corpus's vectors up to ``embedded_through``, loading only the rows new since last time."""
    with _lock:
        cached = _vectors.setdefault(corpus.id, _Vectors())
        if corpus.embedded_through <= cached.last_id:
            return cached
        rows = list(Passage.objects.filter(corpus_id=corpus.id, embedding__isnull=False, id__gt=cached.last_id,
                                           id__lte=corpus.embedded_through).order_by("id").values_list("id", "embedding"))
        if rows:
            block = np.frombuffer(b"".join(bytes(v) for _, v in rows), dtype=np.float32).reshape(len(rows), -1)
            start = len(cached.ids)
            cached.matrix = np.vstack([cached.matrix, block]) if start else block.copy()
            for offset, (pid, _) in enumerate(rows):
                cached.row_of[pid] = start + offset
                cached.ids.append(pid)
        cached.last_id = corpus.embedded_through
        return cached


def _tsquery_literal(lexemes: list[str], operator: str) -> str:
    return f" {operator} ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


def _lexical_postgresql(corpora: list[Corpus], query: str, k: int) -> list[tuple[int, float]]:
    """Passages with any of the query's lexemes (OR: a passage with most, not all, of a claim's
    words is still a candidate), leaving out lexemes frequent in every corpus searched: with
    them, most of a large corpus matches and ranking it all takes most of a second. Only when
    every lexeme is frequent, passages with all of them (AND) instead."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [query])
        lexemes = cursor.fetchone()[0] or []
        frequent = set.intersection(*(set(c.frequent_terms) for c in corpora))
        rare = [lexeme for lexeme in lexemes if lexeme not in frequent]
        if not lexemes:
            return []
        tsquery = _tsquery_literal(rare, "|") if rare else _tsquery_literal(lexemes, "&")
        cursor.execute(
            """SELECT p.id, ts_rank_cd(p.search, CAST(%s AS tsquery)) AS rank FROM annotation_passage p
               WHERE p.corpus_id = ANY(%s) AND p.search @@ CAST(%s AS tsquery)
               ORDER BY rank DESC, p.id LIMIT %s""",
            [tsquery, [c.id for c in corpora], tsquery, k],
        )
        return [(pid, float(rank)) for pid, rank in cursor.fetchall()]


def _lexical_in_memory(corpus: Corpus, query: str, k: int) -> list[tuple[int, float]]:
    from pipeline.retrieval import LexicalIndex

    with _lock:
        cached = _lexical.get(corpus.id)
        if cached is None or cached.passages != corpus.passages:
            rows = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", "title", "text"))
            cached = _Lexical(corpus.passages, [r[0] for r in rows],
                              LexicalIndex([f"{title} {text}" for _, title, text in rows]))
            _lexical[corpus.id] = cached
    return [(cached.ids[number], score) for number, score in cached.index.search(query, k)]


def lexical_hits(corpora: list[Corpus], query: str, k: int) -> list[tuple[int, float]]:
    if not corpora or not query.strip():
        return []
    if connection.vendor == "postgresql":
        return _lexical_postgresql(corpora, query, k)
    hits = [hit for corpus in corpora for hit in _lexical_in_memory(corpus, query, k)]
    return sorted(hits, key=lambda hit: -hit[1])[:k]


def dense_hits(corpora: list[Corpus], query_vector, k: int) -> list[tuple[int, float]]:
    from pipeline.retrieval import dense_search

    hits = []
    for corpus in corpora:
        cached = _refresh_vectors(corpus)
        hits.extend((cached.ids[row], score) for row, score in dense_search(query_vector, cached.matrix, k))
    return sorted(hits, key=lambda hit: -hit[1])[:k]


def corpus_search(project: Project, *, embed_missing: bool = True):
    """A ``pipeline.factcheck_step2.SearchFn`` over the project's searchable corpora, or None
    when it has none. ``embed_missing``: embed (and store) candidates that have no vector yet."""
    corpora = searchable_corpora(project)
    if not corpora:
        return None

    def search(query: str, query_vector, k: int):
        from pipeline.retrieval import Candidate, embed

        hits = dict(lexical_hits(corpora, query, k))
        if query_vector is not None:
            for pid, score in dense_hits(corpora, query_vector, k):
                hits.setdefault(pid, score)
        passages = Passage.objects.filter(id__in=list(hits)).only("id", "corpus_id", "title", "url", "text", "embedding")
        candidates, missing = [], []
        for passage in passages:
            vector = None
            if passage.embedding is not None:
                vector = np.frombuffer(bytes(passage.embedding), dtype=np.float32)
            candidate = Candidate(text=passage.text, url=passage.url, title=passage.title, source="corpus",
                                  query=query, passage_id=passage.id, vector=vector)
            if vector is None and query_vector is not None and embed_missing:
                missing.append(candidate)
            candidates.append(candidate)
        if missing:
            vectors = embed([c.text for c in missing])
            Passage.objects.bulk_update([Passage(id=c.passage_id, embedding=v.tobytes()) for c, v in zip(missing, vectors)],
                                        ["embedding"])
            for candidate, vector in zip(missing, vectors):
                candidate.vector = vector
        return candidates

    return search
