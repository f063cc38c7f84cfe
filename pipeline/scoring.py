"""Scoring a system's labels against gold labels, with 95 % bootstrap confidence intervals.

Plain Python + numpy (no Django). The metrics are scikit-learn's, computed here from confusion
matrices so that every bootstrap resample costs one matrix product instead of a loop:

- ``accuracy``; ``balanced_accuracy`` (mean recall over the labels the gold holds, as
  ``balanced_accuracy_score``, or over given ``balanced_labels``, as FELM's code);
- per label precision, recall, F1 and support; a figure whose definition divides by zero (no
  unit predicted or held by the gold with the label) is None, not 0 (FELM's evaluation code
  gives None there), and F1 is None where precision or recall is. The macro means are
  ``precision_recall_fscore_support(..., zero_division=0)``'s (an undefined figure counts 0).
  The labels are, as in scikit-learn, the sorted union of gold and predicted labels unless
  given; a given ``labels`` restricts the per-label and macro figures (not accuracy), like
  scikit-learn's ``labels=``.

Confidence intervals resample *items*, not units: the units of one item (its sentences, claims,
passages) are not independent. Each resample draws ``n_items`` items with replacement from a
seeded numpy Generator; per-item confusion counts weighted by how often each item was drawn
give every resample's confusion matrix at once. Percentile intervals (2.5 %, 97.5 %). In a
resample the label set stays the one of the whole data (a figure a resample leaves undefined
is left out of the interval; in the macro means it counts 0). ``mean_with_ci`` gives the same
intervals for a mean of per-unit numbers (e.g. a revision's edit distance to the gold one).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np

DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95
# Resamples whose weights are built at a time: bounds memory (chunk × items counts).
CHUNK = 250


class Scored(NamedTuple):
    """One unit: the item it belongs to (the resampling unit), its gold and predicted label."""

    item: Hashable
    gold: str
    predicted: str


def score(
    units: Sequence[Scored],
    labels: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    balanced_labels: Sequence[str] | None = None,
) -> dict:
    """Accuracy, balanced accuracy, macro and per-label P/R/F1 of ``units``, each as
    ``{"value", "low", "high"}`` (``low``/``high`` None when ``resamples`` is 0; all three None
    for a figure undefined on these units, the interval over the resamples where it is defined).
    ``balanced_labels``: the labels whose recalls balanced accuracy averages, None (undefined)
    when the gold lacks one of them, as FELM's code; by default those the gold holds."""
    import numpy as np  # numpy: web workers start without it

    if resamples < 0:
        raise ValueError("resamples must be 0 or more")
    if not units:
        raise ValueError("no units to score")
    labels, per_item, every = _confusions(units, labels, balanced_labels=balanced_labels)
    size, balanced = len(every), _balanced_columns(every, balanced_labels)
    point = _metrics(per_item.sum(axis=0)[None, :], size, len(labels), balanced)
    low = high = None
    if resamples:
        draws = [
            _metrics(weights @ per_item, size, len(labels), balanced)
            for weights in resample_weights(per_item.shape[0], resamples, seed)
        ]
        stacked = {key: np.concatenate([d[key] for d in draws]) for key in point}
        low = {key: _percentile(values, (1 - CONFIDENCE) / 2 * 100) for key, values in stacked.items()}
        high = {key: _percentile(values, (1 + CONFIDENCE) / 2 * 100) for key, values in stacked.items()}

    def estimate(key: str, column: int | None = None) -> dict:
        pick = (lambda a: a[0]) if column is None else (lambda a: a[0][column])
        value = _defined(pick(point[key]))
        if low is None or value is None:
            return {"value": value, "low": None, "high": None}
        return {
            "value": value,
            "low": _defined(low[key] if column is None else low[key][column]),
            "high": _defined(high[key] if column is None else high[key][column]),
        }

    support = point["support"][0]
    return {
        "units": len(units),
        "items": per_item.shape[0],
        "labels": labels,
        "resamples": resamples,
        "seed": seed,
        "accuracy": estimate("accuracy"),
        "balanced_accuracy": estimate("balanced_accuracy"),
        "macro": {m: estimate(f"macro_{m}") for m in ("precision", "recall", "f1")},
        "per_label": {
            label: {
                **{m: estimate(m, i) for m in ("precision", "recall", "f1")},
                "support": int(support[i]),
            }
            for i, label in enumerate(labels)
        },
    }


