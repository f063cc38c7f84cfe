"""pipeline.scoring: metrics equal scikit-learn's, bootstrap CIs equal a plain bootstrap, baselines."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    classification_report,
    precision_recall_fscore_support,
)

from pipeline.scoring import (
    Scored,
    bootstrap_indices,
    constant_predictions,
    difference,
    majority_label,
    mean_with_ci,
    means_with_ci,
    random_predictions,
    resample_weights,
    score,
)

LABELS = ("false", "not_enough_evidence", "true", "other")


def random_units(seed, units=400, items=80, gold_p=(0.5, 0.3, 0.15, 0.05), predicted=LABELS[:3]):
    rng = np.random.default_rng(seed)
    gold = rng.choice(LABELS, units, p=gold_p)
    pred = rng.choice(predicted, units)
    item = rng.integers(0, items, units)
    return (
        [Scored(int(i), str(g), str(p)) for i, g, p in zip(item, gold, pred)],
        list(gold),
        list(pred),
    )


@pytest.mark.parametrize("seed", range(5))
def test_point_scores_equal_scikit_learn_on_random_data(seed):
    # a gold label never predicted ("other") and, in some seeds, one rare: zero_division matters
    units, gold, pred = random_units(seed, units=50 + 70 * seed)
    result = score(units, resamples=0)
    labels = sorted(set(gold) | set(pred))
    assert result["labels"] == labels
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(gold, pred))
    assert result["balanced_accuracy"]["value"] == pytest.approx(balanced_accuracy_score(gold, pred))
    macro = precision_recall_fscore_support(gold, pred, average="macro", zero_division=0)
    assert [result["macro"][m]["value"] for m in ("precision", "recall", "f1")] == pytest.approx(macro[:3])
    # per label: a figure that divides by zero is None (scikit-learn's zero_division=nan), and F1,
    # the harmonic mean of P and R, is None where either is (scikit-learn counts it 0 then)
    per_label = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=np.nan)
    report = classification_report(gold, pred, labels=labels, zero_division=0, output_dict=True)

    def defined(value, *also):
        return None if any(np.isnan(v) for v in (value, *also)) else pytest.approx(value)

    for i, label in enumerate(labels):
        ours = result["per_label"][label]
        p, r, f, support = (column[i] for column in per_label)
        assert [
            ours["precision"]["value"],
            ours["recall"]["value"],
            ours["f1"]["value"],
            ours["support"],
        ] == [defined(p), defined(r), defined(f, p, r), support]
        if ours["f1"]["value"] is not None:
            assert ours["f1"]["value"] == pytest.approx(report[label]["f1-score"])
    assert result["per_label"]["other"]["precision"]["value"] is None  # never predicted
    assert result["macro"]["f1"]["value"] == pytest.approx(report["macro avg"]["f1-score"])
    assert result["accuracy"]["low"] is None and result["accuracy"]["high"] is None


def test_given_labels_restrict_per_label_and_macro_like_scikit_learn():
    units, gold, pred = random_units(7)
    result = score(units, labels=["true", "false"], resamples=0)
    assert list(result["per_label"]) == ["true", "false"]
    macro = precision_recall_fscore_support(gold, pred, labels=["true", "false"], average="macro", zero_division=0)
    assert [result["macro"][m]["value"] for m in ("precision", "recall", "f1")] == pytest.approx(macro[:3])
    # accuracy and balanced accuracy are over every unit, as scikit-learn's (they take no labels)
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(gold, pred))
    assert result["balanced_accuracy"]["value"] == pytest.approx(balanced_accuracy_score(gold, pred))
    with pytest.raises(ValueError, match="repeat"):
        score(units, labels=["true", "true"])


def test_bootstrap_intervals_equal_a_plain_bootstrap_over_items():
    """Resample items (all units of a drawn item, as often as it is drawn), recompute with
    scikit-learn, take the percentiles: the same as the vectorised intervals."""
    units, _, _ = random_units(3, units=300, items=40)
    resamples, seed = 200, 11
    result = score(units, resamples=resamples, seed=seed)
    labels = result["labels"]
    items = list(dict.fromkeys(u.item for u in units))
    by_item = {item: [u for u in units if u.item == item] for item in items}
    draws = {"accuracy": [], "balanced": [], "macro_f1": [], "f1_true": [], "precision_false": []}
    for drawn in bootstrap_indices(len(items), resamples, seed):
        sample = [u for i in drawn for u in by_item[items[i]]]
        gold, pred = [u.gold for u in sample], [u.predicted for u in sample]
        draws["accuracy"].append(accuracy_score(gold, pred))
        with warnings.catch_warnings():  # a resample without some gold label: scikit-learn warns
            warnings.simplefilter("ignore")
            draws["balanced"].append(balanced_accuracy_score(gold, pred))
        draws["macro_f1"].append(
            precision_recall_fscore_support(gold, pred, labels=labels, average="macro", zero_division=0)[2]
        )
        p, _, f, _ = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
        draws["f1_true"].append(f[labels.index("true")])
        draws["precision_false"].append(p[labels.index("false")])
    expected = {key: np.percentile(values, [2.5, 97.5]) for key, values in draws.items()}
    got = {
        "accuracy": result["accuracy"],
        "balanced": result["balanced_accuracy"],
        "macro_f1": result["macro"]["f1"],
        "f1_true": result["per_label"]["true"]["f1"],
        "precision_false": result["per_label"]["false"]["precision"],
    }
    for key, estimate in got.items():
        assert [estimate["low"], estimate["high"]] == pytest.approx(list(expected[key])), key
        assert estimate["low"] <= estimate["value"] <= estimate["high"]


def test_bootstrap_is_seeded_and_resamples_is_a_parameter():
    units, _, _ = random_units(4)
    first = score(units, resamples=100, seed=1)
    assert score(units, resamples=100, seed=1) == first
    assert score(units, resamples=100, seed=2)["accuracy"] != first["accuracy"]
    assert first["resamples"] == 100
    none = score(units, resamples=0)
    assert none["accuracy"]["low"] is None and none["accuracy"]["value"] == first["accuracy"]["value"]
    with pytest.raises(ValueError):
        score(units, resamples=-1)
    with pytest.raises(ValueError, match="no units"):
        score([])


def test_resample_weights_count_the_drawn_items_in_chunks():
    weights = np.concatenate(list(resample_weights(7, 10, seed=5, chunk=3)))
    drawn = bootstrap_indices(7, 10, seed=5, chunk=3)
    assert weights.shape == (10, 7) and (weights.sum(axis=1) == 7).all()
    for row, indices in zip(weights, drawn):
        assert list(row) == list(np.bincount(indices, minlength=7))


def test_baselines():
    gold = ["yes"] * 5 + ["no"] * 3 + ["maybe"] * 3
    assert majority_label(gold) == "yes"
    assert majority_label(["b", "a", "a", "b"]) == "a"  # a tie: the first in sorted order
    assert constant_predictions(gold, "yes") == ["yes"] * 11
    many = ["true"] * 700 + ["false"] * 300
    drawn = random_predictions(many, seed=3)
    assert drawn == random_predictions(many, seed=3) and drawn != random_predictions(many, seed=4)
    assert set(drawn) == {"true", "false"} and 0.65 < drawn.count("true") / len(drawn) < 0.75
    with pytest.raises(ValueError):
        majority_label([])


def test_difference_is_a_paired_bootstrap_over_the_same_items():
    """The CI of system A minus system B equals a direct bootstrap that scores both systems on
    the same drawn items; the point value is the difference of the two scores."""
    rng = np.random.default_rng(5)
    items = [i // 3 for i in range(300)]
    gold = rng.choice(["a", "b", "c"], 300)
    noise = rng.choice(["a", "b", "c"], 300)
    first_pred = np.where(rng.random(300) < 0.7, gold, noise)
    second_pred = np.where(rng.random(300) < 0.5, gold, noise)
    first = [Scored(i, g, p) for i, g, p in zip(items, gold, first_pred)]
    second = [Scored(i, g, p) for i, g, p in zip(items, gold, second_pred)]
    result = difference(first, second, resamples=200, seed=3)
    assert result["accuracy"]["value"] == pytest.approx(
        accuracy_score(gold, first_pred) - accuracy_score(gold, second_pred)
    )
    units_of: dict[int, list[int]] = {}
    for k, item in enumerate(items):
        units_of.setdefault(item, []).append(k)
    draws = []
    for drawn in bootstrap_indices(100, 200, seed=3):
        ks = [k for item in drawn for k in units_of[item]]
        macro = [
            precision_recall_fscore_support(
                gold[ks], pred[ks], labels=["a", "b", "c"], average="macro", zero_division=0
            )[2]
            for pred in (first_pred, second_pred)
        ]
        draws.append(macro[0] - macro[1])
    low, high = np.percentile(draws, [2.5, 97.5])
    assert result["macro_f1"]["low"] == pytest.approx(low) and result["macro_f1"]["high"] == pytest.approx(high)
    assert result["macro_f1"]["low"] > 0  # A is clearly better here
    with pytest.raises(ValueError):
        difference(first, second[:-1], resamples=0)


def test_mean_with_ci_equals_a_plain_bootstrap_over_items():
    """Several values per item are drawn together; the interval is the percentiles of the means
    of the drawn items' values, as a direct bootstrap with the same draws computes them."""
    rng = np.random.default_rng(8)
    items = list(rng.integers(0, 30, 200))
    values = rng.random(200) ** 2
    result = mean_with_ci(values, resamples=300, seed=6, items=items)
    assert result["value"] == pytest.approx(values.mean())
    order = list(dict.fromkeys(items))
    by_item = {item: [v for i, v in zip(items, values) if i == item] for item in order}
    means = [
        np.mean([v for k in drawn for v in by_item[order[k]]]) for drawn in bootstrap_indices(len(order), 300, seed=6)
    ]
    assert [result["low"], result["high"]] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    # one value per item without items; seeded; no interval without resamples
    alone = mean_with_ci(values[:40], resamples=100, seed=2)
    draws = [values[:40][drawn].mean() for drawn in bootstrap_indices(40, 100, seed=2)]
    assert [alone["low"], alone["high"]] == pytest.approx(list(np.percentile(draws, [2.5, 97.5])))
    assert (
        alone
        == mean_with_ci(list(values[:40]), resamples=100, seed=2)
        != mean_with_ci(values[:40], resamples=100, seed=3)
    )
    # several columns over the same draws: each as mean_with_ci gives it alone
    both = means_with_ci({"x": values, ("y", 2): values[::-1]}, resamples=300, seed=6, items=items)
    assert both["x"] == pytest.approx(result)
    assert both[("y", 2)] == pytest.approx(mean_with_ci(values[::-1], resamples=300, seed=6, items=items))
    assert mean_with_ci([1.0, 3.0], resamples=0) == {"value": 2.0, "low": None, "high": None}
    with pytest.raises(ValueError, match="no values"):
        mean_with_ci([])
    with pytest.raises(ValueError):
        mean_with_ci([1.0], items=[1, 2])
    with pytest.raises(ValueError):
        mean_with_ci([1.0], resamples=-1)


