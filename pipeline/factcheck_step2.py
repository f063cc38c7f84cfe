"""Factcheck-Bench step 2 pre-annotation: evidence for each checkworthy claim, with stance hints.

For every claim: queries (``evidence.claim_queries``), candidates from every query out of the
project's corpora (a search function the caller provides, since the corpora live in its
database) and, where configured, from the web, then the fused ranking of
``retrieval.rank_candidates``: the top five passages with text, url, title, query, source, rank
and each score, and a stance hint for each passage. Everything a source could not deliver is
listed under the claim's ``problems`` rather than raised, so one dead web page or an
unreachable model costs that part only.

With a model, the calls are scheduled for a short critical path (the model's latency, not
retrieval, dominates it): every claim's question generation is asked for at once; while the
model thinks, the claims themselves (always the first query) are embedded and searched; a claim
whose questions are in goes first, its questions searched and its evidence ranked, and its
stance calls start right then. One pool of ``llm.concurrency`` workers takes all of the item's
calls, so that bounds them. The search and embedding functions are only called from the calling
thread (a database connection belongs to its thread).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from pipeline.evidence import ClaimQueries, StanceRequest, claim_queries, stance_hints
from pipeline.llm import LLMConfig, shared_client, usable
from pipeline.retrieval import CANDIDATES_PER_QUERY, TOP_K, Candidate, rank_candidates
from pipeline.websearch import WebResult, WebSearchConfig, web_candidates

# (query, its embedding or None, how many) → candidates; a candidate's vector is its stored
# embedding, or None while the corpus is still being embedded. A search function may also have
# ``many(queries, embeddings or None, how many)`` → one candidate list per query, which searches
# a claim's queries together (``annotation.evidence.corpus_search`` has it).
SearchFn = Callable[[str, "np.ndarray | None", int], list[Candidate]]
EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ClaimToCheck:
    key: str  # where the claim sits in the step-1 gold record, e.g. "sentence3/1"
    text: str


def _embed_all(embed: EmbedFn | None, texts: list[str], known: dict | None = None) -> dict[str, np.ndarray]:
    """Embeddings of ``texts`` not in ``known``, in one batch."""
    if embed is None:
        return {}
    unique = [t for t in dict.fromkeys(texts) if not known or t not in known]
    return dict(zip(unique, embed(unique))) if unique else {}


def embedded_web_candidates(
    web: WebSearchConfig, queries: Sequence[str], embed: EmbedFn | None, **split: int
) -> WebResult:
    """The web's passages for ``queries``, each with its embedding when ``embed`` is given."""
    found = web_candidates(web, queries, **split)
    fresh = [c for c in found.candidates if c.vector is None]
    if embed is not None and fresh:
        for candidate, vector in zip(fresh, embed([c.text for c in fresh])):
            candidate.vector = vector
    return found


def search_queries(
    search: SearchFn | None,
    queries: Sequence[str],
    vectors: dict[str, np.ndarray],
    k: int = CANDIDATES_PER_QUERY,
) -> list[Candidate]:
    """The candidates of every query, query by query; in one call when ``search`` has ``many``."""
    if search is None or not queries:
        return []
    many = getattr(search, "many", None)
    if many is None:
        return [c for query in queries for c in search(query, vectors.get(query), k)]
    query_vectors = [vectors.get(query) for query in queries]
    found = many(list(queries), query_vectors if any(v is not None for v in query_vectors) else None, k)
    return [c for candidates in found for c in candidates]


def suggest_step2(
    claims: Sequence[ClaimToCheck],
    *,
    search: SearchFn | None = None,
    web: WebSearchConfig | None = None,
    llm: LLMConfig | None = None,
    embed: EmbedFn | None = None,
    top_k: int = TOP_K,
    passage_size: int | None = None,
    passage_stride: int | None = None,
) -> dict:
    """``{"claims": [{key, claim, queries, evidence, problems}], "sources": [...]}``."""
    web_on = web is not None and web.is_configured
    split = {k: v for k, v in (("size", passage_size), ("stride", passage_stride)) if v}
    results: list[dict | None] = [None] * len(claims)
    pending: list[tuple[dict, list[Future]]] = []
    pool = ThreadPoolExecutor(max_workers=llm.concurrency, thread_name_prefix="step2-llm") if usable(llm) else None

    def finish(number: int, queries: ClaimQueries, vectors: dict, found: list[Candidate]) -> None:
        """Rank one claim's evidence and ask for its stance hints (in the background)."""
        claim, problems = claims[number], []
        candidates = list(found)
        if web_on:
            fetched = embedded_web_candidates(web, queries.queries, embed, **split)
            problems.extend(fetched.problems)
            candidates.extend(fetched.candidates)
        if search is None and not web_on:
            problems.append("no evidence source is configured: add a corpus or a web search API")
        ranked = rank_candidates(claim.text, candidates, claim_vector=vectors.get(claim.text), top_k=top_k)
        if not ranked and not problems:
            problems.append("no passage matched any query")
        result = {
            "key": claim.key,
            "claim": claim.text,
            "queries": queries.to_dict(),
            "evidence": [r.to_dict() for r in ranked],
            "problems": problems,
        }
        results[number] = result
        if pool is not None and ranked:
            pending.append(
                (
                    result,
                    [pool.submit(stance_hints, [StanceRequest(claim.text, r.text)], llm) for r in ranked],
                )
            )

    try:
        if pool is None:
            # Offline queries are known at once: all of them embedded in one batch.
            query_sets = claim_queries([c.text for c in claims], None)
            vectors = _embed_all(embed, [c.text for c in claims] + [q for qs in query_sets for q in qs.queries])
            for number, queries in enumerate(query_sets):
                finish(number, queries, vectors, search_queries(search, queries.queries, vectors))
        else:
            shared_client(llm)  # made once here, not by each of the first calls at the same time
            asked = {pool.submit(claim_queries, [c.text], llm): number for number, c in enumerate(claims)}
            # While the model writes questions: the claims, every claim's first query (as the
            # query lists have it, spaces normalised).
            firsts = [" ".join(c.text.split()) for c in claims]
            vectors = _embed_all(embed, [c.text for c in claims] + [f for f in firsts if f])
            early: dict[int, list[Candidate]] = {}
            arrived: dict[int, ClaimQueries] = {}
            while asked or arrived:
                for future in [f for f in asked if f.done()]:
                    (arrived[asked.pop(future)],) = future.result()
                if arrived:
                    # A claim whose questions are in comes first: its stance calls can start.
                    number = min(arrived)
                    queries = arrived.pop(number)
                    searched = early.pop(number, None)
                    rest = queries.queries if searched is None else [q for q in queries.queries if q != firsts[number]]
                    vectors.update(_embed_all(embed, rest, vectors))
                    finish(
                        number,
                        queries,
                        vectors,
                        (searched or []) + search_queries(search, rest, vectors),
                    )
                elif unsearched := [n for n in asked.values() if n not in early]:
                    number = min(unsearched)
                    early[number] = search_queries(search, [firsts[number]] if firsts[number] else [], vectors)
                else:
                    wait(asked, return_when=FIRST_COMPLETED)
        for result, futures in pending:
            for evidence, future in zip(result["evidence"], futures):
                (hint,) = future.result()
                evidence["stance_hint"] = hint.to_dict() if hint else None
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    sources = (["corpus"] if search is not None else []) + (["web"] if web_on else [])
    return {"claims": results, "sources": sources}
