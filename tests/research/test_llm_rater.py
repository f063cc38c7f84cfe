"""The LLM rater: estimate, runs against the loopback OpenAI-compatible server (the real openai
client), failures, permissions, secrets, and its agreement with the annotators."""

import json
import math
import random
import socket

import pytest
from django.template.defaultfilters import floatformat
from django.test import TestCase
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from annotation.imports.items import import_jsonl
from annotation.models import (
    Annotation,
    Assignment,
    GoldRecord,
    ItemStage,
    Role,
    StageStatus,
    SystemRun,
    SystemRunSource,
    SystemRunState,
)
from annotation.research import llm_rater as rater_services
from annotation.research.rater_agreement import rater_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from annotation.services.projects import add_member, create_project
from pipeline import llm_rater as rater
from pipeline.parsing import ParseError
from tests.helpers.builders import api_client, felm_line, jsonl, project_with_team
from tests.helpers.fake_llm import (
    FakeLLMServer,
    FakeReply,
    last_user_message,
    well_behaved_responder,
)
from tests.helpers.paths import shared_data_path

SECRET = "sk-rater-secret-123"


# -- the pipeline part: FELM answers and the estimate's arithmetic ---------------------------------


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("Answer: 2", [True, False, True]),
        ("Answer: 1, 3", [False, True, False]),
        ("answer: 3 and 1.", [False, True, False]),
        ("Answer: ALL_CORRECT", [True, True, True]),
        ("ALL CORRECT", [True, True, True]),
        ("2", [True, False, True]),
        ("```\nAnswer: 2\n```", [True, False, True]),
    ],
)
def test_felm_answers_are_parsed(answer, expected):
    assert rater.parse_felm_errors(answer, 3) == expected


@pytest.mark.parametrize(
    "answer", ["", None, "Answer: 4", "Answer: 0", "Segment two looks wrong.", "Answer: 2 is wrong"]
)
def test_felm_answers_that_do_not_follow_the_format_are_refused(answer):
    with pytest.raises(ParseError):
        rater.parse_felm_errors(answer, 3)


def test_estimate_arithmetic_by_hand():
    batches = [
        ([rater.PlannedCall("stance", 400, 18)] * 5, 1.0),
        ([rater.PlannedCall("claim_category", 100, 8)], 2.0),
    ]
    result = rater.estimate(
        batches,
        concurrency=2,
        seconds_per_call=3.0,
        prompt_price_per_1k=0.5,
        completion_price_per_1k=2.0,
    )
    assert result["calls"] == {"claim_category": 2, "stance": 5, "probe": 1}
    assert result["calls_total"] == 8
    probe_chars = len("Reply with OK.")
    assert result["prompt_tokens"] == math.ceil((5 * 400 + 2 * 100 + probe_chars) / 4)
    assert result["completion_tokens"] == math.ceil((5 * 18 + 2 * 8 + 2) / 4)
    # rounds: 5 calls two at a time = 3, the weighted batch 1 × 2, the probe 1
    assert result["seconds"] == (3 + 2 + 1) * 3.0
    assert result["cost"] == pytest.approx(
        round(result["prompt_tokens"] / 1000 * 0.5 + result["completion_tokens"] / 1000 * 2.0, 4)
    )
    assert rater.estimate([], concurrency=4)["cost"] is None


def test_step1_and_step2_units_without_an_answer_stay_empty_and_say_why():
    def respond(request):
        prompt = last_user_message(request)
        if "The sentence is: It rains." in prompt or "Evidence: second" in prompt:
            return FakeReply("no", status=400)
        if "Evidence:" in prompt:
            return "Label: refute"
        if prompt.rstrip().endswith("Label:"):
            return "factual"
        return well_behaved_responder(request)

    with FakeLLMServer(respond) as server:
        config = server.config(max_retries=0)
        step1 = rater.rate_factcheck_step1(
            "Paris is big. It rains.",
            ["Paris is big.", "It rains."],
            [["Paris is big."], ["It rains.", "Rain falls."]],
            config,
        )
        step2 = rater.rate_factcheck_step2(
            [{"text": "Paris is big.", "evidence": [{"text": "first"}, {"text": "second"}]}], config
        )
    first, second = step1.suggestion["sentences"]
    assert first["checkworthy"] == "yes" and second["checkworthy"] is None and second["decontext"] is None
    # the gold claims are classified either way: subtask 2 does not depend on the decomposition
    assert [c["category"] for c in second["claims"]] == ["factual", "factual"]
    assert [c["text"] for c in second["claims"]] == ["It rains.", "Rain falls."]
    assert step1.errors == ["sentence 2: decomposition: BadRequestError: Error code: 400 - no"]
    assert step1.calls == 2 + 2 + 3 and step1.answered == 2 + 3
    assert step2.suggestion == {"claims": [{"stances": ["refute", None]}]}
    assert step2.errors[0].startswith("claim 1, passage 2: stance:") and (
        step2.calls,
        step2.answered,
    ) == (2, 1)


