"""Inter-annotator agreement (docs/researcher.md), computed on plain data: the coefficients of one
field, per rater pair, per week of submission and against a reference (the gold record).

Nominal data, and Krippendorff's α with the ordinal metric too where a field's labels are
ordered (importance: yes, intermediate, no). Each metric is checked in the tests against the
reference implementations (scikit-learn's ``cohen_kappa_score``, the ``krippendorff`` package).
A metric that is undefined on the data (e.g. κ when both annotators only ever used one
label) is reported as ``None`` rather than a made-up number. Bootstrap intervals are
annotation.research.agreement_bootstrap's; the page's download tables agreement_tables'.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from datetime import date, timedelta
from itertools import combinations
from typing import TYPE_CHECKING, Any

from annotation.research.agreement_bootstrap import bootstrap_intervals

if TYPE_CHECKING:
    import numpy as np

Unit = Hashable
# unit → {rater → value}
Ratings = dict[Unit, dict[Hashable, Any]]


def _category_counts(ratings: Ratings, min_raters: int = 2) -> tuple[np.ndarray, list]:
    """Units × categories matrix of how many raters chose each category (pairable units only)."""
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

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
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

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
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    if counts.size == 0:
        return None
    m = counts.sum(axis=1)
    coincidences = np.einsum("uc,uk->ck", counts / (m - 1)[:, None], counts) - np.diag(
        (counts / (m - 1)[:, None]).sum(axis=0)
    )
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
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

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
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    total = matrix.sum()
    if total == 0:
        return None
    p_o = np.trace(matrix) / total
    p_e = (matrix.sum(axis=1) * matrix.sum(axis=0)).sum() / (total * total)
    if p_e == 1:
        return None
    return float((p_o - p_e) / (1 - p_e))


def confusion_matrix(first: list, second: list, labels: list[str]) -> np.ndarray:
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    index = {c: i for i, c in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(first, second):
        matrix[index[str(a)], index[str(b)]] += 1
    return matrix


def field_agreement(
    ratings: Ratings,
    labels: list[str] | None = None,
    ordinal: bool = False,
    resamples: int = 0,
    seed: int = 0,
    item_of: Callable[[Unit], Hashable] | None = None,
    per_pair: bool = True,
) -> dict:
    """All agreement numbers for one field, from one pass over the ratings. ``labels`` fixes
    the labels' order (matrices, and the scale of an ``ordinal`` field, which adds α with the
    ordinal metric).

    ``ratings`` maps a unit to {rater: value} in assignment order; the first two raters of a
    unit are "annotator A" and "annotator B" for Cohen's κ and the confusion matrix, as is
    usual when pairs of annotators rotate over items.

    With ``resamples`` > 0, ``ci`` holds a 95 % percentile bootstrap interval of every number
    (see ``bootstrap_intervals``), resampling the items ``item_of`` maps units to (each unit is
    its own item by default); otherwise ``ci`` is None. ``per_pair=False`` leaves out the numbers
    per rater pair (``pairs`` is empty), which callers that only need the totals skip for speed.
    """
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    keys = [unit for unit, values in ratings.items() if len(values) >= 2]
    units = [ratings[unit] for unit in keys]
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
    result = {
        "units": len(units),
        "observed_agreement": _observed_from_counts(counts),
        "cohen_kappa": _kappa_from_confusion(matrix),
        "fleiss_kappa": _fleiss_from_counts(counts),
        "krippendorff_alpha": _alpha_from_counts(counts),
        **({"krippendorff_alpha_ordinal": _alpha_ordinal_from_counts(counts)} if ordinal and labels else {}),
        "confusion_matrix": {
            "labels": categories,
            "rows_annotator_a_columns_annotator_b": matrix.tolist(),
        },
        "pairs": pair_agreement(units) if per_pair else [],
    }
    result["ci"] = None
    if resamples > 0:
        item_of = item_of or (lambda unit: unit)
        result["ci"] = bootstrap_intervals(
            counts,
            first,
            second,
            [item_of(unit) for unit in keys],
            units,
            result["pairs"],
            ordinal=ordinal and bool(labels),
            resamples=resamples,
            seed=seed,
        )
    return result


def pair_agreement(units: Iterable[dict[Hashable, Any]]) -> list[dict]:
    """Observed agreement, Cohen's κ and unit count for every pair of raters that shared units."""
    agree: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    values_of: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for values in units:
        for (rater_a, value_a), (rater_b, value_b) in combinations(values.items(), 2):
            if str(rater_b) < str(rater_a):
                rater_a, rater_b = rater_b, rater_a
                value_a, value_b = value_b, value_a
            entry = agree[(rater_a, rater_b)]
            entry[0] += value_a == value_b
            entry[1] += 1
            values_of[(rater_a, rater_b)][0].append(value_a)
            values_of[(rater_a, rater_b)][1].append(value_b)
    return [
        {
            "raters": [a, b],
            "units": total,
            "observed_agreement": same / total,
            "cohen_kappa": cohen_kappa(*values_of[(a, b)]),
        }
        for (a, b), (same, total) in sorted(agree.items(), key=lambda kv: str(kv[0]))
    ]


