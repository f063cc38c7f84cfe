"""Inter-annotator agreement (DESIGN.md §8), computed on plain data.

Nominal data, and Krippendorff's α with the ordinal metric too where a field's labels are
ordered (importance: yes, intermediate, no). Each metric is checked in the tests against the
reference implementations (scikit-learn's ``cohen_kappa_score``, the ``krippendorff`` package).
A metric that is undefined on the data (e.g. κ when both annotators only ever used one
label) is reported as ``None`` rather than a made-up number.
"""
from collections import defaultdict
from itertools import combinations
from typing import Any, Hashable, Iterable

import numpy as np

Unit = Hashable
# unit → {rater → value}
Ratings = dict[Unit, dict[Hashable, Any]]


def _category_counts(ratings: Ratings, min_raters: int = 2) -> tuple[np.ndarray, list]:
    """Units × categories matrix of how many raters chose each category (pairable units only)."""
    categories = sorted({str(v) for unit in ratings.values() for v in unit.values()})
    index = {c: i for i, c in enumerate(categories)}
    rows = [unit for unit in ratings.values() if len(unit) >= min_raters]
    counts = np.zeros((len(rows), len(categories)), dtype=np.float64)
    for r, unit in enumerate(rows):
        for value in unit.values():
            counts[r, index[str(value)]] += 1
    return counts, categories


def observed_agreement(ratings: Ratings) -> float | None:
    """Share of agreeing rater pairs over all pairs within units (= percent agreement for two raters)."""
    return _observed_from_counts(_category_counts(ratings)[0])


def krippendorff_alpha_nominal(ratings: Ratings) -> float | None:
    """Krippendorff's α for nominal data with any number of raters and missing values."""
    return _alpha_from_counts(_category_counts(ratings)[0])


def fleiss_kappa(ratings: Ratings) -> float | None:
    """Fleiss' κ over the units rated by the most common number of raters (it needs a fixed number)."""
    return _fleiss_from_counts(_category_counts(ratings)[0])


def _observed_from_counts(counts: np.ndarray) -> float | None:
    m = counts.sum(axis=1)
    pairs = (m * (m - 1)).sum()
    if pairs == 0:
        return None
    return float((counts * (counts - 1)).sum() / pairs)


def _alpha_from_counts(counts: np.ndarray) -> float | None:
    if counts.size == 0:
        return None
    m = counts.sum(axis=1)
    n = m.sum()
    observed_same = ((counts * (counts - 1)).sum(axis=1) / (m - 1)).sum()
    n_c = counts.sum(axis=0)
    expected_diff = n * n - (n_c * n_c).sum()
    if expected_diff == 0:
        return None
    return float(1 - (n - 1) * (n - observed_same) / expected_diff)


def krippendorff_alpha_ordinal(ratings: Ratings, order: list[str]) -> float | None:
    """Krippendorff's α with the ordinal metric; ``order`` lists the labels from one end of the
    scale to the other (labels not in it are an error)."""
    index = {label: i for i, label in enumerate(order)}
    units = [values for values in ratings.values() if len(values) >= 2]
    counts = np.zeros((len(units), len(order)), dtype=np.float64)
    for row, values in enumerate(units):
        for value in values.values():
            counts[row, index[str(value)]] += 1
    return _alpha_ordinal_from_counts(counts)


def _alpha_ordinal_from_counts(counts: np.ndarray) -> float | None:
    """α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck over the coincidence matrix o, with the
    ordinal distance δ_ck = Σ_{g=c..k} n_g − (n_c + n_k) / 2 (Krippendorff 2011)."""
    if counts.size == 0:
        return None
    m = counts.sum(axis=1)
    coincidences = np.einsum("uc,uk->ck", counts / (m - 1)[:, None], counts) - np.diag((counts / (m - 1)[:, None]).sum(axis=0))
    n_c = coincidences.sum(axis=1)
    n = n_c.sum()
    cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
    size = len(n_c)
    delta = np.zeros((size, size))
    for c in range(size):
        for k in range(c, size):
            delta[c, k] = delta[k, c] = (cumulative[k + 1] - cumulative[c] - (n_c[c] + n_c[k]) / 2) ** 2
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected == 0:
        return None
    return float(1 - (n - 1) * (coincidences * delta).sum() / expected)


