"""Step-2 evidence retrieval at scale on PostgreSQL: corpus import, embedding rate, retrieval latency.

Usage: .venv/bin/python benchmarks/evidence_scale.py [--passages 100000] [--claims 200] [--embed-sample 512]

It creates its own PostgreSQL database (``workbench_evidence_bench`` on 127.0.0.1:5432, user
postgres), migrates it and drops it at the end. Everything runs on loopback.

1. Corpus import: a generated JSONL corpus of documents of 13 sentences (about 90 words a
   passage, as the released evidence: 87 on average), cut into windows of 5 sentences every 2
   (5 passages a document), written and given PostgreSQL text-search vectors by
   ``evidence.corpora.run_corpus_import`` — the time until the corpus is lexically searchable.
2. Embedding rate: all-MiniLM-L6-v2 on ``--embed-sample`` passages of the corpus (batch 32), in
   passages/s, and what that means for the whole corpus. The rest of the corpus gets random unit
   vectors written straight to the table (then the table is vacuumed, as ``embed_next_batch``
   does after a corpus's last vector), so step 3 can measure retrieval over a fully embedded
   corpus without waiting the better part of an hour.
3. Retrieval + ranking per claim, once embeddings exist, the way ``suggest_step2`` retrieves a
   claim: its queries embedded in one batch, searched together (``factcheck_step2.search_queries``
   over ``corpus_search``: full-text search, a dense scan of every vector, the passages' text)
   and ranked (``rank_candidates``): p50/p95 over ``--claims`` generated claims, first with the
   offline queries (the synthetic claims have one: the claim), then with three more queries as a
   model's questions add. Then the full-text search and the dense scan of one query on their own
   (the first search, which loads the vectors into the process, is reported on its own too).
4. Pre-annotation of one item with 5 claims against a loopback LLM answering in 200 ms (question
   generation and stance hints, at most ``llm.concurrency`` = 8 calls at a time), wall time of
   three runs.

Peak RSS of this process (ru_maxrss) is printed after each step.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402  (and the repository on the path)
    configure_environment,
    create_database,
    django_setup,
    drop_database,
    load_average,
    maxrss_mib,
    migrate,
    percentile,
)

DB = "workbench_evidence_bench"
SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ner",
    "sto",
    "va",
    "rin",
    "del",
    "tor",
    "ash",
    "bel",
    "cu",
    "dra",
    "fen",
    "gal",
    "hu",
)
FILLER = "the of and in to was is for on with as by at from its their".split()


def vocabulary(rng: random.Random, size: int = 30_000) -> list[str]:
    """Pseudo-words; drawn with Zipf-like weights, like the words of real text."""
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


WORDS: list[str] = []
# Zipf weights summed once: ``choices(weights=...)`` sums all 30,000 on every call (hours at a
# million passages); with the sums given it draws the same words.
CUMULATIVE_WEIGHTS: list[float] = []


def sentence(rng: random.Random) -> str:
    if not WORDS:
        WORDS.extend(vocabulary(random.Random(1)))
        CUMULATIVE_WEIGHTS.extend(itertools.accumulate(1 / rank for rank in range(1, len(WORDS) + 1)))
    content = rng.choices(WORDS, cum_weights=CUMULATIVE_WEIGHTS, k=rng.randint(8, 12))
    words = [
        content.pop() if content and rng.random() < 0.55 else rng.choice(FILLER) for _ in range(rng.randint(15, 21))
    ]
    name = rng.choice(WORDS[:2000]).capitalize()
    return f"{name} {' '.join(words)} in {rng.randint(1000, 2020)}."


def write_corpus(path: Path, passages: int, rng: random.Random) -> int:
    """A JSONL corpus of about ``passages`` passages (documents of 13 sentences)."""
    documents = max(1, passages // 5)
    with path.open("w") as file:
        for number in range(documents):
            text = " ".join(sentence(rng) for _ in range(13))
            file.write(
                json.dumps(
                    {
                        "title": f"Document {number}",
                        "url": f"https://corpus.example/{number}",
                        "text": text,
                    }
                )
                + "\n"
            )
    return documents


def main() -> None:
    import logging

    logging.disable(logging.INFO)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--embed-sample", type=int, default=512)
    parser.add_argument("--keep", action="store_true", help="keep the database for a look afterwards")
    args = parser.parse_args()
    rng = random.Random(7)

    configure_environment(DB)
    create_database(DB)
    try:
        django_setup()
        migrate()
        run(args, rng)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(DB)


def run(args, rng: random.Random) -> None:
    import numpy as np
    from django.contrib.auth import get_user_model

    from annotation.evidence.corpora import create_corpus, run_corpus_import, tidy_passages
    from annotation.evidence.corpus_search import corpus_search
    from annotation.models import Corpus, Passage
    from annotation.services.projects import create_project
    from pipeline import retrieval
    from pipeline.factcheck_step2 import search_queries

    admin = get_user_model().objects.create_user("bench", password="x" * 12, is_staff=True)
    project = create_project(name="Evidence bench", kind="factcheck", created_by=admin)

    with tempfile.TemporaryDirectory() as tmp:
        from django.conf import settings

        settings.DATA_DIR = Path(tmp)
        source = Path(tmp) / "corpus.jsonl"
        documents = write_corpus(source, args.passages, rng)
        started = time.perf_counter()
        with source.open("rb") as upload:  # no broker: the import task runs as the corpus is created
            corpus = create_corpus(name="bench", user=admin, upload=upload, projects=[project])
        run_corpus_import(corpus.id)  # a no-op when it has run
        elapsed = time.perf_counter() - started
    corpus = Corpus.objects.get(pk=corpus.id)
    words = statistics.mean(
        len(t.split()) for t in Passage.objects.filter(corpus=corpus).values_list("text", flat=True)[:2000]
    )
    print(
        f"1. corpus import: {documents} documents -> {corpus.passages} passages (mean {words:.0f} words) "
        f"searchable after {elapsed:.1f} s ({corpus.passages / elapsed:.0f} passages/s); peak RSS {maxrss_mib():.0f} MB"
    )

    sample = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", "text")[: args.embed_sample])
    retrieval.embed(["warm up"])
    started = time.perf_counter()
    vectors = retrieval.embed([text for _, text in sample])
    rate = len(sample) / (time.perf_counter() - started)
    print(
        f"2. embedding: {rate:.1f} passages/s (batch 32) -> the whole corpus in {corpus.passages / rate / 60:.0f} min "
        f"of one worker; peak RSS {maxrss_mib():.0f} MB"
    )
    Passage.objects.bulk_update(
        [Passage(id=pid, embedding=v.tobytes()) for (pid, _), v in zip(sample, vectors)],
        ["embedding"],
    )
    rest = Passage.objects.filter(corpus=corpus, embedding__isnull=True).order_by("id").values_list("id", flat=True)
    ids = list(rest)
    for start in range(0, len(ids), 5000):
        chunk = ids[start : start + 5000]
        random_vectors = np.random.default_rng(start).standard_normal((len(chunk), retrieval.EMBEDDING_DIMENSIONS))
        random_vectors = (random_vectors / np.linalg.norm(random_vectors, axis=1, keepdims=True)).astype(np.float32)
        Passage.objects.bulk_update(
            [Passage(id=pid, embedding=v.tobytes()) for pid, v in zip(chunk, random_vectors)],
            ["embedding"],
            batch_size=1000,
        )
    last = Passage.objects.filter(corpus=corpus).order_by("-id").values_list("id", flat=True).first()
    Corpus.objects.filter(pk=corpus.pk).update(embedded=corpus.passages, embedded_through=last, state="ready")
    tidy_passages()  # what embed_next_batch does once it has written a corpus's last vector

    claims = [sentence(rng) for _ in range(args.claims)]
    # What a model's questions add to a claim: three more queries (pseudo-words of the claim).
    questions = [[" ".join(rng.sample(claim.split(), 4)) + "?" for _ in range(3)] for claim in claims]
    search = corpus_search(project)

    def retrieve(claim: str, queries: list[str]) -> tuple[float, float, float]:
        """One claim as suggest_step2 retrieves it: (embedding, search, ranking) seconds."""
        started = time.perf_counter()
        vectors = dict(zip(queries, retrieval.embed(queries)))  # a claim's queries in one batch
        embedded = time.perf_counter()
        candidates = search_queries(search, queries, vectors)  # its queries in one search
        searched = time.perf_counter()
        retrieval.rank_candidates(claim, candidates, claim_vector=vectors[claim])
        return embedded - started, searched - embedded, time.perf_counter() - searched

    if os.environ.get("PROFILE"):
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for claim in claims[:10]:
            retrieve(claim, retrieval.offline_queries(claim))
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    started = time.perf_counter()
    search(claims[0], retrieval.embed([claims[0]])[0], retrieval.CANDIDATES_PER_QUERY)
    first = time.perf_counter() - started
    for label, query_lists in (
        ("offline queries", [retrieval.offline_queries(c) for c in claims]),
        ("claim + 3 questions, as with a model", [[c, *q] for c, q in zip(claims, questions)]),
    ):
        phases = [retrieve(claim, queries) for claim, queries in zip(claims, query_lists)]
        timings = [sum(p) for p in phases]
        print(
            f"3. retrieval + ranking per claim over {corpus.passages} embedded passages ({len(claims)} claims, "
            f"{label}: {statistics.mean(len(q) for q in query_lists):.1f} a claim; query embedding included): "
            f"p50 {1000 * percentile(timings, 0.5):.0f} ms, p95 {1000 * percentile(timings, 0.95):.0f} ms; "
            f"p50 of embedding the queries {1000 * percentile([p[0] for p in phases], 0.5):.0f} ms, "
            f"searching {1000 * percentile([p[1] for p in phases], 0.5):.0f} ms, "
            f"ranking {1000 * percentile([p[2] for p in phases], 0.5):.0f} ms; load average "
            f"{load_average():.1f}"
        )
    # Where the search's time goes, for the claims alone: full-text search, the dense scan, the rest
    # (fetching the passages' text, building candidates).
    from annotation.evidence.corpus_search import (
        dense_hits_many,
        lexical_hits_many,
        searchable_corpora,
    )

    corpora = searchable_corpora(project)
    vectors = retrieval.embed(claims)
    lexical, dense = [], []
    for claim, vector in zip(claims, vectors):
        started = time.perf_counter()
        lexical_hits_many(corpora, [claim], retrieval.CANDIDATES_PER_QUERY)
        middle = time.perf_counter()
        dense_hits_many(corpora, vector[None, :], retrieval.CANDIDATES_PER_QUERY)
        lexical.append(middle - started)
        dense.append(time.perf_counter() - middle)
    print(
        f"   one query's full-text search p50 {1000 * percentile(lexical, 0.5):.1f} ms, p95 "
        f"{1000 * percentile(lexical, 0.95):.1f} ms; dense scan p50 {1000 * percentile(dense, 0.5):.1f} ms; "
        f"first search, loading the vectors: {first:.1f} s; peak RSS {maxrss_mib():.0f} MB"
    )

    from pipeline.factcheck_step2 import ClaimToCheck, suggest_step2
    from tests.helpers.fake_llm import FakeLLMServer, last_user_message

    def answer(request):
        return '["When did it happen?", "Who did it?"]' if "Questions:" in last_user_message(request) else "irrelevant"

    # the fake LLM listens on loopback, which the outbound policy allows a staff-set service only with this
    os.environ["OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS"] = "1"
    item = [ClaimToCheck(f"sentence{i}/0", claims[i]) for i in range(5)]
    concurrency = 8
    walls = []
    for _ in range(3):
        with FakeLLMServer(answer, delay=0.2) as server:
            started = time.perf_counter()
            result = suggest_step2(
                item,
                search=search,
                llm=server.config(concurrency=concurrency),
                embed=retrieval.embed,
            )
            walls.append(time.perf_counter() - started)
    calls = len(server.requests)
    print(
        f"4. pre-annotation of one item with 5 claims, loopback LLM at 200 ms, llm.concurrency {concurrency}: "
        f"{' / '.join(f'{w:.2f}' for w in walls)} s wall in three runs ({calls} calls a run, "
        f"{sum(len(c['evidence']) for c in result['claims'])} passages with stance hints); load average "
        f"{load_average():.1f}"
    )


if __name__ == "__main__":
    main()
