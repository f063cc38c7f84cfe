"""The LLM rater's page and API: who may estimate and start a run, secrets kept from pages and
answers, a run under way, and two starts at once."""

import json

import pytest
from django.test import TestCase
from django.utils import timezone

from annotation.imports.items import import_jsonl
from annotation.models import Role, SystemRun, SystemRunSource, SystemRunState
from annotation.research import llm_rater as rater_services
from annotation.research import llm_rater_run
from annotation.services.projects import add_member
from tests.helpers.builders import api_client, felm_line, jsonl
from tests.helpers.fake_llm import FakeLLMServer, FakeReply
from tests.helpers.llm_rater import SECRET, free_port, rater_responder, use_llm

# -- the page and the API: permissions, secrets --------------------------------------------------------


@pytest.fixture
def dana(users, felm_rater_gold, make_user):
    """A project admin who is not staff."""
    user = make_user("dana")
    add_member(project=felm_rater_gold, user=user, role=Role.ADMIN)
    return user


def test_rater_page_permissions(felm_rater_gold, client, users, dana):
    url = f"/projects/{felm_rater_gold.id}/llm-rater/"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    expected = {"admin": 200, "dana": 200, "alice": 403, "carol": 403, "mallory": 404}
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_rater_gold, server)
        for name, status in expected.items():
            client.force_login(dana if name == "dana" else users[name])
            assert client.get(url).status_code == status, name
            with TestCase.captureOnCommitCallbacks(execute=True):
                started = client.post(url, {"steps": "1", "confirm": "yes"})
            assert started.status_code == (302 if status == 200 else status), name
        client.logout()
        assert client.post(url, {"steps": "1", "confirm": "yes"}).status_code == 302
    assert SystemRun.objects.filter(project=felm_rater_gold).count() == 2  # admin's and dana's


def test_rater_page_estimates_starts_and_shows_the_run(felm_rater_gold, client, users):
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_rater_gold, server)
        client.force_login(users["admin"])
        url = f"/projects/{felm_rater_gold.id}/llm-rater/"
        page = client.get(url).content.decode()
        assert "rater-model" in page and "No run yet." in page and SECRET not in page
        estimated = client.get(
            url,
            {"steps": "1", "seconds_per_call": "2", "prompt_price_per_1k": "1", "estimate": "1"},
        )
        html = estimated.content.decode()
        assert 'id="rater-start"' in html and '<td class="calls">3</td>' in html and 'class="cost"' in html
        assert server.requests == []
        with TestCase.captureOnCommitCallbacks(execute=True):
            started = client.post(url, {"steps": "1", "seconds_per_call": "2", "confirm": "yes"})
        assert started.status_code == 302
        shown = client.get(url).content.decode()
    run = SystemRun.objects.get(project=felm_rater_gold)
    assert run.state == SystemRunState.DONE
    assert 'data-state="done"' in shown and "3 item-steps rated, 3 calls" in shown and SECRET not in shown
    # unconfirmed: nothing starts
    client.post(url, {"steps": "1"})
    assert SystemRun.objects.count() == 1
    bad = client.get(url, {"seconds_per_call": "-3", "estimate": "1"}).content.decode()
    assert "seconds_per_call: must be from" in bad


def test_non_staff_admins_may_not_choose_the_model(felm_rater_gold, client, dana, clients):
    client.force_login(dana)
    assert (
        client.post(f"/projects/{felm_rater_gold.id}/llm-rater/", {"model": "gpt-x", "confirm": "yes"}).status_code
        == 403
    )

    answer = api_client(dana).post(
        f"/api/projects/{felm_rater_gold.id}/llm-rater/estimate/", {"model": "gpt-x"}, format="json"
    )
    assert answer.status_code == 403
    assert not SystemRun.objects.exists()


def test_api_permissions(felm_rater_gold, clients, users):
    estimate_url = f"/api/projects/{felm_rater_gold.id}/llm-rater/estimate/"
    runs_url = f"/api/projects/{felm_rater_gold.id}/llm-rater/"
    expected = {"alice": 403, "carol": 403, "mallory": 404, "anonymous": 401}
    for name, status in expected.items():
        assert clients[name].post(estimate_url, {}, format="json").status_code == status, name
        assert clients[name].get(runs_url).status_code == status, name
        assert clients[name].post(runs_url, {"confirm": True}, format="json").status_code == status, name
    assert clients["admin"].post(estimate_url, {}, format="json").status_code == 200
    assert not SystemRun.objects.exists()


