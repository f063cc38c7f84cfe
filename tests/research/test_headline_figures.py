"""Each leaderboard leads with the figures its paper reports (issue 19): the task defines them
(scoring.Task.figures), the first ranks the systems, the others of its measure are a click away.
Values checked against scikit-learn."""

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, precision_recall_fscore_support

from annotation.research import scoring
from annotation.research.leaderboard import leaderboard, leaderboard_csv
from tests.helpers.research import make_run, system_lines

pytestmark = pytest.mark.django_db


def felm_lines(error_at, skip=lambda i, k: False):
    return [
        {"item": str(i), "segment": k, "label": "error" if error_at(i, k) else "correct"}
        for i in range(6)
        for k in range(3)
        if not skip(i, k)
    ]


# The gold (felm_gold): segment 1 of items 0 and 3 is an error, the 16 other segments correct.
# "eager" calls every segment 1 an error and leaves segments 0 and 2 of items 0-3 without a
# prediction: error F1 0.5, macro F1 0.45. "quiet" calls nothing an error: its error precision and
# F1 are undefined ("–", as FELM's code gives None), macro F1 0.47 (scikit-learn's zero_division=0).
EAGER = felm_lines(lambda i, k: k == 1, skip=lambda i, k: k != 1 and i < 4)
QUIET = felm_lines(lambda i, k: False)


def test_felm_leads_with_the_f1_of_detecting_errors_and_balanced_accuracy(felm_gold):  # noqa: F811
    eager = make_run(felm_gold, EAGER, system="eager", resamples=0)
    quiet = make_run(felm_gold, QUIET, system="quiet", resamples=0)
    board = leaderboard(felm_gold, "segment")
    assert [m["name"] for m in board["metrics"]] == [
        "per_label.error.f1",
        "per_label.error.precision",
        "per_label.error.recall",
        "balanced_accuracy",
    ]
    assert {"accuracy", "macro_f1"} <= {m["name"] for m in board["other_metrics"]}
    task = scoring.project_tasks(felm_gold)["segment"]
    gold_labels = [u.gold for u in task.units]
    by_system = {}
    for run, lines in ((eager, EAGER), (quiet, QUIET)):
        predicted_of = {(line["item"], line["segment"]): line["label"] for line in lines}
        predicted = [predicted_of.get(u.key, scoring.MISSING) for u in task.units]
        p, r, f, _ = precision_recall_fscore_support(gold_labels, predicted, labels=["error"], zero_division=np.nan)
        row = next(row for row in board["rows"] if row["run"] == run.id)
        expected_f1 = None if np.isnan(p[0]) or np.isnan(r[0]) else pytest.approx(f[0])
        assert row["metrics"]["per_label.error.f1"]["value"] == expected_f1
        assert row["metrics"]["per_label.error.precision"]["value"] == (None if np.isnan(p[0]) else pytest.approx(p[0]))
        assert row["metrics"]["per_label.error.recall"]["value"] == pytest.approx(r[0])
        assert row["metrics"]["balanced_accuracy"]["value"] == pytest.approx(
            balanced_accuracy_score(gold_labels, predicted)
        )
        by_system[run.system] = (
            row["metrics"]["per_label.error.f1"]["value"],
            run.scores["segment"]["macro"]["f1"]["value"],
        )
    assert by_system["eager"][0] == pytest.approx(0.5) and by_system["quiet"][0] is None
    # macro F1 orders them the other way: the ranking is the error class's F1
    assert by_system["eager"][1] < by_system["quiet"][1]
    assert [row["system"] for row in board["rows"] if row["kind"] == "system"] == ["eager", "quiet"]
    assert board["reference"] == eager.id
    header = next(leaderboard_csv(board)).strip().split(",")
    assert header[11:14] == [
        "per_label.error.f1",
        "per_label.error.f1_low",
        "per_label.error.f1_high",
    ]
    assert "macro_f1" in header  # the other figures are in the download too


def test_the_response_level_has_the_same_headline(felm_gold):  # noqa: F811
    lines = felm_lines(lambda i, k: k == 1 and i % 2 == 0)
    lines += [{"item": str(i), "response_label": "error" if i % 2 == 0 else "correct"} for i in range(6)]
    make_run(felm_gold, lines, resamples=0)
    board = leaderboard(felm_gold, "response")
    assert board["metrics"][0]["name"] == "per_label.error.f1"
    task = scoring.project_tasks(felm_gold)["response"]
    gold_labels = [u.gold for u in task.units]
    predicted = ["error" if int(u.key[0]) % 2 == 0 else "correct" for u in task.units]
    p, r, f, _ = precision_recall_fscore_support(gold_labels, predicted, labels=["error"], zero_division=0)
    assert board["rows"][0]["metrics"]["per_label.error.f1"]["value"] == pytest.approx(f[0])


