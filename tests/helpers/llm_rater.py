"""Builders the LLM rater's tests share: a responder for the loopback LLM server, a project
pointed at it, a started run, the gold the rater rates, and a port nothing listens on."""

import json
import socket

from django.test import TestCase

from annotation.imports.items import import_jsonl
from annotation.research import llm_rater as rater_services
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.fake_llm import last_user_message, well_behaved_responder
from tests.helpers.paths import shared_data_path

SECRET = "sk-rater-secret-123"


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


def felm_gold_of(felm_project):
    """Three FELM items of three segments, their labels imported as gold."""
    records = [felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(3)]
    import_jsonl(felm_project, jsonl(records), fmt="felm", labels_as="gold")
    return felm_project


def released(count):
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:count]]


def factcheck_gold_of(factcheck_project, django_capture_on_commit_callbacks):
    """Two items of the released Factcheck-Bench file, every step's gold imported."""
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, jsonl(released(2)), fmt="factcheck-bench", labels_as="gold")
    return factcheck_project


def sent_chars(server):
    return sum(len(m["content"]) for request in server.requests for m in request["messages"])


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
