"""Real Celery worker processes for the worker tests, on a queue of the test's own, against the
test's PostgreSQL database and the Redis broker."""

import os
import subprocess
import uuid
from contextlib import contextmanager

from django.db import connection

from benchmarks.harness import celery_worker_command  # one command line for the tests' and benchmarks' workers
from config.celery import app as celery_app

from .paths import REPO_ROOT
from .stack import skip_without_service


def require_full_stack():
    reasons = []
    if not os.environ.get("CELERY_BROKER_URL"):
        reasons.append("CELERY_BROKER_URL is not set")
    if connection.vendor != "postgresql":
        reasons.append("DATABASE_URL does not name PostgreSQL (a worker process cannot see an in-memory test database)")
    if reasons:
        skip_without_service("; ".join(reasons))


def database_url_of_test_database() -> str:
    settings = connection.settings_dict
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"


@contextmanager
def worker_starter():
    """Start worker processes on a queue of this test's own: ``start(name, **env)``."""
    require_full_stack()
    queue = f"test-{uuid.uuid4().hex[:8]}"
    processes = []

    def start(name: str = "worker", **extra_env: str) -> subprocess.Popen:
        env = {
            **os.environ,
            "DATABASE_URL": database_url_of_test_database(),
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "INTERACTIVE_QUEUE": queue,
            "DATABASE_CONN_MAX_AGE": "0",
            **extra_env,
        }
        process = subprocess.Popen(
            celery_worker_command(queue, f"{name}-{queue}@%h", loglevel="INFO"),
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        processes.append(process)
        return process

    previous_queue, previous_routes = (
        celery_app.conf.task_default_queue,
        celery_app.conf.task_routes,
    )
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = queue
    celery_app.conf.task_routes = {}  # interactive work too goes to this test's queue
    try:
        yield start
    finally:
        celery_app.conf.task_default_queue, celery_app.conf.task_routes = (
            previous_queue,
            previous_routes,
        )
        celery_app.conf.task_always_eager = True
        for process in processes:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
