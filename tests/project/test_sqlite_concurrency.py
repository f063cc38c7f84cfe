"""The embedded default (a SQLite file, several server processes) under concurrent saves.

Two annotators autosaving at the same moment used to get "database is locked" 500s: a
deferred SQLite transaction that has read cannot wait to upgrade to a write lock. This runs
the real server (gunicorn, 3 workers, as ``make run`` does) on a fresh SQLite file and has
two annotators save 150 drafts each at once; every save must succeed (before the fix, about
one in thirty failed).
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT as REPO

SAVES_PER_ANNOTATOR = 150


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(base: str, path: str, token: str | None = None, method: str = "GET", body=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, {}


@pytest.fixture
def sqlite_server(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env.pop("CELERY_BROKER_URL", None)
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], env=env, check=True, cwd=REPO)
    subprocess.run([*manage, "load_demo"], env=env, check=True, cwd=REPO, capture_output=True)
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(gunicorn), "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "3"],
        env=env,
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/accounts/login/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def autosave_many(base: str, username: str, codes: list[int]):
    _, answer = call(
        base,
        "/api/auth/token/",
        method="POST",
        body={"username": username, "password": "demo-pass-123"},
    )
    token = answer["token"]
    _, projects = call(base, "/api/projects/", token)
    felm = next(p for p in projects["results"] if p["kind"] == "felm")
    _, assignments = call(base, f"/api/projects/{felm['id']}/assignments/?mine=1", token)
    url = f"/api/assignments/{assignments['results'][0]['id']}/annotation/"
    _, state = call(base, url, token)
    payload, version = state["payload"], state["version"]
    for n in range(SAVES_PER_ANNOTATOR):
        payload["segments"][0]["comment"] = f"draft {n}"
        status, saved = call(base, url, token, "PUT", {"payload": payload, "version": version, "submit": False})
        codes.append(status)
        if status == 200:
            version = saved["version"]


def test_two_annotators_saving_at_once_on_sqlite_never_fail(sqlite_server):
    codes: list[int] = []
    threads = [threading.Thread(target=autosave_many, args=(sqlite_server, name, codes)) for name in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Counter(codes) == Counter({200: 2 * SAVES_PER_ANNOTATOR})
