"""A real Celery worker process on the Redis broker runs an import's segmentation."""
import os
import subprocess
import sys
import time
import uuid

import pytest
from django.db import connection

from annotation.models import ItemStage, StageStatus
from annotation.services.imports import import_jsonl
from config.celery import app as celery_app

from .conftest import REPO_ROOT, jsonl

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def require_full_stack():
    reasons = []
    if not os.environ.get("CELERY_BROKER_URL"):
        reasons.append("CELERY_BROKER_URL is not set")
    if connection.vendor != "postgresql":
        reasons.append("DATABASE_URL does not name PostgreSQL (a worker process cannot see an in-memory test database)")
    if reasons:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the worker tests: " + "; ".join(reasons))
        pytest.skip("; ".join(reasons))


def database_url_of_test_database() -> str:
    settings = connection.settings_dict
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"


@pytest.fixture
def worker():
    require_full_stack()
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": database_url_of_test_database(), "CELERY_TASK_DEFAULT_QUEUE": queue,
           "DATABASE_CONN_MAX_AGE": "0"}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=INFO", "-Q", queue,
         "--hostname", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = queue
    try:
        yield process
    finally:
        celery_app.conf.task_default_queue = previous_queue
        celery_app.conf.task_always_eager = True
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_import_segmentation_finishes_through_a_worker_process(worker, felm_project):
    records = [{"prompt": f"q{i}", "response": f"Claim {i} is one sentence. Claim {i} has a second one."} for i in range(5)]
    result = import_jsonl(felm_project, jsonl(records), fmt="plain")
    assert result.precomputing == 5

    deadline = time.monotonic() + 90
    stages = ItemStage.objects.filter(item__project=felm_project)
    while time.monotonic() < deadline and stages.filter(status=StageStatus.ANNOTATING).count() < 5:
        assert worker.poll() is None, worker.stdout.read()
        time.sleep(0.25)
    statuses = list(stages.values_list("status", flat=True))
    assert statuses == [StageStatus.ANNOTATING] * 5, statuses
    assert stages.first().content["segments"] == ["Claim 0 is one sentence.", "Claim 0 has a second one."]
    assert stages.first().assignments.count() == 2
