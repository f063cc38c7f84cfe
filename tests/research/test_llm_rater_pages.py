"""The LLM rater's page and API (permissions, secrets, a run's progress), its agreement beside
the annotators, and two starts at once."""

import json
import random

import pytest
from django.template.defaultfilters import floatformat
from django.test import TestCase
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from annotation.imports.items import import_jsonl
from annotation.models import (
    Annotation,
    Assignment,
    ItemStage,
    Role,
    SystemRun,
    SystemRunSource,
    SystemRunState,
)
from annotation.research import llm_rater as rater_services
from annotation.research import llm_rater_run
from annotation.research.rater_agreement import rater_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from annotation.services.projects import add_member
from tests.helpers.builders import api_client, felm_line, jsonl
from tests.helpers.fake_llm import (
    FakeLLMServer,
    FakeReply,
    last_user_message,
    well_behaved_responder,
)
from tests.helpers.llm_rater import (
    SECRET,
    factcheck_gold_of,
    felm_gold_of,
    free_port,
    rater_responder,
    run_rater,
    use_llm,
)

# -- fixtures (this module's gold: the conftest's felm_gold is another project) -------------------------


@pytest.fixture
def felm_gold(felm_project):
    """Three FELM items of three segments, their labels imported as gold."""
    return felm_gold_of(felm_project)


@pytest.fixture
def factcheck_gold(factcheck_project, django_capture_on_commit_callbacks):
    """Two items of the released Factcheck-Bench file, every step's gold imported."""
    return factcheck_gold_of(factcheck_project, django_capture_on_commit_callbacks)


# -- the page and the API: permissions, secrets --------------------------------------------------------


@pytest.fixture
def dana(users, felm_gold, make_user):
    """A project admin who is not staff."""
    user = make_user("dana")
    add_member(project=felm_gold, user=user, role=Role.ADMIN)
    return user


def test_rater_page_permissions(felm_gold, client, users, dana):
    url = f"/projects/{felm_gold.id}/llm-rater/"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    expected = {"admin": 200, "dana": 200, "alice": 403, "carol": 403, "mallory": 404}
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_gold, server)
        for name, status in expected.items():
            client.force_login(dana if name == "dana" else users[name])
            assert client.get(url).status_code == status, name
            with TestCase.captureOnCommitCallbacks(execute=True):
                started = client.post(url, {"steps": "1", "confirm": "yes"})
            assert started.status_code == (302 if status == 200 else status), name
        client.logout()
        assert client.post(url, {"steps": "1", "confirm": "yes"}).status_code == 302
    assert SystemRun.objects.filter(project=felm_gold).count() == 2  # admin's and dana's


def test_rater_page_estimates_starts_and_shows_the_run(felm_gold, client, users):
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_gold, server)
        client.force_login(users["admin"])
        url = f"/projects/{felm_gold.id}/llm-rater/"
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
    run = SystemRun.objects.get(project=felm_gold)
    assert run.state == SystemRunState.DONE
    assert 'data-state="done"' in shown and "3 item-steps rated, 3 calls" in shown and SECRET not in shown
    # unconfirmed: nothing starts
    client.post(url, {"steps": "1"})
    assert SystemRun.objects.count() == 1
    bad = client.get(url, {"seconds_per_call": "-3", "estimate": "1"}).content.decode()
    assert "seconds_per_call: must be from" in bad


def test_non_staff_admins_may_not_choose_the_model(felm_gold, client, dana, clients):
    client.force_login(dana)
    assert client.post(f"/projects/{felm_gold.id}/llm-rater/", {"model": "gpt-x", "confirm": "yes"}).status_code == 403

    answer = api_client(dana).post(
        f"/api/projects/{felm_gold.id}/llm-rater/estimate/", {"model": "gpt-x"}, format="json"
    )
    assert answer.status_code == 403
    assert not SystemRun.objects.exists()


