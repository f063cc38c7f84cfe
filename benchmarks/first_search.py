"""The first evidence search of a real Celery worker process, with the search prewarm on and off
(issue 23: "no first-search load pause over 100 ms").

Usage:
  .venv/bin/python benchmarks/first_search.py [--passages 100000] [--rounds 2] [--broker redis://127.0.0.1:6379/0]
  .venv/bin/python benchmarks/first_search.py --passages 1000000 --corpus-file corpus.jsonl   # the big run

1. A corpus of ``--passages`` generated passages on PostgreSQL (``evidence_data.bulk_corpus``:
   passages COPY-ed with their search vectors, GIN index, frequent terms; vectors generated, NOT
   embedded, written to the index files and the IVF-SQ8 index built as the worker builds it), in
   a database of its own (``--database``, made fresh and dropped at the end unless ``--keep``).
2. Each round starts a Celery worker (``harness.start_worker``: ``--pool=solo``, the worker
   process is the one that searches) on a queue of its own, once with ``VECTOR_INDEX_PREWARM=worker``
   (the default) and once with ``0``, alternating. With the prewarm on it waits for the worker's
   "search prewarm done" log line; off, as long again, so that both first searches meet a worker
   idle for the same time. Then three evidence searches are queued one after another, each a
   different generated claim, as the step-2 page queues them: the real ``run_evidence_search``
   task (query embedded, the corpus searched lexically and densely, candidates ranked). Reported
   for each: its time in the worker (``EvidenceSearch.finished_at - started_at``), the worker's CPU
   over it (/proc), and the load average.
3. "Early": the prewarm on, and the first search queued as soon as the worker answers a ping,
   while its prewarm is still running: what a search waits for then (the log line of the index
   opening it waited for, if it did).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evidence_data import bulk_corpus, sentence, write_corpus  # noqa: E402
from harness import (  # noqa: E402  (and the repository on the path)
    CLOCK_TICKS,
    bench_environment,
    configure_environment,
    create_database,
    django_setup,
    drop_database,
    load_average,
    migrate,
    process_cpu_ticks,
    start_worker,
    status_kib,
    stop_processes,
)

PREWARM_LINE = re.compile(r"search prewarm done: .*")
WAITED_LINE = re.compile(r"waited \d+ ms for the prewarm's opening")


def build(args, work: Path):
    from django.contrib.auth import get_user_model

    from annotation.services.projects import create_project

    source = Path(args.corpus_file) if args.corpus_file else work / "corpus.jsonl"
    if not args.corpus_file:
        write_corpus(source, args.passages, random.Random(7))
    user = get_user_model().objects.create_user(f"first-{time.time_ns()}", password="x" * 12, is_staff=True)
    project = create_project(name=f"First search {args.passages}", kind="factcheck", created_by=user)
    corpus = bulk_corpus(project, source, args.passages)
    return project, user, corpus


def wait_for_line(log: Path, pattern: re.Pattern, timeout: float) -> tuple[str | None, float]:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        found = pattern.search(log.read_text(errors="replace"))
        if found:
            return found.group(0), time.monotonic() - began
        time.sleep(0.05)
    return None, time.monotonic() - began


def one_search(app, queue: str, project, user, query: str, pid: int) -> dict:
    """Queue the real evidence-search task for ``query``; its time in the worker and the worker's CPU."""
    from annotation.models import EvidenceSearch

    search = EvidenceSearch.objects.create(project=project, user=user, query=query[:500])
    ticks = process_cpu_ticks(pid)
    sent = time.perf_counter()
    app.send_task("annotation.tasks.run_evidence_search", args=[search.id], queue=queue)
    while True:
        search.refresh_from_db()
        if search.state in EvidenceSearch.ENDED_STATES:
            break
        if time.perf_counter() - sent > 300:
            raise RuntimeError("the search did not end in 300 s")
        time.sleep(0.01)
    if search.state != EvidenceSearch.DONE:
        raise RuntimeError(f"the search failed: {search.problems}")
    return {
        "worker": (search.finished_at - search.started_at).total_seconds(),
        "queued_to_done": time.perf_counter() - sent,
        "cpu": (process_cpu_ticks(pid) - ticks) / CLOCK_TICKS,
        "results": len(search.results),
        "load": load_average(),
    }


