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
def _prewarm_vector_index(**_):
    """VECTOR_INDEX_PREWARM (default "worker"): import faiss and open the corpora's vector indexes on a
    thread once a worker process is up (annotation.evidence.vector_index), not at its first search."""
    # the app registry is ready only after the config module loads
    from annotation.evidence.vector_index import prewarm_in_background

    prewarm_in_background("worker")