def test_api_permissions(felm_gold, clients, users):
    estimate_url = f"/api/projects/{felm_gold.id}/llm-rater/estimate/"
    runs_url = f"/api/projects/{felm_gold.id}/llm-rater/"
    expected = {"alice": 403, "carol": 403, "mallory": 404, "anonymous": 401}
    for name, status in expected.items():
        assert clients[name].post(estimate_url, {}, format="json").status_code == status, name
        assert clients[name].get(runs_url).status_code == status, name
        assert clients[name].post(runs_url, {"confirm": True}, format="json").status_code == status, name
    assert clients["admin"].post(estimate_url, {}, format="json").status_code == 200
    assert not SystemRun.objects.exists()


def test_api_estimate_start_and_progress(felm_gold, clients):
    admin = clients["admin"]
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_gold, server)
        estimate = admin.post(
            f"/api/projects/{felm_gold.id}/llm-rater/estimate/",
            {"steps": [1], "completion_price_per_1k": 2},
            format="json",
        ).json()
        assert estimate["calls"] == {"felm_segments": 3, "probe": 1} and estimate["cost"] is not None
        refused = admin.post(f"/api/projects/{felm_gold.id}/llm-rater/", {"steps": [1]}, format="json")
        assert refused.status_code == 400 and "confirm" in refused.json()
        bad = admin.post(
            f"/api/projects/{felm_gold.id}/llm-rater/estimate/",
            {"steps": [5], "seed": -1},
            format="json",
        )
        assert bad.status_code == 400 and set(bad.json()) == {"steps", "seed"}
        with TestCase.captureOnCommitCallbacks(execute=True):
            started = admin.post(
                f"/api/projects/{felm_gold.id}/llm-rater/",
                {"steps": [1], "confirm": True},
                format="json",
            )
        assert started.status_code == 202, started.json()
    run = admin.get(started.json()["url"]).json()
    assert run["state"] == "done" and run["ended"] and run["options"]["estimate"]["calls_total"] == 4
    assert "segment" in run["scored_tasks"]
    listed = admin.get(f"/api/projects/{felm_gold.id}/llm-rater/").json()
    assert [r["id"] for r in listed] == [run["id"]]
    assert SECRET not in json.dumps(listed) and SECRET not in json.dumps(estimate)
    assert admin.get(f"/api/projects/{felm_gold.id}/llm-rater/999999/").status_code == 404


# -- beside the annotators --------------------------------------------------------------------------


def annotate_felm(project, users, labels_of):
    """alice and bob submit ``labels_of(name, item index, segment)``; carol consolidates alice's."""

    def payload(name, index, count):
        return {
            "segments": [
                {
                    "label": labels_of(name, index, k),
                    "comment": "" if labels_of(name, index, k) else "wrong",
                    "error_type": None if labels_of(name, index, k) else "knowledge_error",
                    "refs": [],
                }
                for k in range(count)
            ]
        }

    for index, item in enumerate(project.items.order_by("id")):
        stage = item.stages.get()
        count = len(stage.content["segments"])
        for name in ("alice", "bob"):
            assignment = Assignment.objects.get(user=users[name], item_stage=stage)
            save_annotation(assignment=assignment, payload=payload(name, index, count), version=0, submit=True)
        consolidation = stage.consolidation
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=payload("alice", index, count),
            version=consolidation.version,
            submit=True,
        )