def run_worker(args, env: dict, work: Path, label: str, prewarm: str, settle: float | None, project, user, claims):
    """One worker; (its searches' figures, the prewarm's log line and the seconds waited for it)."""
    from celery import Celery  # only this benchmark sends tasks

    queue = f"first-{uuid.uuid4().hex[:8]}"
    log = work / f"worker-{label}-{queue}.log"
    worker_env = env | {
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "INTERACTIVE_QUEUE": queue,
        "VECTOR_INDEX_PREWARM": prewarm,
        "LOG_LEVEL": "INFO",
    }
    process, _ = start_worker(worker_env, log, name=f"first-{label}", timeout=300, loglevel="INFO")
    app = Celery(broker=args.broker, set_as_current=False)
    try:
        line, waited = None, 0.0
        if label != "early":
            if prewarm != "0":
                line, waited = wait_for_line(log, PREWARM_LINE, 300)
            else:
                time.sleep(settle or 0)
                waited = settle or 0
        rss_before = status_kib(process.pid, "VmRSS") / 1024
        searches = [one_search(app, queue, project, user, claim, process.pid) for claim in claims]
        if label == "early":
            line, _ = wait_for_line(log, PREWARM_LINE, 300)
        text = log.read_text(errors="replace")
        return {
            "label": label,
            "searches": searches,
            "prewarm_line": line,
            "waited_for_prewarm": waited,
            "waited_lines": WAITED_LINE.findall(text),
            "rss_before": rss_before,
            "rss_after": status_kib(process.pid, "VmRSS") / 1024,
        }
    finally:
        app.close()
        stop_processes(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2, help="workers with the prewarm on, and as many off")
    parser.add_argument("--database", default="bench_first_search", help="made fresh, dropped at the end")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--corpus-file", default=None, help="a corpus JSONL, e.g. evidence_search.py --work-dir's (default: generated)"
    )
    parser.add_argument("--work-dir", default=None, help="the corpus file, the index and the worker logs (kept)")
    parser.add_argument("--keep", action="store_true", help="keep the database (and with --work-dir the index)")
    parser.add_argument("--reuse", type=int, default=0, help="the corpus id of an earlier --keep run: no build")
    args = parser.parse_args()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="first-search-"))
    data_dir = work / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    if not args.reuse:
        create_database(args.database)
    configure_environment(args.database, data_dir)
    django_setup()
    if not args.reuse:
        migrate()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Corpus

    try:
        print(f"load {load_average():.1f} before the build", flush=True)
        if args.reuse:
            corpus = Corpus.objects.get(pk=args.reuse)
            project = corpus.projects.first()
            user = get_user_model().objects.filter(is_staff=True).order_by("-id").first()
        else:
            project, user, corpus = build(args, work)
        print(f"corpus {corpus.id}: {corpus.passages} passages; work dir {work}", flush=True)
        connection.close()
        env = bench_environment(args.database, data_dir) | {"CELERY_BROKER_URL": args.broker}
        rng = random.Random(11)
        results, settle = [], None
        order = [("on", "worker"), ("off", "0")] * args.rounds + [("early", "worker")]
        for label, prewarm in order:
            claims = [sentence(rng) for _ in range(3)]
            result = run_worker(args, env, work, label, prewarm, settle, project, user, claims)
            if label == "on":  # off: as long idle as the prewarm took here (from the worker's start)
                total = re.search(r"total (\d+) ms", result["prewarm_line"] or "")
                settle = max(result["waited_for_prewarm"], int(total.group(1)) / 1000 if total else 0)
            results.append(result)
            first, second, third = result["searches"]
            print(
                f"prewarm {label:5}: first search {1000 * first['worker']:.0f} ms in the worker "
                f"(CPU {1000 * first['cpu']:.0f} ms, queued to done {1000 * first['queued_to_done']:.0f} ms), "
                f"second {1000 * second['worker']:.0f} ms (CPU {1000 * second['cpu']:.0f} ms), third "
                f"{1000 * third['worker']:.0f} ms; load {first['load']:.1f}-{third['load']:.1f}; worker RSS "
                f"{result['rss_before']:.0f} -> {result['rss_after']:.0f} MiB; waited {result['waited_for_prewarm']:.1f} s "
                f"before the first search",
                flush=True,
            )
            if result["prewarm_line"]:
                print(f"   {result['prewarm_line']}", flush=True)
            for line in result["waited_lines"]:
                print(f"   the first search {line}", flush=True)
        for label in ("on", "off"):
            runs = [r["searches"] for r in results if r["label"] == label]
            if runs:
                print(
                    f"prewarm {label}: first search median {1000 * statistics.median(r[0]['worker'] for r in runs):.0f} "
                    f"ms (CPU {1000 * statistics.median(r[0]['cpu'] for r in runs):.0f} ms), second median "
                    f"{1000 * statistics.median(r[1]['worker'] for r in runs):.0f} ms (CPU "
                    f"{1000 * statistics.median(r[1]['cpu'] for r in runs):.0f} ms), over {len(runs)} workers",
                    flush=True,
                )
    finally:
        connection.close()
        if not args.keep:
            drop_database(args.database)


if __name__ == "__main__":
    main()