# -- fixtures -------------------------------------------------------------------------------------------


def rater_responder(felm=lambda prompt: "Answer: 2"):
    """Answers every prompt the rater sends: the probe, FELM segments, stances, categories,
    revisions and decompositions."""

    def respond(request):
        prompt = last_user_message(request)
        if prompt == "Reply with OK.":
            return "OK"
        if "ALL_CORRECT" in prompt:
            return felm(prompt)
        if "Evidence:" in prompt and prompt.rstrip().endswith("Label:"):
            return "refute"
        if "Revised sentence:" in prompt:
            return "A revised sentence."
        return well_behaved_responder(request)

    return respond


def use_llm(project, server, **extra):
    project.pipeline_settings = {
        **project.pipeline_settings,
        "llm": {
            "base_url": server.base_url,
            "model": "rater-model",
            "max_retries": 0,
            "timeout": 5,
            "api_key": SECRET,
            **extra,
        },
    }
    project.save()


def run_rater(project, user, **data):
    options = rater_services.parse_options(project, user, data)
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = rater_services.start_run(project=project, user=user, options=options, confirmed=True)
    run.refresh_from_db()
    return run


@pytest.fixture
def felm_gold(felm_project):
    """Three FELM items of three segments, their labels imported as gold."""
    records = [felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(3)]
    import_jsonl(felm_project, jsonl(records), fmt="felm", labels_as="gold")
    return felm_project


def released(count):
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:count]]


@pytest.fixture
def factcheck_gold(factcheck_project, django_capture_on_commit_callbacks):
    """Two items of the released Factcheck-Bench file, every step's gold imported."""
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, jsonl(released(2)), fmt="factcheck-bench", labels_as="gold")
    return factcheck_project


def sent_chars(server):
    return sum(len(m["content"]) for request in server.requests for m in request["messages"])


# -- the estimate ---------------------------------------------------------------------------------------


def test_felm_estimate_equals_what_the_run_sends(felm_gold, users):
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_gold, server, concurrency=2)
        options = rater_services.parse_options(
            felm_gold,
            users["admin"],
            {
                "seconds_per_call": "1.5",
                "prompt_price_per_1k": "0.5",
                "completion_price_per_1k": "1.5",
            },
        )
        estimate = rater_services.estimate(felm_gold, options)
        assert server.requests == []  # estimating calls nothing
        run_rater(felm_gold, users["admin"], seconds_per_call="1.5")
    assert estimate["item_steps"] == {"1": 3} and estimate["configured"] and estimate["model"] == "rater-model"
    assert estimate["endpoint"] == server.base_url
    assert estimate["calls"] == {"felm_segments": 3, "probe": 1} and estimate["calls_total"] == 4
    assert len(server.requests) == 4
    # the prompts are planned exactly: their characters / 4 are the tokens
    assert estimate["prompt_tokens"] == math.ceil(sent_chars(server) / 4)
    # one batch of 3 calls, 2 at a time = 2 rounds, and the probe
    assert estimate["seconds"] == 3 * 1.5
    assert estimate["cost"] == round(
        estimate["prompt_tokens"] / 1000 * 0.5 + estimate["completion_tokens"] / 1000 * 1.5, 4
    )