def test_a_figure_that_divides_by_zero_is_none_and_its_interval_skips_the_resamples_without_it():
    """Errors predicted in one item only: the error precision is defined on the whole data but
    not in resamples that miss that item; the interval is over the others, as a plain bootstrap
    with scikit-learn's zero_division=nan and nanpercentile gives it."""
    units = [Scored(i, "error" if i % 2 else "correct", "error" if i == 1 else "correct") for i in range(12)]
    result = score(units, resamples=200, seed=3)
    draws = []
    for drawn in bootstrap_indices(12, 200, 3):
        sample = [units[i] for i in drawn]
        precision = precision_recall_fscore_support(
            [u.gold for u in sample], [u.predicted for u in sample], labels=["error"], zero_division=np.nan
        )[0][0]
        draws.append(precision)
    assert any(np.isnan(draws)) and not all(np.isnan(draws))
    precision = result["per_label"]["error"]["precision"]
    assert precision["value"] == 1.0
    assert [precision["low"], precision["high"]] == pytest.approx(list(np.nanpercentile(draws, [2.5, 97.5])))
    # nothing predicted "error": precision and F1 have no value, nor an interval; recall is 0
    quiet = score([Scored(u.item, u.gold, "correct") for u in units], resamples=50)
    error = quiet["per_label"]["error"]
    assert error["precision"] == error["f1"] == {"value": None, "low": None, "high": None}
    assert error["recall"]["value"] == 0.0
    # the macro means count it 0, as scikit-learn's zero_division=0
    gold = [u.gold for u in units]
    macro = precision_recall_fscore_support(gold, ["correct"] * 12, average="macro", zero_division=0)
    assert [quiet["macro"][m]["value"] for m in ("precision", "recall", "f1")] == pytest.approx(macro[:3])


def test_balanced_labels_leave_balanced_accuracy_undefined_when_the_gold_lacks_one():
    # FELM's code: 0.5 * (recall of correct + recall of errors), None without a gold error
    units = [Scored(i, "correct", "error" if i % 3 == 0 else "correct") for i in range(9)]
    gold, pred = [u.gold for u in units], [u.predicted for u in units]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns of a predicted class not in the gold
        plain = balanced_accuracy_score(gold, pred)
    assert score(units, resamples=0)["balanced_accuracy"]["value"] == pytest.approx(plain)
    both = ("correct", "error")
    assert score(units, resamples=20, balanced_labels=both)["balanced_accuracy"] == {
        "value": None,
        "low": None,
        "high": None,
    }
    paired = difference(units, units, resamples=20, balanced_labels=both)
    assert paired["balanced_accuracy"] == {"value": None, "low": None, "high": None}
    assert paired["accuracy"]["value"] == 0.0
    mixed = [*units, Scored(9, "error", "error")]
    assert score(mixed, resamples=0, balanced_labels=both)["balanced_accuracy"]["value"] == pytest.approx(
        0.5 * (6 / 9 + 1)
    )
