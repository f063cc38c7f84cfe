"""Evidence search from the step-2 page: the passages one typed query finds in the project's
corpora and, where configured, on the web, ranked as pre-annotation ranks a claim's evidence.

The annotator's query is what is ranked against (they typed what they look for); the claim
being checked is no part of the ranking, so a query about one detail is not drowned by the
claim's other words.
"""

from __future__ import annotations

from pipeline.factcheck_step2 import EmbedFn, SearchFn, embedded_web_candidates
from pipeline.retrieval import CANDIDATES_PER_QUERY, rank_candidates
from pipeline.websearch import WebSearchConfig

RESULTS = 10


def search_passages(
    query: str,
    *,
    search: SearchFn | None = None,
    web: WebSearchConfig | None = None,
    embed: EmbedFn | None = None,
    top_k: int = RESULTS,
    passage_size: int | None = None,
    passage_stride: int | None = None,
) -> dict:
    """``{"evidence": [ranked passage dicts], "problems": [...]}`` for one query."""
    query = " ".join(query.split())
    problems: list[str] = []
    vector = embed([query])[0] if embed is not None else None
    candidates = list(search(query, vector, CANDIDATES_PER_QUERY)) if search is not None else []
    if web is not None and web.is_configured:
        split = {k: v for k, v in (("size", passage_size), ("stride", passage_stride)) if v}
        found = embedded_web_candidates(web, [query], embed, **split)
        problems.extend(found.problems)
        candidates.extend(found.candidates)
    elif search is None:
        problems.append("no evidence source is configured: the project has no corpus and no web search API")
    ranked = rank_candidates(query, candidates, claim_vector=vector, top_k=top_k)
    for passage in ranked:
        passage.query = query
    return {"evidence": [p.to_dict() for p in ranked], "problems": problems}
