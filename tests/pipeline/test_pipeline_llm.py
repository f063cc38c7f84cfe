"""LLM backends against a loopback OpenAI-compatible server (no network)."""

import logging
import time

import pytest

from pipeline.checkworthiness import LLM, OFFLINE, claim_category_hints
from pipeline.decompose import decompose_response
from pipeline.llm import LLMConfig, run_chats
from tests.helpers.fake_llm import (
    FakeLLMServer,
    FakeReply,
    last_user_message,
    well_behaved_responder,
)

SENTENCES = [
    "Marie Curie was a physicist.",
    "She was born in Warsaw and moved to Paris in 1891.",
]


def sentence_of(request: dict) -> str:
    return last_user_message(request).rstrip("\n").rsplit("The sentence is: ", 1)[-1]


# ------------------------------------------------------------------------------ configuration


def test_config_from_env_reads_llm_variables():
    config = LLMConfig.from_env(
        environ={
            "LLM_BASE_URL": "http://127.0.0.1:8000/v1",
            "LLM_API_KEY": "secret",
            "LLM_MODEL": "qwen",
            "LLM_TIMEOUT": "12.5",
            "LLM_MAX_RETRIES": "5",
            "LLM_CONCURRENCY": "3",
        }
    )
    assert config == LLMConfig("http://127.0.0.1:8000/v1", "secret", "qwen", 12.5, 5, 3)
    assert config.is_configured


@pytest.mark.parametrize(
    "environ",
    [{}, {"LLM_BASE_URL": "http://127.0.0.1:8000/v1"}, {"LLM_MODEL": "qwen", "LLM_BASE_URL": ""}],
)
def test_config_without_base_url_or_model_is_not_configured(environ):
    assert not LLMConfig.from_env(environ=environ).is_configured


def test_config_overrides_win_over_the_environment_and_none_is_ignored():
    config = LLMConfig.from_env(
        {"model": "llama", "concurrency": 16, "api_key": None},
        environ={"LLM_BASE_URL": "http://h/v1", "LLM_MODEL": "qwen", "LLM_API_KEY": "k"},
    )
    assert (config.model, config.concurrency, config.api_key) == ("llama", 16, "k")


def test_the_server_key_is_dropped_when_the_overrides_point_elsewhere():
    environ = {
        "LLM_BASE_URL": "http://llm.internal/v1",
        "LLM_MODEL": "qwen",
        "LLM_API_KEY": "server-key",
    }
    elsewhere = LLMConfig.from_env({"base_url": "http://elsewhere.example/v1"}, environ=environ)
    assert (elsewhere.base_url, elsewhere.api_key) == ("http://elsewhere.example/v1", None)
    same = LLMConfig.from_env({"base_url": "http://llm.internal/v1/", "model": "m"}, environ=environ)
    assert same.api_key == "server-key"
    own_key = LLMConfig.from_env({"base_url": "http://elsewhere.example/v1", "api_key": "own"}, environ=environ)
    assert own_key.api_key == "own"
    no_env_url = LLMConfig.from_env({"base_url": "http://elsewhere.example/v1"}, environ={"LLM_API_KEY": "server-key"})
    assert no_env_url.api_key is None


def test_config_rejects_unknown_overrides():
    with pytest.raises(ValueError, match="unknown LLM settings"):
        LLMConfig.from_env({"modle": "typo"}, environ={})


# ------------------------------------------------------------------------------ decomposition


def test_good_answers_become_llm_decompositions():
    def responder(request):
        if sentence_of(request).startswith("She"):
            return (
                "Decontextualised sentence: Marie Curie was born in Warsaw and moved to Paris in 1891.\n"
                'Atomic facts for this sentence are: ["Marie Curie was born in Warsaw.", '
                '"Marie Curie moved to Paris in 1891."]'
            )
        return '```json\n["Marie Curie was a physicist."]\n```'

    with FakeLLMServer(responder) as server:
        results = decompose_response(SENTENCES, server.config(), context=" ".join(SENTENCES))

    assert [r.claims for r in results] == [
        ["Marie Curie was a physicist."],
        ["Marie Curie was born in Warsaw.", "Marie Curie moved to Paris in 1891."],
    ]
    assert results[1].decontext == "Marie Curie was born in Warsaw and moved to Paris in 1891."
    assert results[0].decontext == "Marie Curie was a physicist."  # no line: offline decontext
    assert {(r.backend, r.model, r.fallback, r.error) for r in results} == {(LLM, "fake-model", False, None)}
    prompts = [last_user_message(r) for r in server.requests]
    assert all("Context: " + " ".join(SENTENCES) in p for p in prompts)
    assert server.requests[0]["model"] == "fake-model"


