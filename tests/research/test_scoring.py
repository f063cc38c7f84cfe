"""annotation.research.scoring: tasks from a project's gold, keyed like the exports; baselines; Table 3;
subtask 5 (revision); the tasks every kind defines."""

import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_recall_fscore_support

from annotation.imports.items import import_jsonl
from annotation.models import ItemStage
from annotation.research.scoring import (
    MISSING,
    baselines,
    project_tasks,
    response_predictions,
    score_task,
    task_definitions,
)
from tests.helpers.builders import jsonl
from tests.helpers.paths import shared_data_path
from tests.helpers.research import bench_sentence, felm_gold_line


def three(estimate):
    return round(estimate["value"], 3)


def test_always_checkworthy_baselines_reproduce_table_3_of_the_paper(
    factcheck_project, django_capture_on_commit_callbacks
):
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
        rows[name] = [
            three(majority["accuracy"]),
            *(three(majority["macro"][m]) for m in ("precision", "recall", "f1")),
        ]
    assert rows["checkworthiness"] == [0.891, 0.445, 0.500, 0.471]
    assert rows["claim_category"] == [0.975, 0.325, 0.333, 0.329]
    assert baselines(tasks["checkworthiness"], resamples=0)["majority"]["title"] == "always yes"
    assert baselines(tasks["factuality"], resamples=0)["majority"]["title"] == "always true"


def test_factcheck_tasks_are_keyed_like_the_exports(factcheck_project):
    line = {
        "id": "q7",
        "prompt": "p",
        "response": "A is B. C is D.",
        "sentences": {
            "sentence1": bench_sentence(
                claims=(("A is B.", "factual"), ("I like A.", "opinion")),
                stances=(("completely-support", "partially-support"), ()),
                factuality=(True, "unknown"),
                needs_edit=("no", "NA"),
            ),
            "sentence2": bench_sentence(checkworthy="opinion", claims=(), stances=(), factuality=(), needs_edit=()),
        },
    }
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    tasks = project_tasks(factcheck_project)
    units = {name: [(u.key, u.gold) for u in task.units] for name, task in tasks.items()}
    assert units["checkworthiness"] == [(("q7", "sentence1"), "yes"), (("q7", "sentence2"), "no")]
    assert units["claim_category"] == [
        (("q7", "sentence1", 0), "factual"),
        (("q7", "sentence1", 1), "opinion"),
    ]
    # only the verified claim (factual, of a checkworthy sentence) has stances and a factuality
    assert units["stance4"] == [
        (("q7", "sentence1", 0, 0), "completely-support"),
        (("q7", "sentence1", 0, 1), "partially-support"),
    ]
    assert [g for _, g in units["stance3"]] == ["support", "support"]
    assert units["factuality"] == [(("q7", "sentence1", 0), "true")]
    # predictions in the released vocabularies are brought to the task's: non-yes is no, 4 stances to 3
    result = score_task(
        tasks["checkworthiness"],
        {("q7", "sentence1"): "yes", ("q7", "sentence2"): "opinion"},
        resamples=0,
    )
    assert result["accuracy"]["value"] == 1.0 and result["missing"] == 0
    result = score_task(tasks["stance3"], {("q7", "sentence1", 0, 0): "partially-support"}, resamples=0)
    assert result["accuracy"]["value"] == 0.5 and result["missing"] == 1  # a missing prediction is wrong
    only = score_task(
        tasks["stance3"],
        {("q7", "sentence1", 0, 0): "support"},
        resamples=0,
        only=[("q7", "sentence1", 0, 0)],
    )
    assert only["units"] == 1 and only["accuracy"]["value"] == 1.0


