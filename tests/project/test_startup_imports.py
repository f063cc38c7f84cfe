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
heavy = json.loads(sys.argv[1])
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in heavy)))
"""


def test_web_worker_start_and_every_view_module_load_no_heavy_library():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(REPO_ROOT)}
    env.setdefault("DJANGO_SECRET_KEY", "tests-only-secret-key-not-used-anywhere-else-0123456789")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(HEAVY)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    roots = sorted({name.split(".")[0] for name in loaded})
    assert roots == [], f"web worker start-up imports heavy libraries: {roots} (e.g. {loaded[:5]})"