def _confusions(
    units: Sequence[Scored],
    labels: Sequence[str] | None,
    also: Sequence[Scored] = (),
    balanced_labels: Sequence[str] | None = None,
) -> tuple[list[str], np.ndarray, list[str]]:
    """The scored labels, per-item confusion counts, flattened (true × predicted), and every
    label of the matrix in its order: the scored labels first and any other label present after
    them (in ``units``, in ``also``, since a paired comparison needs both systems' matrices over
    the same labels, or in ``balanced_labels``)."""
    import numpy as np  # numpy: web workers start without it

    present = sorted(
        {u.gold for u in units}
        | {u.predicted for u in units}
        | {u.predicted for u in also}
        | set(balanced_labels or ())
    )
    if labels is None:
        labels = present
    else:
        labels = list(labels)
        if len(set(labels)) != len(labels):
            raise ValueError("labels must not repeat")
    every = labels + [label for label in present if label not in labels]
    index = {label: i for i, label in enumerate(every)}
    items: dict = {}
    item_of = np.fromiter((items.setdefault(u.item, len(items)) for u in units), dtype=np.int64, count=len(units))
    gold = np.fromiter((index[u.gold] for u in units), dtype=np.int64, count=len(units))
    predicted = np.fromiter((index[u.predicted] for u in units), dtype=np.int64, count=len(units))
    size = len(every)
    per_item = np.zeros((len(items), size * size))
    np.add.at(per_item, (item_of, gold * size + predicted), 1)
    return labels, per_item, every


def _balanced_columns(every: list[str], balanced_labels: Sequence[str] | None) -> list[int] | None:
    """The matrix columns whose recalls balanced accuracy averages (None: those the gold holds)."""
    return None if balanced_labels is None else [every.index(label) for label in balanced_labels]


def _defined(value) -> float | None:
    """A figure as stored and shown: None where its definition divides by zero (NaN here)."""
    value = float(value)
    return None if value != value else value


def _percentile(values: np.ndarray, q: float) -> np.ndarray:
    """``nanpercentile`` over the resamples where a figure is defined; NaN where it never is."""
    import numpy as np  # numpy: web workers start without it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice": a figure never defined
        return np.nanpercentile(values, q, axis=0)


DIFFERENCE_METRICS = (
    "accuracy",
    "balanced_accuracy",
    "macro_precision",
    "macro_recall",
    "macro_f1",
)