def test_factuality_with_and_without_not_enough_evidence(factcheck_project):
    line = {
        "id": "f",
        "prompt": "p",
        "response": "A is B.",
        "sentences": {
            "sentence1": bench_sentence(
                claims=(("A.", "factual"), ("B.", "factual"), ("C.", "factual")),
                stances=(("refute",), ("irrelevant",), ("irrelevant",)),
                factuality=(False, True, "unknown"),
                needs_edit=("yes", "no", "not_enough_evidence"),
            )
        },
    }
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    tasks = project_tasks(factcheck_project)
    assert [u.gold for u in tasks["factuality"].units] == ["false", "true", "not_enough_evidence"]
    assert [u.gold for u in tasks["factuality_without_nee"].units] == ["false", "true"]
    predictions = {
        ("f", "sentence1", 0): "false",
        ("f", "sentence1", 1): "unknown",
        ("f", "sentence1", 2): "true",
    }
    full = score_task(tasks["factuality"], predictions, resamples=0)
    assert full["per_label"]["false"]["f1"]["value"] == 1.0 and full["per_label"]["true"]["f1"]["value"] == 0.0
    without = score_task(tasks["factuality_without_nee"], predictions, resamples=0)
    assert list(without["per_label"]) == ["false", "true"] and without["units"] == 2
    assert without["accuracy"]["value"] == 0.5 and without["per_label"]["true"]["recall"]["value"] == 0.0


def test_felm_segment_and_response_level(felm_project):
    import_jsonl(
        felm_project,
        jsonl([felm_gold_line("a", [True, False]), felm_gold_line("b", [True, True, True])]),
        fmt="felm",
        labels_as="gold",
    )
    tasks = project_tasks(felm_project)
    assert [(u.key, u.gold) for u in tasks["segment"].units] == [
        (("a", 0), "correct"),
        (("a", 1), "error"),
        (("b", 0), "correct"),
        (("b", 1), "correct"),
        (("b", 2), "correct"),
    ]
    assert [(u.key, u.gold) for u in tasks["response"].units] == [
        (("a",), "error"),
        (("b",), "correct"),
    ]
    segments = {
        ("a", 0): "error",
        ("a", 1): "error",
        ("b", 0): "correct",
        ("b", 1): "correct",
        ("b", 2): "correct",
    }
    seg = score_task(tasks["segment"], segments, resamples=20)
    assert seg["per_label"]["error"]["f1"]["value"] == pytest.approx(2 / 3)  # P 1/2, R 1
    assert seg["balanced_accuracy"]["value"] == pytest.approx((3 / 4 + 1) / 2)
    assert seg["items"] == 2 and seg["accuracy"]["low"] is not None
    responses = response_predictions(segments)
    assert responses == {("a",): "error", ("b",): "correct"}
    assert score_task(tasks["response"], responses, resamples=0)["accuracy"]["value"] == 1.0


def test_baselines_are_seeded_and_scored_on_every_unit(felm_project):
    import_jsonl(
        felm_project,
        jsonl([felm_gold_line(str(i), [i % 3 != 0, True]) for i in range(12)]),
        fmt="felm",
        labels_as="gold",
    )
    task = project_tasks(felm_project)["segment"]
    first = baselines(task, resamples=30, seed=4)
    assert first == baselines(task, resamples=30, seed=4)
    assert first["majority"]["title"] == "always correct"
    # no error predicted: precision and F1 of errors are undefined (FELM's code gives None), recall 0
    error = first["majority"]["scores"]["per_label"]["error"]
    assert (error["precision"]["value"], error["f1"]["value"], error["recall"]["value"]) == (None, None, 0.0)
    assert error["f1"]["low"] is None and error["f1"]["high"] is None
    assert first["random"]["scores"]["units"] == 24 and first["random"]["scores"]["missing"] == 0


