"""Evidence corpora at Wikipedia scale: PostgreSQL import and full-text search, the vector index
on disk (annotation.evidence.vector_index), retrieval + ranking per claim in a fresh searching process.

Usage:
  .venv/bin/python benchmarks/corpus_scale.py --database NAME --passages 1000000 [--claims 200]

The database NAME (on 127.0.0.1:5432, user postgres) is EMPTIED (its public schema dropped and
made again), migrated, and emptied again at the end unless --keep. Temporary files (the JSONL
corpus, DATA_DIR with the index) go under --tmp (default: the system's temporary directory) and
are deleted at the end.

1. Import: a generated JSONL corpus (documents of 13 sentences over a Zipf-weighted 30,000
   pseudo-word vocabulary, 5 passages a document, as benchmarks/evidence_scale.py) uploaded and
   imported in this process (evidence.corpora): time until lexically searchable, with the time
   of the search-vector / VACUUM / frequent-term step on its own; peak RSS before and after
   (the import streams the file: memory must not grow with it).
2. Full-text search: p50/p95 of one query (a generated claim) and of a claim's 4 queries in one
   statement (corpus_search._search_postgresql), and the table's and GIN index's sizes.
3. Vectors: NOT embedded (all-MiniLM-L6-v2 runs at 25-65 passages/s on these CPUs: a million
   is 5-9 hours). Generated instead: unit vectors around 100 broad topics and passages/200
   subtopics, so that they have neighbourhoods as embeddings do; written to Passage.embedding
   with COPY. Then the index is built as the worker builds it (vector_index.sync: read from
   PostgreSQL, IVF-SQ8 trained and filled): the index build time. One fold of a 20,000-row tail
   into the ANN index (what the worker does every 20,000 embedded passages) is timed too.
4. ANN recall@50 against exact search (a scan of all vectors) for 200 query vectors near the
   data, at nprobe 8 / 16 / 32.
5. A fresh searching process (as a gunicorn or Celery process): its RSS once Django and the
   embedding model are loaded (its start), the first search (opens the index: the "first-search
   pause"), retrieval + ranking per claim as suggest_step2 does it (queries embedded, searched
   together, ranked) with 1 query and with 4, p50/p95; its RSS after: VmRSS, and the part of it
   that is the process's own (RssAnon) versus pages of mapped files (RssFile: the page cache,
   shared by every process of the machine).
6. Extrapolation to 10 and 30 million passages from the measured per-passage sizes and times.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import evidence_scale  # noqa: E402
from corpus_vectors import (  # noqa: E402
    DIM,
    fold_seconds,
    index_sizes,
    mapped_mib,
    print_recall,
    synthetic_vectors,
    write_vectors,
)
from harness import (  # noqa: E402  (and the repository on the path)
    configure_environment,
    django_setup,
    load_average,
    maxrss_mib,
    percentile,
    status_mb,
)


def setup_django(database: str, data_dir: Path) -> None:
    configure_environment(database, data_dir)
    django_setup()


def empty_database() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DROP SCHEMA public CASCADE")
        cursor.execute("CREATE SCHEMA public")


def run_searching_process(database: str, corpus_id: int, claims: int, data_dir: Path) -> str:
    """Run this script's searching child (a fresh process, as a worker's) on a corpus; its last
    line of output (the JSON of its figures)."""
    child = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--database",
            database,
            "--search-child",
            str(corpus_id),
            "--claims",
            str(claims),
            "--data-dir",
            str(data_dir),
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"DJANGO_DATA_DIR": str(data_dir)},
    )
    if child.returncode:
        print(child.stderr[-3000:])
        raise SystemExit("the searching process failed")
    return child.stdout.strip().splitlines()[-1]


def main() -> None:
    import logging

    logging.disable(logging.INFO)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", required=True, help="a PostgreSQL database of yours: it is emptied")
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--tmp", default=None, help="where the corpus file and the index go (deleted at the end)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--add",
        action="store_true",
        help="do not empty the database first: add this corpus beside one kept (--keep) by an earlier run",
    )
    parser.add_argument(
        "--work-dir",
        default=None,
        help="with --keep: the corpus file and DATA_DIR (the index) go here and are kept, so that the searching "
        "process can be run again on the same corpus (--search-child ID --data-dir WORK_DIR/data)",
    )
    parser.add_argument(
        "--vectors-only",
        action="store_true",
        help="the vector index alone (no PostgreSQL import or full-text search)",
    )
    parser.add_argument("--search-child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search_child:
        return search_child_vectors(args) if args.vectors_only else search_child(args)
    import contextlib

    if args.work_dir:
        Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    with (
        contextlib.nullcontext(args.work_dir)
        if args.work_dir
        else tempfile.TemporaryDirectory(dir=args.tmp, prefix="corpus-scale-")
    ) as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir(exist_ok=True)
        setup_django(args.database, data_dir)
        from django.core.management import call_command
        from django.db import connections

        if args.vectors_only:
            return run_vectors_only(args, Path(tmp))
        if not args.add:
            empty_database()
        call_command("migrate", verbosity=0)
        try:
            run(args, Path(tmp), data_dir)
        finally:
            connections.close_all()
            if not args.keep:
                empty_database()
                connections.close_all()


def run(args, tmp: Path, data_dir: Path) -> None:
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.evidence import corpora as corpus_services
    from annotation.evidence import vector_index
    from annotation.evidence.corpus_search import _search_postgresql, searchable_corpora
    from annotation.models import Corpus
    from annotation.services.projects import create_project

    rng = random.Random(7)
    admin = get_user_model().objects.create_user(f"bench-{time.time_ns()}", password="x" * 12, is_staff=True)
    project = create_project(name=f"Corpus bench {args.passages}", kind="factcheck", created_by=admin)
    source = tmp / "corpus.jsonl"
    started = time.perf_counter()
    documents = evidence_scale.write_corpus(source, args.passages, rng)
    print(
        f"0. generated {documents} documents, {source.stat().st_size / 2**20:.0f} MiB, in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )

    phases = {}
    fill = corpus_services._fill_search_vectors

    def timed_fill(corpus_id):
        began = time.perf_counter()
        fill(corpus_id)
        phases["fill"] = time.perf_counter() - began

    corpus_services._fill_search_vectors = timed_fill
    before = maxrss_mib()
    started = time.perf_counter()
    with source.open("rb") as upload:
        corpus = corpus_services.create_corpus(name="bench", user=admin, upload=upload, projects=[project])
    corpus_services.run_corpus_import(corpus.id)
    imported = time.perf_counter() - started
    corpus = Corpus.objects.get(pk=corpus.id)
    print(
        f"1. import: {corpus.passages} passages searchable (lexically) after {imported:.0f} s "
        f"({corpus.passages / imported:.0f} passages/s); of which search vectors + VACUUM ANALYZE + frequent "
        f"terms {phases['fill']:.0f} s; {len(corpus.frequent_terms)} frequent terms; peak RSS {before:.0f} MB "
        f"before, {maxrss_mib():.0f} MB after; load {load_average():.1f}",
        flush=True,
    )

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('annotation_passage'), pg_relation_size('passage_search_gin')")
        table_bytes, gin_bytes = cursor.fetchone()
    claims = [evidence_scale.sentence(rng) for _ in range(args.claims)]
    questions = [[" ".join(rng.sample(c.split(), 4)) + "?" for _ in range(3)] for c in claims]
    corpora = searchable_corpora(project)
    one, four = [], []
    for claim, asked in zip(claims, questions):
        began = time.perf_counter()
        _search_postgresql(corpora, [claim], 50, with_text=True)
        one.append(time.perf_counter() - began)
        began = time.perf_counter()
        _search_postgresql(corpora, [claim, *asked], 50, with_text=True)
        four.append(time.perf_counter() - began)
    print(
        f"2. full-text search (with the passages' text), p50/p95: one query {1000 * percentile(one, 0.5):.0f} / "
        f"{1000 * percentile(one, 0.95):.0f} ms; a claim's 4 queries {1000 * percentile(four, 0.5):.0f} / "
        f"{1000 * percentile(four, 0.95):.0f} ms; table without vectors {table_bytes / 2**20:.0f} MiB (GIN index "
        f"{gin_bytes / 2**20:.0f} MiB); load {load_average():.1f}",
        flush=True,
    )

    written = write_vectors(corpus.id)
    last = corpus.passage_set.order_by("-id").values_list("id", flat=True).first()
    Corpus.objects.filter(pk=corpus.pk).update(embedded=corpus.passages, embedded_through=last, state="ready")
    began = time.perf_counter()
    corpus_services.tidy_passages()
    tidied = time.perf_counter() - began
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('annotation_passage')")
        table_with_vectors = cursor.fetchone()[0]
    began = time.perf_counter()
    meta = vector_index.sync(corpus.id)
    built = time.perf_counter() - began
    directory = vector_index.index_dir(corpus.id)
    sizes = index_sizes(directory)
    vectors = np.memmap(
        directory / f"vectors-{meta['generation']}.f32",
        dtype=np.float32,
        mode="r",
        shape=(meta["rows"], DIM),
    )
    fold = fold_seconds(directory, meta, vectors, tmp)
    print(
        f"3. vectors generated (not embedded) and written with COPY in {written:.0f} s, VACUUM ANALYZE "
        f"{tidied:.0f} s; table with vectors {table_with_vectors / 2**20:.0f} MiB. Index build (read from "
        f"PostgreSQL, {'IVF-SQ8 trained and filled' if meta['ann'] else 'exact: no ANN index'}) {built:.0f} s; "
        f"files: "
        + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(sizes.items()))
        + (f"; folding a 20,000-row tail into the ANN index {fold:.1f} s" if fold is not None else "")
        + f"; load {load_average():.1f}",
        flush=True,
    )

    print_recall(meta, directory, vectors, Corpus.objects.get(pk=corpus.pk))

    print(f"   corpus id {corpus.id} (searching process again: --search-child {corpus.id} --data-dir {data_dir})")
    result = json.loads(run_searching_process(args.database, corpus.id, args.claims, data_dir))
    start, end = result["start"], result["end"]
    for label in ("1 query", "4 queries"):
        r = result[label]
        print(
            f"5. retrieval + ranking per claim ({result['path']}), {label} ({args.claims} claims, query embedding "
            f"included): p50 {r['p50']:.0f} ms, p95 {r['p95']:.0f} ms; without the embedding p50 "
            f"{r['without_embedding_p50']:.0f} / p95 {r['without_embedding_p95']:.0f} ms; query embedding p50 "
            f"{r['embed_p50']:.0f} / p95 {r['embed_p95']:.0f} ms, searching p50 {r['search_p50']:.0f} / p95 "
            f"{r['search_p95']:.0f} ms (dense alone p50 {r['dense_p50']:.1f} ms), ranking p50 {r['rank_p50']:.0f} / "
            f"p95 {r['rank_p95']:.0f} ms; CPU a claim p50 {r['cpu_p50']:.0f} ms, mean {r['cpu_mean']:.0f} ms "
            f"(embedding {r['cpu_embed_mean']:.0f}, searching {r['cpu_search_mean']:.0f}, ranking "
            f"{r['cpu_rank_mean']:.0f}) + PostgreSQL's {r['cpu_postgresql_mean']:.0f} ms; {r['candidates_p50']:.0f} distinct "
            f"candidates; load {r['load']:.1f}"
        )
    print(
        f"   first search (prewarm {result['prewarm']}) (imports faiss {result['faiss_import'] * 1000:.0f} ms, opens the index) {result['first'] * 1000:.0f} ms; RSS at start {start['VmRSS']:.0f} MiB, "
        f"after {end['VmRSS']:.0f} MiB (+{end['VmRSS'] - start['VmRSS']:.0f}): own memory (RssAnon) "
        f"+{end['RssAnon'] - start['RssAnon']:.0f} MiB, mapped files (RssFile, shared page cache) "
        f"+{end['RssFile'] - start['RssFile']:.0f} MiB",
        flush=True,
    )

    n = corpus.passages
    per_passage = {
        "postgresql (text, search vector, GIN, vector bytea)": table_with_vectors / n,
        "index files (float32 vectors, ids, IVF-SQ8)": sum(sizes.values()) / n,
    }
    print("6. extrapolation (linear in passages for sizes; see benchmarks/README.md for the method):")
    for millions in (1, 10, 30):
        total = millions * 1_000_000
        print(
            f"   {millions:>2} M passages: "
            + "; ".join(f"{k} {v * total / 2**30:.1f} GiB" for k, v in per_passage.items())
            + f"; import about {imported * total / n / 3600:.1f} h; index build {built * total / n / 3600:.1f} h "
            f"(linear) to {built * (total / n) ** 1.5 / 3600:.1f} h (IVF assignment grows as N x nlist, nlist as "
            f"sqrt N)"
        )


def run_vectors_only(args, tmp: Path) -> None:
    """The vector side alone at ``--passages``: index files written from generated vectors as the
    worker appends them, the IVF built, recall, and a fresh process's dense search."""
    import numpy as np

    from annotation.evidence import vector_index

    corpus_id, model = 1, vector_index.model_key()
    directory = vector_index.index_dir(corpus_id, model)
    began = time.perf_counter()
    blocks = (
        (np.arange(start + 1, start + len(block) + 1, dtype=np.int64), block)
        for start, block in zip(range(0, args.passages, 50_000), synthetic_vectors(args.passages))
    )
    with vector_index._locked(directory):
        meta = vector_index._fresh(directory, model)
        from django.conf import settings

        settings.VECTOR_INDEX_EXACT_MAX = 10**12  # append first, then time the IVF build on its own
        meta = vector_index._append(corpus_id, directory, meta, args.passages, source=blocks)
        appended = time.perf_counter() - began
        settings.VECTOR_INDEX_EXACT_MAX = None
        began = time.perf_counter()
        meta = vector_index._append(corpus_id, directory, meta, args.passages, source=iter(()))
        built = time.perf_counter() - began
    vectors = np.memmap(
        directory / f"vectors-{meta['generation']}.f32",
        dtype=np.float32,
        mode="r",
        shape=(meta["rows"], DIM),
    )
    fold = fold_seconds(directory, meta, vectors, tmp)
    sizes = index_sizes(directory)
    print(
        f"3. {meta['rows']} generated vectors (not embedded) appended to the index files in {appended:.0f} s; "
        f"IVF-SQ8 built (trained on a sample, every row added, written) in {built:.0f} s; folding a "
        f"20,000-row tail in {fold or 0:.1f} s; files: "
        + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(sizes.items()))
        + f"; load {load_average():.1f}",
        flush=True,
    )
    print_recall(
        meta,
        directory,
        vectors,
        types.SimpleNamespace(id=corpus_id, embedded_through=args.passages, embedded=args.passages),
    )
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--database",
            args.database,
            "--search-child",
            str(corpus_id),
            "--vectors-only",
            "--passages",
            str(args.passages),
            "--claims",
            str(args.claims),
            "--data-dir",
            str(tmp / "data"),
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"DJANGO_DATA_DIR": str(tmp / "data")},
    )
    if child.returncode:
        print(child.stderr[-3000:])
        raise SystemExit("the searching process failed")
    result = json.loads(child.stdout.strip().splitlines()[-1])
    for label in ("1 query", "4 queries"):
        r = result[label]
        print(
            f"5. dense search + the candidates' vectors per claim, {label} ({args.claims} claims): p50 "
            f"{r['p50']:.2f} ms, p95 {r['p95']:.2f} ms (CPU p50 {r['cpu_p50']:.2f} ms, p95 {r['cpu_p95']:.2f} ms); "
            f"load {r['load']:.1f}"
        )
    start, end = result["start"], result["end"]
    print(
        f"   first search (maps the index) {result['first'] * 1000:.1f} ms; RSS at start {start['VmRSS']:.0f} MiB, "
        f"after {end['VmRSS']:.0f} MiB (+{end['VmRSS'] - start['VmRSS']:.0f}): own memory (RssAnon) "
        f"+{end['RssAnon'] - start['RssAnon']:.0f} MiB, mapped files (RssFile, shared page cache) "
        f"+{end['RssFile'] - start['RssFile']:.0f} MiB, of which mapped index files after the first search / "
        f"at the end: "
        + ", ".join(f"{k} {result['mapped_start'][k]:.1f} / {v:.1f} MiB" for k, v in result["mapped_end"].items())
        + f"; faiss imported: {result['faiss']}",
        flush=True,
    )


