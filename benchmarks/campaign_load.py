"""A lab's campaign under load: locust (headless) against gunicorn + a Celery worker + PostgreSQL + Redis.

Usage: .venv/bin/python benchmarks/campaign_load.py [--items 2000] [--run-time 90s] [--web-workers 4]
           [--redis redis://127.0.0.1:6379/5] [--db workbench_bench_campaign]

Set-up (in this process, before the clock): a database of its own (created, migrated, dropped
at the end), 50 annotators, 5 consolidators, 2 staff admins and 2 staff researchers with tokens
(and sessions for the pages); a FELM project of ``--items`` items (5 segments each, 2 annotators
an item), 50 of them already submitted by both annotators so consolidations are open, with gold
records; a Factcheck-Bench project of 200 items with all three steps as gold (released shape,
~25 KB each); a FELM project to import into, and a 10,000-line FELM file.

Then gunicorn (``config.wsgi``, sync workers, as the Makefile starts it) and one Celery worker
(``--pool=solo``, a queue of its own on the given Redis) start on loopback, and locust runs
``benchmarks/campaign_locust.py`` headless with 59 users (see that file) for ``--run-time``.
Printed: per endpoint the count, errors, p50/p95/p99 (ms), throughput, and the peak RSS of the
web tier (master + workers, sampled every 0.5 s) and of the Celery worker.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    REPO_ROOT,
    CpuSampler,
    bench_environment,
    create_database,
    django_setup,
    drop_database,
    free_port,
    gunicorn_command,
    load_average,
    migrate,
    pids_matching,
    print_table,
    start_process,
    start_worker,
    stop_processes,
    tree_pids,
    tree_rss_mib,
    wait_until_answers,
)


def set_up(tmp: Path, args) -> dict:
    django_setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from annotation import tasks
    from annotation.exports import formats as exports
    from annotation.imports import items as item_imports
    from annotation.imports.items import import_jsonl
    from annotation.models import Assignment, Role
    from annotation.services.annotations import save_annotation
    from annotation.services.projects import add_member, create_project
    from factcheck_import import released_item
    from felm_data import generate_felm_jsonl

    migrate()
    User = get_user_model()

    def person(name, staff=False):
        user = User.objects.create_user(name, password=None, is_staff=staff)
        entry = {"name": name, "token": Token.objects.create(user=user).key}
        if staff:
            session = SessionStore()
            session.update(
                {
                    "_auth_user_id": str(user.pk),
                    "_auth_user_hash": user.get_session_auth_hash(),
                    "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
                }
            )
            session.create()
            entry["session"] = session.session_key
        return user, entry

    items, step2 = args.items, args.step2_items > 0
    everyone = [person(f"annotator-{n}") for n in range(50)]
    # with --step2-items the last --step2-annotators of the 50 work on step 2, the others on FELM
    annotators = everyone[: 50 - args.step2_annotators] if step2 else everyone
    consolidators = [person(f"consolidator-{n}") for n in range(5)]
    admins = [person(f"admin-{n}", staff=True) for n in range(2)]
    researchers = [person(f"researcher-{n}", staff=True) for n in range(2)]

    felm = create_project(name="campaign FELM", kind="felm", created_by=admins[0][0])
    target = create_project(name="campaign FELM import", kind="felm", created_by=admins[0][0])
    for project in (felm, target):
        for user, _ in annotators:
            add_member(project=project, user=user, role=Role.ANNOTATOR)
        for user, _ in consolidators:
            add_member(project=project, user=user, role=Role.CONSOLIDATOR)
        for user, _ in admins[1:] + researchers:  # admins[0] created the projects
            add_member(project=project, user=user, role=Role.ADMIN)
    path = tmp / "felm.jsonl"
    generate_felm_jsonl(path, items, seed=7)
    # the set-up's export lines are stored once, below, not per import
    item_imports.enqueue_store_export_lines = lambda *a, **k: None
    with path.open("rb") as handle:
        import_jsonl(felm, handle, fmt="felm", labels_as="ignore")
    rng = random.Random(3)
    submitted = 0
    for item in felm.items.order_by("id")[:50]:
        for assignment in Assignment.objects.filter(item_stage__item=item):
            segments = [
                {"label": rng.random() < 0.8, "error_type": None, "comment": "", "refs": []}
                for _ in item.stages.get().content["segments"]
            ]
            for segment in segments:
                if not segment["label"]:
                    segment.update(error_type="knowledge_error", comment="wrong")
            save_annotation(assignment=assignment, payload={"segments": segments}, version=0, submit=True)
            submitted += 1
    factcheck = create_project(name="campaign Factcheck-Bench", kind="factcheck", created_by=admins[0][0])
    for user, _ in admins[1:] + researchers:
        add_member(project=factcheck, user=user, role=Role.ADMIN)
    fc_path = tmp / "factcheck.jsonl"
    with fc_path.open("w", encoding="utf-8") as out:
        for index in range(200):
            out.write(json.dumps(released_item(index, rng)) + "\n")
    with fc_path.open("rb") as handle:
        import_jsonl(factcheck, handle, fmt="factcheck-bench", labels_as="gold")
    tasks.store_export_lines(factcheck.id)
    generate_felm_jsonl(tmp / "import.jsonl", 10_000, seed=11)
    from django.db import connections

    extra = {}
    if step2:
        from campaign_step2 import set_up_step2

        retriever = person("retriever-0", staff=True)
        step2_setup = set_up_step2(
            tmp,
            args.step2_items,
            args.corpus_passages,
            admins[0][0],
            [user for user, _ in everyone[len(annotators) :]],
            retriever[0],
        )
        extra = {
            **step2_setup["config"],
            "step2_annotators": [e for _, e in everyone[len(annotators) :]],
            "retrievers": [retriever[1]],
            "step2_timings": step2_setup["timings"],
            "corpus_passages": step2_setup["corpus_passages"],
        }
    connections.close_all()
    return {
        **extra,
        "felm_project": felm.id,
        "factcheck_project": factcheck.id,
        "import_project": target.id,
        "felm_formats": list(exports.export_formats(felm)),
        "factcheck_formats": list(exports.export_formats(factcheck)),
        "annotators": [e for _, e in annotators],
        "consolidators": [e for _, e in consolidators],
        "admins": [e for _, e in admins],
        "researchers": [e for _, e in researchers],
        "session_cookie": settings.SESSION_COOKIE_NAME,
        "import_file": str(tmp / "import.jsonl"),
        "submitted": submitted,
    }


def postgres_pids(db: str, ours: bool = True) -> list[int]:
    """The PostgreSQL server's processes (their titles start "postgres: "; the postmaster runs
    .../bin/postgres): the backends of database ``db``, or (``ours=False``) all the others."""
    pids = []
    for pid in pids_matching("postgres"):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if title.startswith("postgres: ") or title.split(" ", 1)[0].endswith("/bin/postgres"):
            if (f" {db} " in title) == ours:
                pids.append(pid)
    return pids


def queued_tasks(redis_url: str, queue: str) -> int | str:
    """Messages waiting in the worker's queue (Redis list named after the queue)."""
    try:
        import redis

        return redis.Redis.from_url(redis_url).llen(queue)
    except Exception as exc:  # noqa: BLE001 - a report line, not a failure
        return f"unknown ({type(exc).__name__})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="FELM items of the campaign (default 2000)")
    parser.add_argument("--run-time", default="90s", help="locust --run-time (default 90s)")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument(
        "--with-ramp-up",
        action="store_true",
        help="keep the ramp-up in the statistics (all users start within 3 s; by default locust's "
        "--reset-stats drops what was sent before the last user started)",
    )
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    parser.add_argument("--db", default="workbench_bench_campaign")
    parser.add_argument(
        "--step2-items",
        type=int,
        default=0,
        help="add a Factcheck-Bench project of this many items in step 2, with a corpus, worked on by "
        "--step2-annotators of the 50 annotators while the worker retrieves evidence (default 0: none)",
    )
    parser.add_argument("--step2-annotators", type=int, default=10)
    parser.add_argument("--corpus-passages", type=int, default=2000, help="passages of the step-2 corpus")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    tmp = Path(tempfile.mkdtemp(prefix="campaign-bench-"))
    queue = f"campaign-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        **bench_environment(args.db, tmp / "data"),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": args.redis,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "INTERACTIVE_QUEUE": queue,
        "EMBEDDING_QUEUE": queue,
        "HF_HUB_OFFLINE": "1",  # the model comes from its package; nothing leaves the machine
        "WEB_SEARCH_URL": "",
        "LLM_BASE_URL": "",
    }  # the interactive tasks too: one queue, served by the worker started here
    os.environ.update({k: v for k, v in env.items() if k != "CELERY_BROKER_URL"})  # set-up runs tasks in-process
    create_database(args.db)
    web = worker = None
    peaks = {"web": 0.0, "worker": 0.0}
    try:
        started = time.perf_counter()
        config = set_up(tmp, args)
        (tmp / "config.json").write_text(json.dumps(config))
        print(
            f"set-up {time.perf_counter() - started:.0f} s: FELM {args.items} items ({config['submitted']} submissions, "
            f"consolidations open), Factcheck-Bench 200 items with gold; load average {load_average():.1f}"
        )
        for name, (wall, cpu) in config.get("step2_timings", {}).items():
            print(f"  step 2 set-up: {name}: {wall:.1f} s wall, {cpu:.1f} s CPU of this process")
        port = free_port()
        bin_dir = Path(sys.executable).parent
        web = start_process(
            gunicorn_command(port, "--workers", str(args.web_workers), "--timeout", "60"),
            tmp / "gunicorn.log",
            env,
        )
        worker, _ = start_worker(env, tmp / "worker.log", name=queue)  # returns once it answers a ping
        # every worker booted and answering: the clock starts on a running server
        wait_until_answers(port, web, tmp / "gunicorn.log", answers=args.web_workers * 3, timeout=180)
        time.sleep(1)
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peaks["web"] = max(peaks["web"], tree_rss_mib(web.pid))
                peaks["worker"] = max(peaks["worker"], tree_rss_mib(worker.pid))
                stop.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        users = 59 + len(config.get("retrievers", []))
        cpu = CpuSampler(
            {
                "locust": lambda: tree_pids(locust_pid[0]) if locust_pid else [],
                f"gunicorn (master + {args.web_workers} workers)": lambda: tree_pids(web.pid),
                "Celery worker": lambda: tree_pids(worker.pid),
                f"PostgreSQL backends of {args.db}": lambda: postgres_pids(args.db),
                "PostgreSQL, the rest (other databases' backends, WAL writer, checkpointer…)": lambda: postgres_pids(
                    args.db, ours=False
                ),
                "this driver (RSS sampler)": lambda: [os.getpid()],
            }
        )
        locust_pid: list[int] = []
        run_started = datetime.now(UTC)
        with cpu:
            locust = subprocess.Popen(
                [
                    str(bin_dir / "locust"),
                    "-f",
                    str(REPO_ROOT / "benchmarks" / "campaign_locust.py"),
                    "--headless",
                    "-u",
                    str(users),
                    "-r",
                    "20",
                    "--run-time",
                    args.run_time,
                    "--host",
                    f"http://127.0.0.1:{port}",
                    "--csv",
                    str(tmp / "campaign"),
                    "--only-summary",
                    "--stop-timeout",
                    "30",
                    *([] if args.with_ramp_up else ["--reset-stats"]),
                    "--loglevel",
                    "WARNING",
                ],
                cwd=REPO_ROOT,
                env={**os.environ, "CAMPAIGN_CONFIG": str(tmp / "config.json")},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            locust_pid.append(locust.pid)
            _, locust_stderr = locust.communicate()
        stop.set()
        sampler.join()
        if locust.returncode not in (0, 1):  # 1: some requests failed (reported below)
            print(locust_stderr[-3000:])
        print(
            f"\nload average at the end {load_average():.1f}; gunicorn {args.web_workers} sync workers, Celery worker "
            f"--pool=solo, {users} users for {args.run_time}; "
            + (
                "the ramp-up included"
                if args.with_ramp_up
                else "statistics from the end of the ramp-up (--reset-stats)"
            )
            + "\n"
        )
        with open(tmp / "campaign_stats.csv", newline="") as handle:
            print_table(
                ("endpoint", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", "req/s"),
                [
                    (
                        row["Name"],
                        row["Request Count"],
                        row["Failure Count"],
                        row["50%"],
                        row["95%"],
                        row["99%"],
                        f"{float(row['Requests/s']):.1f}",
                    )
                    for row in csv.DictReader(handle)
                ],
                markdown=True,
            )
        failures = tmp / "campaign_failures.csv"
        if failures.exists():
            for row in list(csv.DictReader(failures.open()))[:10]:
                print(f"failure: {row['Method']} {row['Name']}: {row['Error'][:200]} x{row['Occurrences']}")
        print(
            f"\npeak RSS: web tier (master + {args.web_workers} workers) {peaks['web']:.0f} MiB; "
            f"Celery worker {peaks['worker']:.0f} MiB"
        )
        print(f"\nCPU during the run (sampled every 0.5 s from /proc/PID/stat); load average {load_average():.1f}")
        print_table(("process group", "CPU s", "cores", "share of busy"), cpu.rows(), markdown=True)
        print(f"\ntasks still queued for the worker at the end: {queued_tasks(args.redis, queue)}")
        if config.get("step2_project"):
            from campaign_step2 import after_run

            print(f"step-2 project after the run: {after_run(config, run_started)}")
    finally:
        stop_processes(web, worker)
        drop_database(args.db)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