def _fleiss_from_counts(counts: np.ndarray) -> float | None:
    if counts.size == 0:
        return None
    m = counts.sum(axis=1)
    sizes, frequency = np.unique(m, return_counts=True)
    raters = sizes[frequency == frequency.max()].min()
    counts = counts[m == raters]
    per_unit = ((counts * counts).sum(axis=1) - raters) / (raters * (raters - 1))
    p_c = counts.sum(axis=0) / counts.sum()
    p_e = (p_c * p_c).sum()
    if p_e == 1:
        return None
    return float((per_unit.mean() - p_e) / (1 - p_e))


def cohen_kappa(first: list, second: list) -> float | None:
    """Cohen's κ between two aligned label sequences."""
    labels = sorted({str(v) for v in (*first, *second)})
    return _kappa_from_confusion(confusion_matrix(first, second, labels))


def _kappa_from_confusion(matrix: np.ndarray) -> float | None:
    total = matrix.sum()
    if total == 0:
        return None
    p_o = np.trace(matrix) / total
    p_e = (matrix.sum(axis=1) * matrix.sum(axis=0)).sum() / (total * total)
    if p_e == 1:
        return None
    return float((p_o - p_e) / (1 - p_e))


def confusion_matrix(first: list, second: list, labels: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(first, second):
        matrix[index[str(a)], index[str(b)]] += 1
    return matrix


def field_agreement(ratings: Ratings, labels: list[str] | None = None, ordinal: bool = False) -> dict:
    """All agreement numbers for one field, from one pass over the ratings. ``labels`` fixes
    the labels' order (matrices, and the scale of an ``ordinal`` field, which adds α with the
    ordinal metric).

    ``ratings`` maps a unit to {rater: value} in assignment order; the first two raters of a
    unit are "annotator A" and "annotator B" for Cohen's κ and the confusion matrix, as is
    usual when pairs of annotators rotate over items.
    """
    units = [values for values in ratings.values() if len(values) >= 2]
    seen = {str(value) for values in units for value in values.values()}
    categories = [*labels, *sorted(seen - set(labels))] if labels else sorted(seen)
    index = {c: i for i, c in enumerate(categories)}
    counts = np.zeros((len(units), len(categories)), dtype=np.float64)
    first = np.empty(len(units), dtype=np.int64)
    second = np.empty(len(units), dtype=np.int64)
    for row, values in enumerate(units):
        codes = [index[str(value)] for value in values.values()]
        first[row], second[row] = codes[0], codes[1]
        for code in codes:
            counts[row, code] += 1
    size = len(categories)
    matrix = np.bincount(first * size + second, minlength=size * size).reshape(size, size)
    return {
        "units": len(units),
        "observed_agreement": _observed_from_counts(counts),
        "cohen_kappa": _kappa_from_confusion(matrix),
        "fleiss_kappa": _fleiss_from_counts(counts),
        "krippendorff_alpha": _alpha_from_counts(counts),
        **({"krippendorff_alpha_ordinal": _alpha_ordinal_from_counts(counts)} if ordinal and labels else {}),
        "confusion_matrix": {"labels": categories, "rows_annotator_a_columns_annotator_b": matrix.tolist()},
        "pairs": pair_agreement(units),
    }


def pair_agreement(units: Iterable[dict[Hashable, Any]]) -> list[dict]:
    """Observed agreement and unit count for every pair of raters that shared units."""
    agree: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for values in units:
        for (rater_a, value_a), (rater_b, value_b) in combinations(values.items(), 2):
            if str(rater_b) < str(rater_a):
                rater_a, rater_b = rater_b, rater_a
            entry = agree[(rater_a, rater_b)]
            entry[0] += value_a == value_b
            entry[1] += 1
    return [
        {"raters": [a, b], "units": total, "observed_agreement": same / total}
        for (a, b), (same, total) in sorted(agree.items(), key=lambda kv: str(kv[0]))
    ]
