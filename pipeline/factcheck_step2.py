"""Factcheck-Bench step 2 pre-annotation: evidence for each checkworthy claim, with stance hints.

For every claim: queries (``evidence.claim_queries``), candidates from every query out of the
project's corpora (a search function the caller provides, since the corpora live in its
database) and, where configured, from the web, then the fused ranking of
``retrieval.rank_candidates``: the top five passages with text, url, title, query, source, rank
and each score. Stance hints come last, for all (claim, passage) pairs at once. Everything a
source could not deliver is listed under the claim's ``problems`` rather than raised, so one
dead web page or an unreachable model costs that part only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pipeline.evidence import StanceRequest, claim_queries, stance_hints
from pipeline.llm import LLMConfig, usable
from pipeline.retrieval import CANDIDATES_PER_QUERY, TOP_K, Candidate, rank_candidates
from pipeline.websearch import WebSearchConfig, web_candidates

# (query, its embedding or None, how many) → candidates; a candidate's vector is its stored
# embedding, or None while the corpus is still being embedded.
SearchFn = Callable[[str, "np.ndarray | None", int], list[Candidate]]
EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class ClaimToCheck:
    key: str  # where the claim sits in the step-1 gold record, e.g. "sentence3/1"
    text: str


def _embed_all(embed: EmbedFn | None, texts: list[str]) -> dict[str, np.ndarray]:
    if embed is None or not texts:
        return {}
    unique = list(dict.fromkeys(texts))
    return dict(zip(unique, embed(unique)))


def suggest_step2(claims: Sequence[ClaimToCheck], *, search: SearchFn | None = None,
                  web: WebSearchConfig | None = None, llm: LLMConfig | None = None,
                  embed: EmbedFn | None = None, top_k: int = TOP_K,
                  passage_size: int | None = None, passage_stride: int | None = None) -> dict:
    """``{"claims": [{key, claim, queries, evidence, problems}], "sources": [...]}``."""
    query_sets = claim_queries([c.text for c in claims], llm)
    vectors = _embed_all(embed, [c.text for c in claims] + [q for qs in query_sets for q in qs.queries])
    web_on = web is not None and web.is_configured
    split = {k: v for k, v in (("size", passage_size), ("stride", passage_stride)) if v}

    results = []
    # Stance calls of a claim start as soon as its evidence is ranked, in the background, so the
    # model's latency overlaps the retrieval of the next claims; one call a task, at most
    # ``llm.concurrency`` in flight across all claims.
    stance_pool = ThreadPoolExecutor(max_workers=llm.concurrency, thread_name_prefix="stance") if usable(llm) else None
    pending: list[tuple[dict, list[Future]]] = []
    for claim, queries in zip(claims, query_sets):
        problems: list[str] = []
        candidates: list[Candidate] = []
        for query in queries.queries:
            if search is not None:
                candidates.extend(search(query, vectors.get(query), CANDIDATES_PER_QUERY))
        if web_on:
            found = web_candidates(web, queries.queries, **split)
            problems.extend(found.problems)
            fresh = [c for c in found.candidates if c.vector is None]
            if embed is not None and fresh:
                for candidate, vector in zip(fresh, embed([c.text for c in fresh])):
                    candidate.vector = vector
            candidates.extend(found.candidates)
        if search is None and not web_on:
            problems.append("no evidence source is configured: add a corpus or a web search API")
        ranked = rank_candidates(claim.text, candidates, claim_vector=vectors.get(claim.text), top_k=top_k)
        if not ranked and not problems:
            problems.append("no passage matched any query")
        result = {"key": claim.key, "claim": claim.text, "queries": queries.to_dict(),
                  "evidence": [r.to_dict() for r in ranked], "problems": problems}
        results.append(result)
        if stance_pool is not None and ranked:
            pending.append((result, [stance_pool.submit(stance_hints, [StanceRequest(claim.text, r.text)], llm)
                                     for r in ranked]))

    if stance_pool is not None:
        for result, futures in pending:
            for evidence, future in zip(result["evidence"], futures):
                (hint,) = future.result()
                evidence["stance_hint"] = hint.to_dict() if hint else None
        stance_pool.shutdown()
    sources = (["corpus"] if search is not None else []) + (["web"] if web_on else [])
    return {"claims": results, "sources": sources}
