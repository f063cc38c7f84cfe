"""The agreement page and API read a cached result a Celery task computes: computed once for
the same data, computed again when the data change, one task per request at a time, the page's
"Computing…" state (with the point estimates once stored) and its progress, the API's 202, the
downloads' 409, and the same permissions as before.

Tasks run eagerly in the tests, so a miss is filled inside the request; the miss state is seen
by replacing the task's ``delay`` with a mock (nothing queued) and running its body by hand."""

import json
import re
import time
from unittest import mock

import pytest
from django.core.cache import cache
from django.utils import timezone

from annotation.models import (
    Annotation,
    Assignment,
    Role,
    SystemRun,
    SystemRunSource,
    SystemRunState,
)
from annotation.research import agreement_cache, selectors
from annotation.services.annotations import reopen_annotation, save_annotation
from annotation.services.consolidation import discard_item_stage, reopen_stage, save_consolidation
from annotation.services.projects import add_member
from annotation.tasks import compute_agreement
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD, segment

PAGE = "/projects/{}/agreement/"
API = "/api/projects/{}/agreement/"


@pytest.fixture
def computations():
    """Every call of the expensive computation, by resamples (the real one runs)."""
    calls = []
    real = selectors.project_agreement

    def counted(project, stage=1, resamples=0, seed=0, progress=None):
        calls.append(resamples)
        return real(project, stage, resamples=resamples, seed=seed, progress=progress)

    with mock.patch.object(selectors, "project_agreement", counted):
        yield calls


@pytest.fixture
def nothing_queued():
    """The task's ``delay`` replaced: a miss stays a miss; ``.call_args`` has the task's arguments."""
    with mock.patch.object(compute_agreement, "delay") as delay:
        yield delay


def run_queued_task(delay):
    """What a worker does with the task the request queued."""
    return compute_agreement.run(*delay.call_args.args)


def submit(user, item, labels, version=0):
    assignment = Assignment.objects.get(user=user, item_stage__item=item)
    segments = [segment(True) if label else segment(False, "knowledge_error", "wrong year") for label in labels]
    return save_annotation(assignment=assignment, payload={"segments": segments}, version=version, submit=True)


def units_shown(page: str) -> list[str]:
    return re.findall(r'<b class="units">(\d+)</b>', page)


# -- computed once, shared by page, API and downloads -------------------------------------------


def test_two_requests_compute_the_agreement_once(logged_in, clients, felm_project, campaign, computations):
    client = logged_in("carol")
    first = client.get(PAGE.format(felm_project.id), {"resamples": 40, "seed": 3})
    # the task stores the point estimates first, then the numbers with their intervals
    assert computations == [0, 40]
    second = client.get(PAGE.format(felm_project.id), {"resamples": 40, "seed": 3})
    api = clients["admin"].get(API.format(felm_project.id), {"resamples": 40, "seed": 3})
    download = client.get(
        PAGE.format(felm_project.id),
        {"resamples": 40, "seed": 3, "download": "csv", "table": "pairs"},
    )
    assert computations == [0, 40]
    assert first.status_code == second.status_code == api.status_code == download.status_code == 200
    assert "Computing" not in first.content.decode()
    assert units_shown(first.content.decode()) == units_shown(second.content.decode())
    # another seed is another result (its point estimates are those stored already)
    clients["admin"].get(API.format(felm_project.id), {"resamples": 40, "seed": 4})
    assert computations == [0, 40, 40]
    # the API's numbers are the computation's, unchanged by the cache
    direct = selectors.project_agreement(felm_project, 1, resamples=40, seed=3)
    assert api.json() == json.loads(json.dumps(direct))


def test_the_api_first_then_the_page_reuse_one_result(logged_in, clients, felm_project, campaign, computations):
    assert clients["carol"].get(API.format(felm_project.id), {"resamples": 0}).status_code == 200
    assert computations == [0]
    page = logged_in("admin").get(PAGE.format(felm_project.id), {"resamples": 0}).content.decode()
    assert computations == [0] and "Computing" not in page and units_shown(page)


