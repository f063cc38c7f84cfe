"""CPU a claim of embedding its queries and ranking its candidates (no database, no corpus).

Usage: .venv/bin/python benchmarks/ranking_cpu.py [--claims 200] [--code DIR] [--seed 7]

For each of ``--claims`` generated claims (``evidence_scale.sentence``), with 1 query (the claim)
and with 4 (the claim and 3 questions of 4 of its words, as ``corpus_scale.py`` makes them):

- query embedding: ``retrieval.embed(queries)``, one batched call as ``suggest_step2`` does it;
- ranking: ``retrieval.rank_candidates`` over a pool of 50 candidates a query, passages of 5
  generated sentences (about 90 words) cut from 13-sentence documents every 2 sentences, so a
  pool has overlapping windows (near-duplicates) and several passages of one page, as a corpus
  search returns them; each candidate has a random unit vector (the ranking only reads it).

Printed: CPU a claim, p50 / p95 / mean, and the load average. Ranking: ``time.thread_time`` of
the call (it runs on the calling thread alone). Query embedding: ``time.process_time`` (all of
this process's threads) from the call until 20 ms after the ranking, less the ranking's: ONNX
Runtime's threads go on spinning after a call returns, and that CPU is the embedding's, not the
ranking's that ``process_time`` around the ranking would charge it to. ``--code DIR`` imports ``pipeline`` from DIR instead of
this checkout, e.g. main's code for a before/after comparison without touching the work tree::

    mkdir /tmp/before && git archive main | tar -x -C /tmp/before
    .venv/bin/python benchmarks/ranking_cpu.py --code /tmp/before
    .venv/bin/python benchmarks/ranking_cpu.py

Run the two alternately: the CPU a claim moves with the machine's load less than wall time does,
but not nothing (caches, the ONNX threads' waiting).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--code", type=Path, help="import pipeline from this directory (e.g. main's code)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np

    import evidence_scale  # its harness puts this checkout first on the path
    from harness import percentile

    if args.code:
        sys.path.insert(0, str(args.code.resolve()))
    from pipeline import retrieval

    print(f"pipeline from {Path(retrieval.__file__).resolve().parent.parent}", flush=True)
    rng = random.Random(args.seed)
    vectors_rng = np.random.default_rng(args.seed)

    def passages(count: int) -> list[tuple[str, str]]:
        """(url, passage) of whole documents' windows, ``count`` of them."""
        out: list[tuple[str, str]] = []
        while len(out) < count:
            number = rng.randrange(10**9)
            document = " ".join(evidence_scale.sentence(rng) for _ in range(13))
            url = f"https://corpus.example/{number}"
            windows = retrieval.split_passages(document)
            # a search finds some of a document's windows, not all
            out.extend((url, w) for w in windows if rng.random() < 0.5)
        return out[:count]

    def unit(n: int) -> np.ndarray:
        v = vectors_rng.standard_normal((n, retrieval.EMBEDDING_DIMENSIONS)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    claims = [evidence_scale.sentence(rng) for _ in range(args.claims)]
    questions = [[" ".join(rng.sample(c.split(), 4)) + "?" for _ in range(3)] for c in claims]
    retrieval.embed(["warm up the embedding model"])
    retrieval.rank_candidates(claims[0], [retrieval.Candidate(text=claims[0])])

    for label, lists in (
        ("1 query", [[c] for c in claims]),
        ("4 queries", [[c, *q] for c, q in zip(claims, questions)]),
    ):
        pools = []
        for queries in lists:
            found = passages(50 * len(queries))
            # a few passages found by two queries: the pool's ~3 % exact repeats
            found += rng.sample(found, len(found) // 30)
            vectors = unit(len(found))
            pools.append(
                [
                    retrieval.Candidate(
                        text=text, url=url, title=url, query=queries[i % len(queries)], passage_id=i, vector=vectors[i]
                    )
                    for i, (url, text) in enumerate(found)
                ]
            )
        load = [os.getloadavg()[0]]
        embed_cpu, rank_cpu, kept = [], [], 0
        for claim, queries, pool in zip(claims, lists, pools):
            c0 = time.process_time()
            query_vectors = retrieval.embed(queries)
            t0 = time.thread_time()
            ranked = retrieval.rank_candidates(claim, pool, claim_vector=query_vectors[0])
            t1 = time.thread_time()
            time.sleep(0.02)  # ONNX Runtime's threads spinning after the call: counted below
            c1 = time.process_time()
            rank_cpu.append(t1 - t0)
            embed_cpu.append(c1 - c0 - (t1 - t0))
            kept += len(ranked)
        load.append(os.getloadavg()[0])
        for name, values in (("query embedding", embed_cpu), ("ranking", rank_cpu)):
            print(
                f"{label}: {name} CPU a claim p50 {1000 * percentile(values, 0.5):.1f} / p95 "
                f"{1000 * percentile(values, 0.95):.1f} / mean {1000 * sum(values) / len(values):.1f} ms "
                f"({len(values)} claims, load {load[0]:.1f} -> {load[1]:.1f})",
                flush=True,
            )
        print(
            f"{label}: {sum(len(p) for p in pools) / len(pools):.0f} candidates a claim, "
            f"{kept / len(pools):.1f} ranked",
            flush=True,
        )


if __name__ == "__main__":
    main()
