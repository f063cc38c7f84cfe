"""annotation.scoring: tasks from a project's gold, keyed like the exports; baselines; Table 3."""
import pytest

from annotation.scoring import baselines, project_tasks, response_predictions, score_task
from annotation.services.imports import import_jsonl

from .conftest import jsonl, shared_data_path


def three(estimate):
    return round(estimate["value"], 3)


def test_always_checkworthy_baselines_reproduce_table_3_of_the_paper(factcheck_project, django_capture_on_commit_callbacks):
    """Factcheck-Bench Table 3, "always checkworthy": subtask 1 over all 311 sentences (yes vs
    the rest), subtask 2 over all 678 claims (three categories in the gold)."""
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, handle, fmt="factcheck-bench", labels_as="gold")
    tasks = project_tasks(factcheck_project)
    assert len(tasks["checkworthiness"].units) == 311 and len(tasks["claim_category"].units) == 678
    assert len(tasks["stance4"].units) == 3305  # the released stance labels (README of the data)
    rows = {}
    for name in ("checkworthiness", "claim_category"):
        result = baselines(tasks[name], resamples=50)
        majority = result["majority"]["scores"]
        rows[name] = [three(majority["accuracy"]), *(three(majority["macro"][m]) for m in ("precision", "recall", "f1"))]
    assert rows["checkworthiness"] == [0.891, 0.445, 0.500, 0.471]
    assert rows["claim_category"] == [0.975, 0.325, 0.333, 0.329]
    assert baselines(tasks["checkworthiness"], resamples=0)["majority"]["title"] == "always yes"
    assert baselines(tasks["factuality"], resamples=0)["majority"]["title"] == "always true"


def bench_sentence(checkworthy="yes", claims=(("A is B.", "factual"),), stances=(("refute", "irrelevant"),),
                   factuality=(False,), needs_edit=("yes",)):
    texts = [t for t, _ in claims]
    return {
        "text": "A is B.", "decontext": "A is B.", "sentence_checkworthiness": checkworthy,
        "most_importance_sentence": "yes", "claims": texts, "claim_checkworthiness": [c for _, c in claims],
        "if_most_important_claim": ["yes"] * len(texts),
        "auto_evidence": [[f"passage {k}" for k in range(len(s))] for s in stances],
        "auto_evidence_url": [[f"https://e.org/{k}" for k in range(len(s))] for s in stances],
        "stance_claim_autoEvid": [list(s) for s in stances],
        "if_automatic_evidence_enough_to_verify": ["yes"] * len(texts), "human_evidence": ["NA"] * len(texts),
        "claims_factuality_label": list(factuality), "if_claim_needs_edit": list(needs_edit),
        "revised_claims": texts, "usedEvidence_index_in_revision": ["1"] * len(texts),
    }


def test_factcheck_tasks_are_keyed_like_the_exports(factcheck_project):
    line = {"id": "q7", "prompt": "p", "response": "A is B. C is D.", "sentences": {
        "sentence1": bench_sentence(claims=(("A is B.", "factual"), ("I like A.", "opinion")),
                                    stances=(("completely-support", "partially-support"), ()),
                                    factuality=(True, "unknown"), needs_edit=("no", "NA")),
        "sentence2": bench_sentence(checkworthy="opinion", claims=(), stances=(), factuality=(), needs_edit=()),
    }}
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    tasks = project_tasks(factcheck_project)
    units = {name: [(u.key, u.gold) for u in task.units] for name, task in tasks.items()}
    assert units["checkworthiness"] == [(("q7", "sentence1"), "yes"), (("q7", "sentence2"), "no")]
    assert units["claim_category"] == [(("q7", "sentence1", 0), "factual"), (("q7", "sentence1", 1), "opinion")]
    # only the verified claim (factual, of a checkworthy sentence) has stances and a factuality
    assert units["stance4"] == [(("q7", "sentence1", 0, 0), "completely-support"), (("q7", "sentence1", 0, 1), "partially-support")]
    assert [g for _, g in units["stance3"]] == ["support", "support"]
    assert units["factuality"] == [(("q7", "sentence1", 0), "true")]
    # predictions in the released vocabularies are brought to the task's: non-yes is no, 4 stances to 3
    result = score_task(tasks["checkworthiness"], {("q7", "sentence1"): "yes", ("q7", "sentence2"): "opinion"}, resamples=0)
    assert result["accuracy"]["value"] == 1.0 and result["missing"] == 0
    result = score_task(tasks["stance3"], {("q7", "sentence1", 0, 0): "partially-support"}, resamples=0)
    assert result["accuracy"]["value"] == 0.5 and result["missing"] == 1  # a missing prediction is wrong
    only = score_task(tasks["stance3"], {("q7", "sentence1", 0, 0): "support"}, resamples=0, only=[("q7", "sentence1", 0, 0)])
    assert only["units"] == 1 and only["accuracy"]["value"] == 1.0


