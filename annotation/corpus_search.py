"""Searching a project's corpora (reads): the search function step-2 retrieval is given.

Lexical candidates come from PostgreSQL full-text search (the GIN-indexed ``search`` vector,
with the query's words OR-ed, ranked by ``ts_rank_cd``) or, on SQLite, from a BM25 index kept
in this process per corpus. Dense candidates come from a scan of the passages' embeddings,
loaded into this process once and extended as the embedding worker fills in more (it embeds in
id order and records how far it got, ``Corpus.embedded_through``). Passages the worker has not reached
are embedded when retrieval ranks them and their vectors are kept, so the embedded default,
which has no worker, still ranks with embeddings.

All queries of a claim are searched together (``search.many``): one pass over the vectors for
all of them, on a thread of its own while PostgreSQL runs one statement for all their full-text
searches (with the text of the passages found), then one for the text of the passages only the
dense scan found. Candidates' vectors come from the in-process matrix, not the database.
"""
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

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
    embedded_at: datetime | None = None


@dataclass
class _Lexical:
    passages: int
    ids: list[int]
    index: object


_vectors: dict[int, _Vectors] = {}
_lexical: dict[int, _Lexical] = {}


def searchable_corpora(project: Project) -> list[Corpus]:
    return [c for c in project.corpora.order_by("id") if c.searchable]


def forget_vectors(corpus_id: int) -> None:
    """Drop this process's copy of a corpus's vectors (after they were cleared for re-embedding)."""
    with _lock:
        _vectors.pop(corpus_id, None)


def _stale(corpus: Corpus, cached: _Vectors) -> bool:
    """Whether the cached vectors are no longer the stored ones: the corpus was re-embedded
    (``reembed_corpus`` clears the vectors, ``embedded_through`` and ``embedded_at``) since
    this process loaded them. Costs a query only when the corpus's progress changed."""
    if not cached.ids:
        return False
    if corpus.embedded_through < cached.last_id:
        return True
    if cached.embedded_at is not None and corpus.embedded_at != cached.embedded_at:
        return True
    if corpus.embedded_through == cached.last_id and corpus.embedded_at == cached.embedded_at:
        return False
    # Re-embedding goes in id order, so a re-embedded corpus has a new first vector.
    first = Passage.objects.filter(id=cached.ids[0]).values_list("embedding", flat=True).first()
    return first is None or bytes(first) != cached.matrix[0].tobytes()


def _refresh_vectors(corpus: Corpus) -> _Vectors:
    """The corpus's vectors up to ``embedded_through``, loading only the rows new since last time."""
    with _lock:
        cached = _vectors.setdefault(corpus.id, _Vectors())
        if _stale(corpus, cached):
            cached = _vectors[corpus.id] = _Vectors()
        cached.embedded_at = corpus.embedded_at
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


# A query of frequent words only (all of them AND-ed) can match most of a corpus: "ashash &
# ashashashg" matched 55,000 of 100,000 synthetic passages, and ranking them all took 190 ms.
# Only this many of its matches are ranked (the first found, in table order): such a query tells
# little apart lexically, and the dense side searches it in full.
COMMON_QUERY_RANKED = 2000

# A claim's queries in one statement: each query's lexemes (PostgreSQL's English configuration,
# as the passages' search vectors), its tsquery (as _tsquery_literal builds one: the lexemes not
# frequent in every corpus searched OR-ed, else all of them AND-ed) and its best ``k`` passages
# by ts_rank_cd (LIMIT NULL: all).
_SEARCH = r"""
WITH q AS MATERIALIZED (
    SELECT n, lexemes, ARRAY(SELECT l FROM unnest(lexemes) AS l WHERE l <> ALL(%(frequent)s::text[])) AS rare
    FROM (SELECT n - 1 AS n, tsvector_to_array(to_tsvector('english', t)) AS lexemes
          FROM unnest(%(queries)s::text[]) WITH ORDINALITY AS x(t, n)) AS parsed
    WHERE cardinality(lexemes) > 0
), tsq AS MATERIALIZED (
    SELECT n, cardinality(rare) = 0 AS common, CAST(array_to_string(ARRAY(
               SELECT '''' || replace(replace(l, '\', '\\'), '''', '''''') || ''''
               FROM unnest(CASE WHEN cardinality(rare) > 0 THEN rare ELSE lexemes END) AS l),
           CASE WHEN cardinality(rare) > 0 THEN ' | ' ELSE ' & ' END) AS tsquery) AS query
    FROM q
), hits AS MATERIALIZED (
    SELECT tsq.n, h.id, h.rank FROM tsq CROSS JOIN LATERAL (
        SELECT m.id, ts_rank_cd(m.search, tsq.query) AS rank FROM (
            SELECT p.id, p.search FROM annotation_passage p
            WHERE p.corpus_id = ANY(%(corpora)s) AND p.search @@ tsq.query
            LIMIT CASE WHEN tsq.common THEN %(common_limit)s END) AS m
        ORDER BY rank DESC, m.id LIMIT %(k)s) AS h
)
"""
_HITS = "SELECT n, id, rank FROM hits"
# Every (query, passage) hit with what a candidate shows of the passage, and where it sits.
_HITS_AND_TEXT = """
SELECT h.n, p.id, h.rank, p.corpus_id, p.document, p.position, p.title, p.url, p.text
FROM hits h JOIN annotation_passage p ON p.id = h.id
"""
_ROW_FIELDS = ("id", "corpus_id", "document", "position", "title", "url", "text")


