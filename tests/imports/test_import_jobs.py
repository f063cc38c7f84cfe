"""Imports as background jobs: 202 + job, the job's state, progress and outcome, size limit,
idempotent re-runs, bounded memory, and the project page that follows them."""

import json
import tracemalloc

import pytest
from django.db import OperationalError, connections

from annotation.imports import items as import_services
from annotation.imports.items import import_jsonl
from annotation.imports.jobs import create_import_job, run_import_job
from annotation.models import ImportJob, Item, ItemStage
from annotation.tasks import run_import
from tests.helpers.builders import felm_line, jsonl, post_import

pytestmark = pytest.mark.django_db


def stored_uploads(data_dir) -> list:
    directory = data_dir / "imports"
    return sorted(directory.iterdir()) if directory.exists() else []


def test_the_api_answers_202_with_a_job_that_reports_its_result(clients, felm_project, data_dir):
    upload = jsonl([felm_line(i, ["A.", "B."]) for i in range(3)] + [felm_line(0, ["A.", "B."])])
    upload.name = "three.jsonl"
    response, job = post_import(clients["admin"], felm_project.id, upload, "felm", labels_as="ignore")
    assert response.status_code == 202
    assert response["Location"] == response.json()["url"] == f"/api/projects/{felm_project.id}/imports/{job['id']}/"
    assert job["state"] == "done" and job["errors"] == [] and job["created_by"] == "admin"
    assert job["result"] == {
        "items": 3,
        "gold_records": 0,
        "precomputing": 0,
        "assignments": 6,
        "duplicates_skipped": 1,
        "lines": 4,
        "skipped_lines": 0,
        "skipped": [],
        "warnings": [],
    }
    assert (job["file_name"], job["format"], job["labels_as"], job["lines_read"]) == (
        "three.jsonl",
        "felm",
        "ignore",
        4,
    )
    assert job["bytes_read"] == job["file_size"] == len(upload.getvalue())
    assert job["started_at"] and job["finished_at"]
    assert Item.objects.filter(project=felm_project).count() == 3
    assert stored_uploads(data_dir) == []  # deleted once the job ended
    listed = clients["admin"].get(f"/api/projects/{felm_project.id}/imports/").json()
    assert [j["id"] for j in listed["results"]] == [job["id"]]


def test_without_a_broker_the_job_is_done_within_the_request(clients, felm_project, django_capture_on_commit_callbacks):
    """The embedded default: the task runs eagerly once the job is committed (in a real request
    that is before the answer; in this test's transaction, when the capture ends)."""
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = clients["admin"].post(
            f"/api/projects/{felm_project.id}/import/",
            {"file": jsonl([felm_line(1, ["A."])]), "format": "felm"},
            format="multipart",
        )
    assert response.status_code == 202 and response.json()["state"] == "queued"
    assert len(callbacks) == 1  # the task is queued on commit, not inside the request's transaction
    assert ImportJob.objects.get().state == "done"


def test_a_failed_job_keeps_every_error_and_writes_nothing(clients, felm_project, data_dir):
    upload = jsonl([felm_line(1, ["A."]), {"prompt": "no response"}, felm_line(3, ["C."], domain="sports")])
    response, job = post_import(clients["admin"], felm_project.id, upload, "felm")
    assert job["state"] == "failed" and job["result"] is None
    assert [(e["line"], e["field"]) for e in job["errors"]] == [(2, "response"), (3, "domain")]
    assert job["lines_read"] == 3
    assert not Item.objects.exists() and stored_uploads(data_dir) == []


def test_options_are_refused_before_anything_is_stored(clients, felm_project, data_dir):
    response, _ = post_import(clients["admin"], felm_project.id, jsonl([{"response": "x"}]), "factcheck-bench")
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "format"
    missing = clients["admin"].post(f"/api/projects/{felm_project.id}/import/", {"format": "plain"}, format="multipart")
    assert missing.status_code == 400 and "file" in missing.json()
    assert not ImportJob.objects.exists() and stored_uploads(data_dir) == []


