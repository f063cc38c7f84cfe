"""Large imports through the live path: gunicorn web server + a real Celery worker on PostgreSQL.

Usage: .venv/bin/python benchmarks/import_scale.py [--items 100000] [--big-mib 100] [--redis redis://127.0.0.1:6379/5]
           [--web-workers 3] [--keep-files]

It creates its own PostgreSQL database (``workbench_bench_import`` on 127.0.0.1:5432, user
postgres), migrates it, starts gunicorn (sync workers) and one Celery worker (``--pool=solo``)
on loopback with a queue of its own on the given Redis, and drops the database and stops both
at the end, whatever happens. Two files are imported into a FELM project with 2 annotators:

1. ``--items`` small FELM lines with given segments (no pre-annotation task follows);
2. a file of about ``--big-mib`` MiB of larger FELM lines.

For each: the upload is POSTed to ``/api/projects/{id}/import/`` (timed; the answer is 202),
then the job is polled (``GET /api/projects/{id}/imports/{job}/``, and the project's
``/progress/`` as other users of the web server would) every 0.25 s until it ends; every
polling request is timed. Reported: end-to-end seconds (POST to done), the worker's own time
(the job's started_at to finished_at), the longest web request while the import ran, and the
peak RSS (VmHWM, reset through /proc/PID/clear_refs before each import) of each gunicorn worker
and of the Celery worker process. Targets: no web request over 1 s, worker peak RSS under 300 MB.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    bench_environment,
    children_of,
    create_database,
    drop_database,
    free_port,
    gunicorn_command,
    load_average,
    reset_peak_rss,
    start_process,
    start_worker,
    status_kib,
    stop_processes,
)

DB_NAME = "workbench_bench_import"
TARGET_REQUEST_S = 1.0
TARGET_WORKER_RSS_MIB = 300
WORDS = (
    "claim",
    "river",
    "paper",
    "treaty",
    "signal",
    "museum",
    "vaccine",
    "orbit",
    "harbour",
    "engine",
    "ledger",
    "protein",
    "glacier",
    "sonata",
    "census",
    "bridge",
    "archive",
    "comet",
    "lattice",
    "meadow",
)


# -- environment, database, processes -----------------------------------------------------------


def child_environment(data_dir: Path, redis_url: str, queue: str, db_name: str = DB_NAME) -> dict:
    env = {
        **os.environ,
        **bench_environment(db_name, data_dir),
        "CELERY_BROKER_URL": redis_url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "INTERACTIVE_QUEUE": queue,  # imports go to the interactive queue: the same one, served by our worker
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "IMPORT_MAX_UPLOAD_BYTES": str(400 * 2**20),
    }
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DJANGO_SETTINGS_MODULE",
                "DATABASE_URL",
                "CELERY_BROKER_URL",
                "CELERY_TASK_DEFAULT_QUEUE",
                "INTERACTIVE_QUEUE",
                "DJANGO_DATA_DIR",
                "DJANGO_SECRET_KEY",
                "DJANGO_DEBUG",
                "DJANGO_ALLOWED_HOSTS",
                "LOG_LEVEL",
            )
        }
    )
    return env


class Processes:
    """gunicorn and the Celery worker, stopped (their own process groups) on exit."""

    def __init__(self, env: dict, tmp: Path, web_workers: int):
        self.env, self.tmp, self.web_workers = env, tmp, web_workers
        self.port = free_port()
        self.web = self.worker = None

    def __enter__(self):
        self.web = start_process(
            gunicorn_command(self.port, "--workers", str(self.web_workers), "--timeout", "30"),
            self.tmp / "gunicorn.log",
            self.env,
        )
        self.worker, _ = start_worker(self.env, self.tmp / "worker.log")  # returns once it answers a ping
        return self

    def web_workers_pids(self) -> list[int]:
        return children_of(self.web.pid)

    def check_alive(self) -> None:
        for name, process, log in (
            ("gunicorn", self.web, "gunicorn.log"),
            ("worker", self.worker, "worker.log"),
        ):
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited: {(self.tmp / log).read_text()[-3000:]}")

    def __exit__(self, *exc):
        stop_processes(self.web, self.worker)


# -- data ---------------------------------------------------------------------------------------


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def felm_line(index: int, rng: random.Random, segments: int, words: int) -> bytes:
    parts = [sentence(rng, words) for _ in range(segments)]
    record = {
        "index": f"bench-{index}",
        "source": "bench",
        "prompt": f"Question {index}?",
        "response": " ".join(parts),
        "segmented_response": parts,
        "ref": [],
        "domain": "wk",
    }
    return json.dumps(record).encode() + b"\n"


def write_small(path: Path, items: int) -> int:
    rng = random.Random(1)
    with path.open("wb") as out:
        for index in range(items):
            out.write(felm_line(index, rng, 2, 5))
    return path.stat().st_size


def write_big(path: Path, mib: int) -> int:
    rng = random.Random(2)
    target, index = mib * 2**20, 0
    with path.open("wb") as out:
        while out.tell() < target:
            out.write(felm_line(index, rng, 6, 40))
            index += 1
    return path.stat().st_size


# -- HTTP ---------------------------------------------------------------------------------------


def request(
    port: int,
    method: str,
    path: str,
    token: str,
    body: bytes | None = None,
    content_type: str | None = None,
) -> tuple[int, dict, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    elapsed = time.perf_counter() - started
    try:
        parsed = json.loads(data)
    except ValueError:
        parsed = {"raw": data[:500].decode(errors="replace")}
    return response.status, parsed, elapsed


def multipart(path: Path, fields: dict) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: application/jsonl\r\n\r\n".encode()
    )
    parts.append(path.read_bytes())
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def wait_until_serving(processes: Processes, token: str, project_id: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        processes.check_alive()
        try:
            status = request(processes.port, "GET", f"/api/projects/{project_id}/", token)[0]
            if status == 200:
                return
            last = f"HTTP {status}"
        except OSError as error:
            last = repr(error)
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer in time (last: {last})")


def run_import(processes: Processes, token: str, project_id: int, path: Path) -> dict:
    web_pids, worker_pid = processes.web_workers_pids(), processes.worker.pid
    for pid in [*web_pids, worker_pid]:
        reset_peak_rss(pid)
    baseline = {
        "worker_rss_mib": status_kib(worker_pid, "VmRSS") / 1024,
        "web_rss_mib": max(status_kib(pid, "VmRSS") for pid in web_pids) / 1024,
    }
    body, content_type = multipart(path, {"format": "felm", "labels_as": "ignore"})
    started = time.perf_counter()
    status, job, upload_s = request(
        processes.port, "POST", f"/api/projects/{project_id}/import/", token, body, content_type
    )
    del body
    if status != 202:
        raise RuntimeError(f"import answered {status}: {job}")
    job_times, progress_times, states = [], [], []
    deadline = time.monotonic() + 3600
    while True:
        processes.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the import job is still {job['state']} after an hour")
        status, job, seconds = request(processes.port, "GET", job["url"], token)
        _, _, progress_s = request(processes.port, "GET", f"/api/projects/{project_id}/progress/", token)
        job_times.append(seconds)
        progress_times.append(progress_s)
        states.append((job["state"], job["lines_read"]))
        if job["state"] in ("done", "failed"):
            break
        time.sleep(0.25)
    total = time.perf_counter() - started
    from django.utils.dateparse import parse_datetime

    worker_s = (parse_datetime(job["finished_at"]) - parse_datetime(job["started_at"])).total_seconds()
    progress_seen = sorted({lines for state, lines in states if state == "running"})
    return {
        "state": job["state"],
        "errors": job["errors"][:3],
        "result": job["result"],
        "file_mib": path.stat().st_size / 2**20,
        "upload_s": upload_s,
        "total_s": total,
        "worker_s": worker_s,
        "polls": len(job_times) * 2,
        "longest_poll_s": max(job_times + progress_times),
        "longest_job_s": max(job_times),
        "longest_progress_s": max(progress_times),
        "p95_poll_s": sorted(job_times + progress_times)[int(0.95 * (len(job_times) * 2 - 1))],
        "progress_values": len(progress_seen),
        "web_peak_mib": max(status_kib(pid, "VmHWM") for pid in web_pids) / 1024,
        "worker_peak_mib": status_kib(worker_pid, "VmHWM") / 1024,
        **baseline,
    }


def report(name: str, r: dict) -> None:
    print(
        f"\n{name}: {r['file_mib']:.1f} MiB, state {r['state']}, result {r['result']}"
        + (f", errors {r['errors']}" if r["errors"] else "")
    )
    print(
        f"  end to end (POST to done): {r['total_s']:.1f} s; worker (started_at to finished_at): {r['worker_s']:.1f} s"
    )
    print(f"  upload request (POST, 202): {r['upload_s']:.2f} s")
    print(
        f"  longest of {r['polls']} web requests while polling: {r['longest_poll_s'] * 1000:.0f} ms "
        f"(target < {TARGET_REQUEST_S * 1000:.0f} ms: {'met' if r['longest_poll_s'] < TARGET_REQUEST_S else 'MISSED'}); "
        f"{r['progress_values']} distinct progress values seen while running"
    )
    print(
        f"    p95 {r['p95_poll_s'] * 1000:.0f} ms; longest GET job {r['longest_job_s'] * 1000:.0f} ms, "
        f"longest GET progress {r['longest_progress_s'] * 1000:.0f} ms"
    )
    print(
        f"  peak RSS: web worker {r['web_peak_mib']:.0f} MiB (before: {r['web_rss_mib']:.0f} MiB); Celery worker "
        f"{r['worker_peak_mib']:.0f} MiB (before: {r['worker_rss_mib']:.0f} MiB; target < {TARGET_WORKER_RSS_MIB} MB: "
        f"{'met' if r['worker_peak_mib'] * 1.048576 < TARGET_WORKER_RSS_MIB else 'MISSED'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--items",
        type=int,
        default=100_000,
        help="small FELM lines in the first file (default 100000)",
    )
    parser.add_argument(
        "--big-mib",
        type=int,
        default=100,
        help="size of the second file in MiB (default 100; 0: skip)",
    )
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5", help="broker (a queue of its own is used)")
    parser.add_argument("--web-workers", type=int, default=3, help="gunicorn sync workers (default 3)")
    parser.add_argument("--db", default=DB_NAME, help=f"the database it creates and drops (default {DB_NAME})")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the finally below cleans up

    tmp = Path(tempfile.mkdtemp(prefix="import-bench-"))
    env = child_environment(tmp / "data", args.redis, f"import-bench-{uuid.uuid4().hex[:8]}", args.db)
    create_database(args.db)
    try:
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from rest_framework.authtoken.models import Token

        from annotation.models import Role
        from annotation.services.projects import add_member, create_project

        call_command("migrate", verbosity=0, interactive=False)
        User = get_user_model()
        admin = User.objects.create_user("bench-admin", password=None, is_staff=True)
        token = Token.objects.create(user=admin).key
        projects = []
        for name in ("small lines", "100 MiB file"):
            project = create_project(name=f"import bench: {name}", kind="felm", created_by=admin)
            for annotator in ("a", "b"):
                user, _ = User.objects.get_or_create(username=f"bench-{annotator}")
                add_member(project=project, user=user, role=Role.ANNOTATOR)
            projects.append(project.id)
        from django.db import connection

        connection.close()

        small, big = tmp / "small.jsonl", tmp / "big.jsonl"
        print(f"generated {args.items} small FELM lines: {write_small(small, args.items) / 2**20:.1f} MiB")
        if args.big_mib:
            print(
                f"generated the large file: {write_big(big, args.big_mib) / 2**20:.1f} MiB "
                f"({sum(1 for _ in big.open('rb'))} lines)"
            )
        print(
            f"machine: {os.cpu_count()} cores, load average {load_average():.1f}; gunicorn {args.web_workers} sync "
            "workers; Celery worker --pool=solo; PostgreSQL on loopback"
        )

        with Processes(env, tmp, args.web_workers) as processes:
            wait_until_serving(processes, token, projects[0])
            report(
                f"1. {args.items} small FELM lines",
                run_import(processes, token, projects[0], small),
            )
            if args.big_mib:
                report(f"2. a {args.big_mib} MiB file", run_import(processes, token, projects[1], big))
            leftovers = list((tmp / "data" / "imports").glob("*"))
            print(f"\nstored uploads left after the jobs: {len(leftovers)}")
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(args.db)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"database {args.db} dropped, temporary files removed")


if __name__ == "__main__":
    main()