def _search_postgresql(corpora: list[Corpus], queries: list[str], k: int, with_text: bool = False):
    """(the best ``k`` (passage id, ts_rank_cd) of each query, best first; with ``with_text``,
    {id: (corpus, document, position, title, url, text)} of those passages, else None), in one
    round trip.

    Candidates are passages with any of a query's lexemes (OR: a passage with most, not all, of
    a claim's words is still a candidate), leaving out lexemes frequent in every corpus searched:
    with them, most of a large corpus matches and ranking it all takes most of a second. Only
    when every lexeme is frequent, passages with all of them (AND) instead, at most
    ``COMMON_QUERY_RANKED`` of them ranked."""
    frequent = sorted(set.intersection(*(set(c.frequent_terms) for c in corpora)))
    params = {"frequent": frequent, "queries": list(queries), "corpora": [c.id for c in corpora], "k": k,
              "common_limit": COMMON_QUERY_RANKED}
    found: list[list[tuple[int, float]]] = [[] for _ in queries]
    rows = {} if with_text else None
    with connection.cursor() as cursor:
        cursor.execute(_SEARCH + (_HITS_AND_TEXT if with_text else _HITS), params)
        for number, pid, rank, *row in cursor.fetchall():
            found[number].append((pid, float(rank)))
            if rows is not None:
                rows[pid] = tuple(row)
    for hits in found:
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return found, rows


def _lexical_in_memory(corpus: Corpus, query: str, k: int) -> list[tuple[int, float]]:
    from pipeline.retrieval import LexicalIndex  # loads NLTK and scikit-learn: kept out of web start-up

    with _lock:
        cached = _lexical.get(corpus.id)
        if cached is None or cached.passages != corpus.passages:
            rows = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", "title", "text"))
            cached = _Lexical(corpus.passages, [r[0] for r in rows],
                              LexicalIndex([f"{title} {text}" for _, title, text in rows]))
            _lexical[corpus.id] = cached
    return [(cached.ids[number], score) for number, score in cached.index.search(query, k)]


def lexical_hits_many(corpora: list[Corpus], queries: list[str], k: int) -> list[list[tuple[int, float]]]:
    """(passage id, score) of the best ``k`` lexical matches of each query, best first."""
    searched = [q for q in queries if q.strip()]
    if not corpora or not searched:
        return [[] for _ in queries]
    if connection.vendor == "postgresql":
        by_query = dict(zip(searched, _search_postgresql(corpora, searched, k)[0]))
    else:
        by_query = {}
        for query in searched:
            hits = [hit for corpus in corpora for hit in _lexical_in_memory(corpus, query, k)]
            by_query[query] = sorted(hits, key=lambda hit: -hit[1])[:k]
    return [by_query.get(q, []) for q in queries]


def lexical_hits(corpora: list[Corpus], query: str, k: int) -> list[tuple[int, float]]:
    return lexical_hits_many(corpora, [query], k)[0]