def search_child_vectors(args) -> None:
    """A fresh process searching the index alone (no database): prints one JSON line."""
    import numpy as np

    setup_django(args.database, Path(args.data_dir))
    from annotation.evidence import vector_index
    from annotation.evidence.corpus_search import _dense_scan, _indexed_vectors

    corpus = types.SimpleNamespace(id=args.search_child, embedded_through=args.passages, embedded=args.passages)
    rng = np.random.default_rng(5)
    queries = rng.standard_normal((args.claims * 4, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    vector_index._faiss()  # imported, as a Celery worker's prewarm does (no database here: the first search opens)
    directory = vector_index.index_dir(corpus.id)
    start = status_mb()
    began = time.perf_counter()
    readers = [vector_index.reader(corpus)]
    _dense_scan(readers, queries[:1], 50)
    first = time.perf_counter() - began
    result = {"start": start, "first": first, "mapped_start": mapped_mib(directory)}
    for label, width in (("1 query", 1), ("4 queries", 4)):
        timings, cpu = [], []
        for n in range(args.claims):
            began, began_cpu = time.perf_counter(), time.process_time()
            readers = [vector_index.reader(corpus)]  # a stat of meta.json, as every search
            found = _dense_scan(readers, queries[n * 4 : n * 4 + width], 50)
            _indexed_vectors(readers, sorted({pid for hits in found for pid, _ in hits}))
            timings.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        result[label] = {
            "p50": 1000 * percentile(timings, 0.5),
            "p95": 1000 * percentile(timings, 0.95),
            "cpu_p50": 1000 * percentile(cpu, 0.5),
            "cpu_p95": 1000 * percentile(cpu, 0.95),
            "load": load_average(),
        }
    result["end"] = status_mb()
    result["mapped_end"] = mapped_mib(directory)
    result["faiss"] = "faiss" in sys.modules
    print(json.dumps(result))


def search_child(args) -> None:
    """A fresh searching process: prints one JSON line."""
    setup_django(args.database, Path(args.data_dir))
    from annotation.evidence.corpus_search import corpus_search
    from annotation.models import Corpus
    from pipeline import retrieval
    from pipeline.factcheck_step2 import search_queries

    corpus = Corpus.objects.get(pk=args.search_child)
    project = corpus.projects.first()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    def backend_cpu() -> float:
        """CPU seconds of this process's PostgreSQL backend (same machine), from /proc."""
        try:
            fields = Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    retrieval.embed(["warm up the embedding model"])
    rng = random.Random(99)
    claims = [evidence_scale.sentence(rng) for _ in range(args.claims)]
    questions = [[" ".join(rng.sample(c.split(), 4)) + "?" for _ in range(3)] for c in claims]
    search = corpus_search(project)
    from django.conf import settings

    from annotation.evidence import corpus_search as corpus_search_module
    from annotation.evidence import prewarm as search_prewarm

    prewarm = search_prewarm.in_background()  # as a Celery worker process does once up (VECTOR_INDEX_PREWARM)
    if prewarm is not None:
        prewarm.join()
    start = status_mb()
    vector = retrieval.embed([claims[0]])[0]
    began = time.perf_counter()
    search(claims[0], vector, retrieval.CANDIDATES_PER_QUERY)
    first = time.perf_counter() - began
    from annotation.evidence.corpus_search import searchable_corpora as searchable_corpora_of

    corpus_check = searchable_corpora_of(project)
    path = (
        "dense-first"
        if corpus_search_module.dense_first(corpus_check, corpus_search_module._readers(corpus_check))
        else "full-text and dense"
    )
    faiss_import = float(
        subprocess.run(  # in another interpreter: this one has imported it
            [
                sys.executable,
                "-c",
                "import time; t = time.perf_counter(); import faiss; print(time.perf_counter() - t)",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
    )
    result = {
        "start": start,
        "first": first,
        "faiss_import": faiss_import,
        "prewarm": prewarm is not None,
        "path": path,
        "dense_first_passages": settings.CORPUS_DENSE_FIRST_PASSAGES,
        "rare_term_passages": settings.CORPUS_RARE_TERM_PASSAGES,
    }
    from annotation.evidence.corpus_search import dense_hits_many, searchable_corpora

    corpora = searchable_corpora(project)
    for label, lists in (
        ("1 query", [[c] for c in claims]),
        ("4 queries", [[c, *q] for c, q in zip(claims, questions)]),
    ):
        totals, embedding, searching, ranking, dense, cpu, found = [], [], [], [], [], [], []
        cpu_embed, cpu_search, cpu_rank, cpu_sql = [], [], [], []
        for claim, queries in zip(claims, lists):
            c0, b0 = time.process_time(), backend_cpu()
            t0 = time.perf_counter()
            vectors = dict(zip(queries, retrieval.embed(queries)))
            t1, c1 = time.perf_counter(), time.process_time()
            candidates = search_queries(search, queries, vectors)
            t2, c2 = time.perf_counter(), time.process_time()
            retrieval.rank_candidates(claim, candidates, claim_vector=vectors[claim])
            t3, c3 = time.perf_counter(), time.process_time()
            cpu.append(c3 - c0)
            cpu_embed.append(c1 - c0)
            cpu_search.append(c2 - c1)
            cpu_rank.append(c3 - c2)
            cpu_sql.append(backend_cpu() - b0)
            totals.append(t3 - t0)
            embedding.append(t1 - t0)
            searching.append(t2 - t1)
            ranking.append(t3 - t2)
            found.append(len({c.passage_id for c in candidates}))
        for vector in retrieval.embed(claims[:50]):
            t0 = time.perf_counter()
            dense_hits_many(corpora, vector[None, :], retrieval.CANDIDATES_PER_QUERY)
            dense.append(time.perf_counter() - t0)
        result[label] = {
            "p50": 1000 * percentile(totals, 0.5),
            "p95": 1000 * percentile(totals, 0.95),
            "without_embedding_p50": 1000 * percentile([s + r for s, r in zip(searching, ranking)], 0.5),
            "without_embedding_p95": 1000 * percentile([s + r for s, r in zip(searching, ranking)], 0.95),
            "embed_p50": 1000 * percentile(embedding, 0.5),
            "embed_p95": 1000 * percentile(embedding, 0.95),
            "search_p95": 1000 * percentile(searching, 0.95),
            "rank_p95": 1000 * percentile(ranking, 0.95),
            "cpu_p50": 1000 * percentile(cpu, 0.5),
            # CPU seconds a claim, means: this process's by phase, and PostgreSQL's backend's
            # (from /proc, in clock ticks: only its mean is meaningful)
            "cpu_mean": 1000 * sum(cpu) / len(cpu),
            "cpu_embed_mean": 1000 * sum(cpu_embed) / len(cpu),
            "cpu_search_mean": 1000 * sum(cpu_search) / len(cpu),
            "cpu_rank_mean": 1000 * sum(cpu_rank) / len(cpu),
            "cpu_postgresql_mean": 1000 * sum(cpu_sql) / len(cpu),
            "candidates_p50": percentile(found, 0.5),
            "search_p50": 1000 * percentile(searching, 0.5),
            "rank_p50": 1000 * percentile(ranking, 0.5),
            "dense_p50": 1000 * percentile(dense, 0.5),
            "load": load_average(),
        }
    result["end"] = status_mb()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