def test_api_estimate_start_and_progress(felm_rater_gold, clients):
    admin = clients["admin"]
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_rater_gold, server)
        estimate = admin.post(
            f"/api/projects/{felm_rater_gold.id}/llm-rater/estimate/",
            {"steps": [1], "completion_price_per_1k": 2},
            format="json",
        ).json()
        assert estimate["calls"] == {"felm_segments": 3, "probe": 1} and estimate["cost"] is not None
        refused = admin.post(f"/api/projects/{felm_rater_gold.id}/llm-rater/", {"steps": [1]}, format="json")
        assert refused.status_code == 400 and "confirm" in refused.json()
        bad = admin.post(
            f"/api/projects/{felm_rater_gold.id}/llm-rater/estimate/",
            {"steps": [5], "seed": -1},
            format="json",
        )
        assert bad.status_code == 400 and set(bad.json()) == {"steps", "seed"}
        with TestCase.captureOnCommitCallbacks(execute=True):
            started = admin.post(
                f"/api/projects/{felm_rater_gold.id}/llm-rater/",
                {"steps": [1], "confirm": True},
                format="json",
            )
        assert started.status_code == 202, started.json()
    run = admin.get(started.json()["url"]).json()
    assert run["state"] == "done" and run["ended"] and run["options"]["estimate"]["calls_total"] == 4
    assert "segment" in run["scored_tasks"]
    listed = admin.get(f"/api/projects/{felm_rater_gold.id}/llm-rater/").json()
    assert [r["id"] for r in listed] == [run["id"]]
    assert SECRET not in json.dumps(listed) and SECRET not in json.dumps(estimate)
    assert admin.get(f"/api/projects/{felm_rater_gold.id}/llm-rater/999999/").status_code == 404


def test_a_run_under_way_shows_its_progress_and_blocks_a_second_start(felm_rater_gold, users, client, clients):
    running = SystemRun.objects.create(
        project=felm_rater_gold,
        system="LLM rater (m)",
        version="v",
        source=SystemRunSource.LLM_RATER,
        state=SystemRunState.RUNNING,
        units_done=2,
        units_total=5,
        options={"steps": [1]},
        started_at=timezone.now(),
    )
    client.force_login(users["admin"])
    page = client.get(f"/projects/{felm_rater_gold.id}/llm-rater/").content.decode()
    assert '<progress max="5" value="2">' in page and "rating item-steps" in page and 'http-equiv="refresh"' in page
    progress = clients["admin"].get(f"/api/projects/{felm_rater_gold.id}/llm-rater/{running.id}/").json()
    assert (progress["state"], progress["units_done"], progress["units_total"]) == ("running", 2, 5)
    felm_rater_gold.pipeline_settings = {
        "llm": {"base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "m", "max_retries": 0}
    }
    felm_rater_gold.save()
    with pytest.raises(rater_services.DomainError, match="under way"):
        rater_services.start_run(
            project=felm_rater_gold,
            user=users["admin"],
            options=rater_services.RaterOptions(steps=(1,)),
            confirmed=True,
        )
    # a redelivered task leaves a run another worker is rating alone, until that worker has been
    # silent for STALE_AFTER: then it takes the run over (here: fails it on the dead endpoint)
    assert llm_rater_run.execute(running.id).state == SystemRunState.RUNNING
    long_ago = timezone.now() - llm_rater_run.STALE_AFTER
    SystemRun.objects.filter(pk=running.id).update(
        started_at=long_ago, options={"steps": [1], "heartbeat": timezone.now().isoformat()}
    )
    assert llm_rater_run.execute(running.id).state == SystemRunState.RUNNING  # it reported lately
    SystemRun.objects.filter(pk=running.id).update(options={"steps": [1], "heartbeat": long_ago.isoformat()})
    assert llm_rater_run.execute(running.id).state == SystemRunState.FAILED


# -- two starts at once ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("the race is tested on PostgreSQL")
def test_two_starts_at_once_exactly_one_run_is_made(racer, felm_project, users):
    """Parallel POSTs to start the rater (a double click, two admins): the project row lock lets
    exactly one make a run; the others are refused naming it, and no second run pays for the
    same calls."""
    import_jsonl(
        felm_project,
        jsonl([felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(3)]),
        fmt="felm",
        labels_as="gold",
    )
    path = f"/api/projects/{felm_project.id}/llm-rater/"
    clients = 4
    answer = rater_responder()

    def slowly(request):  # the winner's run is still going while the others ask
        reply = answer(request)
        return reply if isinstance(reply, FakeReply) else FakeReply(reply, delay=0.3)

    with FakeLLMServer(slowly) as server:
        use_llm(felm_project, server)
        for round_ in range(3):
            answers = racer.race([(users["admin"], "POST", path, {"steps": [1], "confirm": True})] * clients)
            statuses = sorted(status for status, _ in answers)
            assert statuses == [202] + [400] * (clients - 1), answers
            winner = next(answer for status, answer in answers if status == 202)
            assert all("under way" in json.dumps(answer) for status, answer in answers if status == 400), answers
            runs = SystemRun.objects.filter(project=felm_project, source=SystemRunSource.LLM_RATER)
            assert runs.count() == round_ + 1 and runs.order_by("-id").first().id == winner["id"]
            assert runs.get(pk=winner["id"]).state == SystemRunState.DONE  # ran to the end before the next round
