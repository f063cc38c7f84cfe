"""gunicorn settings and hooks, loaded with `--config config/gunicorn.py` (the command line still sets
workers, bind and timeouts)."""

import os

# Issue 22 (web tier memory): a sync worker grows from ~82 MiB after start as requests load view
# modules, fill per-process caches and fragment glibc's heap; freed memory rarely goes back to the
# system. Recycling a worker after max_requests (each at its own count: the jitter, so that the
# workers do not restart together) returns the tier to its start size. GUNICORN_MAX_REQUESTS=0: never.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "1000"))
max_requests_jitter = max_requests // 10


def post_worker_init(worker):
    """VECTOR_INDEX_PREWARM: import faiss on a thread once a worker is up (annotation.evidence.vector_index)."""
    # the app registry is ready only after the config module loads
    from annotation.evidence.vector_index import prewarm_in_background

    prewarm_in_background()
