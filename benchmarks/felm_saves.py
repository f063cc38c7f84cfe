"""Step 4 of felm_scale.py: latency and throughput of the annotation-save endpoint
(``PUT /api/assignments/{id}/annotation/``, draft saves) from concurrent HTTP clients against
gunicorn, per worker configuration, with the PostgreSQL backends' wait events sampled during the
load; and the same save in-process (Django test client) with its SQL statements."""

from __future__ import annotations

import http.client
import json
import os
import random
import statistics
import threading
import time
import warnings
from pathlib import Path

from felm_data import ERROR_TYPES, SEGMENTS_PER_ITEM, felm_record
from harness import PG_SERVER, Gunicorn

DEFAULT_DB = "workbench_bench"


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
        import psycopg

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
    if pid is None:
        return 0.0
    from harness import children_of

    total = 0
    for each in [pid, *children_of(pid)]:
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / os.sysconf("SC_CLK_TCK")


def load_test(
    port: int,
    client_specs: list[tuple[str, list[int]]],
    *,
    warmup: int,
    saves: int,
    think: float = 0,
    db_name: str = DEFAULT_DB,
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
    import shutil
    import subprocess

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
        with Gunicorn(options, tmp / f"gunicorn-{text.replace(':', '-')}.log") as server:
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


def main(argv=None) -> int:
    """Step 4 alone: its own database, the save project, the in-process profile and the load."""
    import argparse
    import tempfile

    from harness import configure_environment, create_database, django_setup, drop_database, migrate

    parser = argparse.ArgumentParser(description="felm_scale.py step 4 alone: draft saves over HTTP")
    parser.add_argument("--db-name", default=DEFAULT_DB + "_saves")
    parser.add_argument("--configs", default="sync:4")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--saves", type=int, default=50)
    parser.add_argument("--think-ms", type=int, default=600)
    parser.add_argument("--think-saves", type=int, default=20)
    parser.add_argument("--client", choices=("python", "wrk", "both"), default="both")
    parser.add_argument("--wrk-seconds", type=float, default=15)
    args = parser.parse_args(argv)
    if not args.db_name.startswith(DEFAULT_DB) or not args.db_name.replace("_", "").isalnum():
        parser.error(f"--db-name must start with {DEFAULT_DB} (the database is dropped at the end)")
    for name in ("clients", "per_client", "saves", "think_saves"):
        if not 1 <= getattr(args, name) <= 10_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 10000")
    if not (0 <= args.warmup <= 10_000 and 0 <= args.think_ms <= 10_000 and 1 <= args.wrk_seconds <= 600):
        parser.error("--warmup, --think-ms or --wrk-seconds out of range")
    print(f"  load average at start: {open('/proc/loadavg').read().strip()}")
    configure_environment(args.db_name)
    create_database(args.db_name)
    try:
        django_setup()
        migrate()
        with tempfile.TemporaryDirectory(prefix="felm-saves-") as tmp:
            bench_save(
                Path(tmp),
                clients=args.clients,
                per_client=args.per_client,
                warmup=args.warmup,
                saves=args.saves,
                configs=[c for c in args.configs.split(",") if c],
                think_ms=args.think_ms,
                think_saves=args.think_saves,
                db_name=args.db_name,
                client=args.client,
                wrk_seconds=args.wrk_seconds,
            )
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(args.db_name)
    print(f"  load average at end: {open('/proc/loadavg').read().strip()}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