# -- a data change invalidates it ---------------------------------------------------------------


def test_the_stamp_changes_with_every_input_of_the_numbers_and_not_with_drafts(felm_project, felm_items, users):
    stamps = [agreement_cache.data_stamp(felm_project, 1)]

    def changed():
        stamps.append(agreement_cache.data_stamp(felm_project, 1))
        return stamps[-1] != stamps[-2]

    first, second = felm_items[0], felm_items[1]
    # an annotator's draft autosaves often and counts for nothing: it keeps the cached numbers
    save_annotation(
        assignment=Assignment.objects.get(user=users["alice"], item_stage__item=second),
        payload={"segments": [segment(True)] * 3},
        version=0,
        submit=False,
    )
    assert not changed()
    submit(users["alice"], first, [True, True, False])
    assert changed(), "a submission"
    reopen_annotation(
        assignment=Assignment.objects.get(user=users["alice"], item_stage__item=first),
        user=users["alice"],
    )
    assert changed(), "a reopened submission"
    submit(users["alice"], first, [True, False, False], version=2)
    assert changed(), "a submission again, other labels"
    submit(users["bob"], first, [True, True, True])
    assert changed(), "the second submission"
    consolidation = first.stages.get().consolidation
    save_consolidation(
        consolidation=consolidation,
        user=users["carol"],
        payload={"segments": [segment(True)] * 3},
        version=0,
        submit=True,
    )
    assert changed(), "a consolidation (gold record)"
    reopen_stage(stage=first.stages.get(), user=users["admin"], reason="recheck")
    assert changed(), "a reopened gold record"
    consolidation.refresh_from_db()
    discard_item_stage(consolidation=consolidation, user=users["carol"], reason="cannot agree")
    assert changed(), "a discard"
    SystemRun.objects.create(
        project=felm_project,
        system="rater",
        source=SystemRunSource.LLM_RATER,
        state=SystemRunState.RUNNING,
    )
    assert not changed(), "a rater run that has not finished"
    SystemRun.objects.create(
        project=felm_project,
        system="rater-2",
        source=SystemRunSource.LLM_RATER,
        state=SystemRunState.DONE,
        finished_at=timezone.now(),
    )
    assert changed(), "a finished LLM-rater run"
    Annotation.objects.filter(assignment__item_stage__item=second).delete()
    assert not changed(), "deleting a draft"
    # the stamp is of one project and step
    other = felm_project.__class__.objects.create(name="Other", kind="felm")
    assert agreement_cache.data_stamp(other, 1) != stamps[-1]


def test_a_submission_after_a_visit_is_on_the_next_visit(logged_in, felm_project, felm_items, users, computations):
    for item in felm_items[:2]:
        submit(users["alice"], item, [True, True, False])
        submit(users["bob"], item, [True, False, False])
    client = logged_in("carol")
    before = client.get(PAGE.format(felm_project.id), {"resamples": 10}).content.decode()
    assert units_shown(before)[0] == "6" and computations == [0, 10]
    client.get(PAGE.format(felm_project.id), {"resamples": 10})
    assert computations == [0, 10]
    submit(users["alice"], felm_items[2], [True, True, True])
    submit(users["bob"], felm_items[2], [True, True, True])
    after = client.get(PAGE.format(felm_project.id), {"resamples": 10}).content.decode()
    assert units_shown(after)[0] == "9" and computations == [0, 10, 0, 10]


# -- a miss: one task, its progress, the page's and the API's answers ---------------------------