def test_factcheck_estimate_counts_the_calls_of_every_step(factcheck_gold, users):
    records = released(2)
    sentences = sum(len(r["sentences"]) for r in records)
    gold_claims = sum(len(s["claims"]) for r in records for s in r["sentences"].values())
    stage2 = ItemStage.objects.filter(item__project=factcheck_gold, stage=2)
    passages = sum(len(c["evidence"]) for s in stage2 for c in s.content["claims"])
    changed = sum(
        1
        for s in ItemStage.objects.filter(item__project=factcheck_gold, stage=3)
        for sentence in s.content["sentences"]
        if sentence["checkworthy"] and any(c["verdict"] in ("false", "deleted") for c in sentence["claims"])
    )
    assert passages and changed
    assert not any(ItemStage.objects.filter(item__project=factcheck_gold, stage=1).values_list("suggestion", flat=True))
    with FakeLLMServer(rater_responder()) as server:
        use_llm(factcheck_gold, server)
        estimate = rater_services.estimate(
            factcheck_gold, rater_services.parse_options(factcheck_gold, users["admin"], {})
        )
        assert estimate["item_steps"] == {"1": 2, "2": 2, "3": 2}
        # without a stored suggestion, the model's own claims are planned as many as the gold's
        assert estimate["calls"] == {
            "decomposition": sentences,
            "claim_category": 2 * gold_claims,
            "stance": passages,
            "revision": changed,
            "probe": 1,
        }
        # steps 2 and 3 are planned exactly: the tokens of what those runs send
        for step in (2, 3):
            server.requests.clear()
            only = rater_services.estimate(
                factcheck_gold,
                rater_services.parse_options(factcheck_gold, users["admin"], {"steps": [step]}),
            )
            run_rater(factcheck_gold, users["admin"], steps=[step])
            assert only["prompt_tokens"] == math.ceil(sent_chars(server) / 4), step


def test_estimate_of_a_large_step_is_planned_from_a_sample(felm_gold, users, monkeypatch):
    monkeypatch.setattr(rater_services, "ESTIMATE_SAMPLE", 2)
    estimate = rater_services.estimate(felm_gold, rater_services.RaterOptions(steps=(1,)))
    assert estimate["sampled"] == {"1": 2} and estimate["calls"]["felm_segments"] == 3


# -- runs -----------------------------------------------------------------------------------------------


def test_felm_run_predicts_every_segment_and_is_scored(felm_gold, users, monkeypatch):
    monkeypatch.setattr(rater_services, "HEARTBEAT_SECONDS", 0)
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_gold, server)
        run = run_rater(felm_gold, users["admin"])
    assert run.state == SystemRunState.DONE, run.errors
    assert run.source == SystemRunSource.LLM_RATER and run.system == "LLM rater (rater-model)" and run.version
    assert run.errors == []
    # "Answer: 2": the second segment of each response is wrong, so each response is
    assert sorted(map(tuple, run.predictions["segment"])) == sorted(
        (str(i), k, "error" if k == 1 else "correct") for i in range(3) for k in range(3)
    )
    assert sorted(map(tuple, run.predictions["response"])) == [(str(i), "error") for i in range(3)]
    assert run.scores["segment"]["accuracy"]["value"] == pytest.approx(6 / 9)  # the gold has no error
    assert run.options["rated"] == {"item_steps": 3, "calls": 3, "answered": 3}
    assert run.options["heartbeat"] and "heartbeat" not in rater_services.run_summary(run)["options"]
    assert server.authorizations[-1] == f"Bearer {SECRET}"  # the project's key goes to its endpoint


