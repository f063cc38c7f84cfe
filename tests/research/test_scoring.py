"""annotation.research.scoring: tasks from a project's gold, keyed like the exports; baselines; Table 3;
subtask 5 (revision); D-FActScore per fact and per model; the machine pre-annotation as a system."""

import math
import random

import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_recall_fscore_support

from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.kinds.dfactscore import fact_support
from annotation.models import ItemStage
from annotation.research import selectors
from annotation.research.scoring import (
    MISSING,
    baselines,
    machine_predictions,
    project_tasks,
    response_predictions,
    score_task,
    task_definitions,
)
from pipeline.dfactscore_scores import released_lists
from tests.helpers.builders import jsonl
from tests.helpers.paths import shared_data_path
from tests.helpers.research import DFS_GOLD, bench_sentence, dfs_fact


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


def felm_line(index, labels):
    segments = [f"Segment {i}." for i in range(len(labels))]
    return {
        "index": index,
        "prompt": "p",
        "response": " ".join(segments),
        "segmented_response": segments,
        "labels": labels,
        "comment": ["" if ok else "wrong" for ok in labels],
        "type": [None if ok else "knowledge_error" for ok in labels],
        "ref": [],
        "source": "s",
    }


def test_felm_segment_and_response_level(felm_project):
    import_jsonl(
        felm_project,
        jsonl([felm_line("a", [True, False]), felm_line("b", [True, True, True])]),
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
        jsonl([felm_line(str(i), [i % 3 != 0, True]) for i in range(12)]),
        fmt="felm",
        labels_as="gold",
    )
    task = project_tasks(felm_project)["segment"]
    first = baselines(task, resamples=30, seed=4)
    assert first == baselines(task, resamples=30, seed=4)
    assert first["majority"]["title"] == "always correct"
    assert first["majority"]["scores"]["per_label"]["error"]["f1"]["value"] == 0.0
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


# -- D-FActScore --------------------------------------------------------------------------------------


def test_dfactscore_tasks_per_fact_as_the_papers_lists_count_them(dfs_project):
    tasks = project_tasks(dfs_project)
    assert set(tasks) == {"support", "global_support"}
    support, global_support = tasks["support"], tasks["global_support"]
    assert support.key_fields == ("item", "fact") and support.field == "supported"
    assert global_support.field == "global_supported"
    # the irrelevant fact A/3 is left out (the default setting)
    assert [(u.key, u.gold) for u in support.units] == [
        (("A", 0), "supported"),
        (("A", 1), "supported"),
        (("A", 2), "not_supported"),
        (("B", 0), "supported"),
        (("B", 1), "not_supported"),
        (("C", 0), "not_supported"),
    ]
    assert [u.gold for u in global_support.units] == [
        "supported",
        "not_supported",
        "not_supported",
        "supported",
        "not_supported",
        "supported",
    ]
    assert support.models == {"A": "m1", "B": "m1", "C": "m2", "D": "m1"}
    # the fact keys are the agreement export's ("fact": index) and the dfactscore export's list positions
    units = get_kind("dfactscore").agreement_unit_values(1, {}, {"gold": DFS_GOLD["A"]})
    assert sorted({ids["fact"] for ids, name, _ in units if name == "label"}) == [0, 1, 2, 3]
    assert support.accepts(True) and support.accepts("not_supported") and not support.accepts(1)
    dfs_project.pipeline_settings = {
        **dfs_project.pipeline_settings,
        "dfactscore": {"irrelevant": "not_supported"},
    }
    dfs_project.save()
    counted = project_tasks(dfs_project)["global_support"]
    assert (("A", 3), "not_supported") in [(u.key, u.gold) for u in counted.units]


def test_fact_support_follows_the_released_lists_rules_fact_by_fact():
    rng = random.Random(0)
    content = {"candidates": [{"title": "p0"}, {"title": "p1"}, {"title": ""}]}
    for _ in range(300):
        groups = [{"link": rng.choice([0, 1, 2, -1, "none", None, 7])} for _ in range(rng.randrange(4))]
        facts = [
            dfs_fact(
                rng.choice([*range(len(groups)), None, 9]),
                rng.choice(["supported", "not_supported", "irrelevant", None]),
                rng.choice(["supported", "not_supported", None]),
            )
            for _ in range(rng.randrange(6))
        ]
        payload = {"individuals": len(groups), "groups": groups, "facts": facts}
        for mode in ("exclude", "not_supported"):
            decisions, global_decisions = released_lists(content, payload, mode)
            ours = list(fact_support(content, payload, mode))
            assert [s for _, s, _ in ours] == [e["is_supported"] for e in decisions or []]
            assert [g for _, _, g in ours] == [e["is_supported"] for e in global_decisions or []]


def test_dfactscore_labels_scores_equal_scikit_learn_and_accept_booleans(dfs_project):
    task = project_tasks(dfs_project)["support"]
    predictions = {
        ("A", 0): True,
        ("A", 1): False,
        ("B", 0): "supported",
        ("B", 1): True,
        ("C", 0): False,
    }
    result = score_task(task, predictions, resamples=0)
    gold = [u.gold for u in task.units]
    predicted = [
        {True: "supported", False: "not_supported"}.get(predictions.get(u.key), predictions.get(u.key, MISSING))
        for u in task.units
    ]
    assert predicted[2] == MISSING and result["missing"] == 1
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(gold, predicted)) == pytest.approx(3 / 6)
    per_label = precision_recall_fscore_support(gold, predicted, labels=["not_supported", "supported"], zero_division=0)
    for i, label in enumerate(["not_supported", "supported"]):
        got = result["per_label"][label]
        assert [
            got["precision"]["value"],
            got["recall"]["value"],
            got["f1"]["value"],
            got["support"],
        ] == pytest.approx([per_label[0][i], per_label[1][i], per_label[2][i], per_label[3][i]])