def test_factcheck_subtasks_lead_with_accuracy_and_macro_and_claim_factuality_with_each_class(gold):  # noqa: F811
    run = make_run(gold, system_lines(wrong_every=3), resamples=0)
    board = leaderboard(gold, "claim_category")
    assert [m["name"] for m in board["metrics"]] == [
        "accuracy",
        "macro_precision",
        "macro_recall",
        "macro_f1",
    ]
    factuality = leaderboard(gold, "factuality")
    assert [m["name"] for m in factuality["metrics"]] == [
        "per_label.false.f1",
        "per_label.false.precision",
        "per_label.false.recall",
        "per_label.true.f1",
        "per_label.true.precision",
        "per_label.true.recall",
    ]
    task = scoring.project_tasks(gold)["factuality"]
    predicted_of = {
        (line["item"], line["sentence"], line["claim"]): line["factuality"]
        for line in system_lines(wrong_every=3)
        if "factuality" in line
    }
    gold_labels = [u.gold for u in task.units]
    predicted = [predicted_of.get(u.key, scoring.MISSING) for u in task.units]
    p, r, f, _ = precision_recall_fscore_support(gold_labels, predicted, labels=["false", "true"], zero_division=0)
    row = factuality["rows"][0]
    assert row["run"] == run.id
    for i, label in enumerate(("false", "true")):
        assert row["metrics"][f"per_label.{label}.f1"]["value"] == pytest.approx(f[i])
        assert row["metrics"][f"per_label.{label}.precision"]["value"] == pytest.approx(p[i])
        assert row["metrics"][f"per_label.{label}.recall"]["value"] == pytest.approx(r[i])


def test_dfactscore_ranks_by_how_close_the_per_model_score_is_to_the_humans(dfs_project):  # noqa: F811
    # human FActScore: m1 (2/3 + 1/2) / 2, m2 0 (tests/research/test_scoring_dfactscore.py)
    close = make_run(
        dfs_project,
        [
            {"item": "A", "fact": 0, "supported": True},
            {"item": "A", "fact": 1, "supported": True},
            {"item": "A", "fact": 2, "supported": False},
            {"item": "B", "fact": 0, "supported": True},
            {"item": "B", "fact": 1, "supported": False},
            {"item": "C", "fact": 0, "supported": False},
        ],
        system="close",
        resamples=0,
    )
    far = make_run(
        dfs_project,
        [{"item": "A", "fact": k, "supported": True} for k in range(3)]
        + [{"item": "B", "fact": k, "supported": True} for k in range(2)]
        + [{"item": "C", "fact": 0, "supported": True}],
        system="far",
        resamples=0,
    )
    board = leaderboard(dfs_project, "support")
    assert board["metrics"][0]["name"] == "paragraph_scores.mean_difference"
    assert board["metrics"][0]["higher_is_better"] is False
    rows = {row["system"]: row for row in board["rows"] if row["kind"] == "system"}
    models = {m["model"]: m for m in far.scores["support"]["paragraph_scores"]["models"]}
    expected = (models["m1"]["difference"]["init_score"] + models["m2"]["difference"]["init_score"]) / 2
    assert rows["far"]["metrics"]["paragraph_scores.mean_difference"]["value"] == pytest.approx(expected)
    assert rows["close"]["metrics"]["paragraph_scores.mean_difference"]["value"] == pytest.approx(0.0)
    assert [row["system"] for row in board["rows"] if row["kind"] == "system"] == ["close", "far"]
    assert board["reference"] == close.id
    # the per-model FActScore itself stays beside it
    assert {m["model"] for m in rows["far"]["models"]} == {"m1", "m2"}


def test_each_task_defines_its_headline_figures():
    for kind in ("factcheck", "felm", "dfactscore"):
        for task in scoring.task_definitions(kind).values():
            assert task.figures, task.name
    assert scoring.task_definitions("factcheck")["revision"].figures[0].name == "against_gold.word_overlap"