def test_a_miss_queues_one_task_and_the_page_says_it_is_computing(
    logged_in, clients, felm_project, campaign, nothing_queued, computations
):
    client = logged_in("carol")
    url = PAGE.format(felm_project.id)
    page = client.get(url, {"resamples": 30})
    again = client.get(url, {"resamples": 30})
    api = clients["admin"].get(API.format(felm_project.id), {"resamples": 30})
    status = client.get(url + "status/", {"resamples": 30})
    assert nothing_queued.call_count == 1 and computations == []
    for response in (page, again):
        text = response.content.decode()
        assert response.status_code == 200
        assert "Computing…" in text and 'id="agreement-computing"' in text and "over 30 resamples" in text
        assert 'data-points="false"' in text and "js/agreement.js" in text
        assert not units_shown(text) and "download=" not in text
    assert status.status_code == 200
    assert status.json() == {
        "state": "queued",
        "points": False,
        "done": 0,
        "total": 0,
        "step": "waiting for a worker",
        "error": None,
    }
    # the API: 202, ask the same address again
    assert api.status_code == 202
    body = api.json()
    assert body["state"] == "queued" and "being computed" in body["detail"] and "30-resample" in body["detail"]
    assert api["Location"] == body["url"] and body["url"].endswith(
        f"/api/projects/{felm_project.id}/agreement/?resamples=30"
    )
    assert int(api["Retry-After"]) > 0
    # a download waits for the whole result
    download = client.get(url, {"resamples": 30, "download": "json", "table": "fields"})
    assert download.status_code == 409 and download["Content-Type"].startswith("text/plain")
    assert "being computed" in download.content.decode() and int(download["Retry-After"]) > 0
    assert nothing_queued.call_count == 1

    # a worker runs the task: everything is there at once
    assert run_queued_task(nothing_queued) == {"stored": True, "seconds": mock.ANY}
    assert computations == [0, 30]
    ready = client.get(url, {"resamples": 30}).content.decode()
    assert "Computing" not in ready and "js/agreement.js" not in ready and units_shown(ready)
    assert "download=csv" in ready and "Computed" in ready
    assert client.get(url + "status/", {"resamples": 30}).json()["state"] == "ready"
    assert clients["admin"].get(API.format(felm_project.id), {"resamples": 30}).status_code == 200
    assert client.get(url, {"resamples": 30, "download": "json", "table": "fields"}).status_code == 200
    assert nothing_queued.call_count == 1 and computations == [0, 30]


def test_the_point_estimates_show_while_their_intervals_are_computed(logged_in, felm_project, campaign, nothing_queued):
    client = logged_in("admin")
    url = PAGE.format(felm_project.id)
    client.get(url, {"resamples": 0})
    run_queued_task(nothing_queued)  # the point estimates (resamples=0) are stored
    page = client.get(url, {"resamples": 50}).content.decode()
    assert "Computing…" in page and "point estimates below are already final" in page and 'data-points="true"' in page
    assert units_shown(page) and "download=" not in page and 'class="ci"' not in page
    assert client.get(url + "status/", {"resamples": 50}).json()["points"] is True
    run_queued_task(nothing_queued)
    page = client.get(url, {"resamples": 50}).content.decode()
    assert "Computing" not in page and 'class="ci"' in page and "download=" in page


def test_the_task_shows_its_progress_field_by_field(logged_in, felm_project, campaign, nothing_queued):
    client = logged_in("carol")
    url = PAGE.format(felm_project.id)
    client.get(url, {"resamples": 20})
    seen = []
    real = selectors.project_agreement

    def watched(project, stage=1, resamples=0, seed=0, progress=None):
        def report(done, total, label):
            progress(done, total, label)
            seen.append(client.get(url + "status/", {"resamples": 20}).json())

        return real(project, stage, resamples=resamples, seed=seed, progress=report if progress else None)

    with mock.patch.object(selectors, "project_agreement", watched):
        run_queued_task(nothing_queued)
    # the point estimates (step 1 of 4), then each of FELM's two fields with intervals, then the LLM rater
    assert [(s["state"], s["done"], s["total"], s["points"]) for s in seen[:2]] == [
        ("running", 1, 4, True),
        ("running", 2, 4, True),
    ]
    assert seen[0]["step"].startswith("intervals (20 resamples): Segment label")
    assert client.get(url + "status/", {"resamples": 20}).json()["state"] == "ready"
    assert client.get(url + "status/", {"resamples": 20}).json()["state"] == "ready"


