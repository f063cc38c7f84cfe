"""Evidence search from the step-2 page: the API queues a search that a Celery task answers from
the project's corpora and the web; only members search, only the author reads a search."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.evidence.search import run_search
from annotation.models import EvidenceSearch, EvidenceSearchState
from tests.helpers.factcheck import content
from tests.helpers.websearch import PAGES, SECRET, SSRF_REASONS, Web, web_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def web(monkeypatch):
    """The loopback search API and pages (tests/helpers/websearch.py)."""
    with web_server(monkeypatch) as config:
        yield config


def url(project):
    return f"/api/projects/{project.id}/evidence-searches/"


def test_a_search_is_queued_answered_from_the_corpus_and_polled(
    clients, factcheck_project, corpus, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["alice"].post(
            url(factcheck_project),
            {"query": "  Eiffel tower   height ", "claim": "It is 330 m."},
            format="json",
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert response["Location"] == body["url"] and body["query"] == "Eiffel tower height"
    polled = clients["alice"].get(body["url"]).json()
    assert polled["state"] == "done" and polled["problems"] == []
    results = polled["results"]
    assert results and results[0]["title"] == "Eiffel Tower" and "330 metres" in " ".join(r["text"] for r in results)
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert {r["query"] for r in results} == {"Eiffel tower height"}
    assert all(r["source"] == "corpus" and r["passage_id"] for r in results)


def test_only_members_search_and_only_the_author_reads_a_search(
    clients, factcheck_project, corpus, django_capture_on_commit_callbacks
):
    assert clients["mallory"].post(url(factcheck_project), {"query": "Eiffel"}, format="json").status_code == 404
    assert clients["anonymous"].post(url(factcheck_project), {"query": "Eiffel"}, format="json").status_code in (
        401,
        403,
    )
    with django_capture_on_commit_callbacks(execute=True):
        mine = (
            clients["carol"].post(url(factcheck_project), {"query": "Eiffel"}, format="json").json()
        )  # consolidators too
    assert clients["carol"].get(mine["url"]).status_code == 200
    assert clients["alice"].get(mine["url"]).status_code == 404  # a search says what its author looks into
    assert clients["mallory"].get(mine["url"]).status_code == 404
    assert clients["carol"].get(f"{url(factcheck_project)}999999/").status_code == 404


@pytest.mark.parametrize(
    "body, field",
    [
        ({"query": ""}, "query"),
        ({"query": "x" * 501}, "query"),
        ({}, "query"),
        ({"query": ["a"]}, "query"),
        ({"query": "ok", "claim": "c" * 5001}, "claim"),
    ],
)
def test_bad_queries_are_refused_with_the_field(clients, factcheck_project, body, field):
    response = clients["alice"].post(url(factcheck_project), body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert not EvidenceSearch.objects.exists()


def test_a_blank_query_after_trimming_is_refused(clients, factcheck_project):
    response = clients["alice"].post(url(factcheck_project), {"query": " \t "}, format="json")
    assert response.status_code == 400


def test_kinds_without_an_evidence_step_have_no_search(clients, felm_project):
    response = clients["alice"].post(url(felm_project), {"query": "anything"}, format="json")
    assert response.status_code == 400 and "evidence" in response.json()["detail"]


def test_without_any_source_the_search_says_so(clients, factcheck_project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        body = clients["alice"].post(url(factcheck_project), {"query": "Eiffel"}, format="json").json()
    polled = clients["alice"].get(body["url"]).json()
    assert polled["state"] == "done" and polled["results"] == []
    assert "no evidence source" in polled["problems"][0]


def test_the_web_backend_adds_passages_and_its_failures_are_listed(
    clients, factcheck_project, web, django_capture_on_commit_callbacks
):
    factcheck_project.pipeline_settings = {
        "web_search": {
            "base_url": web.base_url,
            "api_key": web.api_key,
            "timeout": web.timeout,
            "max_page_bytes": web.max_page_bytes,
        }
    }
    factcheck_project.save()
    with django_capture_on_commit_callbacks(execute=True):
        body = clients["alice"].post(url(factcheck_project), {"query": "Curie Nobel Prize"}, format="json").json()
    polled = clients["alice"].get(body["url"]).json()
    assert polled["state"] == "done"
    assert polled["results"] and all(r["source"] == "web" for r in polled["results"])
    assert any("Nobel Prize in Chemistry" in r["text"] for r in polled["results"])
    assert any("pdf" in problem or "not HTML" in problem or "content type" in problem for problem in polled["problems"])


def test_results_pointing_at_internal_addresses_are_refused_and_listed_with_the_reason(
    clients, factcheck_project, web, django_capture_on_commit_callbacks
):
    """The search API (a loopback fake) answers with loopback, link-local, private and encoded
    addresses and redirects to them: none is fetched, each is listed with why; the public page is."""
    factcheck_project.pipeline_settings = {
        "web_search": {"base_url": web.base_url, "timeout": web.timeout, "results_per_query": 100}
    }
    factcheck_project.save()
    with django_capture_on_commit_callbacks(execute=True):
        body = clients["alice"].post(url(factcheck_project), {"query": "ssrf"}, format="json").json()
    polled = clients["alice"].get(body["url"]).json()
    assert polled["state"] == "done"
    assert polled["results"] and {r["url"] for r in polled["results"]} == {f"{PAGES}/redirect/public"}
    assert SECRET not in str(polled)
    assert "/secret" not in [path for path, _ in Web.seen]
    refused = [p for p in polled["problems"] if "was not fetched: refused, " in p]
    assert len(refused) == len(SSRF_REASONS)
    for (_, reason), problem in zip(SSRF_REASONS, refused):
        assert problem.endswith(reason)


def test_a_failing_search_is_shown_failed_and_a_repeated_task_does_not_search_twice(
    factcheck_project, users, monkeypatch
):
    search = EvidenceSearch.objects.create(project=factcheck_project, user=users["alice"], query="q")

    def broken(*args, **kwargs):
        raise RuntimeError("index unavailable")

    monkeypatch.setattr("pipeline.evidence_search.search_passages", broken)
    assert run_search(search.id).state == EvidenceSearchState.FAILED
    search.refresh_from_db()
    assert search.problems == ["RuntimeError: index unavailable"] and search.finished_at
    assert run_search(search.id) is None  # ended: a duplicate delivery does nothing


def test_a_search_left_running_by_a_dead_worker_is_taken_again_later(factcheck_project, users):
    search = EvidenceSearch.objects.create(
        project=factcheck_project,
        user=users["alice"],
        query="Eiffel",
        state=EvidenceSearchState.RUNNING,
    )
    assert run_search(search.id) is None  # another worker may still be on it
    EvidenceSearch.objects.filter(pk=search.id).update(created_at=timezone.now() - timedelta(minutes=10))
    assert run_search(search.id).state == EvidenceSearchState.DONE


def test_the_step_2_page_carries_the_search_url_and_the_step_before(factcheck_project, users, client):
    from annotation.models import GoldRecord, ItemStage, StageStatus
    from annotation.services.assignments import assign_open_stages

    item = factcheck_project.items.create(prompt="p", response="r")
    step1 = ItemStage.objects.create(item=item, stage=1, status=StageStatus.DONE, content={"sentences": ["<i>A</i>."]})
    GoldRecord.objects.create(
        item_stage=step1,
        payload={"sentences": [{"decontext": "<i>A</i>.", "checkworthy": "yes", "claims": []}]},
    )
    ItemStage.objects.create(item=item, stage=2, status=StageStatus.READY, content=content(1))
    assign_open_stages(factcheck_project)
    assignment = users["alice"].assignments.get()
    client.force_login(users["alice"])
    page = client.get(f"/assignments/{assignment.id}/").content.decode()
    assert "factcheck_step2.js" in page and "diff.js" in page
    assert f"/api/projects/{factcheck_project.id}/evidence-searches/" in page
    assert "<i>A</i>" not in page and "\\u003Ci\\u003EA\\u003C/i\\u003E" in page  # in the JSON state, escaped
