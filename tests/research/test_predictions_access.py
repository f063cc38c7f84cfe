"""Who may upload, read and delete a system's predictions through the API, and two uploads of the
same system and version (or two rescorings) at once."""

import threading

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import SystemRun, SystemRunState
from annotation.research import predictions as prediction_services
from annotation.services.projects import add_member, create_project
from tests.helpers.builders import jsonl
from tests.helpers.research import ITEMS, bench_line, make_run, post_run, system_lines, upload

pytestmark = pytest.mark.django_db


# -- permissions (API) ----------------------------------------------------------------------------------------


@pytest.fixture
def scored(gold):
    return make_run(gold, system_lines(), resamples=0)


@pytest.mark.parametrize(
    "who, status",
    [("admin", 202), ("carol", 202), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_upload_predictions(clients, gold, who, status):
    response, _ = post_run(clients[who], gold.id, system_lines(), system=f"by {who}", resamples=0)
    assert response.status_code == status
    assert SystemRun.objects.filter(system=f"by {who}").exists() == (status == 202)


@pytest.mark.parametrize(
    "who, status",
    [("admin", 200), ("carol", 200), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_read_runs_and_the_leaderboard(clients, scored, who, status):
    project = scored.project_id
    for url in (
        f"/api/projects/{project}/system-runs/",
        f"/api/projects/{project}/system-runs/{scored.id}/",
        f"/api/projects/{project}/leaderboard/",
    ):
        assert clients[who].get(url).status_code == status, url


@pytest.mark.parametrize(
    "who, status",
    [("admin", 204), ("carol", 204), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_delete_a_run(clients, scored, who, status):
    assert clients[who].delete(f"/api/projects/{scored.project_id}/system-runs/{scored.id}/").status_code == status
    assert SystemRun.objects.filter(pk=scored.id).exists() == (status != 204)


def test_a_run_of_another_project_is_not_found(clients, scored, users):
    other = create_project(name="Other", kind="factcheck", created_by=users["admin"])
    assert clients["admin"].get(f"/api/projects/{other.id}/system-runs/{scored.id}/").status_code == 404
    assert clients["admin"].delete(f"/api/projects/{other.id}/system-runs/{scored.id}/").status_code == 404


def test_a_consolidator_of_another_project_may_not_read_it(clients, scored, users):
    other = create_project(name="Theirs", kind="factcheck", created_by=users["admin"])
    add_member(project=other, user=users["mallory"], role="consolidator")
    assert clients["mallory"].get(f"/api/projects/{scored.project_id}/system-runs/").status_code == 404


# -- two uploads of the same system and version at once --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("the race is tested on PostgreSQL")
def test_two_uploads_of_the_same_system_and_version_at_once_exactly_one_wins(
    racer, live_server, factcheck_project, users
):
    import requests

    import_jsonl(
        factcheck_project,
        jsonl([bench_line(i) for i in range(ITEMS)]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    body = upload(system_lines()).getvalue()
    path = f"/api/projects/{factcheck_project.id}/system-runs/"
    clients = 4
    for round_ in range(5):
        token = {"Authorization": f"Token {racer.token(users['admin'])}"}
        prepared = [
            requests.Request(
                "POST",
                live_server.url + path,
                headers=token,
                files={"file": (f"p{i}.jsonl", body)},
                data={"system": "racer", "version": str(round_), "resamples": "0"},
            ).prepare()
            for i in range(clients)
        ]
        answers = racer.race_raw([("POST", path, request.body, dict(request.headers)) for request in prepared])
        statuses = sorted(status for status, _ in answers)
        assert statuses == [202] + [400] * (clients - 1), answers
        winner = next(answer for status, answer in answers if status == 202)
        assert all("uploaded already" in answer["errors"][0]["message"] for status, answer in answers if status == 400)
        runs = SystemRun.objects.filter(project=factcheck_project, system="racer", version=str(round_))
        assert list(runs.values_list("id", flat=True)) == [winner["id"]]
        assert runs.get().state == SystemRunState.DONE


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("the race is tested on PostgreSQL")
def test_rescores_requested_at_once_queue_each_run_once(racer, live_server, factcheck_project, users, monkeypatch):
    """Parallel "Score every system again" (two researchers, a double click): every scored run
    is queued exactly once and ends scored."""
    from django.test import Client

    from annotation import tasks

    import_jsonl(
        factcheck_project,
        jsonl([bench_line(i) for i in range(ITEMS)]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    runs = [make_run(factcheck_project, system_lines(wrong_every=k), system=f"s{k}", resamples=0) for k in (2, 3, 4)]
    queued: list[int] = []
    lock = threading.Lock()

    def counting_delay(
        run_id,
    ):  # the worker is not run here: the runs stay queued until the round ends
        with lock:
            queued.append(run_id)

    monkeypatch.setattr(tasks.score_system_run, "delay", counting_delay)
    browser = Client()
    browser.force_login(users["admin"])
    token = "a" * 32  # any well-formed CSRF secret, sent as cookie and header alike
    headers = {
        "Cookie": f"sessionid={browser.cookies['sessionid'].value}; csrftoken={token}",
        "X-CSRFToken": token,
    }
    path = f"/projects/{factcheck_project.id}/leaderboard/rescore/"
    clients = 4
    for round_ in range(3):
        queued.clear()
        statuses = [status for status, _ in racer.race_raw([("POST", path, b"", headers)] * clients)]
        assert statuses == [302] * clients, statuses
        assert sorted(queued) == sorted(run.id for run in runs), (round_, queued)
        for run_id in queued:  # the worker's part
            prediction_services.run_system_run(run_id)
        assert set(SystemRun.objects.filter(pk__in=[r.id for r in runs]).values_list("state", flat=True)) == {"done"}
