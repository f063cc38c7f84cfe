"""gunicorn settings and hooks, loaded with `--config config/gunicorn.py` (the command line still sets
workers, bind and timeouts)."""

import ctypes
import ctypes.util
import gc
import os

# Issue 22 (web tier memory): a sync worker grows after start as requests load modules (the redis
# client), compile templates and fill per-process caches. Recycling a worker after max_requests (each
# at its own count: the jitter, so that the workers do not restart together) returns it to its start
# size. GUNICORN_MAX_REQUESTS=0: never. Not much fewer: a restart costs a worker about a second of
# imports, and under a busy campaign's saves a small count restarts workers often enough to show in
# the saves' tail latency (benchmarks/README.md); this one restarts a worker now and then.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "20000"))
max_requests_jitter = max_requests // 10

_libc = None


def release_freed_memory() -> bool:
    """Give the heap pages glibc keeps after a request back to the system (malloc_trim). A request
    that decodes a lot of JSON (a Factcheck-Bench archive export) left the worker that much larger
    although Python had freed it all; trimming is cheap next to a request. False where there is no
    glibc (musl, macOS)."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
        if _libc and not hasattr(_libc, "malloc_trim"):
            _libc = False
    if not _libc:
        return False
    _libc.malloc_trim(0)
    return True


def post_request(worker, req, environ, resp):
    release_freed_memory()


def freeze_startup_objects() -> None:
    """Move every object alive once the worker has loaded the app (modules, URL patterns, DRF and
    Django internals) to the garbage collector's permanent generation. A full collection walks all
    tracked objects; without this one landed now and then inside a save and paused it for many
    times a save's usual time (the slowest saves of a load test; issue 22, benchmarks/README.md).
    Objects made later are collected as before."""
    gc.collect()
    gc.freeze()


def post_worker_init(worker):
    """Once the worker has loaded the app: its start-up objects frozen (above), and with
    VECTOR_INDEX_PREWARM=all the worker readied for its first evidence search on a thread
    (annotation.evidence.prewarm); by default web workers do not (issue 22: they search no corpus,
    Celery workers do)."""
    freeze_startup_objects()
    # the app registry is ready only after the config module loads
    from annotation.evidence.prewarm import in_background

    in_background("web")
