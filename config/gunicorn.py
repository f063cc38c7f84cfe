"""gunicorn hooks, loaded with `--config config/gunicorn.py` (the command line still sets workers,
bind and timeouts)."""


def post_worker_init(worker):
    """VECTOR_INDEX_PREWARM=all: import faiss on a thread once a worker is up (annotation.evidence.vector_index);
    by default web workers do not (issue 22: they search no corpus, Celery workers do)."""
    # the app registry is ready only after the config module loads
    from annotation.evidence.vector_index import prewarm_in_background

    prewarm_in_background("web")
