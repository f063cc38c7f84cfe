"""Headline "evidence search": retrieval + ranking a claim over a large corpus, in a fresh process.

Usage: .venv/bin/python benchmarks/evidence_search.py [--passages 100000] [--claims 200] [--through-import]
           [--recall] [--db workbench_bench_evidence] [--keep --work-dir DIR]
       .venv/bin/python benchmarks/evidence_search.py --passages 1000000     # the targets' size
       .venv/bin/python benchmarks/evidence_search.py --db NAME --search-child ID --data-dir DIR/data   # again

1. A corpus of ``--passages`` generated passages (evidence_data): on PostgreSQL COPY-ed with their
   search vectors (GIN index, VACUUM ANALYZE, frequent terms), or with ``--through-import`` (and
   always on SQLite) through the real import, whose time to searchable is printed. Vectors are
   generated, not embedded, and written to the index files; the IVF-SQ8 index is built as the
   worker builds it. ``--recall``: ANN recall@50 against an exact scan at nprobe 8 / 16 / 32.
2. A fresh searching process (as a Celery worker's: the search prewarm run first) retrieves
   ``--claims`` generated claims as ``suggest_step2`` does (queries embedded by the model in one
   batch, searched together, ranked), with 1 query (the claim) and with 4 (3 questions of 4 of its
   words added). Reported: p50 / p95 a claim with the query embedding, without it, the CPU a
   claim by phase and PostgreSQL's, the process's RSS before and after.

Targets (issue 23, at 1,000,000 passages, the dense-first path): p95 ≤ 60 ms with 1 query,
≤ 150 ms with 4, the searching process ≤ 300 MiB beyond its start. A default run's 100,000
passages take the full-text + dense path. The database is dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_data import (  # noqa: E402
    add_vectors,
    ann_recall,
    copy_passages,
    imported_corpus,
    index_mib,
    sentence,
    write_corpus,
)
from harness import (  # noqa: E402
    Figure,
    Run,
    bench_database,
    configure_environment,
    database_cpu_seconds,
    django_setup,
    load_average,
    percentile,
    print_figures,
    status_mb,
)

TARGET_ONE_MS, TARGET_FOUR_MS, TARGET_GROWTH_MIB = 60, 150, 300
TARGET_PASSAGES = 1_000_000
SIZES = {"quick": {"passages": 500, "claims": 10}, "full": {"passages": 100_000, "claims": 200}}


def build(run: Run, passages: int, through_import: bool):
    """A project with a ready corpus of ``passages`` generated passages and vectors."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Corpus, CorpusState
    from annotation.services.projects import create_project

    user = get_user_model().objects.create_user(f"evidence-{time.time_ns()}", password=None, is_staff=True)
    project = create_project(name=f"Evidence {passages} {time.time_ns()}", kind="factcheck", created_by=user)
    source = run.tmp / "corpus.jsonl"
    began = time.perf_counter()
    documents = write_corpus(source, passages, random.Random(7))
    print(
        f"  corpus text: {documents} documents, {source.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - began:.0f} s"
    )
    began = time.perf_counter()
    if through_import or connection.vendor != "postgresql":
        corpus, seconds = imported_corpus(project, user, source)
        print(
            f"  the import: {corpus.passages} passages lexically searchable after {seconds:.1f} s; load {load_average():.1f}"
        )
    else:
        corpus = Corpus.objects.create(name="bulk", state=CorpusState.READY)
        corpus.projects.set([project])
        copy_passages(corpus, source, passages)
        print(f"  passages COPY-ed with search vectors, GIN, VACUUM ANALYZE in {time.perf_counter() - began:.0f} s")
    meta = add_vectors(corpus)
    corpus = Corpus.objects.get(pk=corpus.pk)
    print(
        f"  {meta['rows']} generated vectors appended in {meta['appended_s']:.1f} s, "
        f"{'IVF-SQ8 built in ' + format(meta['built_s'], '.0f') + ' s' if meta['ann'] else 'exact search (no ANN)'}; "
        f"index files {index_mib(meta['directory']):.0f} MiB; load {load_average():.1f}"
    )
    if run.options.get("recall") and meta["ann"]:
        recall = ann_recall(meta, corpus)
        print("  ANN recall@50: " + ", ".join(f"nprobe {k}: {v:.3f}" for k, v in recall.items()))
    return corpus


