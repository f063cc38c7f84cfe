"""Headline "saves": draft saves of the annotation endpoint under load, back to back and paced.

Usage: .venv/bin/python benchmarks/saves.py [--clients 20] [--configs sync:4] [--client python|wrk|both]
           [--saves 100] [--think-ms 600] [--wrk-seconds 15] [--db workbench_bench_saves]

A FELM project in annotating status with one annotator (and token) per client, 5 assignments
each. gunicorn (``config.wsgi`` with config/gunicorn.py) is started on loopback for each worker
configuration; the clients (Python threads on ``http.client``, or ``wrk`` with ``save_wrk.lua``:
a C load generator that leaves the 2 cores to the server) each make warm-up saves, then measured
draft saves, ``PUT /api/assignments/{id}/annotation/`` carrying the version of their last answer:
back to back (closed loop: latency ≈ clients ÷ throughput), then with the best configuration
again with every client pausing ``--think-ms`` after each answer (the page's autosave rhythm).
Reported: p50 / p95 / p99 / max, saves/s, errors, the server's CPU a save and, on PostgreSQL,
what its backends waited on (pg_stat_activity). Before the HTTP runs the same save goes through
Django's test client in-process, with its SQL statements. benchmarks/save_layers.py splits that
in-process save by layer. The database is dropped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from felm_data import ERROR_TYPES, SEGMENTS_PER_ITEM, felm_record  # noqa: E402
from harness import (  # noqa: E402
    CLOCK_TICKS,
    PG_SERVER,
    Figure,
    Gunicorn,
    Run,
    bench_database,
    is_sqlite,
    print_figures,
    process_cpu_ticks,
    tree_pids,
)

TARGET_BACK_TO_BACK_MS = 30.0
TARGET_PACED_MS = 15.0


def setup_save_project(clients: int, per_client: int) -> list[tuple[str, list[int]]]:
    """A small FELM project in annotating status with one annotator (and token) per client;
    returns (token, own assignment ids) per client."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.imports.items import import_jsonl
    from annotation.models import Assignment, Project, Role, StageStatus
    from annotation.services.projects import add_member, create_project

    User = get_user_model()
    project = create_project(name="save bench", kind="felm", annotators_per_item=2)
    users = []
    for number in range(clients):
        user = User.objects.create_user(username=f"save-client-{number:02d}", password=None)
        add_member(project=project, user=user, role=Role.ANNOTATOR)
        users.append(user)
    rng = random.Random(7)
    items = (clients * per_client + 1) // 2
    lines = [json.dumps(felm_record(i, rng)).encode() + b"\n" for i in range(items)]
    import_jsonl(project, lines, fmt="felm")
    out = []
    for user in users:
        ids = list(
            Assignment.objects.filter(
                user=user,
                item_stage__item__project=project,
                item_stage__status=StageStatus.ANNOTATING,
            ).values_list("id", flat=True)
        )
        out.append((Token.objects.create(user=user).key, ids))
    assert Project.objects.get(pk=project.pk).items.count() == items
    return out


def draft_body(rng: random.Random, version: int) -> bytes:
    segments = []
    for _ in range(SEGMENTS_PER_ITEM):
        roll = rng.random()
        if roll < 0.7:
            segments.append({"label": True, "error_type": None, "comment": "", "refs": []})
        elif roll < 0.9:
            segments.append(
                {
                    "label": False,
                    "error_type": rng.choice(ERROR_TYPES),
                    "comment": "wrong year",
                    "refs": ["https://en.wikipedia.org/wiki/Example"],
                }
            )
        else:
            segments.append({"label": None, "error_type": None, "comment": "", "refs": []})
    return json.dumps({"payload": {"segments": segments}, "version": version, "submit": False}).encode()


