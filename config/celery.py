"""The Celery application.

Without ``CELERY_BROKER_URL`` the settings make tasks run in-process (embedded default);
with it, tasks go to the broker and real workers run them.
"""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("factcheck_workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_process_init.connect
def _prewarm_search(**_):
    """VECTOR_INDEX_PREWARM (default "worker"): ready a worker process for its first evidence search
    on a thread once it is up (faiss imported, the searchable corpora's indexes opened and searched
    once, the full-text statement run once, the query embedding model loaded:
    annotation.evidence.prewarm), not at its first search; never blocking the start or a task."""
    # the app registry is ready only after the config module loads
    from annotation.evidence.prewarm import in_background

    in_background("worker")
