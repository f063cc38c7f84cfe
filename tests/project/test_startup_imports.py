"""A web worker's start must not load the heavy libraries (issue 22: 233 MiB per worker with NLTK).

The check runs in a fresh interpreter, as gunicorn's worker would: the test process itself has
imported everything long ago.
"""

import json
import os
import subprocess
import sys

from tests.helpers.paths import REPO_ROOT

# Libraries only the Celery worker (or a rare request) needs; each costs tens to hundreds of MiB.
HEAVY = (
    "nltk",
    "sklearn",
    "scipy",
    "torch",
    "onnxruntime",
    "trafilatura",
    "bm25s",
    "sentence_transformers",
    "faiss",
    "transformers",
    "openai",
    "numpy",
)

# Modules only the OpenAPI schema (drf-spectacular's generator) or a test client needs: a dotted
# name forbids that module and its submodules (issue 22: ~6 MiB per worker with rest_framework.test,
# django.test, unittest and jinja2, ~5.7 MiB with requests and urllib3).
SCHEMA_OR_TESTS_ONLY = (
    "drf_spectacular.openapi",
    "drf_spectacular.generators",
    "drf_spectacular.views",
    "rest_framework.test",
    "django.test",
    "jinja2",
    "requests",
    "urllib3",
)

SCRIPT = """
import json, sys
import config.wsgi  # what gunicorn imports
from django.urls import get_resolver

def walk(resolver):
    for entry in resolver.url_patterns:
        if hasattr(entry, "url_patterns"):
            walk(entry)
        else:
            entry.callback  # imports the view's module

walk(get_resolver())
get_resolver().reverse_dict  # what the first reverse() fills: every pattern's lookup string
forbidden = json.loads(sys.argv[1])
print(json.dumps(sorted(
    name for name in sys.modules if any(name == f or name.startswith(f + ".") for f in forbidden)
)))
"""


def loaded_by_web_worker_start(forbidden):
    """Which modules of `forbidden` (and their submodules) a fresh interpreter holds after importing
    config.wsgi and every view module of the URL conf."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(REPO_ROOT)}
    env.setdefault("DJANGO_SECRET_KEY", "tests-only-secret-key-not-used-anywhere-else-0123456789")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(forbidden)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_web_worker_start_and_every_view_module_load_no_heavy_library():
    loaded = loaded_by_web_worker_start(HEAVY)
    roots = sorted({name.split(".")[0] for name in loaded})
    assert roots == [], f"web worker start-up imports heavy libraries: {roots} (e.g. {loaded[:5]})"


def test_web_worker_start_loads_neither_the_schema_generator_nor_test_clients():
    loaded = loaded_by_web_worker_start(SCHEMA_OR_TESTS_ONLY)
    assert loaded == [], f"web worker start-up imports modules only the schema or tests need: {loaded[:10]}"
