"""The leaderboard's Δ columns (issue 21.8): every difference is the difference of the values the
table shows, and its interval is the paired bootstrap one, both computed here independently
(scikit-learn's macro F1 on the same resampled items) from the predictions."""

import numpy as np
import pytest

from annotation.research import scoring
from annotation.research.leaderboard import leaderboard
from tests.helpers.research import ITEMS, RESAMPLES, lines_with_an_extra_label, make_run, read

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(gold):  # noqa: F811
    lines = lines_with_an_extra_label()
    return make_run(gold, lines, system="checker", resamples=RESAMPLES), lines


def test_every_delta_is_the_difference_of_the_shown_values(gold, scored):  # noqa: F811
    checked = 0
    for task in (t["name"] for t in leaderboard(gold)["tasks"]):
        board = leaderboard(gold, task)
        reference = next(r for r in board["rows"] if r["reference"])
        for row in board["rows"]:
            for entry in board["differences"]:
                if row["difference"] is None or entry["name"] not in row["difference"]:
                    continue
                shown = row["metrics"][entry["name"]]["value"] - reference["metrics"][entry["name"]]["value"]
                delta = row["difference"][entry["name"]]
                assert delta["value"] == pytest.approx(shown, abs=1e-9), (
                    task,
                    row["label"],
                    entry["name"],
                )
                assert delta["low"] <= delta["value"] <= delta["high"], (
                    task,
                    row["label"],
                    entry["name"],
                )
                checked += 1
    assert checked >= 20


def macro_f1(gold_labels, predicted, labels):
    from sklearn.metrics import f1_score  # heavy: only this test needs it

    return f1_score(gold_labels, predicted, labels=labels, average="macro", zero_division=0)


def test_the_baselines_delta_and_its_paired_interval_computed_independently(gold, scored):  # noqa: F811
    from pipeline.scoring import bootstrap_indices

    run, lines = scored
    name = "stance4"
    task = scoring.project_tasks(gold)[name]
    mine = read(gold, lines).by_task[name]
    baseline = scoring.baseline_predictions(task, 0)["majority"][1]
    units = task.units
    gold_labels = [u.gold for u in units]
    predicted = {
        "system": [task.normalise(mine[u.key]) if u.key in mine else scoring.MISSING for u in units],
        "baseline": [task.normalise(baseline[u.key]) for u in units],
    }
    # each side over the gold's labels and its own predicted ones, as its score is shown
    labels = {
        side: sorted(set(gold_labels) | {p for p in values if p != scoring.MISSING})
        for side, values in predicted.items()
    }
    assert labels["system"] != labels["baseline"]  # the case the Δ got wrong
    point = macro_f1(gold_labels, predicted["baseline"], labels["baseline"]) - macro_f1(
        gold_labels, predicted["system"], labels["system"]
    )

    items = sorted({u.item for u in units}, key=[u.item for u in units].index)
    rows_of = {item: [k for k, u in enumerate(units) if u.item == item] for item in items}
    draws = []
    for drawn in bootstrap_indices(len(items), RESAMPLES, 0):
        picked = [k for i in drawn for k in rows_of[items[i]]]
        g = [gold_labels[k] for k in picked]
        draws.append(
            macro_f1(g, [predicted["baseline"][k] for k in picked], labels["baseline"])
            - macro_f1(g, [predicted["system"][k] for k in picked], labels["system"])
        )
    low, high = np.percentile(draws, [2.5, 97.5])

    board = leaderboard(gold, name)
    assert board["reference"] == run.id
    row = next(r for r in board["rows"] if r["baseline"] == "majority")
    delta = row["difference"]["macro_f1"]
    assert delta["value"] == pytest.approx(point)
    assert (delta["low"], delta["high"]) == pytest.approx((low, high))
    assert ITEMS == len(items)
