"""Retrieval quality on the released Factcheck-Bench evidence.

Every released ``auto_evidence`` passage (deduplicated) is pooled into one corpus; each factual
claim with stance labels ranks the whole pool. A passage is relevant to a claim when the
annotators labelled it completely-support, partially-support or refute for that claim.
Reports recall@5, MRR and nDCG@5 for BM25 alone, embeddings alone and the shipped ranking
(``pipeline.retrieval``: both candidate sets, fused scores, near-duplicates and per-page cap).

    python benchmarks/quality/retrieval_quality.py [path/to/factcheck-GPT-benchmark.jsonl]
"""

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline import retrieval  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "factcheck-bench" / "factcheck-GPT-benchmark.jsonl"
RELEVANT = {"completely-support", "partially-support", "refute"}
K = 5


def load(path: Path):
    passages: dict[str, int] = {}
    urls: list[str] = []
    claims = []
    for line in path.open(encoding="utf-8"):
        record = json.loads(line)
        for sentence in record["sentences"].values():
            evidence = sentence.get("auto_evidence") or []
            evidence_urls = sentence.get("auto_evidence_url") or []
            stances = sentence.get("stance_claim_autoEvid") or []
            for i, claim in enumerate(sentence.get("claims") or []):
                passages_i = evidence[i] if i < len(evidence) else []
                for j, text in enumerate(passages_i):
                    text = " ".join(text.split())
                    if text and text not in passages:
                        passages[text] = len(passages)
                        url_list = evidence_urls[i] if i < len(evidence_urls) else []
                        urls.append(url_list[j] if j < len(url_list) else "")
                categories = sentence.get("claim_checkworthiness") or []
                if i >= len(categories) or categories[i] != "factual" or i >= len(stances):
                    continue
                relevant = {
                    passages[" ".join(t.split())]
                    for t, s in zip(passages_i, stances[i])
                    if s in RELEVANT and " ".join(t.split())
                }
                if relevant:
                    claims.append((claim, relevant))
    return list(passages), urls, claims


def scores(ranked: list[int], relevant: set[int]) -> tuple[float, float, float]:
    top = ranked[:K]
    recall = len(relevant & set(top)) / len(relevant)
    rr = next((1 / (rank + 1) for rank, p in enumerate(ranked) if p in relevant), 0.0)
    dcg = sum(1 / math.log2(rank + 2) for rank, p in enumerate(top) if p in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(K, len(relevant))))
    return recall, rr, dcg / ideal


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    passages, urls, claims = load(path)
    print(f"{len(passages)} pooled passages, {len(claims)} factual claims with relevant evidence")

    started = time.perf_counter()
    index = retrieval.LexicalIndex(passages)
    print(f"BM25 index: {time.perf_counter() - started:.2f} s")

    # One cache per embedding backend (EMBEDDING_BACKEND; torch when the chosen one falls back).
    backend = getattr(retrieval.embedding_model(), "backend", "torch")
    print(f"embedding backend: {backend}")
    cache = Path(__file__).resolve().parents[1] / "out" / f"released_evidence_vectors-{backend}.npy"
    if cache.exists() and np.load(cache).shape[0] == len(passages):
        vectors = np.load(cache)
    else:
        started = time.perf_counter()
        vectors = retrieval.embed(passages)
        elapsed = time.perf_counter() - started
        print(f"embeddings: {len(passages)} passages in {elapsed:.1f} s ({len(passages) / elapsed:.1f} passages/s)")
        cache.parent.mkdir(exist_ok=True)
        np.save(cache, vectors)

    totals = {
        "BM25 only": np.zeros(3),
        "embeddings only": np.zeros(3),
        "shipped ranking": np.zeros(3),
    }
    timings = []
    for claim, relevant in claims:
        lexical_ranked = [i for i, _ in index.search(claim, k=len(passages))]
        totals["BM25 only"] += scores(lexical_ranked, relevant)
        claim_vector = retrieval.embed([claim])[0]
        dense_ranked = [i for i, _ in retrieval.dense_search(claim_vector, vectors, k=len(passages))]
        totals["embeddings only"] += scores(dense_ranked, relevant)

        started = time.perf_counter()
        found: dict[int, str] = {}
        for query in retrieval.offline_queries(claim):
            query_vector = claim_vector if query == claim else retrieval.embed([query])[0]
            for i, _ in index.search(query) + retrieval.dense_search(query_vector, vectors):
                found.setdefault(i, query)
        candidates = [
            retrieval.Candidate(text=passages[i], url=urls[i], query=q, passage_id=i, vector=vectors[i])
            for i, q in found.items()
        ]
        retrieval.rank_candidates(claim, candidates, claim_vector=claim_vector)
        timings.append(time.perf_counter() - started)
        # The whole pool in shipped order, for MRR beyond the five an annotator sees.
        ranked = retrieval.rank_candidates(claim, candidates, claim_vector=claim_vector, top_k=len(candidates))
        shipped = [r.passage_id for r in ranked]
        totals["shipped ranking"] += scores(shipped, relevant)

    print(f"\n| method | recall@{K} | MRR | nDCG@{K} |\n| --- | --- | --- | --- |")
    for name, total in totals.items():
        recall, mrr, ndcg = total / len(claims)
        print(f"| {name} | {recall:.3f} | {mrr:.3f} | {ndcg:.3f} |")
    timings.sort()
    print(
        f"\nshipped top 5 per claim (query embedding, candidates, fusion; claim embedding excluded): "
        f"p50 {1000 * timings[len(timings) // 2]:.1f} ms, p95 {1000 * timings[int(len(timings) * 0.95)]:.1f} ms"
    )


if __name__ == "__main__":
    main()
