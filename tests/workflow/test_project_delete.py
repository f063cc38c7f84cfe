"""Deleting a project: 204 and nothing left, and the work queued for it stops without an error
(on any database; the race with running tasks is in tests/races/test_lock_order.py, on PostgreSQL)."""

import pytest

from annotation import tasks
from annotation.exceptions import ProjectDeleted
from annotation.imports.items import import_jsonl
from annotation.models import Assignment, Item, ItemStage, Project
from annotation.services.assignments import assign_open_stages
from annotation.services.projects import update_project
from tests.helpers.builders import jsonl

pytestmark = pytest.mark.django_db


def test_delete_answers_204_and_leaves_nothing(clients, felm_items):
    project = felm_items[0].project
    stage_ids = list(ItemStage.objects.filter(item__project=project).values_list("id", flat=True))
    response = clients["admin"].delete(f"/api/projects/{project.id}/")
    assert response.status_code == 204
    assert not Project.objects.filter(pk=project.pk).exists()
    assert not Item.objects.filter(project_id=project.pk).exists()
    assert not Assignment.objects.filter(item_stage_id__in=stage_ids).exists()
    assert clients["admin"].delete(f"/api/projects/{project.id}/").status_code == 404


def test_the_tasks_of_a_deleted_project_stop_without_an_error(felm_project, monkeypatch):
    monkeypatch.setattr("annotation.imports.items.enqueue_precompute", lambda stage_ids: None)  # queued, not run
    import_jsonl(
        felm_project,
        jsonl([{"prompt": f"Q{i}?", "response": f"Answer {i}. Two sentences."} for i in range(3)]),
        fmt="plain",
    )
    stage_ids = list(ItemStage.objects.filter(item__project=felm_project).values_list("id", flat=True))
    item_ids = list(felm_project.items.values_list("id", flat=True))
    gone = Project.objects.get(pk=felm_project.pk)
    Project.objects.filter(pk=felm_project.pk).delete()
    # what the worker then takes from the queue
    assert tasks.precompute_stages(stage_ids) == {"done": 0, "failed": 0}
    assert tasks.retrieve_unit_again(stage_ids[0], 0) is False
    assert tasks.store_export_lines(gone.pk, item_ids) == 0
    assert assign_open_stages(gone) == 0
    assert not Assignment.objects.filter(item_stage_id__in=stage_ids).exists()


def test_a_change_to_a_project_deleted_meanwhile_is_a_404(clients, felm_project, users):
    stale = Project.objects.get(pk=felm_project.pk)
    Project.objects.filter(pk=felm_project.pk).delete()
    with pytest.raises(ProjectDeleted):
        update_project(project=stale, changed_by=users["admin"], guidelines="new")
    from api.exceptions import exception_handler

    assert exception_handler(ProjectDeleted(stale.pk), {}).status_code == 404
