"""A stalled import in a real browser: the project page says so and its Restart button runs the
import to the end (services.jobs, static/js/import_jobs.js)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.imports.jobs import create_import_job
from annotation.models import ImportJob, ImportJobState
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD, felm_line, jsonl

pytestmark = pytest.mark.browser


def test_a_stalled_import_shows_as_such_and_its_restart_button_finishes_it(
    browser, live_server, users, felm_project, problems, monkeypatch
):
    from annotation.tasks import run_import

    monkeypatch.setattr(run_import, "delay", lambda job_id: None)  # the worker that took it died
    job = create_import_job(
        project=felm_project,
        user=users["admin"],
        upload=jsonl([felm_line(1, ["<b>A</b>."])]),
        fmt="felm",
    )
    ImportJob.objects.filter(pk=job.pk).update(
        state=ImportJobState.RUNNING, progress_at=timezone.now() - timedelta(minutes=10)
    )
    monkeypatch.undo()
    page = login(browser, live_server.url, "admin", PASSWORD, problems)
    page.goto(f"/projects/{felm_project.id}/")
    row = page.locator(".import-job")
    activity = row.locator("[data-role=activity]")
    activity.get_by_text("stalled: no progress for 10 min").wait_for()
    row.get_by_role("button", name="Restart").click()
    row.locator("[data-role=state]", has_text="Done").wait_for()
    assert "Imported 1 item" in row.locator("[data-role=outcome]").inner_text()
    assert row.get_by_role("button", name="Restart").count() == 0
    job.refresh_from_db()
    assert job.state == ImportJobState.DONE and job.attempts == 1
    assert not problems.errors, problems.errors
