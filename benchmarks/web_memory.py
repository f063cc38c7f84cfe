"""Headline "memory": the web tier, gunicorn master + sync workers, right after start and after the common pages.

Usage: .venv/bin/python benchmarks/web_memory.py [--workers 4] [--db workbench_bench_memory] [--preload]
           [--threads N] [--rounds 3] [--heavy] [--broker redis://127.0.0.1:6379/5]

It creates its own database (harness), migrates it, makes a FELM project of 50 items with two
annotators and a Factcheck-Bench project of 200 items with gold, starts gunicorn (``config.wsgi``, the Makefile's
command) on a loopback port and reports the resident set (VmRSS, and PSS, which splits pages
shared after a fork) of the master and each worker:

1. right after start (every worker answered once: a bare ``/accounts/login/``);
2. after ``--rounds`` × workers rounds of the common pages (home, project, annotate page, items
   API, assignment API GET and a draft save, agreement page, leaderboard, FELM export), so every
   worker has loaded every view module and rendered every template;
3. with ``--heavy``, after as many rounds of the heavy requests: the agreement API, every export
   format of FELM and of a Factcheck-Bench project of 200 items with gold (streamed through the API, as the load test
   reads them), a 10,000-line FELM import upload (4 MiB, as the load test's) and the polling of
   its job, a draft save;
4. the peak (VmHWM) of each process over the run.

gunicorn runs with ``--config config/gunicorn.py``, as the Makefile and docker-compose start it
(worker recycling, heap trimming after each request). The figures are RSS and PSS of each worker
and of the tier (master + workers); the headline's: the largest worker right after start
(target ≤ 90 MiB) and the tier after the common pages (≤ 400 MiB with 4 workers).

Without ``--broker`` tasks run in the web process, which then computes the agreement itself (and
loads numpy). With one (e.g. ``redis://127.0.0.1:6379/5``) the agreement task is only queued, as
on a server, and its result is computed here beforehand and stored in the cache the servers
share with this process, so that the pages render a stored result. The database is dropped at
the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from factcheck_import import released_item  # noqa: E402
from harness import (  # noqa: E402
    Figure,
    Run,
    bench_database,
    children_of,
    free_port,
    gunicorn_command,
    load_average,
    print_figures,
    start_process,
    status_kib,
    stop_processes,
)

TARGET_WORKER_MIB = 90
TARGET_TIER_MIB = 400  # master + 4 workers


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def snapshot(master: int) -> dict:
    pids = [master, *children_of(master)]
    return {
        pid: {
            "rss": status_kib(pid, "VmRSS") / 1024,
            "pss": pss_kib(pid) / 1024,
            "hwm": status_kib(pid, "VmHWM") / 1024,
        }
        for pid in pids
    }


def show(label: str, master: int, snap: dict) -> None:
    workers = [v for pid, v in snap.items() if pid != master]
    total = sum(v["rss"] for v in snap.values())
    print(
        f"{label}: master {snap[master]['rss']:.0f} MiB; workers RSS (PSS) "
        + ", ".join(f"{v['rss']:.0f} ({v['pss']:.0f})" for v in workers)
        + f" MiB; total RSS {total:.0f} MiB, total PSS {sum(v['pss'] for v in snap.values()):.0f} MiB"
        + f"; load average {load_average():.1f}"
    )


def get(port: int, path: str, headers: dict, method: str = "GET", body: bytes | None = None) -> int:
    return request(port, path, headers, method, body)[0]


def request(port: int, path: str, headers: dict, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def multipart(fields: dict, filename: str, content: bytes) -> tuple[bytes, str]:
    boundary = "benchboundary7d1f"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: application/jsonl\r\n\r\n".encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def felm_lines(count: int, start: int = 0, segments: int = 2) -> list[str]:
    """FELM lines; the first segment of each is correct, the others wrong."""
    return [
        json.dumps(
            {
                "index": i,
                "source": "wk",
                "prompt": f"Question {i}?",
                "response": " ".join(f"Claim {k} of {i}." for k in range(segments)),
                "segmented_response": [f"Claim {k} of {i}." for k in range(segments)],
                "labels": [k == 0 for k in range(segments)],
                "comment": ["" if k == 0 else "wrong" for k in range(segments)],
                "type": ["" if k == 0 else "knowledge_error" for k in range(segments)],
                "ref": ["" for k in range(segments)],
                "domain": "wk",
            }
        )
        for i in range(start, start + count)
    ]


def heavy_round(port: int, ids: dict, admin_api: dict, api: dict, upload: bytes) -> dict:
    """One round of the heavy requests; their statuses."""
    statuses = {}
    pid, fc = ids["felm"], ids["factcheck"]
    for path in (
        f"/api/projects/{pid}/agreement/",
        *(f"/api/projects/{pid}/export/?format={fmt}" for fmt in ids["felm_formats"]),
        *(f"/api/projects/{fc}/export/?format={fmt}" for fmt in ids["factcheck_formats"]),
    ):
        statuses[path] = request(port, path, admin_api)[0]
    body, content_type = multipart({"format": "felm"}, "felm.jsonl", upload)
    status, data = request(
        port,
        f"/api/projects/{ids['imports']}/import/",
        {**admin_api, "Content-Type": content_type},
        "POST",
        body,
    )
    statuses["import upload"] = status
    if status == 202:
        url = json.loads(data)["url"]
        for _ in range(3):
            statuses["import job poll"] = request(
                port, "/" + url.split("/", 3)[-1] if "://" in url else url, admin_api
            )[0]
    annotation = f"/api/assignments/{ids['assignment']}/annotation/"
    state = json.loads(request(port, annotation, api)[1])
    save = json.dumps({"payload": ids["draft"], "version": state.get("version") or 0}).encode()
    statuses["draft save"] = request(
        port,
        annotation,
        {**api, "Content-Type": "application/json"},
        "PUT",
        save,
    )[0]
    return statuses


def session_cookie(user) -> dict:
    """A logged-in session of ``user`` as the cookie a browser sends."""
    from django.conf import settings
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session.session_key}"}


def prepare(run: Run) -> dict:
    """The projects, logins and tokens the requests need: a FELM project of 50 items with two
    annotators, a Factcheck-Bench project of 200 released-shape items (~25 KB each) with gold and
    stored lines, a FELM project to import into."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation import tasks
    from annotation.exports.formats import export_formats
    from annotation.imports.items import import_jsonl
    from annotation.models import Assignment, Role
    from annotation.research import agreement_cache
    from annotation.research import selectors as research_selectors
    from annotation.services.projects import add_member, create_project

    User, tag = get_user_model(), secrets.token_hex(3)
    admin = User.objects.create_user(f"memory-admin-{tag}", password=None, is_staff=True)
    alice, bob = (User.objects.create_user(f"memory-{name}-{tag}", password=None) for name in ("alice", "bob"))
    project = create_project(name=f"memory bench {tag}", kind="felm", created_by=admin)
    for user in (alice, bob):
        add_member(project=project, user=user, role=Role.ANNOTATOR)
    import_jsonl(project, [(line + "\n").encode() for line in felm_lines(50)], fmt="felm")
    assignment = Assignment.objects.filter(user=alice, item_stage__item__project=project).first()
    factcheck = create_project(name=f"memory bench factcheck {tag}", kind="factcheck", created_by=admin)
    rng = random.Random(7)
    lines = [(json.dumps(released_item(i, rng)) + "\n").encode() for i in range(20 if run.quick else 200)]
    import_jsonl(factcheck, lines, fmt="factcheck-bench", labels_as="gold")
    tasks.store_export_lines(factcheck.id)
    imports = create_project(name=f"memory bench imports {tag}", kind="felm", created_by=admin)
    if run.broker:
        # as on a server: a Celery worker has computed the agreement (into the cache the servers
        # share with this process: harness.configure_environment); the pages render it
        stage, (resamples, seed) = 1, research_selectors.bootstrap_options(None, None)
        agreement_cache.fill(project.id, stage, resamples, seed, "bench")
    return {
        "felm": project.id,
        "factcheck": factcheck.id,
        "imports": imports.id,
        "felm_formats": export_formats(project),
        "factcheck_formats": export_formats(factcheck),
        "assignment": assignment.id,
        "draft": {"segments": [{"label": True, "error_type": None, "comment": "", "refs": []} for _ in range(2)]},
        "admin": session_cookie(admin),
        "alice": session_cookie(alice),
        "api": {"Authorization": f"Token {Token.objects.create(user=alice).key}", "Accept": "application/json"},
        "admin_api": {"Authorization": f"Token {Token.objects.create(user=admin).key}", "Accept": "application/json"},
    }


