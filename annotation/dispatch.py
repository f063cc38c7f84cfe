"""The one place that queues background work.

Services name a task (``"annotation.tasks.run_import"``) instead of importing ``annotation.tasks``,
so the tasks module, which calls the services, is the only side of that edge. With a broker the
task is sent by name (``send_task``; ``CELERY_TASK_ROUTES`` applies by name). Without one (the
embedded default, the tests) ``task_always_eager`` is set, and ``send_task`` would not run
anything in-process: the registered task's ``delay`` runs it here instead.
"""

from celery import current_app
from django.db import transaction

TASKS = "annotation.tasks"


def runs_in_process() -> bool:
    """True without a broker: a queued task runs at once, in this process."""
    return bool(current_app.conf.task_always_eager)


def send(name: str, *args) -> None:
    """Queue the task ``annotation.tasks.<name>`` now (or run it now, in-process)."""
    full_name = f"{TASKS}.{name}"
    if runs_in_process():
        if full_name not in current_app.tasks:
            current_app.loader.import_default_modules()  # registers the tasks (autodiscovery)
        current_app.tasks[full_name].delay(*args)
    else:
        current_app.send_task(full_name, args=list(args))


def queue(name: str, *args) -> None:
    """Queue the task once the current transaction has committed, so the worker sees its rows."""
    transaction.on_commit(lambda: send(name, *args))
