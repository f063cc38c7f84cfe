"""The LLM rater: the FELM answers and the estimate's arithmetic, estimates equal to what runs
send, runs against the loopback OpenAI-compatible server (the real openai client), failures and
bad options."""

import json
import math

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import GoldRecord, ItemStage, StageStatus, SystemRun, SystemRunSource, SystemRunState
from annotation.research import llm_rater as rater_services
from annotation.research import llm_rater_run
from annotation.services.projects import create_project
from pipeline import llm_rater as rater
from pipeline.parsing import ParseError
from tests.helpers.builders import jsonl, project_with_team
from tests.helpers.fake_llm import FakeLLMServer, FakeReply, last_user_message, well_behaved_responder
from tests.helpers.llm_rater import SECRET, free_port, rater_responder, released, run_rater, sent_chars, use_llm
from tests.helpers.research import stored_predictions

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


# -- the estimate ---------------------------------------------------------------------------------------


def test_felm_estimate_equals_what_the_run_sends(felm_rater_gold, users):
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_rater_gold, server, concurrency=2)
        options = rater_services.parse_options(
            felm_rater_gold,
            users["admin"],
            {
                "seconds_per_call": "1.5",
                "prompt_price_per_1k": "0.5",
                "completion_price_per_1k": "1.5",
            },
        )
        estimate = rater_services.estimate(felm_rater_gold, options)
        assert server.requests == []  # estimating calls nothing
        run_rater(felm_rater_gold, users["admin"], seconds_per_call="1.5")
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


def test_estimate_of_a_large_step_is_planned_from_a_sample(felm_rater_gold, users, monkeypatch):
    monkeypatch.setattr(rater_services, "ESTIMATE_SAMPLE", 2)
    estimate = rater_services.estimate(felm_rater_gold, rater_services.RaterOptions(steps=(1,)))
    assert estimate["sampled"] == {"1": 2} and estimate["calls"]["felm_segments"] == 3


# -- runs -----------------------------------------------------------------------------------------------


def test_felm_run_predicts_every_segment_and_is_scored(felm_rater_gold, users, monkeypatch):
    monkeypatch.setattr(llm_rater_run, "HEARTBEAT_SECONDS", 0)
    with FakeLLMServer(rater_responder()) as server:
        use_llm(felm_rater_gold, server)
        run = run_rater(felm_rater_gold, users["admin"])
    assert run.state == SystemRunState.DONE, run.errors
    assert run.source == SystemRunSource.LLM_RATER and run.system == "LLM rater (rater-model)" and run.version
    assert run.errors == []
    # "Answer: 2": the second segment of each response is wrong, so each response is
    # the builders' items are of domain wk: keyed (domain, index)
    assert stored_predictions(run, "segment") == sorted(
        (("wk", str(i)), k, "error" if k == 1 else "correct") for i in range(3) for k in range(3)
    )
    assert stored_predictions(run, "response") == [(("wk", str(i)), "error") for i in range(3)]
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


def test_a_failing_call_is_recorded_and_the_run_goes_on(felm_rater_gold, users):
    def felm(prompt):
        if "Question 1?" in prompt:
            return FakeReply("the model is overloaded", status=400)
        if "Question 2?" in prompt:
            return "Segment two, I think."
        return "Answer: ALL_CORRECT"

    with FakeLLMServer(rater_responder(felm)) as server:
        use_llm(felm_rater_gold, server)
        run = run_rater(felm_rater_gold, users["admin"])
    assert run.state == SystemRunState.DONE
    assert stored_predictions(run, "segment") == [(("wk", "0"), k, "correct") for k in range(3)]
    assert [e["field"] for e in run.errors] == ["item 1, step 1", "item 2, step 1"]
    assert "BadRequestError" in run.errors[0]["message"] and "overloaded" in run.errors[0]["message"]
    assert "neither segment numbers nor ALL_CORRECT" in run.errors[1]["message"]
    # the items without an answer count as wrong, not as an offline guess
    assert run.scores["segment"]["missing"] == 6
    assert run.options["rated"] == {"item_steps": 3, "calls": 3, "answered": 1}


def test_a_dead_endpoint_fails_the_run_with_a_clear_message(felm_rater_gold, users):
    felm_rater_gold.pipeline_settings = {
        "llm": {
            "base_url": f"http://127.0.0.1:{free_port()}/v1",
            "model": "m",
            "max_retries": 0,
            "timeout": 2,
        }
    }
    felm_rater_gold.save()
    run = run_rater(felm_rater_gold, users["admin"])
    assert run.state == SystemRunState.FAILED
    assert run.errors[0]["field"] == "(endpoint)"
    assert "did not answer" in run.errors[0]["message"] and "APIConnectionError" in run.errors[0]["message"]
    assert "nothing was rated" in run.errors[0]["message"]
    assert run.predictions == {} and run.scores is None and run.finished_at is not None


def test_an_endpoint_that_stops_answering_fails_the_run(felm_rater_gold, users):
    answered = []

    def respond(request):
        answered.append(1)
        return "OK" if len(answered) == 1 else FakeReply("gone", status=503)

    with FakeLLMServer(respond) as server:
        use_llm(felm_rater_gold, server)
        run = run_rater(felm_rater_gold, users["admin"])
    assert run.state == SystemRunState.FAILED
    assert "stopped answering" in run.errors[0]["message"] and "InternalServerError" in run.errors[0]["message"]
    assert run.predictions == {}


def test_a_run_needs_confirmation_an_endpoint_and_gold(felm_project, felm_rater_gold, users):
    options = rater_services.RaterOptions(steps=(1,))
    with pytest.raises(rater_services.RaterOptionsError, match="confirm"):
        rater_services.start_run(project=felm_rater_gold, user=users["admin"], options=options, confirmed=False)
    felm_rater_gold.pipeline_settings = {}
    felm_rater_gold.save()
    with pytest.raises(rater_services.DomainError, match="no LLM endpoint"):
        rater_services.start_run(project=felm_rater_gold, user=users["admin"], options=options, confirmed=True)
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


def test_staff_may_point_a_run_elsewhere_without_the_stored_key(felm_rater_gold, users):
    with FakeLLMServer(rater_responder()) as home, FakeLLMServer(rater_responder()) as elsewhere:
        use_llm(felm_rater_gold, home)
        run = run_rater(felm_rater_gold, users["admin"], base_url=elsewhere.base_url, model="other-model")
    assert run.state == SystemRunState.DONE and run.system == "LLM rater (other-model)"
    assert not home.requests and elsewhere.requests
    assert {r["model"] for r in elsewhere.requests} == {"other-model"}
    assert SECRET not in json.dumps(elsewhere.authorizations)  # the key stays with the endpoint it was entered for
    assert SECRET not in json.dumps(run.options)
