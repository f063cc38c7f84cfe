"""Shared fixtures: users, a FELM project with two annotators and a consolidator, API clients.

Tests run on whatever ``DATABASE_URL`` names (SQLite by default, PostgreSQL in CI). Tasks run
eagerly except in the worker tests, which start a real Celery worker process.
"""
import io
import json
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Role
from annotation.imports.items import import_jsonl
from annotation.services.projects import add_member, create_project
from config.celery import app as celery_app

from .browser_support import CHROMIUM, CHROMIUM_ARGS, PageProblems, require_browser
from .racer import Racer
from .stack import require_postgresql

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
PASSWORD = "test-pass-123"


def shared_data_path(*parts: str) -> Path:
    """A file of the released data; skipped outside CI when it is absent, a failure in CI."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is missing: CI must have ../shared beside the clone")
        pytest.skip(f"released data not found at {path} (../shared/data beside the repository)")
    return path


@pytest.fixture(autouse=True)
def eager_tasks():
    celery_app.conf.task_always_eager = True
    yield


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Stored uploads go to the test's own directory."""
    settings.DATA_DIR = tmp_path / "data"
    settings.FILE_UPLOAD_TEMP_DIR = str(settings.DATA_DIR / "upload-tmp")
    return settings.DATA_DIR


@pytest.fixture(autouse=True)
def loopback_services_allowed(monkeypatch):
    """The fake LLM and search servers listen on loopback: allowed as a lab allows its own
    private LLM server (production refuses by default; tests of the guard delete this)."""
    monkeypatch.setenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", "1")
    monkeypatch.delenv("OUTBOUND_ALLOWED_NETWORKS", raising=False)
    monkeypatch.delenv("OUTBOUND_ALLOWED_PORTS", raising=False)


@pytest.fixture(autouse=True)
def postgres_only(request):
    """``@pytest.mark.postgres_only("why")``: skipped elsewhere (a failure in CI's PostgreSQL run)."""
    marker = request.node.get_closest_marker("postgres_only")
    if marker is not None:
        require_postgresql(marker.args[0] if marker.args else "this test needs PostgreSQL")


@pytest.fixture
def racer(live_server):
    """Sends real parallel requests to the live server (tests/racer.py)."""
    return Racer(live_server.url)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The production hasher is deliberately slow; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(db):
    def make(username, *, staff=False):
        return get_user_model().objects.create_user(username=username, password=PASSWORD, is_staff=staff)

    return make


@pytest.fixture
def users(make_user):
    return {
        "admin": make_user("admin", staff=True),
        "alice": make_user("alice"),
        "bob": make_user("bob"),
        "carol": make_user("carol"),
        "mallory": make_user("mallory"),
    }


def project_with_team(users, name: str, kind: str):
    """A project created by the staff admin, with alice and bob annotating and carol consolidating."""
    project = create_project(name=name, kind=kind, created_by=users["admin"])
    add_member(project=project, user=users["alice"], role=Role.ANNOTATOR)
    add_member(project=project, user=users["bob"], role=Role.ANNOTATOR)
    add_member(project=project, user=users["carol"], role=Role.CONSOLIDATOR)
    return project


@pytest.fixture
def felm_project(users):
    return project_with_team(users, "FELM test", "felm")


@pytest.fixture
def factcheck_project(users):
    return project_with_team(users, "Factcheck test", "factcheck")


@pytest.fixture(scope="module")
def browser():
    sync_playwright = require_browser()
    with pytest.MonkeyPatch.context() as mp:
        # Playwright's sync API runs an event loop in this thread; the ORM calls of the test
        # body are still plain synchronous code.
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            yield browser
            browser.close()


@pytest.fixture
def problems():
    seen = PageProblems()
    yield seen
    assert not seen.errors, "the pages reported errors:\n" + "\n".join(seen.errors)


def felm_line(index: int, segments: list[str], **extra) -> dict:
    return {
        "index": str(index), "source": "test", "prompt": f"Question {index}?", "response": " ".join(segments),
        "segmented_response": segments, "labels": [True] * len(segments), "comment": [""] * len(segments),
        "type": [None] * len(segments), "ref": [], "domain": "wk", **extra,
    }


def jsonl(records: list[dict]) -> io.BytesIO:
    buffer = io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())
    buffer.name = "items.jsonl"
    return buffer


def post_import(client, project_id: int, upload, fmt: str = "plain", **fields):
    """POST an upload to the import endpoint, let its task run (on commit, eagerly), then read
    the job: (answer to the POST, job as GET answers it after the task)."""
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(f"/api/projects/{project_id}/import/", {"file": upload, "format": fmt, **fields},
                               format="multipart")
    if response.status_code != 202:
        return response, None
    job = client.get(response.json()["url"])
    assert job.status_code == 200, job.content
    return response, job.json()


@pytest.fixture
def felm_items(felm_project):
    """Three FELM items with given segments, assigned to alice and bob."""
    records = [felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(3)]
    import_jsonl(felm_project, jsonl(records), fmt="felm")
    return list(felm_project.items.order_by("id"))


def api_client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def logged_in(client, users):
    """``logged_in("alice")``: the test client with alice's session."""
    def login(name):
        client.force_login(users[name])
        return client

    return login


@pytest.fixture
def clients(users):
    return {name: api_client(user) for name, user in users.items()} | {"anonymous": api_client()}


def segment(label, error_type=None, comment="", refs=()):
    return {"label": label, "error_type": error_type, "comment": comment, "refs": list(refs)}


@pytest.fixture
def open_consolidation(clients, felm_items, users):
    """The consolidation of the first FELM item, opened by alice and bob submitting through the API."""
    from annotation.models import Assignment

    item = felm_items[0]
    for name in ("alice", "bob"):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=item)
        clients[name].put(f"/api/assignments/{assignment.id}/annotation/",
                          {"payload": {"segments": [segment(True)] * 3}, "version": 0, "submit": True}, format="json")
    return item.stages.get().consolidation


def pytest_configure(config):
    from .stack import EMBEDDED_RUN

    if EMBEDDED_RUN and (os.environ.get("DATABASE_URL") or os.environ.get("CELERY_BROKER_URL")):
        raise pytest.UsageError("TEST_STACK=embedded is the run without DATABASE_URL and CELERY_BROKER_URL: unset them")
