"""The Celery application.

Without ``CELERY_BROKER_URL`` the settings make tasks run in-process (embedded default);
with it, tasks go to the broker and real workers run them.
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("factcheck_workbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
