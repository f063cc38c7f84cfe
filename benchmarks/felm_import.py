"""Headline "import": FELM items through the API until the annotator's queue lists them.

Usage: .venv/bin/python benchmarks/felm_import.py [--items 10000] [--runs 2] [--redis URL] [--in-process]
           [--profile] [--large [--large-items 100000] [--large-mib 100]] [--db workbench_bench_import]

``--items`` generated lines in FELM's released shape (felm_data.felm_record: 5 given segments,
labels, comments) go to fresh FELM projects of 2 annotators and a consolidator (2 assignments an
item). gunicorn (2 sync workers) and, with a broker, a real Celery worker (``--pool=solo``, a
queue of its own) are started; then the file is POSTed to ``/api/projects/{id}/import/`` and the
first annotator's queue (``GET .../assignments/?mine=true``) is polled every 20 ms until it lists
all its assignments. Reported: POST until the queue shows, the POST itself, the job's pickup
(created_at to started_at) and run (started_at to finished_at). Without a broker (the quick run)
the job runs in the web worker, as the embedded default runs it.

Variants: ``--in-process`` times ``import_jsonl`` itself (wall, Python CPU, PostgreSQL backend
CPU), ``--profile`` adds its cProfile; ``--large`` imports a ``--large-items``-line file and a
``--large-mib`` MiB file while polling the job and the project's progress, and reports the
longest web request meanwhile (target < 1 s) and the peak RSS of the web and Celery workers
(target < 300 MB). The database is dropped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import json
import pstats
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from felm_data import create_felm_project, generate_felm_jsonl  # noqa: E402
from harness import (  # noqa: E402
    Figure,
    Gunicorn,
    Run,
    bench_database,
    children_of,
    database_cpu_seconds,
    load_average,
    print_figures,
    reset_peak_rss,
    start_worker,
    status_kib,
    stop_processes,
)

TARGET_S = 1.0
TARGET_REQUEST_S = 1.0
TARGET_WORKER_RSS_MB = 300
SIZES = {"quick": 200, "full": 10_000}


# -- HTTP ---------------------------------------------------------------------------------------


def api(port: int, method: str, path: str, token: str, body: bytes | None = None, content_type: str = ""):
    """(status, parsed JSON, seconds) of one request on loopback."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    try:
        parsed = json.loads(data)
    except ValueError:
        parsed = {"raw": data[:500].decode(errors="replace")}
    return response.status, parsed, time.perf_counter() - started


def multipart(path: Path, fields: dict) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: application/jsonl\r\n\r\n".encode()
    )
    parts += [path.read_bytes(), f"\r\n--{boundary}--\r\n".encode()]
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Servers:
    """gunicorn and, with the run's broker, a Celery worker; both stopped on exit."""

    def __init__(self, run: Run, web_workers: int, name: str = "import"):
        self.env = {**run.server_env(name), "IMPORT_MAX_UPLOAD_BYTES": str(400 * 2**20)}
        self.tmp, self.web_workers, self.worker = run.tmp, web_workers, None
        self.web = Gunicorn(["--workers", str(web_workers), "--timeout", "120"], run.tmp / f"{name}-web.log", self.env)

    def __enter__(self) -> Servers:
        self.web.__enter__()
        try:
            if "CELERY_BROKER_URL" in self.env:
                self.worker, _ = start_worker(self.env, self.tmp / "import-worker.log")  # once it answers a ping
            self.web.wait_ready(answers=self.web_workers)
        except BaseException:
            self.__exit__()
            raise
        return self

    @property
    def port(self) -> int:
        return self.web.port

    def __exit__(self, *exc) -> None:
        stop_processes(self.web.process, self.worker)


def api_tokens(project_id: int) -> tuple[str, str]:
    """(the project admin's token, its first annotator's)."""
    from rest_framework.authtoken.models import Token

    from annotation.models import Membership, Project, Role

    project = Project.objects.get(pk=project_id)
    annotator = Membership.objects.filter(project=project, role=Role.ANNOTATOR).order_by("user_id").first()
    return tuple(
        Token.objects.get_or_create(user_id=user)[0].key for user in (project.created_by_id, annotator.user_id)
    )


def import_until_queued(servers: Servers, path: Path, items: int, project_id: int) -> dict:
    """POST the file, then poll the annotator's queue until it lists ``items`` assignments."""
    from django.db import connection

    from annotation.models import ImportJob

    admin, annotator = api_tokens(project_id)
    connection.close()  # the servers write; this process only reads the job afterwards
    body, content_type = multipart(path, {"format": "felm", "labels_as": "ignore"})
    load, started = load_average(), time.perf_counter()
    status, job, post_s = api(servers.port, "POST", f"/api/projects/{project_id}/import/", admin, body, content_type)
    if status != 202:
        raise RuntimeError(f"the upload answered {status}: {job}")
    while True:
        status, page, _ = api(servers.port, "GET", f"/api/projects/{project_id}/assignments/?mine=true", annotator)
        if status == 200 and page.get("count", 0) >= items:
            break
        if time.perf_counter() > started + 600:
            raise RuntimeError(f"the queue shows {page.get('count')} after 600 s")
        time.sleep(0.02)
    total = time.perf_counter() - started
    row = ImportJob.objects.get(pk=job["id"])
    pickup, worker = (
        (row.started_at - row.created_at).total_seconds(),
        (row.finished_at - row.started_at).total_seconds(),
    )
    print(
        f"  import: {total:.3f} s from POST to the queue listing {page['count']} [load {load:.1f}]; POST {post_s:.3f} s, "
        f"job pickup {pickup:.3f} s, job {worker:.3f} s"
    )
    return {"total": total, "post": post_s, "pickup": pickup, "worker": worker}


