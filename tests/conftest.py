"""Shared fixtures: users, a FELM project with two annotators and a consolidator, API clients,
and the data the modules of several folders use (a corpus, gold, a campaign, pages, workers).

Fixtures live here and are never imported by name; builders and helpers live in tests/helpers/,
and no test module imports another.

Tests run on whatever ``DATABASE_URL`` names (SQLite by default, PostgreSQL in CI). Tasks run
eagerly except in the worker tests, which start a real Celery worker process.
"""

import os

import pytest
from django.contrib.auth import get_user_model

from annotation.imports.items import import_jsonl
from config.celery import app as celery_app
from tests.helpers import dfactscore, evidence, phone, research
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, PageProblems, require_browser
from tests.helpers.builders import (
    PASSWORD,
    api_client,
    felm_line,
    jsonl,
    project_with_team,
    segment,
)
from tests.helpers.racer import Racer
from tests.helpers.stack import EMBEDDED_RUN, require_postgresql
from tests.helpers.worker import worker_starter


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
    """Sends real parallel requests to the live server (tests/helpers/racer.py)."""
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


@pytest.fixture
def felm_items(felm_project):
    """Three FELM items with given segments, assigned to alice and bob."""
    records = [felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(3)]
    import_jsonl(felm_project, jsonl(records), fmt="felm")
    return list(felm_project.items.order_by("id"))


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


@pytest.fixture
def open_consolidation(clients, felm_items, users):
    """The consolidation of the first FELM item, opened by alice and bob submitting through the API."""
    from annotation.models import Assignment

    item = felm_items[0]
    for name in ("alice", "bob"):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=item)
        clients[name].put(
            f"/api/assignments/{assignment.id}/annotation/",
            {"payload": {"segments": [segment(True)] * 3}, "version": 0, "submit": True},
            format="json",
        )
    return item.stages.get().consolidation


# -- data shared by the modules of several folders ------------------------------------------------------


@pytest.fixture
def corpus(factcheck_project, users, data_dir, django_capture_on_commit_callbacks):
    """The Encyclopedia corpus (tests/helpers/evidence.py) of the Factcheck-Bench project."""
    with django_capture_on_commit_callbacks(execute=True):
        corpus = evidence.encyclopedia(factcheck_project, users["admin"])
    corpus.refresh_from_db()
    return corpus


@pytest.fixture
def gold(factcheck_project):
    """A Factcheck-Bench project with research.ITEMS items of gold (steps 1 and 2)."""
    return research.gold_project(factcheck_project)


@pytest.fixture
def felm_gold(users):
    return research.felm_gold_project(users)


@pytest.fixture
def dfs_project(users):
    return research.dfs_scored_project(users)


@pytest.fixture
def campaign(felm_project, users, make_user):
    return research.build_campaign(felm_project, users, make_user)


@pytest.fixture
def dfactscore_project(users, django_capture_on_commit_callbacks):
    return dfactscore.dfactscore_paragraph_project(users, django_capture_on_commit_callbacks)


@pytest.fixture
def felm_pages(felm_project, users):
    return phone.felm_pages(felm_project, users)


@pytest.fixture
def factcheck_pages(factcheck_project, users, django_capture_on_commit_callbacks):
    return phone.factcheck_pages(factcheck_project, users, django_capture_on_commit_callbacks)


@pytest.fixture
def start_worker():
    """Start real worker processes on a queue of this test's own: ``start_worker(name, **env)``."""
    with worker_starter() as start:
        yield start


@pytest.fixture
def worker(start_worker):
    return start_worker()


def pytest_configure(config):
    if EMBEDDED_RUN and (os.environ.get("DATABASE_URL") or os.environ.get("CELERY_BROKER_URL")):
        raise pytest.UsageError("TEST_STACK=embedded is the run without DATABASE_URL and CELERY_BROKER_URL: unset them")


@pytest.fixture
def vector_index_root(settings, tmp_path):
    """Each test's own vector index directory, and no reader or queued rebuild left from another test."""
    from annotation.evidence import vector_index

    settings.DATA_DIR = tmp_path
    settings.VECTOR_INDEX_DIR = None
    vector_index._readers.clear()
    vector_index._queued.clear()
    yield tmp_path / "vector_index"
    vector_index._readers.clear()
    vector_index._queued.clear()
