"""annotation.research.scoring: the machine pre-annotation (or an LLM rater's answers) of
Factcheck-Bench and FELM scored as a system."""

import pytest
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from annotation.imports.items import import_jsonl
from annotation.models import ItemStage
from annotation.research.scoring import (
    MISSING,
    baselines,
    machine_predictions,
    project_tasks,
    score_task,
)
from tests.helpers.builders import jsonl
from tests.helpers.research import bench_sentence, felm_gold_line


def test_factcheck_machine_predictions_of_every_step(factcheck_project):
    sentence = bench_sentence(
        claims=(("Paris is the capital of France.", "factual"), ("I like Paris.", "opinion")),
        stances=(("completely-support", "irrelevant"), ()),
        factuality=(True, "unknown"),
        needs_edit=("no", "NA"),
    )
    line = {
        "id": "m",
        "prompt": "p",
        "response": "Paris is the capital of France. I like it.",
        "revised_response": "Paris is the capital of France.",
        "sentences": {"sentence1": sentence},
    }
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    stages = {s.stage: s for s in ItemStage.objects.filter(item__project=factcheck_project)}
    assert machine_predictions(factcheck_project) == {}  # imported gold, no machine yet
    # step 1: the machine splits the sentence its own way; its claims land on the gold claims they match
    stages[1].suggestion = {
        "sentences": [
            {
                "decontext": "x",
                "importance": "yes",
                "checkworthy": "no",
                "claims": [
                    {"text": "I really like Paris.", "category": "opinion", "importance": None},
                    {"text": "Cheese is tasty.", "category": "factual", "importance": None},
                    {
                        "text": "Paris is the capital of France.",
                        "category": "not_a_claim",
                        "importance": None,
                    },
                ],
            }
        ]
    }
    stages[1].save()
    content = stages[2].content
    content["claims"][0]["evidence"][0]["stance_hint"] = {
        "label": "refute",
        "backend": "llm",
        "model": "m",
        "fallback": False,
        "error": None,
    }
    stages[2].content = content
    stages[2].save()
    stages[3].suggestion = {
        "sentences": [{"revised": "Paris is France's capital."}],
        "response": "Paris is France's capital.",
    }
    stages[3].save()
    machine = machine_predictions(factcheck_project)
    assert machine == {
        "checkworthiness": {("m", "sentence1"): "no"},
        "claim_category": {("m", "sentence1", 0): "not_a_claim", ("m", "sentence1", 1): "opinion"},
        "stance4": {("m", "sentence1", 0, 0): "refute"},
        "stance3": {("m", "sentence1", 0, 0): "refute"},
        "revision": {("m",): "Paris is France's capital."},
    }
    tasks = project_tasks(factcheck_project)
    for name, predictions in machine.items():
        assert set(predictions) <= {u.key for u in tasks[name].units}, name
    claim_scores = baselines(tasks["claim_category"], resamples=0, machine=machine["claim_category"])["machine"][
        "scores"
    ]
    assert claim_scores["accuracy"]["value"] == 0.5 and claim_scores["missing"] == 0
    revision = baselines(tasks["revision"], resamples=0, machine=machine["revision"])
    assert set(revision) == {"majority", "machine"}
    assert revision["machine"]["scores"]["against_original"]["word_overlap"]["value"] < 1
    assert "machine" not in baselines(tasks["factuality"], resamples=0, machine=machine.get("factuality"))

    # an LLM rater's answers in the suggestions' shapes; step 2 as the payload's; bad labels dropped
    answers = {
        1: None,
        2: {"claims": [{"stances": ["partially-support", "bogus"], "factuality": "false"}]},
        3: {"response": "Paris is the French capital."},
    }
    rated = machine_predictions(factcheck_project, suggestion_of=lambda s: answers[s.stage])
    assert rated == {
        "stance4": {("m", "sentence1", 0, 0): "partially-support"},
        "stance3": {("m", "sentence1", 0, 0): "partially-support"},
        "factuality": {("m", "sentence1", 0): "false"},
        "factuality_without_nee": {("m", "sentence1", 0): "false"},
        "revision": {("m",): "Paris is the French capital."},
    }
    stance3 = score_task(
        tasks["stance3"], rated["stance3"], resamples=0
    )  # partial support is support; passage 1 missing
    assert stance3["per_label"]["support"]["recall"]["value"] == 1.0 and stance3["accuracy"]["value"] == 0.5


def test_machine_factuality_follows_from_the_stances_when_every_passage_has_one(factcheck_project):
    """Subtask 4 for systems that judge passages only (stance hints, an LLM rater's stances)."""
    sentence = bench_sentence(
        claims=(("Paris is the capital of France.", "factual"),),
        stances=(("completely-support", "irrelevant"),),
        factuality=(True,),
        needs_edit=("no",),
    )
    line = {
        "id": "v",
        "prompt": "p",
        "response": "Paris is the capital of France.",
        "sentences": {"sentence1": sentence},
    }
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    stage2 = ItemStage.objects.get(item__project=factcheck_project, stage=2)
    content = stage2.content
    for passage, label in zip(content["claims"][0]["evidence"], ("refute", "irrelevant")):
        passage["stance_hint"] = {
            "label": label,
            "backend": "llm",
            "model": "m",
            "fallback": False,
            "error": None,
        }
    stage2.content = content
    stage2.save()
    machine = machine_predictions(factcheck_project)
    assert machine["factuality"] == {("v", "sentence1", 0): "false"}
    rated = machine_predictions(
        factcheck_project,
        suggestion_of=lambda s: (
            {"claims": [{"stances": ["completely-support", "irrelevant"]}]} if s.stage == 2 else None
        ),
    )
    assert rated["factuality"] == rated["factuality_without_nee"] == {("v", "sentence1", 0): "true"}
    scores = score_task(project_tasks(factcheck_project)["factuality"], rated["factuality"], resamples=0)
    assert scores["accuracy"]["value"] == 1.0


def test_felm_machine_predictions_of_segments_and_responses(felm_project):
    import_jsonl(
        felm_project,
        jsonl([felm_gold_line("a", [True, False]), felm_gold_line("b", [True, True, True])]),
        fmt="felm",
        labels_as="gold",
    )
    stages = {
        s.item.external_id: s for s in ItemStage.objects.filter(item__project=felm_project).select_related("item")
    }
    ItemStage.objects.filter(pk=stages["a"].pk).update(suggestion={"segments": [{"label": False}, {"label": False}]})
    ItemStage.objects.filter(pk=stages["b"].pk).update(
        suggestion={"segments": [{"label": True}, {"label": None}, {"label": "correct"}]}
    )
    machine = machine_predictions(felm_project)
    assert machine == {
        "segment": {("a", 0): "error", ("a", 1): "error", ("b", 0): "correct", ("b", 2): "correct"},
        "response": {("a",): "error"},
    }  # b has an unlabelled segment: no response label
    tasks = project_tasks(felm_project)
    segment = baselines(tasks["segment"], resamples=0, machine=machine["segment"])["machine"]["scores"]
    gold = [u.gold for u in tasks["segment"].units]
    predicted = [machine["segment"].get(u.key, MISSING) for u in tasks["segment"].units]
    assert segment["accuracy"]["value"] == pytest.approx(accuracy_score(gold, predicted))
    f1 = precision_recall_fscore_support(gold, predicted, labels=["correct", "error"], zero_division=0)[2]
    assert [segment["per_label"][label]["f1"]["value"] for label in ("correct", "error")] == pytest.approx(list(f1))
    assert baselines(tasks["response"], resamples=0, machine=machine["response"])["machine"]["scores"]["missing"] == 1