# -- agreement over time and against a reference ----------------------------------------------


def iso_week(moment: date) -> str:
    """``2024-W03``: the ISO year and week of a date (sorts in time order as text)."""
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def iso_weeks_between(first: str, last: str) -> list[str]:
    """Every ISO week from ``first`` to ``last`` (``2024-W03`` labels), so a plot over time has
    the weeks without submissions as gaps rather than leaving them out."""
    start, end = (date.fromisocalendar(int(w[:4]), int(w[6:]), 1) for w in (first, last))
    return [iso_week(start + timedelta(weeks=n)) for n in range((end - start).days // 7 + 1)]


_WEEK_NUMBERS = (
    "units",
    "observed_agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_ordinal",
)


def agreement_over_time(
    ratings: Ratings,
    submitted: dict[Hashable, date | None],
    labels: list[str] | None = None,
    ordinal: bool = False,
    resamples: int = 0,
    seed: int = 0,
    item_of: Callable[[Unit], Hashable] | None = None,
) -> list[dict]:
    """``field_agreement``'s numbers per ISO week, oldest first, for publishing how agreement
    moved as annotators learnt the guidelines.

    A unit counts in the week of its item's ``submitted`` date (the caller gives the later of the
    compared annotators' submissions: the item's agreement is known only once both are in).
    Items without a date are left out. Each week's intervals resample that week's items.
    Returns [{"week", "items", "units", observed agreement, κ, Fleiss' κ, α…, "ci"}]; only weeks
    with pairable units appear."""
    item_of = item_of or (lambda unit: unit)
    by_week: dict[str, Ratings] = defaultdict(dict)
    for unit, values in ratings.items():
        moment = submitted.get(item_of(unit))
        if moment is not None and len(values) >= 2:
            by_week[iso_week(moment)][unit] = values
    weeks = []
    for week in sorted(by_week):
        units = by_week[week]
        result = field_agreement(
            units,
            labels=labels,
            ordinal=ordinal,
            resamples=resamples,
            seed=seed,
            item_of=item_of,
            per_pair=False,
        )
        weeks.append(
            {
                "week": week,
                "items": len({item_of(unit) for unit in units}),
                **{name: result[name] for name in _WEEK_NUMBERS if name in result},
                "ci": result["ci"],
            }
        )
    return weeks


def agreement_with_reference(
    pairs: dict[Unit, tuple[Any, Any]],
    labels: list[str] | None = None,
    resamples: int = 0,
    seed: int = 0,
    item_of: Callable[[Unit], Hashable] | None = None,
) -> dict:
    """Observed agreement and Cohen's κ of one rater's values against reference values (the gold
    record) on the same units, ``pairs`` mapping a unit to (value, reference); intervals resample
    items as ``field_agreement`` does. The confusion matrix has the rater's values as rows."""
    ratings = {unit: {"rater": value, "reference": reference} for unit, (value, reference) in pairs.items()}
    result = field_agreement(ratings, labels=labels, resamples=resamples, seed=seed, item_of=item_of, per_pair=False)
    ci = result["ci"]
    return {
        "units": result["units"],
        "observed_agreement": result["observed_agreement"],
        "cohen_kappa": result["cohen_kappa"],
        "confusion_matrix": {
            "labels": result["confusion_matrix"]["labels"],
            "rows_rater_columns_reference": result["confusion_matrix"]["rows_annotator_a_columns_annotator_b"],
        },
        "ci": {"observed_agreement": ci["observed_agreement"], "cohen_kappa": ci["cohen_kappa"]} if ci else None,
    }
