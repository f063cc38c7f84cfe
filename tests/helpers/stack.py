"""The stack the suite runs on, and the one skip for tests that need PostgreSQL or Redis.

``make test`` runs on the embedded default (SQLite, tasks in-process) or, with ``DATABASE_URL``
and ``CELERY_BROKER_URL``, on PostgreSQL and Redis. CI runs it both ways (``.ci/run``): its
embedded run sets ``TEST_STACK=embedded``, where the tests that need PostgreSQL or Redis are
skipped with their reason. In every other run under ``CI=true`` a missing service is a failure,
never a skip, so the PostgreSQL run cannot pass by skipping what it is there to test.
"""

import os

import pytest

EMBEDDED_RUN = os.environ.get("TEST_STACK") == "embedded"


def skip_without_service(reason: str):
    if os.environ.get("CI") == "true" and not EMBEDDED_RUN:
        pytest.fail(
            f"{reason} (CI=true: this run must have PostgreSQL and Redis; only the run with "
            "TEST_STACK=embedded goes without them)"
        )
    pytest.skip(reason)


def require_postgresql(reason: str):
    """Skip (fail in CI's PostgreSQL run) unless the tests run on PostgreSQL."""
    from django.db import connection

    if connection.vendor != "postgresql":
        skip_without_service(f"{reason} (set DATABASE_URL to a PostgreSQL database)")