# -- a missing prediction is wrong but no label -----------------------------------------------------


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_missing_predictions_count_as_wrong_but_stay_out_of_the_macro_average(factcheck_project):
    """claim_category takes its labels from the data: a unit without a prediction is a miss
    (accuracy, recall) but "(no prediction)" is no label of the per-label and macro figures,
    as scikit-learn's with labels= the gold's and the real predictions'."""
    sentences = {
        f"sentence{i + 1}": bench_sentence(
            claims=claims,
            stances=((),) * len(claims),
            factuality=("NA",) * len(claims),
            needs_edit=("NA",) * len(claims),
        )
        for i, claims in enumerate(
            [
                (("A.", "factual"), ("B.", "opinion"), ("C.", "factual")),
                (("D.", "not_a_claim"), ("E.", "factual")),
            ]
        )
    }
    for sentence in sentences.values():  # no claim is verified: step 2 carries nothing
        for key in ("auto_evidence", "auto_evidence_url", "stance_claim_autoEvid"):
            sentence[key] = [[] for _ in sentence["claims"]]
    import_jsonl(
        factcheck_project,
        jsonl([{"id": "x", "prompt": "p", "response": "r", "sentences": sentences}]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    task = project_tasks(factcheck_project)["claim_category"]
    assert [u.gold for u in task.units] == [
        "factual",
        "opinion",
        "factual",
        "not_a_claim",
        "factual",
    ]
    predictions = {
        ("x", "sentence1", 0): "factual",
        ("x", "sentence1", 1): "factual",
        ("x", "sentence2", 1): "opinion",
    }
    result = score_task(task, predictions, resamples=0)
    gold = [u.gold for u in task.units]
    predicted = [predictions.get(u.key, MISSING) for u in task.units]
    labels = ["factual", "not_a_claim", "opinion"]  # gold ∪ predictions made
    assert result["labels"] == labels and MISSING not in result["per_label"] and result["missing"] == 2
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(gold, predicted)) == pytest.approx(1 / 5)
    assert result["balanced_accuracy"]["value"] == pytest.approx(balanced_accuracy_score(gold, predicted))
    macro = precision_recall_fscore_support(gold, predicted, labels=labels, average="macro", zero_division=0)
    assert [result["macro"][m]["value"] for m in ("precision", "recall", "f1")] == pytest.approx(macro[:3])
    # the old behaviour (MISSING a fourth label) would average over four labels
    four = precision_recall_fscore_support(gold, predicted, average="macro", zero_division=0)
    assert result["macro"]["recall"]["value"] != pytest.approx(four[1])


# -- subtask 5: revision -----------------------------------------------------------------------------


def revision_line(item, original, revised):
    sentence = bench_sentence(claims=(("X is Y.", "factual"),), stances=(("refute",),), factuality=(False,))
    sentence["text"] = original
    return {
        "id": item,
        "prompt": "p",
        "response": original,
        "revised_response": revised,
        "sentences": {"sentence1": sentence},
    }


def test_revision_against_the_original_and_the_gold_revision_by_hand(factcheck_project):
    import_jsonl(
        factcheck_project,
        jsonl([revision_line("r1", "the cat sat", "the dog sat"), revision_line("r2", "a b", "a c")]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    task = project_tasks(factcheck_project)["revision"]
    assert task.measure == "revision" and task.key_fields == ("item",) and task.field == "revised_response"
    assert [(u.key, u.gold, u.original) for u in task.units] == [
        (("r1",), "the dog sat", "the cat sat"),
        (("r2",), "a c", "a b"),
    ]
    result = score_task(task, {("r1",): "the dog sat"}, resamples=0)  # r2 missing: an empty text
    assert result["measure"] == "revision" and result["units"] == 2 and result["missing"] == 1
    # r1: "the dog sat" vs "the cat sat": 3 edits of 11 characters, "the" and "sat" of the 3 words;
    # r2 (empty): distance 1, overlap 0 against both (the paper's measures: pipeline.text_measures)
    assert result["against_original"]["normalised_edit_distance"]["value"] == pytest.approx((3 / 11 + 1) / 2)
    assert result["against_original"]["word_overlap"]["value"] == pytest.approx((2 / 3 + 0) / 2)
    assert result["against_gold"]["normalised_edit_distance"]["value"] == pytest.approx((0 + 1) / 2)
    assert result["against_gold"]["word_overlap"]["value"] == pytest.approx((1 + 0) / 2)
    assert result["against_gold"]["word_overlap"]["low"] is None

    unchanged = baselines(task, resamples=0)
    assert set(unchanged) == {"majority"} and unchanged["majority"]["title"] == "unchanged response (the original)"
    scores = unchanged["majority"]["scores"]
    assert scores["against_original"]["normalised_edit_distance"]["value"] == 0.0
    assert scores["against_original"]["word_overlap"]["value"] == 1.0
    # r1 as above; r2 "a b" vs "a c": 1 edit of 3 characters, "a" of the 2 words
    assert scores["against_gold"]["normalised_edit_distance"]["value"] == pytest.approx((3 / 11 + 1 / 3) / 2)
    assert scores["against_gold"]["word_overlap"]["value"] == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_the_gold_revisions_of_the_false_responses_score_the_papers_figures(
    factcheck_project, django_capture_on_commit_callbacks
):
    """Issue 19: the released file imported as gold, its gold revisions scored as a system on the
    61 responses the paper counts as false: against the original, the paper's normalised edit
    distance 0.354 and word overlap 0.715 (Wang et al.)."""
    from annotation.kinds.factcheck.step3 import (
        derived_labels,  # the paper's rule for a false response
    )

    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, handle, fmt="factcheck-bench", labels_as="gold")
    task = project_tasks(factcheck_project)["revision"]
    false_items = set()
    for stage in ItemStage.objects.filter(item__project=factcheck_project, stage=3).select_related("item"):
        stages = {s.stage: s for s in stage.item.stages.select_related("gold")}
        labels = derived_labels(stages[1].gold.payload, stages[2].content, stages[2].gold.payload)
        if labels["response"] is False:
            false_items.add(stage.item.external_id or str(stage.item_id))
    assert len(false_items) == 61
    result = score_task(task, {u.key: u.gold for u in task.units}, resamples=0, only=[(key,) for key in false_items])
    assert result["units"] == 61
    against = result["against_original"]
    assert round(against["normalised_edit_distance"]["value"], 3) == 0.354
    assert round(against["word_overlap"]["value"], 3) == 0.715


def test_revision_intervals_resample_items_and_are_seeded(factcheck_project):
    lines = [
        revision_line(f"r{i}", f"word{i} stays here", f"word{i} {'stays' if i % 3 else 'moved'} here")
        for i in range(12)
    ]
    import_jsonl(factcheck_project, jsonl(lines), fmt="factcheck-bench", labels_as="gold")
    task = project_tasks(factcheck_project)["revision"]
    predictions = {u.key: u.original for u in task.units[:8]}
    first = score_task(task, predictions, resamples=200, seed=3)
    assert first == score_task(task, predictions, resamples=200, seed=3) and first["resamples"] == 200
    for side in ("against_original", "against_gold"):
        for estimate in first[side].values():
            assert estimate["low"] <= estimate["value"] <= estimate["high"]
    assert first["against_gold"]["word_overlap"]["low"] < first["against_gold"]["word_overlap"]["high"]
    only = score_task(task, predictions, resamples=0, only=[("r0",), ("r1",)])
    assert only["units"] == 2 and only["missing"] == 0


def test_every_kind_defines_its_tasks():
    assert set(task_definitions("factcheck")) == {
        "checkworthiness",
        "claim_category",
        "stance4",
        "stance3",
        "factuality",
        "factuality_without_nee",
        "revision",
    }
    assert set(task_definitions("felm")) == {"segment", "response"}
    assert set(task_definitions("dfactscore")) == {"support", "global_support"}
    assert all(not task.units for task in task_definitions("factcheck").values())
    revision = task_definitions("factcheck")["revision"]
    assert revision.accepts("any text") and not revision.accepts(None)
    assert task_definitions("factcheck")["stance3"].accepts("support")
    assert not task_definitions("felm")["segment"].accepts(True)