def measure(run: Run, workers: int, rounds: int, heavy: bool = False, options: tuple[str, ...] = ()) -> dict:
    """Snapshots of the tier (master pid, "start", "common", "heavy") served by ``workers`` workers."""
    from django.db import connection

    ids = prepare(run)
    connection.close()
    env = run.server_env("memory")
    port = free_port()
    command = gunicorn_command(port, "--workers", str(workers), "--timeout", "60", *options)
    print(f"  load average {load_average():.1f}; {' '.join(command[1:])}")
    web = start_process(command, run.tmp / "memory-gunicorn.log", env)
    try:
        deadline = time.monotonic() + 60
        while not (status_or_none(port, "/accounts/login/") == 200 and len(children_of(web.pid)) == workers):
            if web.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start: {(run.tmp / 'memory-gunicorn.log').read_text()[-3000:]}")
            time.sleep(0.2)
        time.sleep(1.0)
        for _ in range(workers * 2):
            get(port, "/accounts/login/", {})
        snaps = {"master": web.pid, "start": snapshot(web.pid)}
        show("  right after start", web.pid, snaps["start"])
        pid, assignment = ids["felm"], ids["assignment"]
        pages = [
            (ids["admin"], "/"),
            (ids["admin"], f"/projects/{pid}/"),
            (ids["alice"], f"/assignments/{assignment}/"),
            (ids["admin_api"], f"/api/projects/{pid}/items/"),
            (ids["api"], f"/api/assignments/{assignment}/annotation/"),
            (ids["admin"], f"/projects/{pid}/agreement/"),
            (ids["admin"], f"/projects/{pid}/leaderboard/"),
            (ids["admin"], f"/projects/{pid}/export/felm/"),
        ]
        statuses = {}
        for _ in range(rounds * workers):
            for headers, page in pages:
                statuses.setdefault(page, set()).add(get(port, page, headers))
        print("  statuses:", {page: sorted(s) for page, s in statuses.items()})
        snaps["common"] = snapshot(web.pid)
        show(f"  after {rounds * workers} rounds of the common pages", web.pid, snaps["common"])
        if heavy:
            upload = ("\n".join(felm_lines(10_000, start=10_000, segments=5)) + "\n").encode()  # as the load test
            statuses = {}
            for _ in range(rounds * workers):
                for name, status in heavy_round(port, ids, ids["admin_api"], ids["api"], upload).items():
                    statuses.setdefault(name, set()).add(status)
            print("  statuses:", {page: sorted(s) for page, s in statuses.items()})
            snaps["heavy"] = snapshot(web.pid)
            show(f"  after {rounds * workers} rounds of the heavy requests", web.pid, snaps["heavy"])
        last = snaps.get("heavy") or snaps["common"]
        print(
            f"  peak (VmHWM): total {sum(v['hwm'] for v in last.values()):.0f} MiB, largest worker "
            f"{max(v['hwm'] for p, v in last.items() if p != web.pid):.0f} MiB"
        )
        return snaps
    finally:
        stop_processes(web)