def test_rater_agreement_beside_the_annotators_equals_scikit_learn(felm_project, users, client):
    import_jsonl(
        felm_project,
        jsonl([felm_line(i, [f"Claim {i}.{k} here." for k in range(4)]) for i in range(8)]),
        fmt="felm",
    )
    rng = random.Random(7)
    truth = {(i, k): rng.random() < 0.6 for i in range(8) for k in range(4)}
    noise = {(name, i, k): rng.random() < 0.25 for name in ("alice", "bob") for i in range(8) for k in range(4)}
    annotate_felm(felm_project, users, lambda name, i, k: truth[i, k] != noise[name, i, k])
    model_wrong = {i: {k + 1 for k in range(4) if rng.random() < 0.4} for i in range(8)}

    def felm(prompt):
        item = int(prompt.split("Question ")[-1].split("?")[0])
        wrong = model_wrong[item]
        return f"Answer: {', '.join(map(str, sorted(wrong)))}" if wrong else "Answer: ALL_CORRECT"

    with FakeLLMServer(rater_responder(felm)) as server:
        use_llm(felm_project, server)
        run = run_rater(felm_project, users["admin"])
    assert run.state == SystemRunState.DONE, run.errors

    result = rater_agreement(felm_project, 1)
    assert result["runs"][0]["id"] == run.id
    (field,) = result["fields"]
    rows = {tuple(row["compared"]): row for row in field["rows"]}
    units = [(i, k) for i in range(8) for k in range(4)]
    word = {True: "correct", False: "error"}
    model = [word[k + 1 not in model_wrong[i]] for i, k in units]
    for name in ("alice", "bob"):
        human = [word[truth[i, k] != noise[name, i, k]] for i, k in units]
        row = rows[(run.system, name)]
        assert row["machine"] and row["units"] == 32
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(human, model), abs=1e-12)
        assert row["observed_agreement"] == pytest.approx(sum(a == b for a, b in zip(human, model)) / 32)
    alice = [word[truth[i, k] != noise["alice", i, k]] for i, k in units]
    bob = [word[truth[i, k] != noise["bob", i, k]] for i, k in units]
    assert rows[("alice", "bob")]["cohen_kappa"] == pytest.approx(cohen_kappa_score(alice, bob), abs=1e-12)
    assert not rows[("alice", "bob")]["machine"]

    with_ci = rater_agreement(felm_project, 1, resamples=200, seed=3)
    low, high = with_ci["fields"][0]["rows"][0]["ci"]["cohen_kappa"]
    assert low <= with_ci["fields"][0]["rows"][0]["cohen_kappa"] <= high

    # the agreement page shows it to the consolidator
    client.force_login(users["carol"])
    page = client.get(f"/projects/{felm_project.id}/agreement/", {"resamples": "0"}).content.decode()
    section = page[page.index('id="llm-rater-agreement"') :]
    for (first, second), row in rows.items():
        assert f"<td>{first} / {second}</td>" in section
        assert f'<td class="kappa">{floatformat(row["cohen_kappa"], 3)}' in section


def test_before_a_run_the_section_points_to_the_rater_page(felm_gold, factcheck_project, users, client):
    assert rater_agreement(felm_gold, 1) == {
        "runs": [],
        "fields": [],
        "bootstrap": {"resamples": 0, "seed": 0},
    }
    assert rater_agreement(factcheck_project, 3) is None  # revisions are texts: no labels to compare
    client.force_login(users["carol"])
    page = client.get(f"/projects/{felm_gold.id}/agreement/").content.decode()
    assert 'id="llm-rater-agreement"' in page and f'href="/projects/{felm_gold.id}/llm-rater/"' in page