def test_jobs_are_for_project_admins_and_hidden_from_non_members(clients, felm_project, factcheck_project):
    _, job = post_import(clients["admin"], felm_project.id, jsonl([felm_line(1, ["A."])]), "felm")
    url = f"/api/projects/{felm_project.id}/imports/{job['id']}/"
    assert clients["alice"].get(url).status_code == 403  # an annotator of the project
    assert clients["alice"].get(f"/api/projects/{felm_project.id}/imports/").status_code == 403
    assert clients["mallory"].get(url).status_code == 404  # not a member
    assert clients["mallory"].get(f"/api/projects/{felm_project.id}/imports/").status_code == 404
    assert clients["anonymous"].get(url).status_code == 401
    # the job of one project is not found through another
    assert clients["admin"].get(f"/api/projects/{factcheck_project.id}/imports/{job['id']}/").status_code == 404
    assert clients["admin"].get(f"/api/projects/{felm_project.id}/imports/999999/").status_code == 404


def test_the_schema_documents_the_job_endpoints(schema):
    post = schema["paths"]["/api/projects/{id}/import/"]["post"]
    assert {"202", "400", "404", "413"} <= set(post["responses"]) and "201" not in post["responses"]
    assert post["responses"]["202"]["content"]["application/json"]["schema"]["$ref"].endswith("/ImportJob")
    job = schema["paths"]["/api/projects/{id}/imports/{job_id}/"]["get"]
    assert {"200", "404"} <= set(job["responses"])
    properties = schema["components"]["schemas"]["ImportJob"]["properties"]
    assert {"state", "lines_read", "errors", "result", "url"} <= set(properties)


@pytest.fixture(scope="module")
def schema():
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


# -- size limit -------------------------------------------------------------------------------


def test_an_upload_over_the_limit_is_a_413_and_nothing_is_stored(clients, felm_project, settings, data_dir):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    lines = [felm_line(i, ["A sentence long enough to count."]) for i in range(10)]
    assert len(jsonl(lines).getvalue()) > 1000
    response, _ = post_import(clients["admin"], felm_project.id, jsonl(lines), "felm")
    assert response.status_code == 413
    assert response.json()["max_bytes"] == 1000 and "too large" in response.json()["detail"]
    # far over the limit: refused from Content-Length, before the body is read
    big = jsonl([felm_line(i, ["x" * 1000]) for i in range(100)])
    response, _ = post_import(clients["admin"], felm_project.id, big, "felm")
    assert response.status_code == 413 and "too large" in response.json()["detail"]
    assert not ImportJob.objects.exists() and stored_uploads(data_dir) == []
    settings.IMPORT_MAX_UPLOAD_BYTES = 10**6
    assert post_import(clients["admin"], felm_project.id, jsonl(lines), "felm")[0].status_code == 202