def _http(conn: http.client.HTTPConnection, method: str, path: str, token: str, body: bytes | None = None):
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def _client_loop(port, token, assignment_ids, warmup, saves, start_barrier, measured_barrier, sink, seed, think):
    """One client: warm up, wait for everyone, then ``saves`` timed draft saves, each followed
    by ``think`` seconds of pause (0: back to back)."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies, errors = [], {}  # errors: HTTP status (0: no answer) → count
    versions = {}
    try:
        for aid in assignment_ids:
            status, data = _http(conn, "GET", f"/api/assignments/{aid}/annotation/", token)
            versions[aid] = json.loads(data)["version"] if status == 200 else 0
        start_barrier.wait(timeout=120)
        for phase, count in (("warmup", warmup), ("measured", saves)):
            if phase == "measured":
                measured_barrier.wait(timeout=120)
            for number in range(count):
                aid = assignment_ids[number % len(assignment_ids)]
                body = draft_body(rng, versions[aid])
                started = time.perf_counter()
                status, data = 0, b""
                for _attempt in range(2):  # a keep-alive connection the server closed: reconnect once
                    try:
                        status, data = _http(conn, "PUT", f"/api/assignments/{aid}/annotation/", token, body)
                        break
                    except (OSError, http.client.HTTPException):
                        conn.close()
                elapsed = time.perf_counter() - started
                if status == 200:
                    versions[aid] = json.loads(data)["version"]
                else:
                    if phase == "measured":
                        errors[status] = errors.get(status, 0) + 1
                    if status == 409:
                        versions[aid] = json.loads(data)["stored_version"]
                if phase == "measured":
                    latencies.append(elapsed)
                    if think:
                        time.sleep(think)
    finally:
        conn.close()
        sink.append((latencies, errors))


class WaitSampler(threading.Thread):
    """Samples what the benchmark database's active backends wait on (pg_stat_activity) every
    20 ms: 'cpu' (running), Lock:* (row locks), IO:WALSync (commit flush), …"""

    def __init__(self, db_name: str):
        super().__init__(daemon=True)
        self.db_name, self.counts, self.stop = db_name, {}, threading.Event()

    def run(self):
        if is_sqlite(self.db_name):
            return  # SQLite has no backends to watch
        import psycopg  # the PostgreSQL driver, only for this sampler

        sql = (
            "SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu') FROM pg_stat_activity "
            "WHERE datname = %s AND state = 'active' AND pid <> pg_backend_pid()"
        )
        with psycopg.connect(f"{PG_SERVER}/{self.db_name}", autocommit=True) as conn:
            while not self.stop.wait(0.02):
                for (event,) in conn.execute(sql, (self.db_name,)):
                    self.counts[event] = self.counts.get(event, 0) + 1

    def summary(self) -> str:
        total = sum(self.counts.values()) or 1
        top = sorted(self.counts.items(), key=lambda kv: -kv[1])[:4]
        return ", ".join(f"{event} {100 * count / total:.0f}%" for event, count in top)


def tree_cpu_seconds(pid: int | None) -> float:
    """User + system CPU of a process and its children (a gunicorn master and its workers)."""
    return 0.0 if pid is None else sum(process_cpu_ticks(p) for p in tree_pids(pid)) / CLOCK_TICKS


def load_test(
    port: int,
    client_specs: list[tuple[str, list[int]]],
    *,
    warmup: int,
    saves: int,
    think: float = 0,
    db_name: str,
    server_pid: int | None = None,
) -> dict:
    """``len(client_specs)`` threads, each ``warmup`` + ``saves`` saves on its own assignments."""
    n = len(client_specs)
    start_barrier, measured_barrier = threading.Barrier(n), threading.Barrier(n + 1)
    sink: list = []
    threads = [
        threading.Thread(
            target=_client_loop,
            daemon=True,
            args=(
                port,
                token,
                ids,
                warmup,
                saves,
                start_barrier,
                measured_barrier,
                sink,
                number,
                think,
            ),
        )
        for number, (token, ids) in enumerate(client_specs)
    ]
    for thread in threads:
        thread.start()
    sampler = WaitSampler(db_name)
    measured_barrier.wait(timeout=300)
    started, server_cpu = time.perf_counter(), tree_cpu_seconds(server_pid)
    sampler.start()
    for thread in threads:
        thread.join(timeout=600)
    wall = time.perf_counter() - started
    server_cpu = tree_cpu_seconds(server_pid) - server_cpu
    sampler.stop.set()
    sampler.join(timeout=10)
    latencies = sorted(x for lat, _ in sink for x in lat)
    errors: dict[int, int] = {}
    for _, per_client in sink:
        for status, count in per_client.items():
            errors[status] = errors.get(status, 0) + count
    if len(latencies) < 2:
        raise RuntimeError("the load test produced no measurements")
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return {
        "requests": len(latencies),
        "errors": sum(errors.values()),
        "error_statuses": errors,
        "p50_ms": q[49] * 1000,
        "p95_ms": q[94] * 1000,
        "p99_ms": q[98] * 1000,
        "max_ms": latencies[-1] * 1000,
        "rps": len(latencies) / wall,
        "server_cpu_ms": 1000 * server_cpu / len(latencies),
        "pg_waits": sampler.summary(),
        "load": os.getloadavg()[0],
    }


def parse_config(text: str) -> tuple[str, list[str]]:
    """``sync:3`` → 3 sync workers; ``gthread:2x4`` → 2 workers x 4 threads."""
    worker_class, _, spec = text.partition(":")
    if worker_class == "sync":
        return f"sync, {int(spec)} workers", ["--workers", str(int(spec))]
    if worker_class == "gthread":
        workers, _, threads = spec.partition("x")
        return (
            f"gthread, {int(workers)} workers x {int(threads)} threads",
            [
                "--worker-class",
                "gthread",
                "--workers",
                str(int(workers)),
                "--threads",
                str(int(threads)),
            ],
        )
    raise ValueError(f"unknown worker configuration {text!r} (sync:N or gthread:WxT)")


def inprocess_save_profile(client_spec: tuple[str, list[int]], count: int = 200) -> dict:
    """The same PUT through Django's test client (no network, no gunicorn): latency and SQL count."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    warnings.filterwarnings("ignore", message="No directory at")  # whitenoise: static files not collected
    token, ids = client_spec
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    rng = random.Random(99)
    aid = ids[0]
    version = client.get(f"/api/assignments/{aid}/annotation/").json()["version"]
    latencies, queries = [], []
    for number in range(count):
        body = draft_body(rng, version)
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.put(f"/api/assignments/{aid}/annotation/", data=body, content_type="application/json")
            latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"in-process save failed: {response.status_code} {response.content[:300]!r}")
        version = response.json()["version"]
        queries.append(len(captured.captured_queries))
    sql = [q["sql"][:90] for q in captured.captured_queries]
    return {
        "median_ms": statistics.median(latencies) * 1000,
        "queries": statistics.median(queries),
        "sql": sql,
    }


