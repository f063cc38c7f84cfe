"""config/gunicorn.py: web workers are recycled after a bounded number of requests (issue 22)."""

import ctypes.util
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT

CONFIG = REPO_ROOT / "config" / "gunicorn.py"


def test_workers_are_recycled_with_jitter(monkeypatch):
    monkeypatch.delenv("GUNICORN_MAX_REQUESTS", raising=False)
    settings = runpy.run_path(str(CONFIG))
    # bounded, but rare: a restart is about a second of imports that queued requests wait for
    assert 10_000 <= settings["max_requests"] <= 100_000
    assert 0 < settings["max_requests_jitter"] < settings["max_requests"]


def test_recycling_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("GUNICORN_MAX_REQUESTS", "0")
    settings = runpy.run_path(str(CONFIG))
    assert settings["max_requests"] == 0 and settings["max_requests_jitter"] == 0


TRIM = """
import runpy, sys
from pathlib import Path

def rss_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

hooks = runpy.run_path(sys.argv[1])
# ~60 MiB of blocks glibc keeps on its heap (below the mmap threshold), pinned by a survivor each
blocks = [bytes(3000) + bytes([i % 256]) for i in range(20000)]
keep = [blocks[i] for i in range(0, len(blocks), 1000)]
del blocks
before = rss_mib()
assert hooks["release_freed_memory"]()
print(before - rss_mib())
"""


def test_a_request_gives_freed_heap_memory_back(tmp_path):
    """The post_request hook trims glibc's heap: memory freed by a request leaves the worker."""
    if not Path("/proc/self/status").exists() or not ctypes.util.find_library("c"):
        pytest.skip("needs Linux with glibc")
    result = subprocess.run([sys.executable, "-c", TRIM, str(CONFIG)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout.strip()) > 30  # MiB given back


def test_post_request_calls_the_trim(monkeypatch):
    settings = runpy.run_path(str(CONFIG))
    calls = []
    settings["post_request"].__globals__["release_freed_memory"] = lambda: calls.append(1) or True
    settings["post_request"](None, None, {}, None)
    assert calls == [1]


FREEZE = """
import gc, runpy, sys

hooks = runpy.run_path(sys.argv[1])
assert gc.get_freeze_count() == 0
hooks["freeze_startup_objects"]()
print(gc.get_freeze_count())
"""


def test_a_worker_freezes_its_start_up_objects_out_of_full_collections():
    """post_worker_init moves what start-up made to the permanent generation, so a full collection
    during a request does not walk it (a pause of up to ~200 ms in a save before)."""
    hooks = runpy.run_path(str(CONFIG))
    frozen = []
    hooks["post_worker_init"].__globals__["freeze_startup_objects"] = lambda: frozen.append(True)
    hooks["post_worker_init"](worker=None)
    assert frozen == [True]
    result = subprocess.run([sys.executable, "-c", FREEZE, str(CONFIG)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.strip()) > 1000  # the interpreter's and the config's objects at least