def status_or_none(port: int, path: str) -> int | None:
    try:
        return get(port, path, {})
    except OSError:
        return None


def headline(run: Run) -> list[Figure]:
    workers = run.options.get("workers") or (1 if run.quick else 4)
    rounds = run.options.get("rounds") or (1 if run.quick else 3)
    snaps = measure(run, workers, rounds, run.options.get("heavy", False), run.options.get("gunicorn", ()))
    master = snaps["master"]
    start = max(v["rss"] for pid, v in snaps["start"].items() if pid != master)
    tier = sum(v["rss"] for v in snaps["common"].values())
    return [
        Figure("one web worker, RSS right after start", start, "MiB", TARGET_WORKER_MIB),
        Figure(
            f"web tier (master + {workers} workers), RSS after the common pages",
            tier,
            "MiB",
            TARGET_TIER_MIB if workers == 4 else None,
        ),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0, help="gthread workers with this many threads (0: sync)")
    parser.add_argument("--preload", action="store_true", help="gunicorn --preload")
    parser.add_argument("--db", default="workbench_bench_memory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heavy", action="store_true", help="then the heavy requests (exports, import, ...)")
    parser.add_argument("--broker", default=os.environ.get("CELERY_BROKER_URL"), help="e.g. redis://127.0.0.1:6379/5")
    args = parser.parse_args(argv)
    gunicorn = (("--preload",) if args.preload else ()) + (("--threads", str(args.threads)) if args.threads else ())
    options = {"workers": args.workers, "rounds": args.rounds, "heavy": args.heavy, "gunicorn": gunicorn}
    data = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    with bench_database(args.db, data / "data", args.broker):
        print_figures(headline(Run(args.db, data, args.broker, options=options)))
    shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
