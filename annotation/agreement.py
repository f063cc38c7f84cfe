"""Inter-annotator agreement (DESIGN.md §8), computed on plain data.

Nominal data only. Each metric is checked in the tests against the reference
implementations (scikit-learn's ``cohen_kappa_score``, the ``krippendorff`` package).
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
    if not first:
        return None
    labels = sorted({str(v) for v in (*first, *second)})
    index = {c: i for i, c in enumerate(labels)}
    matrix = confusion_matrix(first, second, labels, index)
    total = matrix.sum()
    p_o = np.trace(matrix) / total
    p_e = (matrix.sum(axis=1) * matrix.sum(axis=0)).sum() / (total * total)
    if p_e == 1:
        return None
    return float((p_o - p_e) / (1 - p_e))


def confusion_matrix(first: list, second: list, labels: list[str], index: dict[str, int] | None = None) -> np.ndarray:
    index = index or {c: i for i, c in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(first, second):
        matrix[index[str(a)], index[str(b)]] += 1
    return matrix


def field_agreement(slot_ratings: dict[Unit, list[tuple[Hashable, Any]]], labels: list[str] | None = None) -> dict:
    """All agreement numbers for one field.

    ``slot_ratings`` maps a unit to its (rater, value) pairs in assignment order; the first two
    slots are "annotator A" and "annotator B" for Cohen's κ and the confusion matrix, as is
    usual when pairs of annotators rotate over items.
    """
    ratings: Ratings = {unit: dict(pairs) for unit, pairs in slot_ratings.items()}
    counts, _ = _category_counts(ratings)
    paired = [pairs for pairs in slot_ratings.values() if len(pairs) >= 2]
    first = [str(pairs[0][1]) for pairs in paired]
    second = [str(pairs[1][1]) for pairs in paired]
    categories = labels or sorted({*first, *second})
    matrix = confusion_matrix(first, second, categories) if categories else np.zeros((0, 0), dtype=np.int64)
    return {
        "units": len(paired),
        "observed_agreement": _observed_from_counts(counts),
        "cohen_kappa": cohen_kappa(first, second),
        "fleiss_kappa": _fleiss_from_counts(counts),
        "krippendorff_alpha": _alpha_from_counts(counts),
        "confusion_matrix": {"labels": categories, "rows_annotator_a_columns_annotator_b": matrix.tolist()},
        "pairs": pair_agreement(slot_ratings),
    }


def pair_agreement(slot_ratings: dict[Unit, list[tuple[Hashable, Any]]]) -> list[dict]:
    """Observed agreement and unit count for every pair of raters that shared units."""
    agree: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for pairs in slot_ratings.values():
        for (rater_a, value_a), (rater_b, value_b) in combinations(sorted(pairs, key=lambda p: str(p[0])), 2):
            entry = agree[(rater_a, rater_b)]
            entry[0] += int(str(value_a) == str(value_b))
            entry[1] += 1
    return [
        {"raters": [a, b], "units": total, "observed_agreement": same / total}
        for (a, b), (same, total) in sorted(agree.items(), key=lambda kv: str(kv[0]))
    ]


def agreement_with_reference(comparisons: Iterable[tuple[Hashable, Any, Any]]) -> dict:
    """Per rater: how many (rater, value, reference value) units there are and the share that match."""
    tally: dict[Hashable, list[int]] = defaultdict(lambda: [0, 0])
    for rater, value, reference in comparisons:
        tally[rater][0] += int(str(value) == str(reference))
        tally[rater][1] += 1
    return {rater: {"units": total, "agreement": same / total if total else None} for rater, (same, total) in tally.items()}