def test_a_poll_while_the_task_runs_reads_only_its_progress(logged_in, felm_project, campaign, nothing_queued):
    client = logged_in("carol")
    client.get(PAGE.format(felm_project.id))
    with mock.patch.object(agreement_cache, "data_stamp", wraps=agreement_cache.data_stamp) as stamp:
        assert client.get(PAGE.format(felm_project.id) + "status/").json()["state"] == "queued"
    assert stamp.call_count == 0


def test_the_lock_of_a_newer_task_outlives_an_older_one(felm_project, campaign, nothing_queued):
    agreement_cache.lookup(felm_project, 1, 10, 0)
    key = agreement_cache._lock_key(agreement_cache._base_key(felm_project, 1, 10, 0))
    # the first task's lock expired (its worker died) and a later request queued another
    cache.set(key, {"token": "newer", "state": "queued", "done": 0, "total": 0, "step": ""}, 60)
    compute_agreement.run(felm_project.id, 1, 10, 0, "older")
    assert cache.get(key)["token"] == "newer"
    compute_agreement.run(felm_project.id, 1, 10, 0, "newer")  # finds the stored result
    assert cache.get(key) is None


def test_a_failed_computation_is_shown_and_not_retried_at_once(logged_in, clients, felm_project, campaign, caplog):
    client = logged_in("carol")
    url = PAGE.format(felm_project.id)
    with mock.patch.object(selectors, "project_agreement", side_effect=ZeroDivisionError("boom")) as failing:
        page = client.get(url, {"resamples": 5}).content.decode()
        assert "could not be computed: the computation failed (ZeroDivisionError)" in page
        assert "js/agreement.js" not in page
        assert client.get(url + "status/", {"resamples": 5}).json()["state"] == "failed"
        api = clients["admin"].get(API.format(felm_project.id), {"resamples": 5})
        assert api.status_code == 202 and api.json()["state"] == "failed" and "ZeroDivisionError" in api.json()["error"]
        assert client.get(url, {"resamples": 5, "download": "csv", "table": "fields"}).status_code == 409
        assert failing.call_count == 1
    assert "agreement of project" in caplog.text
    # the next change of the data tries again at once
    stage = felm_project.items.first().stages.get()
    stage.save()
    assert "Computing" not in client.get(url, {"resamples": 5}).content.decode()


def test_an_unreachable_broker_leaves_no_lock_behind(felm_project, campaign):
    with mock.patch.object(compute_agreement, "delay", side_effect=ConnectionError("no broker")):
        with pytest.raises(ConnectionError):
            agreement_cache.lookup(felm_project, 1, 10, 0)
    assert agreement_cache.lookup(felm_project, 1, 10, 0).ready  # the next request queues it (eagerly here)


# -- the eager (in-process) path ---------------------------------------------------------------


def test_in_process_celery_fills_the_cache_within_the_request(felm_project, campaign):
    found = agreement_cache.lookup(felm_project, 1, 25, 2)
    assert found.ready and found.result["agreement"]["bootstrap"] == {
        "resamples": 25,
        "seed": 2,
        "level": 0.95,
        "resampled": "items",
    }
    assert found.result["rater_agreement"] == {
        "runs": [],
        "fields": [],
        "bootstrap": {"resamples": 25, "seed": 2},
    }
    assert found.result["seconds"] >= 0 and found.result["computed_at"]
    assert agreement_cache.lookup(felm_project, 1, 25, 2).result == found.result