def difference(
    first: Sequence[Scored],
    second: Sequence[Scored],
    labels: Sequence[str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    second_labels: Sequence[str] | None = None,
    balanced_labels: Sequence[str] | None = None,
) -> dict:
    """``first`` minus ``second`` on each of DIFFERENCE_METRICS, with a paired bootstrap CI:
    both systems are scored on the same resampled items in every resample, so the interval is
    that of the difference, not of two independent scores. Both must hold the same units (same
    items and gold, in the same order). ``labels`` scores ``first`` and ``second_labels``
    (default: ``labels``) ``second``, so that each side's macro figures are those its own
    ``score`` shows; with neither, both use the union of both systems' labels. None where
    either side's figure is undefined (``balanced_labels`` as ``score`` takes it)."""
    import numpy as np  # numpy: web workers start without it

    if len(first) != len(second) or any(a.item != b.item or a.gold != b.gold for a, b in zip(first, second)):
        raise ValueError("the two systems must be scored on the same units in the same order")
    if not first:
        raise ValueError("no units to score")
    if labels is None:
        labels = sorted({u.gold for u in first} | {u.predicted for u in first} | {u.predicted for u in second})
    if second_labels is None:
        second_labels = labels
    labels, per_item_first, every = _confusions(first, labels, also=second, balanced_labels=balanced_labels)
    second_labels, per_item_second, every_second = _confusions(
        second, second_labels, also=first, balanced_labels=balanced_labels
    )
    size, kept, kept_second = len(every), len(labels), len(second_labels)
    balanced = _balanced_columns(every, balanced_labels)
    balanced_second = _balanced_columns(every_second, balanced_labels)
    # each side: its scored labels first, then any other (the matrices have the same size)
    point = {
        key: _defined(
            _metrics(per_item_first.sum(axis=0)[None, :], size, kept, balanced)[key][0]
            - _metrics(per_item_second.sum(axis=0)[None, :], size, kept_second, balanced_second)[key][0]
        )
        for key in DIFFERENCE_METRICS
    }
    result = {key: {"value": value, "low": None, "high": None} for key, value in point.items()}
    if resamples:
        draws = {key: [] for key in DIFFERENCE_METRICS}
        for weights in resample_weights(len(per_item_first), resamples, seed):
            a, b = (
                _metrics(weights @ per_item_first, size, kept, balanced),
                _metrics(weights @ per_item_second, size, kept_second, balanced_second),
            )
            for key in DIFFERENCE_METRICS:
                draws[key].append(a[key] - b[key])
        for key, values in draws.items():
            if result[key]["value"] is None:
                continue
            stacked = np.concatenate(values)
            result[key]["low"] = _defined(_percentile(stacked, (1 - CONFIDENCE) / 2 * 100))
            result[key]["high"] = _defined(_percentile(stacked, (1 + CONFIDENCE) / 2 * 100))
    return {
        "units": len(first),
        "labels": list(labels),
        "second_labels": list(second_labels),
        "resamples": resamples,
        "seed": seed,
        **result,
    }


def resample_weights(n_items: int, resamples: int, seed: int = 0, chunk: int = CHUNK) -> Iterable[np.ndarray]:
    """How often each item is drawn in each resample, ``chunk`` resamples at a time
    (arrays of shape (≤ chunk, n_items)). The draws are those of ``bootstrap_indices``."""
    import numpy as np  # numpy: web workers start without it

    rng = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        count = min(chunk, resamples - done)
        drawn = rng.integers(0, n_items, size=(count, n_items))
        offsets = np.arange(count)[:, None] * n_items
        yield (np.bincount((drawn + offsets).ravel(), minlength=count * n_items).reshape(count, n_items).astype(float))
        done += count


def mean_with_ci(
    values: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    items: Sequence[Hashable] | None = None,
) -> dict:
    """The mean of ``values`` as ``{"value", "low", "high"}`` with a percentile bootstrap CI
    (``low``/``high`` None when ``resamples`` is 0). Resamples items as ``score`` does (the same
    draws for the same seed and item count): ``items`` names the item of each value (several
    values of one item are drawn together); without it each value is its own item."""
    return means_with_ci({"mean": values}, resamples, seed, items)["mean"]


def means_with_ci(
    columns: dict[Hashable, Sequence[float]],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    items: Sequence[Hashable] | None = None,
) -> dict[Hashable, dict]:
    """``mean_with_ci`` of several equally long columns of values (name → values) over the same
    resampled items, drawn once: the intervals of one system's numbers come from the same draws."""
    import numpy as np  # numpy: web workers start without it

    if resamples < 0:
        raise ValueError("resamples must be 0 or more")
    names = list(columns)
    data = np.asarray([columns[name] for name in names], dtype=float).T  # (values, columns)
    if data.size == 0:
        raise ValueError("no values to average")
    if items is None:
        sums, counts = data, np.ones(len(data))
    else:
        if len(items) != len(data):
            raise ValueError(f"{len(items)} items for {len(data)} values")
        index: dict = {}
        item_of = np.fromiter((index.setdefault(item, len(index)) for item in items), dtype=np.int64, count=len(items))
        sums = np.zeros((len(index), len(names)))
        np.add.at(sums, item_of, data)
        counts = np.bincount(item_of, minlength=len(index)).astype(float)
    result = {name: {"value": float(value), "low": None, "high": None} for name, value in zip(names, data.mean(axis=0))}
    if resamples:
        draws = np.concatenate(
            [(weights @ sums) / (weights @ counts)[:, None] for weights in resample_weights(len(sums), resamples, seed)]
        )
        tail = (1 - CONFIDENCE) / 2 * 100
        low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
        for column, name in enumerate(names):
            result[name]["low"], result[name]["high"] = float(low[column]), float(high[column])
    return result


def bootstrap_indices(n_items: int, resamples: int, seed: int = 0, chunk: int = CHUNK) -> list[np.ndarray]:
    """The items each resample draws (the same draws as ``resample_weights``): for tests and
    for statistics that need the resampled data itself."""
    import numpy as np  # numpy: web workers start without it

    rng = np.random.default_rng(seed)
    result: list[np.ndarray] = []
    while len(result) < resamples:
        count = min(chunk, resamples - len(result))
        result.extend(rng.integers(0, n_items, size=(count, n_items)))
    return result


def _metrics(confusion: np.ndarray, size: int, kept: int, balanced: list[int] | None = None) -> dict[str, np.ndarray]:
    """Metrics of a stack of flattened confusion matrices (rows: resamples); the first ``kept``
    labels are the ones scored per label and in the macro means. NaN where a figure's definition
    divides by zero; ``balanced``: the columns whose recalls balanced accuracy averages (NaN if
    one has no gold unit), None for those the gold holds."""
    import numpy as np  # numpy: web workers start without it

    matrix = confusion.reshape(-1, size, size)
    true_count = matrix.sum(axis=2)
    predicted_count = matrix.sum(axis=1)
    hits = np.diagonal(matrix, axis1=1, axis2=2)
    total = true_count.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted_count > 0, hits / predicted_count, np.nan)[:, :kept]
        recall_all = np.where(true_count > 0, hits / true_count, np.nan)
        recall = recall_all[:, :kept]
        denominator = (true_count + predicted_count)[:, :kept]
        # the harmonic mean of P and R (0 where both are 0), undefined where either is
        f1 = np.where(np.isnan(precision) | np.isnan(recall), np.nan, 2 * hits[:, :kept] / denominator)
        if balanced is None:  # recall averaged over the labels the gold holds, as scikit-learn
            balanced_accuracy = np.nansum(recall_all, axis=1) / (true_count > 0).sum(axis=1)
        else:
            balanced_accuracy = recall_all[:, balanced].mean(axis=1)
        return {
            "accuracy": hits.sum(axis=1) / total,
            "balanced_accuracy": balanced_accuracy,
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": true_count[:, :kept],
            # scikit-learn's zero_division=0: an undefined per-label figure counts 0 in the mean
            "macro_precision": np.nan_to_num(precision).mean(axis=1),
            "macro_recall": np.nan_to_num(recall).mean(axis=1),
            "macro_f1": np.nan_to_num(f1).mean(axis=1),
        }


# -- baselines ------------------------------------------------------------------------------------


def majority_label(gold: Iterable[str]) -> str:
    """The most frequent gold label (ties: the first in sorted order)."""
    counts = Counter(gold)
    if not counts:
        raise ValueError("no gold labels")
    return min(counts, key=lambda label: (-counts[label], label))


def constant_predictions(gold: Sequence[str], label: str) -> list[str]:
    """Always ``label`` ("always checkworthy", "always true")."""
    return [label] * len(gold)


def random_predictions(gold: Sequence[str], seed: int = 0) -> list[str]:
    """Labels drawn independently with the gold's label frequencies (seeded)."""
    import numpy as np  # numpy: web workers start without it

    counts = Counter(gold)
    labels = sorted(counts)
    if not labels:
        return []
    frequencies = np.array([counts[label] for label in labels], dtype=float) / len(gold)
    drawn = np.random.default_rng(seed).choice(len(labels), size=len(gold), p=frequencies)
    return [labels[i] for i in drawn]