def test_factcheck_run_predicts_every_step(factcheck_gold, users):
    with FakeLLMServer(rater_responder()) as server:
        use_llm(factcheck_gold, server)
        run = run_rater(factcheck_gold, users["admin"])
    assert run.state == SystemRunState.DONE, run.errors
    predictions = {task: {tuple(row[:-1]): row[-1] for row in rows} for task, rows in run.predictions.items()}
    records = released(2)
    # subtask 2 on the gold claims themselves: every one answered ("factual")
    gold_claims = {
        (r["id"] if "id" in r else str(i), key, j)
        for i, r in enumerate(records)
        for key, s in r["sentences"].items()
        for j in range(len(s["claims"]))
    }
    items = {row[0] for row in run.predictions["claim_category"]}
    assert len(predictions["claim_category"]) == len(gold_claims) and set(predictions["claim_category"].values()) == {
        "factual"
    }
    # subtask 1: each sentence decomposed into itself, "factual": checkworthy
    assert len(predictions["checkworthiness"]) == sum(len(r["sentences"]) for r in records)
    assert set(predictions["checkworthiness"].values()) == {"yes"}
    assert set(predictions["stance4"].values()) == {"refute"} and set(predictions["stance3"].values()) == {"refute"}
    assert len(predictions["revision"]) == 2 and items == {key[0] for key in predictions["revision"]}
    assert set(run.scores) >= {
        "checkworthiness",
        "claim_category",
        "stance4",
        "stance3",
        "revision",
    }
    assert run.options["rated"]["item_steps"] == 6 and run.options["rated"]["calls"] == len(server.requests) - 1


def test_dfactscore_run_predicts_support(users):
    project = project_with_team(users, "D-FActScore rater", "dfactscore")
    project.pipeline_settings = {"embeddings": False}
    project.save()
    lines = [
        {
            "id": "A",
            "prompt": "Tell me a bio of A.",
            "name": "A",
            "response": "A was born. A sings.",
            "atomic_facts": ["A was born.", "A sings."],
            "model": "m1",
            "candidates": [{"title": "A page", "url": "https://example.org/a", "text": "A was born in 1900."}],
        }
    ]
    import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="ignore")
    stage = ItemStage.objects.get(item__project=project)
    GoldRecord.objects.create(
        item_stage=stage,
        payload={
            "individuals": 1,
            "groups": [{"link": 0}],
            "facts": [
                {"group": 0, "label": "supported", "any_page": None, "entity": None},
                {"group": 0, "label": "not_supported", "any_page": None, "entity": None},
            ],
        },
    )
    ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.DONE)

    def respond(request):
        prompt = last_user_message(request)
        if prompt == "Reply with OK.":
            return "OK"
        if "Group the facts" in prompt:
            return "- A was born.\n- A sings."
        return "True" if "A was born." in prompt.rsplit("Input:", 1)[-1] else "False"

    with FakeLLMServer(respond) as server:
        use_llm(project, server)
        estimate = rater_services.estimate(project, rater_services.RaterOptions(steps=(1,)))
        run = run_rater(project, users["admin"])
    assert estimate["calls"] == {"grouping": 1, "support": 2, "probe": 1} and len(server.requests) == 4
    assert run.state == SystemRunState.DONE, run.errors
    assert sorted(map(tuple, run.predictions["support"])) == [
        ("A", 0, "supported"),
        ("A", 1, "not_supported"),
    ]


def test_a_failing_call_is_recorded_and_the_run_goes_on(felm_gold, users):
    def felm(prompt):
        if "Question 1?" in prompt:
            return FakeReply("the model is overloaded", status=400)
        if "Question 2?" in prompt:
            return "Segment two, I think."
        return "Answer: ALL_CORRECT"

    with FakeLLMServer(rater_responder(felm)) as server:
        use_llm(felm_gold, server)
        run = run_rater(felm_gold, users["admin"])
    assert run.state == SystemRunState.DONE
    assert sorted(map(tuple, run.predictions["segment"])) == [("0", k, "correct") for k in range(3)]
    assert [e["field"] for e in run.errors] == ["item 1, step 1", "item 2, step 1"]
    assert "BadRequestError" in run.errors[0]["message"] and "overloaded" in run.errors[0]["message"]
    assert "neither segment numbers nor ALL_CORRECT" in run.errors[1]["message"]
    # the items without an answer count as wrong, not as an offline guess
    assert run.scores["segment"]["missing"] == 6
    assert run.options["rated"] == {"item_steps": 3, "calls": 3, "answered": 1}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_dead_endpoint_fails_the_run_with_a_clear_message(felm_gold, users):
    felm_gold.pipeline_settings = {
        "llm": {
            "base_url": f"http://127.0.0.1:{free_port()}/v1",
            "model": "m",
            "max_retries": 0,
            "timeout": 2,
        }
    }
    felm_gold.save()
    run = run_rater(felm_gold, users["admin"])
    assert run.state == SystemRunState.FAILED
    assert run.errors[0]["field"] == "(endpoint)"
    assert "did not answer" in run.errors[0]["message"] and "APIConnectionError" in run.errors[0]["message"]
    assert "nothing was rated" in run.errors[0]["message"]
    assert run.predictions == {} and run.scores is None and run.finished_at is not None