# -- permissions unchanged ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "who, page, status",
    [
        ("admin", 200, 200),
        ("carol", 200, 200),
        ("alice", 403, 403),
        ("mallory", 404, 404),
        (None, 302, 302),
    ],
)
def test_who_sees_the_page_and_its_status(client, users, felm_project, campaign, nothing_queued, who, page, status):
    if who:
        client.force_login(users[who])
    url = PAGE.format(felm_project.id)
    assert client.get(url).status_code == page
    assert client.get(url + "status/").status_code == status
    assert nothing_queued.call_count == (1 if page == 200 else 0)


@pytest.mark.parametrize(
    "who, expected",
    [("admin", 202), ("carol", 202), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_ask_the_api_on_a_miss(clients, felm_project, campaign, nothing_queued, who, expected):
    assert clients[who].get(API.format(felm_project.id)).status_code == expected
    assert nothing_queued.call_count == (1 if expected == 202 else 0)


def test_a_consolidator_of_another_project_sees_nothing_of_this_one(client, users, felm_project, campaign, make_user):
    other = felm_project.__class__.objects.create(name="Elsewhere", kind="felm")
    add_member(project=other, user=users["mallory"], role=Role.CONSOLIDATOR)
    client.force_login(users["mallory"])
    assert client.get(PAGE.format(felm_project.id) + "status/").status_code == 404


def test_bad_options_of_the_status_are_400s(logged_in, felm_project):
    client = logged_in("carol")
    assert client.get(PAGE.format(felm_project.id) + "status/", {"resamples": "many"}).status_code == 400
    assert client.get(PAGE.format(felm_project.id) + "status/", {"stage": "2"}).status_code == 404


# -- the schema documents the 202 -----------------------------------------------------------------


def test_the_schema_documents_the_202():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    responses = schema["paths"]["/api/projects/{id}/agreement/"]["get"]["responses"]
    assert {"200", "202", "400"} <= set(responses)
    pending = responses["202"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][pending]["properties"]) == {
        "state",
        "detail",
        "step",
        "done",
        "total",
        "error",
        "url",
    }


# -- a real worker process fills the cache the web process reads ---------------------------------


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_computes_what_the_page_then_shows(worker, logged_in, felm_project, campaign):
    client = logged_in("carol")
    url = PAGE.format(felm_project.id)
    started = time.monotonic()
    page = client.get(url, {"resamples": 200}).content.decode()
    assert "Computing…" in page and time.monotonic() - started < 5
    while (status := client.get(url + "status/", {"resamples": 200}).json())["state"] != "ready":
        assert status["state"] in ("queued", "running"), status
        assert worker.poll() is None, worker.stdout.read()
        assert time.monotonic() - started < 90, "timed out"
        time.sleep(0.2)
    page = client.get(url, {"resamples": 200}).content.decode()
    assert "Computing" not in page and 'class="ci"' in page
    body = client.get(API.format(felm_project.id), {"resamples": 200}).json()
    assert body == json.loads(json.dumps(selectors.project_agreement(felm_project, 1, resamples=200)))


# -- in a browser: the page updates itself --------------------------------------------------------


@pytest.mark.browser
def test_the_page_follows_the_task_and_shows_the_numbers_when_ready(
    browser, live_server, problems, felm_project, campaign, nothing_queued
):
    from playwright.sync_api import expect

    page = login(browser, live_server.url, "carol", PASSWORD, problems)
    page.goto(f"/projects/{felm_project.id}/agreement/?resamples=30")
    computing = page.locator("#agreement-computing")
    expect(computing).to_contain_text("Computing…")
    expect(computing.locator("[data-role=step]")).to_have_text("waiting for a worker")
    assert page.locator("section[data-field]").count() == 0
    run_queued_task(nothing_queued)  # a worker's turn; the page polls and reloads
    expect(page.locator("section[data-field=label] .ci").first).to_be_visible()
    expect(computing).to_have_count(0)
    assert nothing_queued.call_count == 1