def test_the_page_form_says_when_a_file_is_too_large(client, users, felm_project, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 100
    client.force_login(users["admin"])
    response = client.post(
        f"/projects/{felm_project.id}/import/",
        {
            "file": jsonl([felm_line(1, ["A."]), felm_line(2, ["B."])]),
            "format": "felm",
            "labels_as": "ignore",
        },
        follow=True,
    )
    page = response.content.decode()
    assert "Import refused" in page and "the file is too large" in page and "imports take at most 100 bytes" in page
    assert not ImportJob.objects.exists()
    assert 'data-max-bytes="100"' in page  # the page script refuses it before uploading, too


# -- re-runs and redelivery -------------------------------------------------------------------


def queued_job(project, user, records, fmt="felm") -> ImportJob:
    upload = jsonl(records)
    job = create_import_job(project=project, user=user, upload=upload, fmt=fmt)
    return job  # inside the test's transaction: on_commit never fires, the job stays queued


def test_a_job_that_ended_is_not_run_again(felm_project, users, data_dir):
    job = queued_job(felm_project, users["admin"], [felm_line(1, ["A."])])
    assert run_import.apply(args=[job.id]).get() == {"job": job.id, "state": "done"}
    assert Item.objects.count() == 1 and stored_uploads(data_dir) == []
    # redelivered after the worker acknowledged nothing: a no-op, not a second import
    assert run_import.apply(args=[job.id]).get() == {"job": job.id, "state": "done"}
    assert Item.objects.count() == 1
    job.refresh_from_db()
    assert job.attempts == 1


def test_a_run_that_died_half_way_left_nothing_and_the_rerun_imports_everything(
    felm_project, users, data_dir, monkeypatch
):
    monkeypatch.setattr(import_services, "BATCH_SIZE", 2)
    job = queued_job(felm_project, users["admin"], [felm_line(i, ["A."]) for i in range(5)])
    real_assign, calls = import_services.assign_new_stages, []

    def lose_the_database(*args, **kwargs):  # the second batch: the connection drops
        calls.append(1)
        if len(calls) == 2:
            raise OperationalError("server closed the connection unexpectedly")
        return real_assign(*args, **kwargs)

    monkeypatch.setattr(import_services, "assign_new_stages", lose_the_database)
    with pytest.raises(OperationalError):
        run_import_job(job.id)
    job.refresh_from_db()
    assert job.state == "running" and not Item.objects.exists() and not ItemStage.objects.exists()
    assert len(stored_uploads(data_dir)) == 1  # kept for the retry

    finished = run_import_job(job.id)
    assert finished.state == "done" and finished.result["items"] == 5 and finished.result["assignments"] == 10
    assert Item.objects.count() == 5 and finished.attempts == 2
    assert stored_uploads(data_dir) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("needs a second connection writing while the import's transaction is open")
def test_a_run_that_finds_the_job_finished_by_another_run_rolls_back(felm_project, users, monkeypatch):
    """Two deliveries running at once: the job is marked done in the import's transaction, so
    the later one to commit sees that and writes nothing."""
    monkeypatch.setattr(run_import, "delay", lambda job_id: None)  # run by hand below
    job = queued_job(felm_project, users["admin"], [felm_line(i, ["A."]) for i in range(3)])
    real_write = import_services._Writer.write
    other_run = connections.create_connection("default")

    def other_run_finishes_first(self, batch):
        real_write(self, batch)
        with other_run.cursor() as cursor:
            cursor.execute(
                "UPDATE annotation_importjob SET state = 'done', result = '{\"items\": 3}' WHERE id = %s",
                [job.pk],
            )

    monkeypatch.setattr(import_services._Writer, "write", other_run_finishes_first)
    try:
        run_import_job(job.id)
    finally:
        other_run.close()
    assert not Item.objects.exists()
    job.refresh_from_db()
    assert job.state == "done" and job.result == {"items": 3}


def test_an_unexpected_error_fails_the_job_with_a_message_not_a_crash(felm_project, users, monkeypatch, data_dir):
    job = queued_job(felm_project, users["admin"], [felm_line(1, ["A."])])
    monkeypatch.setattr(import_services._Writer, "write", lambda self, batch: 1 / 0)
    run_import_job(job.id)
    job.refresh_from_db()
    assert job.state == "failed" and not Item.objects.exists() and stored_uploads(data_dir) == []
    assert job.errors == [
        {
            "line": 0,
            "field": "(server)",
            "message": "the import stopped on an internal error (ZeroDivisionError); nothing was imported",
        }
    ]


def test_a_missing_upload_fails_the_job_saying_why(felm_project, users, data_dir):
    job = queued_job(felm_project, users["admin"], [felm_line(1, ["A."])])
    for path in stored_uploads(data_dir):
        path.unlink()
    run_import_job(job.id)
    job.refresh_from_db()
    assert job.state == "failed" and "DATA_DIR" in job.errors[0]["message"]


# -- streaming --------------------------------------------------------------------------------


def test_a_bad_line_after_written_batches_rolls_everything_back(felm_project, monkeypatch):
    monkeypatch.setattr(import_services, "BATCH_SIZE", 2)
    lines = [felm_line(i, ["A."]) for i in range(7)] + [{"prompt": "no response"}]
    with pytest.raises(import_services.ImportFailed) as failed:
        import_jsonl(felm_project, jsonl(lines), fmt="felm")
    assert failed.value.errors[0]["line"] == 8
    assert not Item.objects.exists() and not ItemStage.objects.exists()


def test_batches_keep_assignments_balanced(felm_project, monkeypatch):
    monkeypatch.setattr(import_services, "BATCH_SIZE", 3)
    result = import_jsonl(felm_project, jsonl([felm_line(i, ["A."]) for i in range(10)]), fmt="felm")
    assert result.items == 10 and result.assignments == 20
    from annotation.models import Assignment

    assert Assignment.objects.filter(user__username="alice").count() == 10


def _peak_import_memory(project, lines: int) -> int:
    path_lines = [
        (json.dumps(felm_line(i, [f"Sentence {i}.{k} says something." for k in range(5)])) + "\n").encode()
        for i in range(lines)
    ]
    tracemalloc.start()
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]
    import_jsonl(project, iter(path_lines), fmt="felm")
    peak = tracemalloc.get_traced_memory()[1] - baseline
    tracemalloc.stop()
    return peak