def searching_process(db_name: str, corpus_id: int, claims: int, data_dir: Path) -> dict:
    """This script's searching child on a corpus: its figures."""
    command = [sys.executable, str(Path(__file__).resolve()), "--db", db_name, "--search-child", str(corpus_id)]
    command += ["--claims", str(claims), "--data-dir", str(data_dir)]
    child = subprocess.run(command, capture_output=True, text=True, env=os.environ | {"DJANGO_DATA_DIR": str(data_dir)})
    if child.returncode:
        raise RuntimeError(f"the searching process failed: {child.stderr[-3000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def report(result: dict) -> None:
    for label in ("1 query", "4 queries"):
        r = result[label]
        print(
            f"  {label} ({result['path']}): p50 {r['p50']:.1f} / p95 {r['p95']:.1f} ms; without the query embedding "
            f"{r['bare_p50']:.1f} / {r['bare_p95']:.1f} ms; CPU a claim (mean): embedding {r['cpu_embed']:.1f}, "
            f"searching {r['cpu_search']:.1f}, ranking {r['cpu_rank']:.1f} ms + PostgreSQL {r['cpu_sql']:.1f} ms; "
            f"{r['candidates']:.0f} candidates; load {r['load']:.1f}"
        )
    start, end = result["start"], result["end"]
    print(
        f"  first search {1000 * result['first']:.0f} ms (prewarm {'on' if result['prewarm'] else 'off'}); RSS "
        f"{start['VmRSS']:.0f} -> {end['VmRSS']:.0f} MiB (own memory +{end['RssAnon'] - start['RssAnon']:.0f}, mapped "
        f"files +{end['RssFile'] - start['RssFile']:.0f})"
    )


def headline(run: Run) -> list[Figure]:
    sizes = {**SIZES["quick" if run.quick else "full"], **run.options.get("sizes", {})}
    corpus = build(run, sizes["passages"], run.options.get("through_import", False))
    from django.db import connection  # Django is set up by now

    connection.close()
    data_dir = Path(os.environ["DJANGO_DATA_DIR"])
    print(f"  searching process again: --db {run.db_name} --search-child {corpus.id} --data-dir {data_dir}")
    result = searching_process(run.db_name, corpus.id, sizes["claims"], data_dir)
    report(result)
    at_scale = corpus.passages >= TARGET_PASSAGES
    size = f"{corpus.passages:,} passages"
    growth = result["end"]["VmRSS"] - result["start"]["VmRSS"]
    return [
        Figure(
            f"per-claim search p95, 1 query, {size}", result["1 query"]["p95"], "ms", TARGET_ONE_MS, note=result["path"]
        ),
        Figure(
            f"per-claim search p95, 4 queries, {size}",
            result["4 queries"]["p95"],
            "ms",
            TARGET_FOUR_MS if at_scale else None,
        ),
        Figure("searching process RSS beyond its start", growth, "MiB", TARGET_GROWTH_MIB if at_scale else None),
    ]


def search_child(args) -> None:
    """A fresh searching process: prints one JSON line."""
    configure_environment(args.db, Path(args.data_dir))
    django_setup()
    from annotation.evidence import corpus_search as search_module
    from annotation.evidence import prewarm
    from annotation.models import Corpus
    from pipeline import retrieval
    from pipeline.factcheck_step2 import search_queries

    project = Corpus.objects.get(pk=args.search_child).projects.first()
    retrieval.embed(["warm up the embedding model"])
    rng = random.Random(99)
    claims = [sentence(rng) for _ in range(args.claims)]
    questions = [[" ".join(rng.sample(c.split(), 4)) + "?" for _ in range(3)] for c in claims]
    search = search_module.corpus_search(project)
    warming = prewarm.in_background()  # as a Celery worker process does once up (VECTOR_INDEX_PREWARM)
    if warming is not None:
        warming.join()
    start = status_mb()
    began = time.perf_counter()
    search(claims[0], retrieval.embed([claims[0]])[0], retrieval.CANDIDATES_PER_QUERY)
    first = time.perf_counter() - began
    corpora = search_module.searchable_corpora(project)
    dense_first = search_module.dense_first(corpora, search_module._readers(corpora))
    result = {"start": start, "first": first, "prewarm": warming is not None}
    result["path"] = "dense-first" if dense_first else "full-text + dense"
    for label, lists in (
        ("1 query", [[c] for c in claims]),
        ("4 queries", [[c, *q] for c, q in zip(claims, questions)]),
    ):
        totals, bare, cpu, found = [], [], {"embed": [], "search": [], "rank": [], "sql": []}, []
        for claim, queries in zip(claims, lists):
            c0, s0, t0 = time.process_time(), database_cpu_seconds(), time.perf_counter()
            vectors = dict(zip(queries, retrieval.embed(queries)))
            t1, c1 = time.perf_counter(), time.process_time()
            candidates = search_queries(search, queries, vectors)
            c2 = time.process_time()
            retrieval.rank_candidates(claim, candidates, claim_vector=vectors[claim])
            t3, c3 = time.perf_counter(), time.process_time()
            sql = database_cpu_seconds() - s0
            totals.append(t3 - t0)
            bare.append(t3 - t1)
            for phase, seconds in (("embed", c1 - c0), ("search", c2 - c1), ("rank", c3 - c2), ("sql", sql)):
                cpu[phase].append(0.0 if seconds != seconds else seconds)  # NaN: no PostgreSQL backend
            found.append(len({c.passage_id for c in candidates}))
        result[label] = {
            "p50": 1000 * percentile(totals, 0.5),
            "p95": 1000 * percentile(totals, 0.95),
            "bare_p50": 1000 * percentile(bare, 0.5),
            "bare_p95": 1000 * percentile(bare, 0.95),
            **{f"cpu_{phase}": 1000 * sum(values) / len(values) for phase, values in cpu.items()},
            "candidates": percentile(found, 0.5),
            "load": load_average(),
        }
    result["end"] = status_mb()
    print(json.dumps(result))


def main(argv=None) -> int:
    import logging

    logging.disable(logging.INFO)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=SIZES["full"]["passages"])
    parser.add_argument("--claims", type=int, default=SIZES["full"]["claims"])
    parser.add_argument("--through-import", action="store_true", help="the real import, not COPY (slower)")
    parser.add_argument("--recall", action="store_true", help="ANN recall@50 of the built index")
    parser.add_argument("--db", default="workbench_bench_evidence")
    parser.add_argument("--keep", action="store_true", help="keep the database (and, with --work-dir, the index)")
    parser.add_argument("--work-dir", help="where the corpus file and DATA_DIR go (kept)")
    parser.add_argument("--search-child", type=int, default=0, help="search this corpus again (a fresh process)")
    parser.add_argument("--data-dir", help="with --search-child: the DATA_DIR of the run that built it")
    args = parser.parse_args(argv)
    if args.search_child:
        search_child(args)
        return 0
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="evidence-"))
    options = {
        "sizes": {"passages": args.passages, "claims": args.claims},
        "through_import": args.through_import,
        "recall": args.recall,
    }
    with bench_database(args.db, work / "data", keep=args.keep):
        print_figures(headline(Run(args.db, work, options=options)))
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
