"""The FELM import of issue 22, in-process and end to end through the API until the annotators see their queues.

Usage: .venv/bin/python benchmarks/felm_import.py [--items 10000] [--runs 2] [--db-name workbench_bench_import_felm]
           [--redis redis://127.0.0.1:6379/5] [--skip-api] [--skip-inprocess] [--profile] [--batch-size N]

It creates its own PostgreSQL database, migrates it, writes ``--items`` FELM lines in the released
shape (felm_data.felm_record: 5 given segments, labels, comments, types, refs) and imports them
into fresh FELM projects with 2 annotators and a consolidator (2 assignments an item):

1. in-process: ``import_jsonl(project, file, fmt="felm")``, ``--runs`` times (a new project each).
   Reported: wall seconds, the Python process's CPU seconds, the PostgreSQL backend's CPU seconds
   (utime + stime of the server process serving the connection, from /proc: PostgreSQL runs on
   this machine), the SQL statements (Django's cursor) with their wall time and the COPY blocks
   with theirs, and the load average.
2. through the API (unless ``--skip-api``): gunicorn (2 sync workers) and a real Celery worker
   (``--pool=solo``, a queue of its own on ``--redis``) are started; then, ``--runs`` times: the
   file is POSTed to ``/api/projects/{id}/import/`` and the first annotator's queue
   (``GET /api/projects/{id}/assignments/?mine=true``) is polled every 20 ms until it lists all
   its assignments. Reported: POST to queue shown, the POST itself, the job's pickup latency
   (created_at to started_at), the job's run (started_at to finished_at) and the rest.

``--profile`` adds a cProfile of one in-process import (top functions by own and cumulative time).
The database is dropped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from felm_data import generate_felm_jsonl  # noqa: E402
from harness import create_database, drop_database, load_average  # noqa: E402

DEFAULT_DB = "workbench_bench_import_felm"
TARGET_S = 1.0


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- in-process ---------------------------------------------------------------------------------


def backend_cpu_seconds(pid: int) -> float:
    """utime + stime of a local process (a PostgreSQL backend), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _StatementTimer:
    """Wall time of each SQL statement run through Django's cursor, by its first words."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            key = " ".join(sql.split()[:3])[:60]
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - started
            self.counts[key] = self.counts.get(key, 0) + 1


@contextlib.contextmanager
def timed_copies(into: dict[str, list[float]], backend: int):
    """Time every psycopg COPY block (from its start to the server's answer at its end) and the
    COMMIT (with the PostgreSQL backend's CPU seconds in it: the deferred foreign-key checks)."""
    import psycopg

    original = psycopg.Cursor.copy

    @contextlib.contextmanager
    def copy(self, statement, *args, **kwargs):
        started = time.perf_counter()
        with original(self, statement, *args, **kwargs) as block:
            yield block
            finish = time.perf_counter()
        table = str(statement).split()[1] if len(str(statement).split()) > 1 else "?"
        into.setdefault(table, []).append(time.perf_counter() - started)
        into.setdefault(f"{table} (end of COPY)", []).append(time.perf_counter() - finish)

    commit = psycopg.Connection.commit

    def timed_commit(self):
        started, cpu = time.perf_counter(), backend_cpu_seconds(backend)
        try:
            return commit(self)
        finally:
            into.setdefault("(COMMIT)", []).append(time.perf_counter() - started)
            into.setdefault("(COMMIT: backend CPU)", []).append(backend_cpu_seconds(backend) - cpu)

    import queue

    get = queue.Queue.get

    def timed_get(self, *args, **kwargs):
        # the importing thread waiting for the reader thread's parsed lines
        started = time.perf_counter()
        try:
            return get(self, *args, **kwargs)
        finally:
            if threading.current_thread() is threading.main_thread():
                into.setdefault("(waiting for parsed lines)", []).append(time.perf_counter() - started)

    psycopg.Cursor.copy, psycopg.Connection.commit, queue.Queue.get = copy, timed_commit, timed_get
    try:
        yield
    finally:
        psycopg.Cursor.copy, psycopg.Connection.commit, queue.Queue.get = original, commit, get


def in_process(path: Path, runs: int, profile: bool) -> list[dict]:
    from django.db import connection

    from annotation.imports.items import import_jsonl
    from annotation.kinds import get_kind
    from annotation.models import Project
    from felm_data import create_felm_project

    get_kind("felm")
    results = []
    for run in range(runs + (1 if profile else 0)):
        project = Project.objects.get(pk=create_felm_project(f"felm import {uuid.uuid4().hex[:8]}"))
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        timer, copies = _StatementTimer(), {}
        profiler = cProfile.Profile() if profile and run == runs else None
        load = loadavg()
        pg_before = backend_cpu_seconds(backend)
        with connection.execute_wrapper(timer), timed_copies(copies, backend), open(path, "rb") as file:
            if profiler:
                profiler.enable()
            started, cpu = time.perf_counter(), time.process_time()
            result = import_jsonl(project, file, fmt="felm")
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            if profiler:
                profiler.disable()
        pg_cpu = backend_cpu_seconds(backend) - pg_before
        if profiler:
            report_profile(profiler, wall)
            continue
        results.append({"wall": wall, "cpu": cpu, "pg_cpu": pg_cpu, "load": load, "result": result})
        print(
            f"  in-process run {run + 1}: {wall:.3f} s wall, Python CPU {cpu:.3f} s, PostgreSQL backend CPU "
            f"{pg_cpu:.3f} s [load {load}]; items {result.items}, assignments {result.assignments}"
        )
        print(f"    {sum(timer.counts.values())} statements through Django's cursor:")
        for key, seconds in sorted(timer.seconds.items(), key=lambda kv: -kv[1])[:8]:
            print(f"      {seconds * 1000:8.1f} ms  x{timer.counts[key]:<4} {key}")
        for table, seconds in sorted(copies.items(), key=lambda kv: -sum(kv[1])):
            print(
                f"      {sum(seconds) * 1000:8.1f} ms  x{len(seconds):<4} {'' if table.startswith('(') else 'COPY '}{table}"
            )
    return results


def report_profile(profiler: cProfile.Profile, wall: float) -> None:
    for order, count in (("tottime", 22), ("cumulative", 30)):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(count)
        print(f"\n--- cProfile of one import ({wall:.2f} s under the profiler), by {order} ---")
        print("\n".join(out.getvalue().splitlines()[4:]))


# -- through the API ----------------------------------------------------------------------------


def through_api(path: Path, runs: int, tmp: Path, redis: str, db_name: str, items: int) -> list[dict]:
    from django.db import connection
    from rest_framework.authtoken.models import Token

    import import_scale
    from annotation.models import ImportJob, Membership, Project, Role
    from felm_data import create_felm_project

    import_scale.DB_NAME = db_name
    # the database by name: child_environment's default is import_scale's own
    env = import_scale.child_environment(tmp / "data", redis, f"felm-import-{uuid.uuid4().hex[:8]}", db_name)
    projects = []
    for _ in range(runs):
        project = Project.objects.get(pk=create_felm_project(f"felm api {uuid.uuid4().hex[:8]}"))
        annotator = Membership.objects.filter(project=project, role=Role.ANNOTATOR).order_by("user_id").first()
        admin_token = Token.objects.get_or_create(user_id=project.created_by_id)[0].key
        projects.append((project.id, admin_token, Token.objects.get_or_create(user_id=annotator.user_id)[0].key))
    connection.close()
    body_fields = {"format": "felm", "labels_as": "ignore"}
    results = []
    with import_scale.Processes(env, tmp, 2) as processes:
        import_scale.wait_until_serving(processes, projects[0][1], projects[0][0])
        time.sleep(3)  # the Celery worker connects to the broker
        for run, (project_id, admin_token, annotator_token) in enumerate(projects):
            body, content_type = import_scale.multipart(path, body_fields)
            load = loadavg()
            started = time.perf_counter()
            status, job, post_s = import_scale.request(
                processes.port, "POST", f"/api/projects/{project_id}/import/", admin_token, body, content_type
            )
            if status != 202:
                raise RuntimeError(f"the upload answered {status}: {job}")
            polls, deadline = 0, started + 600
            while True:
                processes.check_alive()
                status, page, _ = import_scale.request(
                    processes.port,
                    "GET",
                    f"/api/projects/{project_id}/assignments/?mine=true",
                    annotator_token,
                )
                polls += 1
                if status == 200 and page.get("count", 0) >= items:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"the queue shows {page.get('count')} after 600 s")
                time.sleep(0.02)
            total = time.perf_counter() - started
            row = ImportJob.objects.get(pk=job["id"])
            connection.close()
            pickup = (row.started_at - row.created_at).total_seconds()
            worker = (row.finished_at - row.started_at).total_seconds()
            results.append({"total": total, "post": post_s, "pickup": pickup, "worker": worker, "load": load})
            print(
                f"  through the API, run {run + 1}: {total:.3f} s from POST to the annotator's queue listing "
                f"{page['count']} assignments [load {load}]; POST {post_s:.3f} s, job pickup {pickup:.3f} s "
                f"(created_at to started_at), job {worker:.3f} s (started_at to finished_at), rest "
                f"{total - post_s - worker:.3f} s; {polls} queue polls"
            )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--db-name", default=DEFAULT_DB)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5", help="broker (a queue of its own is used)")
    parser.add_argument("--skip-api", action="store_true")
    parser.add_argument("--skip-inprocess", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--batch-size", type=int, help="annotation.imports.items.BATCH_SIZE for the in-process runs")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    tmp = Path(tempfile.mkdtemp(prefix="felm-import-"))
    from harness import configure_environment

    configure_environment(args.db_name, tmp / "data")
    create_database(args.db_name)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        path = tmp / "felm.jsonl"
        size = generate_felm_jsonl(path, args.items, args.seed)
        print(
            f"{args.items} FELM lines ({size / 2**20:.1f} MiB), 2 annotators an item; {os.cpu_count()} cores, "
            f"load average {load_average():.1f} (target: <= {TARGET_S} s through the API until the queue shows)"
        )
        if args.batch_size:
            from annotation.imports import items

            items.BATCH_SIZE = args.batch_size
        if not args.skip_inprocess:
            in_process(path, args.runs, args.profile)
        if not args.skip_api:
            through_api(path, args.runs, tmp, args.redis, args.db_name, args.items)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(args.db_name)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"database {args.db_name} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