def test_dfactscore_model_numbers_against_the_humans_by_hand(dfs_project):
    tasks = project_tasks(dfs_project)
    # FActScore: human A 2/3, B 1/2, C 0; system A 1/3 (A/2 missing: not supported), B 2/2, C 0
    support = score_task(
        tasks["support"],
        {("A", 0): True, ("A", 1): False, ("B", 0): "supported", ("B", 1): True, ("C", 0): False},
        resamples=0,
    )["paragraph_scores"]
    assert support["score"] == "factscore"
    assert support["paragraphs"] == [
        {
            "item": "A",
            "model": "m1",
            "facts": 3,
            "human": pytest.approx(2 / 3),
            "system": pytest.approx(1 / 3),
        },
        {"item": "B", "model": "m1", "facts": 2, "human": 0.5, "system": 1.0},
        {"item": "C", "model": "m2", "facts": 1, "human": 0.0, "system": 0.0},
        {"item": "D", "model": "m1", "facts": 0, "human": None, "system": None},
    ]
    m1, m2 = support["models"]
    assert m1["model"] == "m1" and m1["paragraphs"] == 3  # the abstention counts as a paragraph, not in the means
    assert m1["human"]["init_score"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m1["system"]["init_score"] == pytest.approx((1 / 3 + 1) / 2)
    assert m1["difference"]["init_score"] == pytest.approx(1 / 12)
    # FActScore's length penalty exp(1 - 10/n) for n ≤ 10 facts
    human = (math.exp(1 - 10 / 3) * 2 / 3 + math.exp(1 - 10 / 2) * 1 / 2) / 2
    system = (math.exp(1 - 10 / 3) * 1 / 3 + math.exp(1 - 10 / 2) * 1) / 2
    assert m1["human"]["score"] == pytest.approx(human) and m1["system"]["score"] == pytest.approx(system)
    assert m1["difference"]["score"] == pytest.approx(abs(human - system))
    assert m2["human"]["init_score"] == 0.0 and m2["difference"]["init_score"] == 0.0
    # D-FActScore: human A 1/3, B 1/2, C 1; system A 2/3, B 0, C 1
    grouped = score_task(
        tasks["global_support"],
        {
            ("A", 0): True,
            ("A", 1): True,
            ("A", 2): False,
            ("B", 0): False,
            ("B", 1): False,
            ("C", 0): True,
        },
        resamples=0,
    )["paragraph_scores"]
    m1 = grouped["models"][0]
    assert grouped["score"] == "dfactscore" and set(m1["human"]) == {
        "init_global_score",
        "global_score",
    }
    assert m1["human"]["init_global_score"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert m1["system"]["init_global_score"] == pytest.approx((2 / 3 + 0) / 2)
    assert m1["difference"]["init_global_score"] == pytest.approx(1 / 12)
    # the human numbers are the kind's own (the scores selector, the dfactscore-result export)
    kind_numbers = {m["model"]: m["human"] for m in selectors.consolidated_scores(dfs_project)["models"]}
    for model in grouped["models"]:
        assert model["human"]["init_global_score"] == pytest.approx(kind_numbers[model["model"]]["init_global_score"])
    for model in support["models"]:
        assert model["human"]["init_score"] == pytest.approx(kind_numbers[model["model"]]["init_score"])


def test_dfactscore_machine_predictions_and_baseline(dfs_project):
    stage = ItemStage.objects.get(item__project=dfs_project, item__external_id="A")
    stage.suggestion = {
        "groups": [[0, 1], [2, 3]],
        "links": [0, None],
        "support": [
            [{"candidate": 0, "supported": True}],
            [{"candidate": 0, "supported": False}, {"candidate": 1, "supported": True}],
            [],
            [],
        ],
        "labels": ["supported", "not_supported", "supported", "irrelevant"],
    }
    stage.save()
    machine = machine_predictions(dfs_project)
    # any page: f0 and f1 judged supported by some page; f2 not judged, so its group's (none); f3 irrelevant
    assert machine["support"] == {
        ("A", 0): "supported",
        ("A", 1): "supported",
        ("A", 2): "not_supported",
        ("A", 3): "not_supported",
    }
    assert machine["global_support"] == {
        ("A", 0): "supported",
        ("A", 1): "not_supported",
        ("A", 2): "not_supported",
        ("A", 3): "not_supported",
    }
    task = project_tasks(dfs_project)["support"]
    result = baselines(task, resamples=0, machine=machine["support"])
    assert set(result) == {"majority", "random", "machine"}
    assert result["machine"]["title"] == "the project's machine pre-annotation"
    assert result["machine"]["scores"]["missing"] == 3 and result["machine"]["scores"]["accuracy"]["value"] == 0.5
    assert "paragraph_scores" in result["machine"]["scores"]
    # another rater's answers in the same shape, for some items only
    other = machine_predictions(
        dfs_project,
        suggestion_of=lambda s: (
            {"groups": [[0]], "links": [0], "labels": ["supported"]} if s.item.external_id == "C" else None
        ),
    )
    assert other == {"support": {("C", 0): "supported"}, "global_support": {("C", 0): "supported"}}


# -- the machine pre-annotation of Factcheck-Bench and FELM ------------------------------------------


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
        jsonl([felm_line("a", [True, False]), felm_line("b", [True, True, True])]),
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
