"""Factcheck-Bench step 2's content (``precompute``): the consolidated step-1 claims that step 2
verifies (``checkworthy_claims``), each with its evidence passages: ``{"claims": [{"sentence",
"claim", "text", "queries", "evidence": [{"text", "url", "title", "source", "query", "rank",
"score", "lexical_score", "embedding_score", "passage_id", optionally "stance_hint",
"nul_offsets"}], "problems"}]}``. Items imported from the released file carry their released
passages (``RELEASED_EVIDENCE_KEY`` in the item's metadata), used instead of retrieval for the
claims they match. The annotators' answers on this content: ``step2.py``.
"""

from .. import claims as claim_text

# Item metadata key of the released evidence an import carries for step 2:
# {"sentences": [{"claims": [{"text": claim, "evidence": [passage, ...]}]}]}, one entry per
# released sentence and claim, passages in the content's evidence shape.
RELEASED_EVIDENCE_KEY = "factcheck_bench_evidence"


def checkworthy_claims(step1_gold: dict) -> list[dict]:
    """The consolidated factual claims of checkworthy sentences: what step 2 verifies."""
    return [
        {"sentence": s_index, "claim": c_index, "text": claim["text"]}
        for s_index, sentence in enumerate(step1_gold.get("sentences", []))
        if sentence.get("checkworthy") == "yes"
        for c_index, claim in enumerate(sentence.get("claims", []))
        if claim.get("category") == "factual"
    ]


def strip_nuls(text: str) -> tuple[str, list[int]]:
    """Text without U+0000 (PostgreSQL cannot store it) and where the NULs were."""
    if "\x00" not in text:  # nearly every passage: a C-speed search instead of a loop per character
        return text, []
    offsets = [i for i, c in enumerate(text) if c == "\x00"]
    return (text.replace("\x00", ""), offsets) if offsets else (text, [])


def restore_nuls(text: str, offsets: list[int]) -> str:
    for offset in offsets:
        text = text[:offset] + "\x00" + text[offset:]
    return text


def released_passage(text: str, url: str, rank: int) -> dict:
    """A released auto_evidence passage in the content's evidence shape."""
    stored, offsets = strip_nuls(text)
    passage = {
        "text": stored,
        "url": url,
        "title": "",
        "source": "factcheck-bench",
        "query": "",
        "rank": rank,
        "score": None,
        "lexical_score": None,
        "embedding_score": None,
        "passage_id": None,
    }
    if offsets:
        passage["nul_offsets"] = offsets
    return passage


def retrieve_evidence(claims: list[dict], settings: dict, search) -> dict:
    """Step-2 content: each checkworthy claim with its ranked evidence (``pipeline.factcheck_step2``).

    Embeddings are only loaded where there is something to rank; ``settings["web_search"]``
    (base_url, api_key, timeout…) adds the web, ``settings["llm"]`` LLM queries and stance hints.
    """
    from pipeline.factcheck_step2 import (  # loads NLTK and scikit-learn: kept out of web start-up
        ClaimToCheck,
        suggest_step2,
    )

    # loads the openai client: only where an LLM or search API is called
    from pipeline.llm import LLMConfig

    # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.retrieval import embed

    # loads the openai client: only where an LLM or search API is called
    from pipeline.websearch import WebSearchConfig

    web = WebSearchConfig.from_env(settings.get("web_search"))
    sources = search is not None or web.is_configured
    passages = settings.get("passages") or {}
    result = suggest_step2(
        [ClaimToCheck(f"{c['sentence']}/{c['claim']}", c["text"]) for c in claims],
        search=search,
        web=web,
        llm=LLMConfig.from_env(settings.get("llm")),
        embed=embed if sources and settings.get("embeddings", True) else None,
        passage_size=passages.get("sentences"),
        passage_stride=passages.get("stride"),
    )
    for claim, found in zip(claims, result["claims"]):
        claim.update(queries=found["queries"], evidence=found["evidence"], problems=found["problems"])
    return {
        "content": {"claims": claims},
        "suggestion": None,
        "provenance": {"evidence": {"sources": result["sources"]}},
    }


def precompute(previous_gold: dict | None, settings: dict, evidence_search, item_metadata: dict | None) -> dict:
    """Step-2 content. Claims the item's released evidence covers (same sentence, same text up to
    whitespace) take the released passages; only the others are retrieved."""
    claims = checkworthy_claims(previous_gold or {})
    released = (item_metadata or {}).get(RELEASED_EVIDENCE_KEY)
    if not isinstance(released, dict):
        return retrieve_evidence(claims, settings, evidence_search() if evidence_search else None)
    by_text = {}
    for s_index, sentence in enumerate(released.get("sentences", [])):
        for claim in sentence.get("claims", []):
            by_text.setdefault((s_index, claim_text.normalise(claim["text"])), claim["evidence"])
    missing = []
    for claim in claims:
        evidence = by_text.get((claim["sentence"], claim_text.normalise(claim["text"])))
        if evidence is None:
            missing.append(claim)
        else:
            claim.update(queries=[], evidence=[dict(p) for p in evidence], problems=[])
    sources = ["factcheck-bench"] if len(missing) < len(claims) else []
    if missing:
        retrieved = retrieve_evidence(missing, settings, evidence_search() if evidence_search else None)
        sources += [s for s in retrieved["provenance"]["evidence"]["sources"] if s not in sources]
    return {
        "content": {"claims": claims},
        "suggestion": None,
        "provenance": {"evidence": {"sources": sources}},
    }