def test_peak_memory_does_not_grow_with_the_file(felm_project, factcheck_project, monkeypatch, settings):
    """Four times the lines must not take anywhere near four times the memory (it did: every
    parsed item was kept until the end)."""
    settings.DEBUG = False
    monkeypatch.setattr(import_services, "BATCH_SIZE", 100)
    from annotation.services.projects import create_project

    small = _peak_import_memory(create_project(name="mem small", kind="felm"), 500)
    large = _peak_import_memory(create_project(name="mem large", kind="felm"), 2000)
    assert large < 1.6 * small, (small, large)


# -- progress ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("progress is committed on a second connection on PostgreSQL only (SQLite has one writer)")
def test_progress_is_visible_to_others_while_the_import_runs(felm_project, users, monkeypatch):
    monkeypatch.setattr(import_services, "BATCH_SIZE", 50)
    monkeypatch.setattr(import_services, "PROGRESS_INTERVAL_SECONDS", 0)
    job = create_import_job(project=felm_project, user=users["admin"], upload=jsonl([]), fmt="felm")
    # the upload above was empty: write a real one in its place, then run the job by hand
    path = import_services.upload_path(job)
    path.write_bytes(b"".join((json.dumps(felm_line(i, ["A."])) + "\n").encode() for i in range(200)))
    ImportJob.objects.filter(pk=job.pk).update(state="queued", errors=[], result=None, file_size=path.stat().st_size)
    seen = []
    observer = connections.create_connection("default")
    real_write = import_services._Writer.write

    def look_from_outside(self, batch):
        real_write(self, batch)
        with observer.cursor() as cursor:
            cursor.execute("SELECT state, lines_read FROM annotation_importjob WHERE id = %s", [job.pk])
            seen.append(cursor.fetchone())
        with observer.cursor() as cursor:  # the items themselves are not visible yet
            cursor.execute("SELECT count(*) FROM annotation_item WHERE project_id = %s", [felm_project.pk])
            seen.append(cursor.fetchone()[0])

    monkeypatch.setattr(import_services._Writer, "write", look_from_outside)
    try:
        run_import_job(job.pk)
    finally:
        observer.close()
    states = seen[0::2]
    assert all(state == "running" for state, _ in states) and states[-1][1] >= 150, seen
    assert set(seen[1::2]) == {0}
    job.refresh_from_db()
    assert job.state == "done" and job.lines_read == 200


# -- the project page -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_project_page_lists_recent_imports_with_their_outcome(client, users, felm_project):
    client.force_login(users["admin"])
    upload = jsonl([felm_line(1, ["A."]), felm_line(2, ["B."], domain="<b>sports</b>")])
    upload.name = '<b onmouseover="alert(1)">x.jsonl'
    page = client.post(
        f"/projects/{felm_project.id}/import/",
        {"file": upload, "format": "felm", "labels_as": "ignore"},
        follow=True,
    ).content.decode()
    assert "<b onmouseover" not in page and "&lt;b onmouseover=&quot;alert(1)&quot;&gt;x.jsonl" in page
    assert "<b>sports</b>" not in page and "line 2, field domain" in page
    job = ImportJob.objects.get()
    assert f'data-job-url="/api/projects/{felm_project.id}/imports/{job.id}/"' in page and 'data-state="failed"' in page
    assert "js/import_jobs.js" in page

    client.post(
        f"/projects/{felm_project.id}/import/",
        {
            "file": jsonl([felm_line(1, ["A."]), felm_line(1, ["A."])]),
            "format": "felm",
            "labels_as": "ignore",
        },
    )
    page = client.get(f"/projects/{felm_project.id}/").content.decode()
    assert "Imported 1 item (2 assignments, 1 exact duplicates skipped)." in page
    assert page.count('class="import-job"') == 2


def test_annotators_do_not_get_the_import_script(client, users, felm_items):
    client.force_login(users["alice"])
    assert "import_jobs.js" not in client.get(f"/projects/{felm_items[0].project_id}/").content.decode()
