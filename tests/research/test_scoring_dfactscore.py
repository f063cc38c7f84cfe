"""annotation.research.scoring for D-FActScore: the support tasks per fact, the per-paragraph and
per-model scores against the humans, the machine pre-annotation as a baseline."""

import math
import random

import pytest
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from annotation.kinds import get_kind
from annotation.kinds.dfactscore import fact_support
from annotation.models import ItemStage
from annotation.research import selectors
from annotation.research.scoring import (
    MISSING,
    baselines,
    machine_predictions,
    project_tasks,
    score_task,
)
from pipeline.dfactscore_scores import released_lists
from tests.helpers.research import DFS_GOLD, dfs_fact


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