def test_factcheck_rater_agreement_meets_the_annotators_on_the_export_keys(factcheck_gold, users):
    """Steps 1 and 2: the annotators' units (sentences, gold claims, passages) and the rater's
    predictions meet on the same keys; κ equals scikit-learn's on the pairs built here."""

    def respond(request):
        prompt = last_user_message(request)
        if prompt == "Reply with OK.":
            return "OK"
        if "Evidence:" in prompt:  # stance: by the passage's length, so both labels occur
            return "refute" if len(prompt) % 2 else "completely-support"
        if prompt.rstrip().endswith("Label:"):  # category: by the claim's length
            return "factual" if len(prompt.rsplit("Claim:", 1)[-1]) % 3 else "opinion"
        return well_behaved_responder(request)

    with FakeLLMServer(respond) as server:
        use_llm(factcheck_gold, server)
        run = run_rater(factcheck_gold, users["admin"], steps=[1, 2])
    assert run.state == SystemRunState.DONE, run.errors
    predicted = {task: {tuple(row[:-1]): row[-1] for row in rows} for task, rows in run.predictions.items()}
    stages = list(
        ItemStage.objects.filter(item__project=factcheck_gold, stage__in=(1, 2)).select_related("item", "gold")
    )
    flip = {"yes": "no", "no": "yes"}
    for stage in stages:  # alice answers as the gold record; bob flips step 1's checkworthiness
        for name in ("alice", "bob"):
            payload = json.loads(json.dumps(stage.gold.payload))
            if name == "bob" and stage.stage == 1:
                for sentence in payload["sentences"]:
                    sentence["checkworthy"] = flip[sentence["checkworthy"]]
            assignment = Assignment.objects.create(item_stage=stage, user=users[name], status="submitted")
            Annotation.objects.create(assignment=assignment, payload=payload, submitted=True)
    expected = {
        "sentence_checkworthy": {"alice": [], "bob": []},
        "claim_category": {"alice": [], "bob": []},
        "stance": {"alice": [], "bob": []},
    }
    for stage in stages:
        item = stage.item.external_id or str(stage.item_id)
        if stage.stage == 1:
            for s, sentence in enumerate(stage.gold.payload["sentences"]):
                key = (item, f"sentence{s + 1}")
                if key in predicted["checkworthiness"]:
                    model = predicted["checkworthiness"][key]
                    expected["sentence_checkworthy"]["alice"].append(
                        ("yes" if sentence["checkworthy"] == "yes" else "no", model)
                    )
                    expected["sentence_checkworthy"]["bob"].append(
                        ("no" if sentence["checkworthy"] == "yes" else "yes", model)
                    )
                for c, claim in enumerate(sentence["claims"]):
                    if (*key, c) in predicted["claim_category"]:
                        for name in ("alice", "bob"):
                            expected["claim_category"][name].append(
                                (claim["category"], predicted["claim_category"][(*key, c)])
                            )
        else:
            for claim, answer in zip(stage.content["claims"], stage.gold.payload["claims"]):
                for e, stance in enumerate(answer["stances"]):
                    key = (item, f"sentence{claim['sentence'] + 1}", claim["claim"], e)
                    if stance and key in predicted["stance4"]:
                        for name in ("alice", "bob"):
                            expected["stance"][name].append((stance, predicted["stance4"][key]))
    for step, fields in ((1, ("sentence_checkworthy", "claim_category")), (2, ("stance",))):
        result = rater_agreement(factcheck_gold, step)
        rows = {(f["name"], tuple(r["compared"])): r for f in result["fields"] for r in f["rows"]}
        for field in fields:
            for name in ("alice", "bob"):
                pairs = expected[field][name]
                assert len({label for _, label in pairs}) == 2, field  # the rater used two labels
                row = rows[(field, (run.system, name))]
                assert row["units"] == len(pairs) > 0
                assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(*zip(*pairs)), abs=1e-12), (field, name)
    step1 = {
        (f["name"], tuple(r["compared"])): r for f in rater_agreement(factcheck_gold, 1)["fields"] for r in f["rows"]
    }
    assert step1[("sentence_checkworthy", ("alice", "bob"))]["observed_agreement"] == 0
    assert step1[("claim_category", ("alice", "bob"))]["observed_agreement"] == 1


def test_a_run_under_way_shows_its_progress_and_blocks_a_second_start(felm_gold, users, client, clients):
    running = SystemRun.objects.create(
        project=felm_gold,
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
    page = client.get(f"/projects/{felm_gold.id}/llm-rater/").content.decode()
    assert '<progress max="5" value="2">' in page and "rating item-steps" in page and 'http-equiv="refresh"' in page
    progress = clients["admin"].get(f"/api/projects/{felm_gold.id}/llm-rater/{running.id}/").json()
    assert (progress["state"], progress["units_done"], progress["units_total"]) == ("running", 2, 5)
    felm_gold.pipeline_settings = {
        "llm": {"base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "m", "max_retries": 0}
    }
    felm_gold.save()
    with pytest.raises(rater_services.DomainError, match="under way"):
        rater_services.start_run(
            project=felm_gold,
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