def _dense_scan(caches: list[_Vectors], query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    from pipeline.retrieval import dense_search_many  # loads NLTK and scikit-learn: kept out of web start-up

    hits: list[list[tuple[int, float]]] = [[] for _ in range(len(query_vectors))]
    for cached in caches:
        for number, found in enumerate(dense_search_many(query_vectors, cached.matrix, k)):
            hits[number].extend((cached.ids[row], score) for row, score in found)
    if len(caches) > 1:
        hits = [sorted(h, key=lambda hit: -hit[1])[:k] for h in hits]
    return hits


def dense_hits_many(corpora: list[Corpus], query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """(passage id, cosine) of the ``k`` nearest passages to each row of ``query_vectors``."""
    return _dense_scan([_refresh_vectors(corpus) for corpus in corpora], query_vectors, k)


_scanner: ThreadPoolExecutor | None = None


def _scan_in_background(caches: list[_Vectors], query_vectors: np.ndarray, k: int) -> Future:
    """The dense scan on a thread of its own (numpy lets go of the GIL), so that it runs while
    PostgreSQL runs the full-text search: on two cores they overlap instead of adding up."""
    global _scanner
    with _lock:
        if _scanner is None:
            _scanner = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dense-scan")
    return _scanner.submit(_dense_scan, caches, query_vectors, k)


def dense_hits(corpora: list[Corpus], query_vector, k: int) -> list[tuple[int, float]]:
    return dense_hits_many(corpora, np.asarray(query_vector, dtype=np.float32)[None, :], k)[0]


def _cached_vector(corpora: list[Corpus], passage_id: int):
    for corpus in corpora:
        cached = _vectors.get(corpus.id)
        if cached is not None and (row := cached.row_of.get(passage_id)) is not None:
            return cached.matrix[row]
    return None


def corpus_search(project: Project, *, embed_missing: bool = True):
    """A ``pipeline.factcheck_step2.SearchFn`` over the project's searchable corpora, or None
    when it has none. ``embed_missing``: embed (and store) candidates that have no vector yet.
    Its ``many(queries, vectors, k)`` searches several queries at once (one list per query)."""
    corpora = searchable_corpora(project)
    if not corpora:
        return None

    def many(queries, query_vectors, k: int):
        from pipeline.retrieval import Candidate, embed  # loads NLTK and scikit-learn: kept out of web start-up

        queries = list(queries)
        vectors = list(query_vectors) if query_vectors is not None else [None] * len(queries)
        with_vector = [number for number, vector in enumerate(vectors) if vector is not None]
        scan = None
        if with_vector:  # the vectors are refreshed here: the database connection is this thread's
            caches = [_refresh_vectors(corpus) for corpus in corpora]
            scan = _scan_in_background(caches, np.stack([np.asarray(vectors[n], dtype=np.float32)
                                                         for n in with_vector]), k)
        searched = [n for n, query in enumerate(queries) if query.strip()]
        lexical: list[list[tuple[int, float]]] = [[] for _ in queries]
        rows: dict[int, tuple] = {}
        if connection.vendor == "postgresql" and searched:
            # With the text of its hits: only the columns shown (the vectors of embedded passages
            # are in this process already).
            found, rows = _search_postgresql(corpora, [queries[n] for n in searched], k, with_text=True)
            for number, hits_of_query in zip(searched, found):
                lexical[number] = hits_of_query
        elif searched:
            lexical = lexical_hits_many(corpora, queries, k)
        dense: list[list[tuple[int, float]]] = [[] for _ in queries]
        if scan is not None:
            for number, found in zip(with_vector, scan.result()):
                dense[number] = found
        wanted = [pid for found in lexical + dense for pid, _ in found if pid not in rows]
        if wanted:
            rows.update((row[0], row[1:]) for row in Passage.objects.filter(id__in=set(wanted)).order_by()
                        .values_list(*_ROW_FIELDS))
        # In the passages' own order (Passage.Meta: corpus, newest first, document, position),
        # which is the order candidates are ranked from on ties.
        rows = {pid: row[3:] for pid, row in sorted(rows.items(), key=lambda item: (-item[1][0], item[1][1],
                                                                                     item[1][2]))}
        hits = [dict(found) for found in lexical]
        for number, found in enumerate(dense):
            for pid, score in found:
                hits[number].setdefault(pid, score)
        vector_of = {pid: _cached_vector(corpora, pid) for pid in rows}
        uncached = [pid for pid, vector in vector_of.items() if vector is None]
        if uncached:  # embedded past embedded_through (by retrieval), or not embedded yet
            for pid, stored in Passage.objects.filter(id__in=uncached, embedding__isnull=False).values_list(
                    "id", "embedding"):
                vector_of[pid] = np.frombuffer(bytes(stored), dtype=np.float32)
        missing = [pid for pid in rows if vector_of[pid] is None]
        if missing and with_vector and embed_missing:
            fresh = embed([rows[pid][2] for pid in missing])
            Passage.objects.bulk_update([Passage(id=pid, embedding=v.tobytes()) for pid, v in zip(missing, fresh)],
                                        ["embedding"])
            vector_of.update(zip(missing, fresh))
        return [
            [Candidate(text=text, url=url, title=title, source="corpus", query=query, passage_id=pid,
                       vector=vector_of[pid]) for pid, (title, url, text) in rows.items() if pid in found]
            for query, found in zip(queries, hits)
        ]

    def search(query: str, query_vector, k: int):
        return many([query], None if query_vector is None else [query_vector], k)[0]

    search.many = many
    return search
