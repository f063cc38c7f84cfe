"""Memory of the web tier: gunicorn master + sync workers, right after start and after the common pages.

Usage: .venv/bin/python benchmarks/web_memory.py [--workers 4] [--db workbench_bench_memory] [--preload]
           [--threads N] [--rounds 3] [--heavy] [--no-config]

It creates its own PostgreSQL database (127.0.0.1:5432, user postgres), migrates it, makes a
FELM project of 50 items with two annotators, starts gunicorn (``config.wsgi``, the Makefile's
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
(worker recycling, heap trimming after each request); ``--no-config`` without it. The figures
are RSS and PSS of each worker and of the tier (master + workers).

The broker is ``memory://`` unless ``CELERY_BROKER_URL`` is set: then the agreement task is only
queued (no worker runs here), as on a real server, and the agreement result is computed here,
before gunicorn starts, and stored in the cache (``CACHE_URL``, or the broker's Redis) so that
the pages render a stored result as they do on a server. The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from factcheck_export import released_item  # noqa: E402
from harness import (  # noqa: E402
    bench_environment,
    children_of,
    create_database,
    drop_database,
    free_port,
    gunicorn_command,
    load_average,
    start_process,
    status_kib,
    stop_processes,
)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0, help="gthread workers with this many threads (0: sync)")
    parser.add_argument("--preload", action="store_true", help="gunicorn --preload")
    parser.add_argument("--db", default="workbench_bench_memory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heavy", action="store_true", help="then the heavy requests (exports, import, ...)")
    parser.add_argument("--no-config", action="store_true", help="without --config config/gunicorn.py")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    env = {
        **os.environ,
        **bench_environment(args.db, tmp / "data"),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
    }
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DJANGO_SETTINGS_MODULE",
                "DATABASE_URL",
                "DJANGO_DATA_DIR",
                "DJANGO_SECRET_KEY",
                "DJANGO_DEBUG",
                "DJANGO_ALLOWED_HOSTS",
            )
        }
    )
    create_database(args.db)
    web = None
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.contrib.sessions.backends.db import SessionStore
        from django.core.management import call_command
        from django.db import connection
        from rest_framework.authtoken.models import Token

        from annotation import tasks
        from annotation.exports.formats import export_formats
        from annotation.imports.items import import_jsonl
        from annotation.models import Assignment, Role
        from annotation.research import agreement_cache
        from annotation.research import selectors as research_selectors
        from annotation.services.projects import add_member, create_project

        call_command("migrate", verbosity=0, interactive=False)
        User = get_user_model()
        admin = User.objects.create_user("bench-admin", password=None, is_staff=True)
        alice = User.objects.create_user("bench-alice", password=None)
        project = create_project(name="memory bench", kind="felm", created_by=admin)
        for name in ("alice", "bob"):
            add_member(
                project=project,
                user=User.objects.get_or_create(username=f"bench-{name}")[0],
                role=Role.ANNOTATOR,
            )
        lines = felm_lines(50)
        path = tmp / "felm.jsonl"
        path.write_text("\n".join(lines) + "\n")
        with path.open("rb") as handle:
            import_jsonl(project, handle, fmt="felm")
        assignment = Assignment.objects.filter(user=alice, item_stage__item__project=project).first()
        factcheck = create_project(name="memory bench factcheck", kind="factcheck", created_by=admin)
        # as the load test's: 200 items in the released shape (~25 KB each) with gold, lines stored
        rng = random.Random(7)
        fc_path = tmp / "factcheck.jsonl"
        fc_path.write_text("".join(json.dumps(released_item(i, rng)) + "\n" for i in range(200)))
        with fc_path.open("rb") as handle:
            import_jsonl(factcheck, handle, fmt="factcheck-bench", labels_as="gold")
        tasks.store_export_lines(factcheck.id)
        imports = create_project(name="memory bench imports", kind="felm", created_by=admin)
        ids = {
            "felm": project.id,
            "factcheck": factcheck.id,
            "imports": imports.id,
            "felm_formats": export_formats(project),
            "factcheck_formats": export_formats(factcheck),
            "assignment": assignment.id,
            "draft": {"segments": [{"label": True, "error_type": None, "comment": "", "refs": []} for _ in range(2)]},
        }
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            # as on a server: a Celery worker has computed the agreement; the pages render it
            stage, (resamples, seed) = 1, research_selectors.bootstrap_options(None, None)
            agreement_cache.fill(project.id, stage, resamples, seed, "bench")
        token = Token.objects.create(user=alice).key
        session = SessionStore()
        session["_auth_user_id"] = str(admin.pk)
        session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
        session["_auth_user_hash"] = admin.get_session_auth_hash()
        session.create()
        alice_session = SessionStore()
        alice_session["_auth_user_id"] = str(alice.pk)
        alice_session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
        alice_session["_auth_user_hash"] = alice.get_session_auth_hash()
        alice_session.create()
        connection.close()
        cookie = {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session.session_key}"}
        alice_cookie = {"Cookie": f"{settings.SESSION_COOKIE_NAME}={alice_session.session_key}"}
        api = {"Authorization": f"Token {token}", "Accept": "application/json"}
        admin_api = {
            "Authorization": f"Token {Token.objects.create(user=admin).key}",
            "Accept": "application/json",
        }

        port = free_port()
        command = gunicorn_command(port, "--workers", str(args.workers), "--timeout", "60")
        if args.preload:
            command.append("--preload")
        if args.no_config:
            command.remove("--config")
            command.remove("config/gunicorn.py")
        if args.threads:
            command += ["--threads", str(args.threads)]
        print(f"load average {load_average():.1f}; {' '.join(command[1:])}")
        web = start_process(command, tmp / "gunicorn.log", env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if web.poll() is not None:
                raise RuntimeError((tmp / "gunicorn.log").read_text()[-3000:])
            try:
                if get(port, "/accounts/login/", {}) == 200 and len(children_of(web.pid)) == args.workers:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        time.sleep(1.0)
        for _ in range(args.workers * 2):
            get(port, "/accounts/login/", {})
        show("right after start", web.pid, snapshot(web.pid))

        pid = project.id
        pages = [
            (cookie, "/"),
            (cookie, f"/projects/{pid}/"),
            (alice_cookie, f"/assignments/{assignment.id}/"),
            (admin_api, f"/api/projects/{pid}/items/"),
            (api, f"/api/assignments/{assignment.id}/annotation/"),
            (cookie, f"/projects/{pid}/agreement/"),
            (cookie, f"/projects/{pid}/leaderboard/"),
            (cookie, f"/projects/{pid}/export/felm/"),
        ]
        statuses = {}
        for _ in range(args.rounds * args.workers):
            for headers, page in pages:
                statuses.setdefault(page, set()).add(get(port, page, headers))
        print("statuses:", {page: sorted(s) for page, s in statuses.items()})
        snap = snapshot(web.pid)
        show(f"after {args.rounds * args.workers} rounds of the common pages", web.pid, snap)
        if args.heavy:
            upload = ("\n".join(felm_lines(10_000, start=10_000, segments=5)) + "\n").encode()  # as the load test
            statuses = {}
            for _ in range(args.rounds * args.workers):
                for name, status in heavy_round(port, ids, admin_api, api, upload).items():
                    statuses.setdefault(name, set()).add(status)
            print("statuses:", {page: sorted(s) for page, s in statuses.items()})
            snap = snapshot(web.pid)
            show(f"after {args.rounds * args.workers} rounds of the heavy requests", web.pid, snap)
        print(
            f"peak (VmHWM): total {sum(v['hwm'] for v in snap.values()):.0f} MiB, largest worker "
            f"{max(v['hwm'] for p, v in snap.items() if p != web.pid):.0f} MiB"
        )
    finally:
        stop_processes(web)
        from django.db import connections

        connections.close_all()
        drop_database(args.db)


if __name__ == "__main__":
    main()