def test_factuality_with_and_without_not_enough_evidence(factcheck_project):
    line = {"id": "f", "prompt": "p", "response": "A is B.", "sentences": {"sentence1": bench_sentence(
        claims=(("A.", "factual"), ("B.", "factual"), ("C.", "factual")), stances=(("refute",), ("irrelevant",), ("irrelevant",)),
        factuality=(False, True, "unknown"), needs_edit=("yes", "no", "not_enough_evidence"))}}
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    tasks = project_tasks(factcheck_project)
    assert [u.gold for u in tasks["factuality"].units] == ["false", "true", "not_enough_evidence"]
    assert [u.gold for u in tasks["factuality_without_nee"].units] == ["false", "true"]
    predictions = {("f", "sentence1", 0): "false", ("f", "sentence1", 1): "unknown", ("f", "sentence1", 2): "true"}
    full = score_task(tasks["factuality"], predictions, resamples=0)
    assert full["per_label"]["false"]["f1"]["value"] == 1.0 and full["per_label"]["true"]["f1"]["value"] == 0.0
    without = score_task(tasks["factuality_without_nee"], predictions, resamples=0)
    assert list(without["per_label"]) == ["false", "true"] and without["units"] == 2
    assert without["accuracy"]["value"] == 0.5 and without["per_label"]["true"]["recall"]["value"] == 0.0


def felm_line(index, labels):
    segments = [f"Segment {i}." for i in range(len(labels))]
    return {"index": index, "prompt": "p", "response": " ".join(segments), "segmented_response": segments,
            "labels": labels, "comment": ["" if ok else "wrong" for ok in labels],
            "type": [None if ok else "knowledge_error" for ok in labels], "ref": [], "source": "s"}


def test_felm_segment_and_response_level(felm_project):
    import_jsonl(felm_project, jsonl([felm_line("a", [True, False]), felm_line("b", [True, True, True])]),
                 fmt="felm", labels_as="gold")
    tasks = project_tasks(felm_project)
    assert [(u.key, u.gold) for u in tasks["segment"].units] == [
        (("a", 0), "correct"), (("a", 1), "error"), (("b", 0), "correct"), (("b", 1), "correct"), (("b", 2), "correct")]
    assert [(u.key, u.gold) for u in tasks["response"].units] == [(("a",), "error"), (("b",), "correct")]
    segments = {("a", 0): "error", ("a", 1): "error", ("b", 0): "correct", ("b", 1): "correct", ("b", 2): "correct"}
    seg = score_task(tasks["segment"], segments, resamples=20)
    assert seg["per_label"]["error"]["f1"]["value"] == pytest.approx(2 / 3)  # P 1/2, R 1
    assert seg["balanced_accuracy"]["value"] == pytest.approx((3 / 4 + 1) / 2)
    assert seg["items"] == 2 and seg["accuracy"]["low"] is not None
    responses = response_predictions(segments)
    assert responses == {("a",): "error", ("b",): "correct"}
    assert score_task(tasks["response"], responses, resamples=0)["accuracy"]["value"] == 1.0


def test_baselines_are_seeded_and_scored_on_every_unit(felm_project):
    import_jsonl(felm_project, jsonl([felm_line(str(i), [i % 3 != 0, True]) for i in range(12)]), fmt="felm", labels_as="gold")
    task = project_tasks(felm_project)["segment"]
    first = baselines(task, resamples=30, seed=4)
    assert first == baselines(task, resamples=30, seed=4)
    assert first["majority"]["title"] == "always correct"
    assert first["majority"]["scores"]["per_label"]["error"]["f1"]["value"] == 0.0
    assert first["random"]["scores"]["units"] == 24 and first["random"]["scores"]["missing"] == 0


def test_other_kinds_have_no_scoring_tasks_yet(users):
    from tests.conftest import project_with_team
    assert project_tasks(project_with_team(users, "D", "dfactscore")) == {}