def test_malformed_answer_falls_back_to_the_sentence_and_is_logged(caplog):
    def responder(request):
        return (
            "Sorry, I can't do that." if sentence_of(request).startswith("She") else '["Marie Curie was a physicist."]'
        )

    with (
        FakeLLMServer(responder) as server,
        caplog.at_level(logging.WARNING, logger="pipeline.decompose"),
    ):
        results = decompose_response(SENTENCES, server.config())

    assert results[0].fallback is False
    fallback = results[1]
    assert (fallback.claims, fallback.fallback, fallback.backend) == ([SENTENCES[1]], True, LLM)
    assert fallback.decontext == "Marie Curie was born in Warsaw and moved to Paris in 1891."
    assert "unparseable answer" in fallback.error
    assert any("falls back" in record.getMessage() for record in caplog.records)


def test_rate_limit_is_retried_by_the_client():
    attempts = []

    def responder(request):
        attempts.append(time.perf_counter())
        if len(attempts) == 1:
            return FakeReply("slow down", status=429, headers={"retry-after-ms": "20"})
        return '["Marie Curie was a physicist."]'

    with FakeLLMServer(responder) as server:
        (result,) = decompose_response(SENTENCES[:1], server.config(max_retries=2))

    assert (result.claims, result.fallback) == (["Marie Curie was a physicist."], False)
    assert len(attempts) == 2


def test_server_errors_exhaust_retries_then_fall_back():
    def responder(request):
        return FakeReply("boom", status=500, headers={"retry-after-ms": "10"})

    with FakeLLMServer(responder) as server:
        (result,) = decompose_response(SENTENCES[:1], server.config(max_retries=2))
    assert result.fallback and "InternalServerError" in result.error
    assert len(server.requests) == 3


def test_timeout_falls_back_quickly():
    with FakeLLMServer(lambda r: FakeReply('["late"]', delay=3.0)) as server:
        started = time.perf_counter()
        (result,) = decompose_response(SENTENCES[:1], server.config(timeout=0.2, max_retries=1))
        elapsed = time.perf_counter() - started

    assert result.fallback and "Timeout" in result.error
    assert result.claims == SENTENCES[:1]
    assert len(server.requests) == 2  # first attempt + one retry
    assert elapsed < 2.5


def test_calls_of_one_item_run_concurrently_and_keep_order():
    sentences = [f"Fact number {i} is true." for i in range(8)]
    with FakeLLMServer(well_behaved_responder, delay=0.2) as server:
        config = server.config(concurrency=8)
        run_chats(config, [[{"role": "user", "content": "warm up"}]])  # connection + client setup
        results = decompose_response(sentences, config)

    assert [r.claims for r in results] == [[s] for s in sentences]
    # all eight calls were in flight at once (each answer takes 0.2 s); no wall-clock assertion,
    # which a loaded CI machine can break
    assert server.max_in_flight == len(sentences)


def test_concurrency_is_bounded_by_the_config():
    with FakeLLMServer(well_behaved_responder, delay=0.05) as server:
        decompose_response([f"Fact {i} holds." for i in range(6)], server.config(concurrency=2))
    assert server.max_in_flight == 2


def test_chat_results_come_back_in_input_order_even_when_answers_finish_out_of_order():
    def responder(request):
        number = int(last_user_message(request))
        return FakeReply(str(number), delay=0.05 * (5 - number))

    with FakeLLMServer(responder) as server:
        results = run_chats(server.config(), [[{"role": "user", "content": str(i)}] for i in range(5)])
    assert [r.text for r in results] == ["0", "1", "2", "3", "4"]


# ------------------------------------------------------------------------------ claim categories


def test_claim_categories_from_the_llm_with_offline_fallback():
    answers = {
        "Paris is in France.": "factual",
        "Paris is lovely.": "Label: opinion",
        "Hm?": "maybe",
    }

    def responder(request):
        claim = last_user_message(request).rsplit("Claim: ", 1)[-1].removesuffix("\nLabel:")
        return answers[claim]

    with FakeLLMServer(responder) as server:
        hints = claim_category_hints(list(answers), server.config())

    assert [(h.label, h.backend, h.model, h.fallback) for h in hints] == [
        ("factual", LLM, "fake-model", False),
        ("opinion", LLM, "fake-model", False),
        ("not_a_claim", OFFLINE, None, True),  # offline rule: a question
    ]
    assert "unparseable answer" in hints[2].error


def test_an_llm_server_on_a_private_address_needs_the_explicit_setting(monkeypatch):
    monkeypatch.delenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", raising=False)
    with FakeLLMServer(well_behaved_responder) as server:
        [result] = run_chats(server.config(max_retries=0), [[{"role": "user", "content": "hi"}]])
        assert (
            result.text is None
            and "the LLM server's address is refused: 127.0.0.1 is a loopback address" in result.error
        )
        assert server.requests == []
        monkeypatch.setenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", "1")  # a lab's own server, allowed by setting
        [result] = run_chats(server.config(max_retries=0), [[{"role": "user", "content": "hi"}]])
        assert result.error is None and len(server.requests) == 1


def test_the_config_repr_hides_the_api_key():
    config = LLMConfig(base_url="http://llm.example/v1", api_key="sk-secret-key", model="m")
    assert "sk-secret-key" not in repr(config) and "sk-secret-key" not in str(config)
    assert "http://llm.example/v1" in repr(config)