def headline(run: Run) -> list[Figure]:
    items = run.options.get("items") or SIZES["quick" if run.quick else "full"]
    runs = run.options.get("runs", 1)
    path = run.tmp / "felm-import.jsonl"
    generate_felm_jsonl(path, items, seed=2024)
    projects = [create_felm_project(f"felm import {uuid.uuid4().hex[:8]}") for _ in range(runs)]
    with Servers(run, 1 if run.quick else 2) as servers:
        totals = [import_until_queued(servers, path, items, project)["total"] for project in projects]
    note = " / ".join(f"{t:.3f}" for t in totals) + " s" if runs > 1 else ""
    name = f"FELM import, {items:,} items through the API until queued"
    return [Figure(name, statistics.median(totals), "s", TARGET_S, note=note)]


# -- variants -----------------------------------------------------------------------------------


def in_process(path: Path, profile: bool) -> None:
    """``import_jsonl`` itself: wall, Python CPU and PostgreSQL backend CPU (a cProfile too)."""
    from annotation.imports.items import import_jsonl
    from annotation.models import Project

    project = Project.objects.get(pk=create_felm_project(f"felm in-process {uuid.uuid4().hex[:8]}"))
    profiler = cProfile.Profile() if profile else None
    database = database_cpu_seconds()
    with path.open("rb") as file:
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        result = import_jsonl(project, file, fmt="felm")
        if profiler:
            profiler.disable()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"  in-process: {wall:.3f} s wall, Python CPU {cpu:.3f} s, PostgreSQL backend CPU "
        f"{database_cpu_seconds() - database:.3f} s; {result.items} items, {result.assignments} assignments"
    )
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue())


def felm_line(index: int, rng: random.Random, segments: int, words: int) -> bytes:
    parts = [" ".join(rng.choice(("claim", "river", "paper", "orbit", "census")) for _ in range(words)) + "."]
    parts *= segments
    record = {"index": f"large-{index}", "source": "bench", "prompt": f"Question {index}?"}
    return (
        json.dumps({**record, "response": " ".join(parts), "segmented_response": parts, "domain": "wk"}).encode()
        + b"\n"
    )


def large(run: Run, lines: int, mib: int) -> None:
    """A file of ``lines`` short lines, then one of about ``mib`` MiB, polled until done."""
    rng, files = random.Random(1), []
    small, big = run.tmp / "large-lines.jsonl", run.tmp / "large-mib.jsonl"
    small.write_bytes(b"".join(felm_line(i, rng, 2, 5) for i in range(lines)))
    files.append(small)
    if mib:
        with big.open("wb") as out:
            while out.tell() < mib * 2**20:
                out.write(felm_line(out.tell(), rng, 6, 40))
        files.append(big)
    projects = [create_felm_project(f"felm large {uuid.uuid4().hex[:8]}") for _ in files]
    with Servers(run, 3, "large") as servers:
        for path, project_id in zip(files, projects):
            admin, _ = api_tokens(project_id)
            web_pids = children_of(servers.web.process.pid)
            worker_pid = servers.worker.pid if servers.worker else None
            for pid in [*web_pids, *([worker_pid] if worker_pid else [])]:
                reset_peak_rss(pid)
            body, content_type = multipart(path, {"format": "felm", "labels_as": "ignore"})
            started = time.perf_counter()
            status, job, upload_s = api(
                servers.port, "POST", f"/api/projects/{project_id}/import/", admin, body, content_type
            )
            if status != 202:
                raise RuntimeError(f"the upload answered {status}: {job}")
            polls = []
            while job["state"] not in ("done", "failed"):
                time.sleep(0.25)
                _, job, seconds = api(servers.port, "GET", job["url"], admin)
                polls += [seconds, api(servers.port, "GET", f"/api/projects/{project_id}/progress/", admin)[2]]
            web_peak = max(status_kib(pid, "VmHWM") for pid in web_pids) / 1024
            worker_peak = status_kib(worker_pid, "VmHWM") / 1024 if worker_pid else float("nan")
            print(
                f"  {path.stat().st_size / 2**20:.1f} MiB ({job['state']}): {time.perf_counter() - started:.1f} s POST to "
                f"done, POST {upload_s:.2f} s; longest of {len(polls)} web requests meanwhile {max(polls or [0]):.3f} s "
                f"(target < {TARGET_REQUEST_S} s); peak RSS: a web worker {web_peak:.0f} MiB, the Celery "
                f"worker {worker_peak:.0f} MiB (target < {TARGET_WORKER_RSS_MB} MB)"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=SIZES["full"])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5", help="broker (a queue of its own is used)")
    parser.add_argument("--db", default="workbench_bench_import")
    parser.add_argument("--in-process", action="store_true", help="also time import_jsonl in this process")
    parser.add_argument("--profile", action="store_true", help="with --in-process: its cProfile")
    parser.add_argument("--large", action="store_true", help="the large-file imports instead of the headline")
    parser.add_argument("--large-items", type=int, default=100_000)
    parser.add_argument("--large-mib", type=int, default=100, help="0: no large file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="felm-import-") as tmp, bench_database(args.db, Path(tmp) / "data"):
        run = Run(args.db, Path(tmp), args.redis, options={"items": args.items, "runs": args.runs})
        if args.large:
            large(run, args.large_items, args.large_mib)
            return 0
        if args.in_process:
            path = run.tmp / "in-process.jsonl"
            generate_felm_jsonl(path, args.items, seed=2024)
            in_process(path, args.profile)
        print_figures(headline(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
