"""Searching a project's corpora (reads): the search function step-2 retrieval is given.

Lexical candidates come from PostgreSQL full-text search (the GIN-indexed ``search`` vector,
with the query's words OR-ed, ranked by ``ts_rank_cd``) or, on SQLite, from a BM25 index kept
in this process per corpus. Dense candidates come from the corpus's vector index on disk
(``annotation.evidence.vector_index``: written by the embedding worker, which embeds in id order and
records how far it got, ``Corpus.embedded_through``; mapped read-only here, so this process's
memory does not grow with the corpus). Passages the worker has not reached are embedded when
retrieval ranks them and their vectors are kept, so the embedded default, which has no worker,
still ranks with embeddings.

All queries of a claim are searched together (``search.many``): one pass over the vectors for
all of them, on a thread of its own while PostgreSQL runs one statement for all their full-text
searches (with the text of the passages found), then one for the text of the passages only the
dense scan found. Candidates' vectors come from the mapped index, not the database.

At a large corpus (``CORPUS_DENSE_FIRST_PASSAGES``, PostgreSQL, every passage in a vector index:
``dense_first``) the vector index carries the first pass and full-text search is bounded to the
passages of rare lexemes (``rare_term_search``), since searching every query word of a million
passages took seconds a claim (benchmarks/README.md, "Evidence at scale"). Below it, both
sides search in full, as before.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction

from annotation.evidence import vector_index
from annotation.models import Corpus, Passage, Project

if TYPE_CHECKING:
    import numpy as np

_lock = threading.Lock()


@dataclass
class _Lexical:
    passages: int
    ids: list[int]
    index: object


_lexical: dict[int, _Lexical] = {}


def searchable_corpora(project: Project) -> list[Corpus]:
    return [c for c in project.corpora.order_by("id") if c.searchable]


def forget_vectors(corpus_id: int) -> None:
    """Drop this process's view of a corpus's vector index (after it was cleared for re-embedding)."""
    vector_index.forget(corpus_id)


def _readers(corpora: list[Corpus]) -> list[vector_index.Reader]:
    return [r for r in (vector_index.reader(corpus) for corpus in corpora) if r is not None]


def _tsquery_literal(lexemes: list[str], operator: str) -> str:
    return f" {operator} ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


# A query of frequent words only (all of them AND-ed) can match most of a corpus, and ranking
# every match costs more than the rest of the search (benchmarks/README.md, `evidence_scale.py`).
# Only this many of its matches are ranked (the first found, in table order): such a query tells
# little apart lexically, and the dense side searches it in full.
COMMON_QUERY_RANKED = 2000
# Defaults of the settings of the same names with CORPUS_ before them (config/settings.py,
# docs/scaling.md): from this many passages in the corpora searched, the dense index carries the
# first pass (``dense_first``), and full-text search only adds the passages of lexemes found in
# at most RARE_TERM_PASSAGES passages.
DENSE_FIRST_PASSAGES = 500_000
RARE_TERM_PASSAGES = 200

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
# At a large corpus (``dense_first``): the vector index carries the first pass, and full-text
# search only adds passages holding a query's rare lexemes (each in at most ``rare`` passages of
# the corpora searched: names, numbers, dates the dense side may miss). Each distinct lexeme of
# the claim's queries that is not frequent is probed once (its first ``rare`` + 1 matches read:
# an index scan with a LIMIT, not a count of its posting list); those under the bound are
# OR-ed per query and the passages the probes found ranked (read again by primary key), so at
# most ``rare`` times the claim's rare lexemes are ranked, whatever the corpus's size. The
# candidates' own ranking (BM25 against the claim, and the cosine:
# ``pipeline.retrieval.rank_candidates``) re-scores the dense candidates lexically: they need no
# full-text statement of their own.
_RARE_SEARCH = r"""
WITH q AS MATERIALIZED (
    SELECT n - 1 AS n, tsvector_to_array(to_tsvector('english', t)) AS lexemes
    FROM unnest(%(queries)s::text[]) WITH ORDINALITY AS x(t, n)
), probes AS MATERIALIZED (
    SELECT d.l, m.ids FROM (
        SELECT DISTINCT l FROM q CROSS JOIN LATERAL unnest(q.lexemes) AS l
        WHERE l <> ALL(%(frequent)s::text[]) AND l <> ALL(%(not_rare)s::text[])
    ) AS d CROSS JOIN LATERAL (
        SELECT ARRAY(
            SELECT p.id FROM annotation_passage p
            WHERE p.corpus_id = ANY(%(corpora)s)
              AND p.search @@ CAST('''' || replace(replace(d.l, '\', '\\'), '''', '''''') || '''' AS tsquery)
            LIMIT %(rare)s + 1) AS ids
    ) AS m
), probed AS MATERIALIZED (
    SELECT l, ids FROM probes WHERE cardinality(ids) <= %(rare)s
), tsq AS MATERIALIZED (
    SELECT q.n, CAST(string_agg('''' || replace(replace(probed.l, '\', '\\'), '''', '''''') || '''', ' | ') AS tsquery)
           AS query
    FROM q JOIN probed ON probed.l = ANY(q.lexemes)
    GROUP BY q.n
), hits AS MATERIALIZED (
    SELECT tsq.n, h.id, h.rank FROM tsq CROSS JOIN LATERAL (
        SELECT p.id, ts_rank_cd(p.search, tsq.query) AS rank FROM annotation_passage p
        WHERE p.id IN (SELECT unnest(probed.ids) FROM q JOIN probed ON probed.l = ANY(q.lexemes) WHERE q.n = tsq.n)
        ORDER BY rank DESC, p.id LIMIT %(k)s) AS h
)
"""
_HITS = "SELECT n, id, rank FROM hits"
# Every (query, passage) hit with what a candidate shows of the passage, and where it sits.
_HITS_AND_TEXT = """
SELECT h.n, p.id, h.rank, p.corpus_id, p.document, p.position, p.title, p.url, p.text
FROM hits h JOIN annotation_passage p ON p.id = h.id
"""
_ROW_FIELDS = ("id", "corpus_id", "document", "position", "title", "url", "text")


def _frequent(corpora: list[Corpus]) -> list[str]:
    return sorted(set.intersection(*(set(c.frequent_terms) for c in corpora)))


# The lexemes a rare-term search probed and found in more than the bound of passages (rows of
# query number -1): remembered (``_not_rare``), so that the next claims do not probe them again.
_OVER_BOUND = "\nUNION ALL SELECT -1, NULL, NULL{nulls}, l FROM probes WHERE cardinality(ids) > %(rare)s"


def _run_search(statement: str, params: dict, queries: list[str], with_text: bool, over: list | None = None):
    """Run a search statement; with ``over`` (a rare-term search), the lexemes probed over the
    bound are appended to it."""
    found: list[list[tuple[int, float]]] = [[] for _ in queries]
    rows = {} if with_text else None
    tail = _HITS_AND_TEXT if with_text else _HITS
    if over is not None:
        tail = (tail if with_text else "SELECT n, id, rank, NULL FROM hits") + _OVER_BOUND.format(
            nulls=", NULL, NULL, NULL, NULL, NULL" if with_text else ""
        )
    with connection.cursor() as cursor:
        cursor.execute(statement + tail, params)
        for number, pid, rank, *row in cursor.fetchall():
            if number < 0:
                over.append(row[-1])
                continue
            found[number].append((pid, float(rank)))
            if rows is not None:
                rows[pid] = tuple(row)
    for hits in found:
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return found, rows


# {(bound, ((corpus id, passages, imported at), ...)): lexemes found in more than ``bound`` of those passages}.
# Probing such a lexeme reads bound + 1 rows of the table (most of a claim's statement at a
# million passages), and finds it over the bound again while the corpora hold the same passages: it is
# left out as a frequent lexeme is. Keyed by the corpora's passage counts and import times, so a
# corpus imported again or grown probes afresh; at most NOT_RARE_REMEMBERED lexemes a key (then emptied).
_not_rare: dict[tuple, set[str]] = {}
NOT_RARE_REMEMBERED = 100_000


def _not_rare_key(corpora: list[Corpus], bound: int) -> tuple:
    return (bound, tuple(sorted((c.id, c.passages, str(c.imported_at)) for c in corpora)))


def forget_not_rare() -> None:
    with _lock:
        _not_rare.clear()


def rare_term_search(corpora: list[Corpus], queries: list[str], k: int, with_text: bool = False):
    """As ``_search_postgresql``, but only passages holding a query's rare lexemes (each in at
    most ``CORPUS_RARE_TERM_PASSAGES`` passages of ``corpora``) are candidates: the bounded
    lexical pass of a dense-first search (``_RARE_SEARCH``). Lexemes an earlier search of the same
    corpora found over the bound are not probed again (``_not_rare``)."""
    bound = int(getattr(settings, "CORPUS_RARE_TERM_PASSAGES", RARE_TERM_PASSAGES))
    key = _not_rare_key(corpora, bound)
    with _lock:
        known = sorted(_not_rare.get(key, ()))
    params = {
        "frequent": _frequent(corpora),
        "not_rare": known,
        "queries": list(queries),
        "corpora": [c.id for c in corpora],
        "k": k,
        "rare": bound,
    }
    over: list[str] = []
    result = _run_search(_RARE_SEARCH, params, queries, with_text, over)
    if over:
        with _lock:
            remembered = _not_rare.setdefault(key, set())
            if len(remembered) + len(over) > NOT_RARE_REMEMBERED:
                remembered.clear()
            remembered.update(over)
    return result


def dense_first(corpora: list[Corpus], readers: list[vector_index.Reader]) -> bool:
    """Whether the vector index carries the first pass: on PostgreSQL, when the corpora searched
    hold ``CORPUS_DENSE_FIRST_PASSAGES`` passages or more (0: never) and every one of them is in
    a vector index (else full-text search must still find the passages not embedded yet)."""
    threshold = int(getattr(settings, "CORPUS_DENSE_FIRST_PASSAGES", DENSE_FIRST_PASSAGES))
    if connection.vendor != "postgresql" or threshold <= 0 or sum(c.passages for c in corpora) < threshold:
        return False
    indexed = {reader.corpus_id: reader.rows for reader in readers}
    return all(c.embedded >= c.passages and indexed.get(c.id, 0) >= c.passages for c in corpora)


def _search_postgresql(corpora: list[Corpus], queries: list[str], k: int, with_text: bool = False):
    """(the best ``k`` (passage id, ts_rank_cd) of each query, best first; with ``with_text``,
    {id: (corpus, document, position, title, url, text)} of those passages, else None), in one
    round trip.

    Candidates are passages with any of a query's lexemes (OR: a passage with most, not all, of
    a claim's words is still a candidate), leaving out lexemes frequent in every corpus searched:
    with them, most of a large corpus matches and ranking it all takes most of a second. Only
    when every lexeme is frequent, passages with all of them (AND) instead, at most
    ``COMMON_QUERY_RANKED`` of them ranked."""
    params = {
        "frequent": _frequent(corpora),
        "queries": list(queries),
        "corpora": [c.id for c in corpora],
        "k": k,
        "common_limit": COMMON_QUERY_RANKED,
    }
    return _run_search(_SEARCH, params, queries, with_text)


def _lexical_in_memory(corpus: Corpus, query: str, k: int) -> list[tuple[int, float]]:
    # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.retrieval import (
        LexicalIndex,  # loads NLTK and scikit-learn: kept out of web start-up
    )

    with _lock:
        cached = _lexical.get(corpus.id)
        if cached is None or cached.passages != corpus.passages:
            rows = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", "title", "text"))
            cached = _Lexical(
                corpus.passages,
                [r[0] for r in rows],
                LexicalIndex([f"{title} {text}" for _, title, text in rows]),
            )
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


def _dense_scan(readers: list[vector_index.Reader], query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    hits: list[list[tuple[int, float]]] = [[] for _ in range(len(query_vectors))]
    for reader in readers:
        for number, found in enumerate(reader.search(query_vectors, k)):
            hits[number].extend(found)
    if len(readers) > 1:
        hits = [sorted(h, key=lambda hit: -hit[1])[:k] for h in hits]
    return hits


def dense_hits_many(corpora: list[Corpus], query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """(passage id, cosine) of the ``k`` nearest passages to each row of ``query_vectors``."""
    import numpy as np  # numpy: web workers start without it

    return _dense_scan(_readers(corpora), np.asarray(query_vectors, dtype=np.float32), k)


_scanner: ThreadPoolExecutor | None = None


def _scan_in_background(readers: list[vector_index.Reader], query_vectors: np.ndarray, k: int) -> Future:
    """The dense scan on a thread of its own (numpy lets go of the GIL), so that it runs while
    PostgreSQL runs the full-text search: on two cores they overlap instead of adding up."""
    global _scanner
    with _lock:
        if _scanner is None:
            _scanner = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dense-scan")
    return _scanner.submit(_dense_scan, readers, query_vectors, k)


# A prewarm's full-text statement is cut off after this long (it only warms PostgreSQL's pages).
PREWARM_STATEMENT_TIMEOUT_MS = 2000


def warm_dense(reader: vector_index.Reader) -> int:
    """One throwaway dense search of ``reader`` (its first passage's vector as the query), on the
    scan thread the searches use: faiss's first search (the coarse quantizer, the lists' pages) and
    the thread are paid here, not by the first search (``annotation.evidence.prewarm``). Hits found."""
    if not reader.rows:
        return 0
    query = reader.vectors.read(0, 1)
    return len(_scan_in_background([reader], query, 50).result()[0])


def warm_full_text(corpus: Corpus, reader: vector_index.Reader | None = None) -> int:
    """The full-text statement a search of ``corpus`` alone would run, once, on the words of its
    first passage, cut off after ``PREWARM_STATEMENT_TIMEOUT_MS`` (PostgreSQL only: its pages of the
    GIN index and the table read before the first search). Hits found."""
    first = reader.ids.read(0, 1) if reader is not None and reader.rows else []
    rows = (
        Passage.objects.filter(pk=int(first[0])) if len(first) else Passage.objects.filter(corpus=corpus).order_by("id")
    )
    text = rows.values_list("text", flat=True).first() or ""
    query = " ".join(text.split()[:20])
    if not query:
        return 0
    search = rare_term_search if reader is not None and dense_first([corpus], [reader]) else _search_postgresql
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL statement_timeout = %s", [int(PREWARM_STATEMENT_TIMEOUT_MS)])
        found, _ = search([corpus], [query], 50, with_text=True)
    return len(found[0])


def dense_hits(corpora: list[Corpus], query_vector, k: int) -> list[tuple[int, float]]:
    import numpy as np  # numpy: web workers start without it

    return dense_hits_many(corpora, np.asarray(query_vector, dtype=np.float32)[None, :], k)[0]


def _indexed_vectors(readers: list[vector_index.Reader], passage_ids: list[int]) -> dict:
    """{passage id: vector} of the passages the corpora's indexes hold (read from the mapped files)."""
    import numpy as np  # numpy: web workers start without it

    found = {}
    wanted = np.asarray(passage_ids, dtype=np.int64)
    for reader in readers:
        rows = reader.row_of(wanted)
        for pid, row in zip(passage_ids, rows):
            if row >= 0 and pid not in found:
                found[pid] = np.array(reader.vectors[row])
    return found


def _passage_rows(ids: set[int]):
    """(id, corpus, document, position, title, url, text) of these passages. On PostgreSQL with the
    ids as one array, not a placeholder each: one parameter for PostgreSQL to parse and plan,
    and no statement text to build here, whatever the number of candidates."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {', '.join(_ROW_FIELDS)} FROM {Passage._meta.db_table} WHERE id = ANY(%s)", [sorted(ids)]
            )
            return cursor.fetchall()
    return Passage.objects.filter(id__in=ids).order_by().values_list(*_ROW_FIELDS)


def corpus_search(project: Project, *, embed_missing: bool = True):
    """A ``pipeline.factcheck_step2.SearchFn`` over the project's searchable corpora, or None
    when it has none. ``embed_missing``: embed (and store) candidates that have no vector yet.
    Its ``many(queries, vectors, k)`` searches several queries at once (one list per query)."""
    import numpy as np  # numpy: web workers start without it

    corpora = searchable_corpora(project)
    if not corpora:
        return None

    def many(queries, query_vectors, k: int):
        from pipeline.retrieval import (  # loads NLTK and scikit-learn: kept out of web start-up
            Candidate,
            embed,
        )

        queries = list(queries)
        vectors = list(query_vectors) if query_vectors is not None else [None] * len(queries)
        with_vector = [number for number, vector in enumerate(vectors) if vector is not None]
        scan = None
        readers = _readers(corpora) if with_vector else []  # here: a rebuild may read the database
        if with_vector:
            scan = _scan_in_background(
                readers,
                np.stack([np.asarray(vectors[n], dtype=np.float32) for n in with_vector]),
                k,
            )
        searched = [n for n, query in enumerate(queries) if query.strip()]
        lexical: list[list[tuple[int, float]]] = [[] for _ in queries]
        rows: dict[int, tuple] = {}
        if connection.vendor == "postgresql" and searched:
            # With the text of its hits: only the columns shown (the vectors of embedded passages
            # are in this process already). At a large corpus whose queries all have vectors, the
            # dense scan carries the first pass and full-text search is bounded (rare lexemes).
            lexical_search = (
                rare_term_search
                if set(searched) <= set(with_vector) and dense_first(corpora, readers)
                else _search_postgresql
            )
            found, rows = lexical_search(corpora, [queries[n] for n in searched], k, with_text=True)
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
            rows.update((row[0], row[1:]) for row in _passage_rows(set(wanted)))
        # In the passages' own order (Passage.Meta: corpus, newest first, document, position),
        # which is the order candidates are ranked from on ties.
        rows = {
            pid: row[3:] for pid, row in sorted(rows.items(), key=lambda item: (-item[1][0], item[1][1], item[1][2]))
        }
        hits = [dict(found) for found in lexical]
        for number, found in enumerate(dense):
            for pid, score in found:
                hits[number].setdefault(pid, score)
        indexed = _indexed_vectors(readers or _readers(corpora), list(rows))
        vector_of = {pid: indexed.get(pid) for pid in rows}
        uncached = [pid for pid, vector in vector_of.items() if vector is None]
        if uncached:  # embedded past embedded_through (by retrieval), or not embedded yet
            for pid, stored in Passage.objects.filter(id__in=uncached, embedding__isnull=False).values_list(
                "id", "embedding"
            ):
                vector_of[pid] = np.frombuffer(bytes(stored), dtype=np.float32)
        missing = [pid for pid in rows if vector_of[pid] is None]
        if missing and with_vector and embed_missing:
            fresh = embed([rows[pid][2] for pid in missing])
            Passage.objects.bulk_update(
                [Passage(id=pid, embedding=v.tobytes()) for pid, v in zip(missing, fresh)],
                ["embedding"],
            )
            vector_of.update(zip(missing, fresh))
        return [
            [
                Candidate(
                    text=text,
                    url=url,
                    title=title,
                    source="corpus",
                    query=query,
                    passage_id=pid,
                    vector=vector_of[pid],
                )
                for pid, (title, url, text) in rows.items()
                if pid in found
            ]
            for query, found in zip(queries, hits)
        ]

    def search(query: str, query_vector, k: int):
        return many([query], None if query_vector is None else [query_vector], k)[0]

    search.many = many
    return search