def test_an_endpoint_that_stops_answering_fails_the_run(felm_gold, users):
    answered = []

    def respond(request):
        answered.append(1)
        return "OK" if len(answered) == 1 else FakeReply("gone", status=503)

    with FakeLLMServer(respond) as server:
        use_llm(felm_gold, server)
        run = run_rater(felm_gold, users["admin"])
    assert run.state == SystemRunState.FAILED
    assert "stopped answering" in run.errors[0]["message"] and "InternalServerError" in run.errors[0]["message"]
    assert run.predictions == {}


def test_a_run_needs_confirmation_an_endpoint_and_gold(felm_project, felm_gold, users):
    options = rater_services.RaterOptions(steps=(1,))
    with pytest.raises(rater_services.RaterOptionsError, match="confirm"):
        rater_services.start_run(project=felm_gold, user=users["admin"], options=options, confirmed=False)
    felm_gold.pipeline_settings = {}
    felm_gold.save()
    with pytest.raises(rater_services.DomainError, match="no LLM endpoint"):
        rater_services.start_run(project=felm_gold, user=users["admin"], options=options, confirmed=True)
    empty = create_project(
        name="No gold",
        kind="felm",
        created_by=users["admin"],
        pipeline_settings={"llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
    )
    with pytest.raises(rater_services.DomainError, match="nothing to rate"):
        rater_services.start_run(project=empty, user=users["admin"], options=options, confirmed=True)
    assert not SystemRun.objects.exists()


@pytest.mark.parametrize(
    "data, field",
    [
        ({"steps": "2"}, "steps"),
        ({"seconds_per_call": "0"}, "seconds_per_call"),
        ({"seconds_per_call": "x"}, "seconds_per_call"),
        ({"prompt_price_per_1k": "-1"}, "prompt_price_per_1k"),
        ({"completion_price_per_1k": "nan"}, "completion_price_per_1k"),
        ({"resamples": "1.5"}, "resamples"),
        ({"base_url": "ftp://x"}, "base_url"),
        ({"base_url": f"https://user:{SECRET}@llm.example.org/v1"}, "base_url"),
        ({"base_url": "http://[::1/v1"}, "base_url"),
    ],
)
def test_bad_options_are_named(felm_project, users, data, field):
    with pytest.raises(rater_services.RaterOptionsError) as caught:
        rater_services.parse_options(felm_project, users["admin"], data)
    assert set(caught.value.errors) == {field}


def test_staff_may_point_a_run_elsewhere_without_the_stored_key(felm_gold, users):
    with FakeLLMServer(rater_responder()) as home, FakeLLMServer(rater_responder()) as elsewhere:
        use_llm(felm_gold, home)
        run = run_rater(felm_gold, users["admin"], base_url=elsewhere.base_url, model="other-model")
    assert run.state == SystemRunState.DONE and run.system == "LLM rater (other-model)"
    assert not home.requests and elsewhere.requests
    assert {r["model"] for r in elsewhere.requests} == {"other-model"}
    assert SECRET not in json.dumps(elsewhere.authorizations)  # the key stays with the endpoint it was entered for
    assert SECRET not in json.dumps(run.options)


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
    assert rater_services.execute(running.id).state == SystemRunState.RUNNING
    long_ago = timezone.now() - rater_services.STALE_AFTER
    SystemRun.objects.filter(pk=running.id).update(
        started_at=long_ago, options={"steps": [1], "heartbeat": timezone.now().isoformat()}
    )
    assert rater_services.execute(running.id).state == SystemRunState.RUNNING  # it reported lately
    SystemRun.objects.filter(pk=running.id).update(options={"steps": [1], "heartbeat": long_ago.isoformat()})
    assert rater_services.execute(running.id).state == SystemRunState.FAILED


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