WRK_SCRIPT = Path(__file__).with_name("save_wrk.lua")


def wrk_test(port: int, client_specs, *, seconds: float, think_ms: int, server_pid: int | None = None) -> dict:
    """The same saves from wrk (C, one connection per client, one assignment each): a short
    warm-up, then ``seconds`` measured."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk is not installed (apt-get install -y wrk)")
    from annotation.models import Annotation

    n = len(client_specs)
    versions = dict(
        Annotation.objects.filter(assignment_id__in=[ids[0] for _, ids in client_specs]).values_list(
            "assignment_id", "version"
        )
    )
    specs = ",".join(f"{ids[0]}:{token}:{versions.get(ids[0], 0)}" for token, ids in client_specs)

    def once(duration: float) -> dict:
        command = [wrk, f"-t{n}", f"-c{n}", f"-d{duration:.0f}s", "--timeout", "30s", "-s", str(WRK_SCRIPT)]
        command += [f"http://127.0.0.1:{port}", "--", specs, str(think_ms)]
        output = subprocess.run(command, capture_output=True, text=True, timeout=duration + 120, check=True).stdout
        line = next(row for row in output.splitlines() if row.startswith("WRK "))
        return {key: int(value) for key, value in (part.split("=") for part in line.split()[1:])}

    once(3)
    time.sleep(3)  # saves still in flight when wrk stopped commit meanwhile: read the versions after them
    versions = dict(
        Annotation.objects.filter(assignment_id__in=[ids[0] for _, ids in client_specs]).values_list(
            "assignment_id", "version"
        )
    )
    specs = ",".join(f"{ids[0]}:{token}:{versions.get(ids[0], 0)}" for token, ids in client_specs)
    server_cpu = tree_cpu_seconds(server_pid)
    result = once(seconds)
    server_cpu = tree_cpu_seconds(server_pid) - server_cpu
    requests = max(1, result["requests"])
    return {
        "requests": result["requests"],
        "errors": result["non2xx"],
        "error_statuses": {"non-2xx (409s: " + str(result["conflicts"]) + ")": result["non2xx"]}
        if result["non2xx"]
        else {},
        "p50_ms": result["p50_us"] / 1000,
        "p95_ms": result["p95_us"] / 1000,
        "p99_ms": result["p99_us"] / 1000,
        "max_ms": result["max_us"] / 1000,
        "rps": result["requests"] / (result["duration_us"] / 1e6),
        "server_cpu_ms": 1000 * server_cpu / requests,
        "pg_waits": "",
        "load": os.getloadavg()[0],
    }


def bench_save(
    tmp: Path,
    *,
    clients: int,
    per_client: int,
    warmup: int,
    saves: int,
    configs: list[str],
    think_ms: int,
    think_saves: int,
    db_name: str,
    client: str = "python",
    wrk_seconds: float = 15,
    env: dict | None = None,
) -> dict:
    """Closed-loop load (each client saves again as soon as it has its answer) for every worker
    configuration; then, for the best one, the same clients pausing ``think_ms`` between saves
    (the browser's autosave waits 600 ms after the last change)."""
    specs = setup_save_project(clients, per_client)
    inproc = inprocess_save_profile(specs[0])
    print(
        f"  in-process (test client, no HTTP): median {inproc['median_ms']:.1f} ms, {inproc['queries']:.0f} SQL "
        f"statements per save:"
    )
    for sql in inproc["sql"]:
        print(f"      {sql}")
    print(
        f"  {clients} clients x ({warmup} warm-up + {saves} measured) back-to-back draft saves, "
        f"{per_client} own assignments each, on {os.cpu_count()} CPUs shared with the clients:"
    )
    header = (
        f"    {'configuration':34s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} {'max ms':>8s} {'req/s':>7s} "
        f"{'errors':>6s} {'load':>5s} {'cpu/req':>7s}"
    )
    print(header + "  PostgreSQL backends were")
    runs = {}

    def run_one(text: str, think: float, count: int, tool: str = client) -> dict:
        label, options = parse_config(text)
        label = f"{label} ({tool})"
        with Gunicorn(options, tmp / f"gunicorn-{text.replace(':', '-')}.log", env) as server:
            server.wait_ready(
                f"/api/assignments/{specs[0][1][0]}/annotation/",
                {"Authorization": f"Token {specs[0][0]}", "Accept": "application/json"},
            )
            if tool == "wrk":
                run = wrk_test(
                    server.port,
                    specs,
                    seconds=wrk_seconds,
                    think_ms=int(think * 1000),
                    server_pid=server.process.pid,
                )
            else:
                run = load_test(
                    server.port,
                    specs,
                    warmup=warmup,
                    saves=count,
                    think=think,
                    db_name=db_name,
                    server_pid=server.process.pid,
                )
        errors = f"{run['errors']}" + (f" {run['error_statuses']}" if run["errors"] else "")
        print(
            f"    {label:34s} {run['p50_ms']:8.1f} {run['p95_ms']:8.1f} {run['p99_ms']:8.1f} {run['max_ms']:8.1f} "
            f"{run['rps']:7.0f} {errors:>6s} {run['load']:5.1f} {run['server_cpu_ms']:7.2f}  {run['pg_waits']}"
        )
        return {"label": label, **run}

    tools = ["python", "wrk"] if client == "both" else [client]
    for text in configs:
        runs[text] = run_one(text, 0, saves, tools[0])
    best = min(runs, key=lambda key: (runs[key]["errors"] > 0, runs[key]["p95_ms"]))
    print(f"  best by p95 (back to back): {runs[best]['label']}")
    paced = None
    if think_ms:
        print(
            f"  {clients} clients pausing {think_ms} ms after each answer ({think_saves} saves each), "
            f"with {runs[best]['label']}:"
        )
        paced = run_one(best, think_ms / 1000, think_saves, tools[0])
    extra = {}
    for tool in tools[1:]:
        print(
            f"  the same with {tool} as the clients ({wrk_seconds:.0f} s each): back to back, then pausing {think_ms} ms"
        )
        extra[tool] = {"runs": {best: run_one(best, 0, saves, tool)}}
        if think_ms:
            extra[tool]["paced"] = run_one(best, think_ms / 1000, think_saves, tool)
    return {"runs": runs, "best": best, "paced": paced, "think_ms": think_ms, "inprocess": inproc, "other": extra}


SIZES = {
    "quick": {"clients": 2, "per_client": 2, "warmup": 2, "saves": 5, "configs": ["sync:1"], "think_saves": 3},
    "full": {"clients": 20, "per_client": 5, "warmup": 10, "saves": 100, "configs": ["sync:4"], "think_saves": 40},
}


def headline(run: Run) -> list[Figure]:
    sizes = {**SIZES["quick" if run.quick else "full"], **run.options.get("sizes", {})}
    # wrk leaves the cores to the server: the figures of record are wrk's where it is installed
    client = run.options.get("client") or ("wrk" if shutil.which("wrk") and not run.quick else "python")
    result = bench_save(
        run.tmp,
        **sizes,
        think_ms=run.options.get("think_ms", 600),
        db_name=run.db_name,
        client=client,
        wrk_seconds=run.options.get("wrk_seconds", 15),
        env=run.server_env("saves"),
    )
    best, paced = result["runs"][result["best"]], result["paced"]
    clients = f"{sizes['clients']} clients, {best['label']}"
    figures = [Figure("save p95, back to back", best["p95_ms"], "ms", TARGET_BACK_TO_BACK_MS, note=clients)]
    if paced:
        note = f"{sizes['clients']} clients pausing {result['think_ms']} ms"
        figures.append(Figure("save p95, paced", paced["p95_ms"], "ms", TARGET_PACED_MS, note=note))
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="workbench_bench_saves")
    parser.add_argument(
        "--configs", default="sync:4", help="gunicorn configurations: sync:N or gthread:WxT, comma-separated"
    )
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--saves", type=int, default=100)
    parser.add_argument("--think-ms", type=int, default=600, help="0: no paced run")
    parser.add_argument("--think-saves", type=int, default=40)
    parser.add_argument("--client", choices=("python", "wrk", "both"), help="default: wrk when installed")
    parser.add_argument("--wrk-seconds", type=float, default=15)
    args = parser.parse_args(argv)
    for name in ("clients", "per_client", "saves", "think_saves"):
        if not 1 <= getattr(args, name) <= 10_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 10000")
    if not (0 <= args.warmup <= 10_000 and 0 <= args.think_ms <= 10_000 and 1 <= args.wrk_seconds <= 600):
        parser.error("--warmup, --think-ms or --wrk-seconds out of range")
    sizes = {
        "clients": args.clients,
        "per_client": args.per_client,
        "warmup": args.warmup,
        "saves": args.saves,
        "configs": [c for c in args.configs.split(",") if c],
        "think_saves": args.think_saves,
    }
    options = {"sizes": sizes, "client": args.client, "think_ms": args.think_ms, "wrk_seconds": args.wrk_seconds}
    with tempfile.TemporaryDirectory(prefix="saves-") as tmp, bench_database(args.db, Path(tmp) / "data"):
        print_figures(headline(Run(args.db, Path(tmp), options=options)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
