"""annotation.dispatch: services queue tasks by name, after the commit, eagerly without a broker."""

import pytest
from django.db import transaction

from annotation import dispatch
from annotation.imports.items import import_jsonl
from annotation.models import ItemStage, StageStatus
from annotation.services.stages import CHUNK_SIZE, enqueue_precompute
from config.celery import app
from tests.helpers.builders import jsonl
from tests.helpers.paths import REPO_ROOT as REPO


@pytest.fixture
def broker(monkeypatch):
    """A broker is configured: send_task is recorded instead of sent."""
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args: sent.append((name, args)))
    app.conf.task_always_eager = False
    yield sent
    app.conf.task_always_eager = True


@pytest.mark.django_db(transaction=True)
def test_with_a_broker_a_task_is_sent_by_name_once_the_transaction_commits(broker):
    with transaction.atomic():
        dispatch.queue("run_import", 7)
        assert broker == []  # a worker must not look for rows that are not committed yet
    assert broker == [("annotation.tasks.run_import", [7])]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_queues_nothing(broker):
    with pytest.raises(RuntimeError), transaction.atomic():
        dispatch.queue("run_import", 7)
        raise RuntimeError
    assert broker == []


def test_precompute_is_queued_in_chunks(broker):
    enqueue_precompute(list(range(CHUNK_SIZE + 1)))
    assert broker == [
        ("annotation.tasks.precompute_stages", [list(range(CHUNK_SIZE))]),
        ("annotation.tasks.precompute_stages", [[CHUNK_SIZE]]),
    ]


@pytest.mark.django_db
def test_without_a_broker_the_task_runs_here(felm_project, django_capture_on_commit_callbacks):
    """send_task would only post to the in-memory transport: the eager path runs the task."""
    import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain")
    stage = ItemStage.objects.get(item__project=felm_project)
    stage.assignments.all().delete()
    ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.READY)
    assert dispatch.runs_in_process()
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.queue("precompute_stages", [stage.id])  # assigns the ready stage again
    assert stage.assignments.count() == 2


def test_services_never_import_the_tasks_module():
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "annotation" / "services").glob("*.py")
        if "annotation.tasks" in path.read_text(encoding="utf-8")
        or "from annotation import tasks" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
