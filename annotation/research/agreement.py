"""Inter-annotator agreement (DESIGN.md §8), computed on plain data.

Nominal data, and Krippendorff's α with the ordinal metric too where a field's labels are
ordered (importance: yes, intermediate, no). Each metric is checked in the tests against the
reference implementations (scikit-learn's ``cohen_kappa_score``, the ``krippendorff`` package).
A metric that is undefined on the data (e.g. κ when both annotators only ever used one
label) is reported as ``None`` rather than a made-up number.
"""

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from datetime import date, timedelta
from itertools import combinations
from typing import Any

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


# -- bootstrap confidence intervals ------------------------------------------------------------
# Every statistic above is a function of sums over units (category counts, coincidences, the
# A×B confusion matrix). Summed per item, a resample's sums are the resample-weight matrix
# (how often each item was drawn) times the per-item sums: one matrix product per chunk of
# resamples instead of recomputing each statistic a thousand times.

CI_LEVEL = 0.95
_CHUNK = 100  # resamples per weight matrix: bounded memory (100 × items)


def bootstrap_draws(n_items: int, resamples: int, seed: int) -> Iterable[np.ndarray]:
    """Chunks of drawn item indices, (chunk, n_items) each: resample r draws
    ``default_rng(seed).integers(0, n_items, n_items)`` in turn (chunking gives the same draws)."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, _CHUNK):
        yield rng.integers(0, n_items, size=(min(_CHUNK, resamples - start), n_items))


def _weights(draws: np.ndarray, n_items: int) -> np.ndarray:
    rows = draws.shape[0]
    offsets = (np.arange(rows)[:, None] * n_items + draws).ravel()
    return np.bincount(offsets, minlength=rows * n_items).reshape(rows, n_items).astype(np.float64)


def _interval(samples: np.ndarray) -> list[float] | None:
    """Percentile interval over the resamples where the statistic is defined (None if none is)."""
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return None
    low, high = np.quantile(defined, [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return [float(low), float(high)]


def _ratio(numerator: np.ndarray, denominator: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(undefined, np.nan, numerator / np.where(undefined, 1, denominator))


def _kappa_batch(confusion: np.ndarray) -> np.ndarray:
    """Cohen's κ of (resamples, C, C) confusion matrices; NaN where undefined."""
    total = confusion.sum(axis=(1, 2))
    safe = np.where(total == 0, 1, total)
    p_o = np.trace(confusion, axis1=1, axis2=2) / safe
    p_e = (confusion.sum(axis=2) * confusion.sum(axis=1)).sum(axis=1) / (safe * safe)
    return _ratio(p_o - p_e, 1 - p_e, (total == 0) | (p_e == 1))


def _ordinal_delta(n_c: np.ndarray) -> np.ndarray:
    """Squared ordinal distances δ²_ck for (resamples, C) marginals → (resamples, C, C)."""
    size = n_c.shape[1]
    cumulative = np.concatenate([np.zeros((n_c.shape[0], 1)), np.cumsum(n_c, axis=1)], axis=1)
    c, k = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    low, high = np.minimum(c, k), np.maximum(c, k)
    span = cumulative[:, high + 1] - cumulative[:, low]
    return (span - (n_c[:, c] + n_c[:, k]) / 2) ** 2


def bootstrap_intervals(
    counts: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    items: list[Hashable],
    units: list[dict],
    pairs: list[dict],
    ordinal: bool,
    resamples: int,
    seed: int,
) -> dict:
    """95 % percentile bootstrap intervals, resampling items (a unit's item is ``items[u]``;
    units of one item are not independent). Items are numbered in order of first appearance;
    draws are those of ``bootstrap_draws``. A resample where a statistic is undefined is left
    out of its interval. Returns {statistic: [low, high] | None}; each of ``pairs`` gets its
    own ``ci`` ({"observed_agreement", "cohen_kappa"}) in place."""
    from scipy import sparse  # scipy: heavy, only where this is computed

    codes: dict[Hashable, int] = {}
    item_index = np.fromiter((codes.setdefault(item, len(codes)) for item in items), dtype=np.int64, count=len(items))
    n_items, n_units, size = len(codes), len(items), counts.shape[1]
    if n_items == 0:
        names = ("observed_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha")
        return {name: None for name in (*names, *(("krippendorff_alpha_ordinal",) if ordinal else ()))}
    to_items = sparse.csr_matrix((np.ones(n_units), (item_index, np.arange(n_units))), shape=(n_items, n_units))

    m = counts.sum(axis=1)
    same = (counts * (counts - 1)).sum(axis=1)
    confusion = np.zeros((n_units, size * size))
    confusion[np.arange(n_units), first * size + second] = 1
    per_unit = counts / (m - 1)[:, None]
    # coincidences o_ck of each unit, flattened (ordinal α only)
    coincidence = (
        (np.einsum("uc,uk->uck", per_unit, counts) - np.einsum("uc,ck->uck", per_unit, np.eye(size))).reshape(
            n_units, -1
        )
        if ordinal
        else np.zeros((n_units, 0))
    )
    # Fleiss' κ uses the units of the most common rater count: sums for each count there is
    sizes = np.unique(m)
    by_size = [
        np.column_stack(
            [
                m == r,
                ((counts * counts).sum(axis=1) - r) / (r * (r - 1)) * (m == r),
                counts * (m == r)[:, None],
            ]
        )
        for r in sizes
    ]
    features = np.column_stack([m, m * (m - 1), same, same / (m - 1), counts, confusion, coincidence, *by_size])
    per_item = np.asarray(to_items @ features)

    collected: dict[str, list[np.ndarray]] = defaultdict(list)
    pair_features, pair_columns = _pair_item_sums(units, item_index, n_items, pairs) if pairs else (None, [])
    for draws in bootstrap_draws(n_items, resamples, seed):
        weights = _weights(draws, n_items)
        sums = weights @ per_item
        column = iter(
            np.split(
                sums,
                np.cumsum(
                    [
                        1,
                        1,
                        1,
                        1,
                        size,
                        size * size,
                        coincidence.shape[1],
                        *[2 + size] * (len(sizes) - 1),
                    ]
                ),
                axis=1,
            )
        )
        n, pair_count, agreeing, observed_same = (next(column)[:, 0] for _ in range(4))
        n_c, confusion_sums, coincidence_sums = next(column), next(column), next(column)
        collected["observed_agreement"].append(_ratio(agreeing, pair_count, pair_count == 0))
        collected["cohen_kappa"].append(_kappa_batch(confusion_sums.reshape(-1, size, size)))
        expected_diff = n * n - (n_c * n_c).sum(axis=1)
        collected["krippendorff_alpha"].append(
            1 - _ratio((n - 1) * (n - observed_same), expected_diff, expected_diff == 0)
        )
        if ordinal:
            matrix = coincidence_sums.reshape(-1, size, size)
            marginals = matrix.sum(axis=2)
            delta = _ordinal_delta(marginals)
            expected = (marginals[:, :, None] * marginals[:, None, :] * delta).sum(axis=(1, 2))
            total = marginals.sum(axis=1)
            disagreement = (total - 1) * (matrix * delta).sum(axis=(1, 2))
            collected["krippendorff_alpha_ordinal"].append(1 - _ratio(disagreement, expected, expected == 0))
        fleiss = [next(column) for _ in sizes]
        unit_counts = np.column_stack([f[:, 0] for f in fleiss])
        # the most common rater count, the smallest on a tie (as _fleiss_from_counts)
        chosen = np.argmax(unit_counts == unit_counts.max(axis=1, keepdims=True), axis=1)
        kappas = []
        for f in fleiss:
            n_units_r, agreement_sum, category = f[:, 0], f[:, 1], f[:, 2:]
            p_c = category / np.where(n_units_r == 0, 1, category.sum(axis=1))[:, None]
            p_e = (p_c * p_c).sum(axis=1)
            p_bar = agreement_sum / np.where(n_units_r == 0, 1, n_units_r)
            kappas.append(_ratio(p_bar - p_e, 1 - p_e, (n_units_r == 0) | (p_e == 1)))
        collected["fleiss_kappa"].append(np.column_stack(kappas)[np.arange(len(chosen)), chosen])
        pair_sums = np.asarray((pair_features.T @ weights.T).T) if pair_columns else None
        for index, (offset, n_labels) in enumerate(pair_columns):
            agree_sum, total_sum = pair_sums[:, offset], pair_sums[:, offset + 1]
            collected[f"pair_observed_{index}"].append(_ratio(agree_sum, total_sum, total_sum == 0))
            confusion_sums = pair_sums[:, offset + 2 : offset + 2 + n_labels * n_labels]
            collected[f"pair_kappa_{index}"].append(_kappa_batch(confusion_sums.reshape(-1, n_labels, n_labels)))

    result = {
        name: _interval(np.concatenate(values)) for name, values in collected.items() if not name.startswith("pair_")
    }
    for index, pair in enumerate(pairs):
        pair["ci"] = {
            "observed_agreement": _interval(np.concatenate(collected[f"pair_observed_{index}"])),
            "cohen_kappa": _interval(np.concatenate(collected[f"pair_kappa_{index}"])),
        }
    return result


def _pair_item_sums(units: list[dict], item_index: np.ndarray, n_items: int, pairs: list[dict]) -> tuple:
    """Per item, for each rater pair (as ``pair_agreement`` orders them): its agreeing shared
    units, its shared units and its confusion matrix (flattened), as one sparse items × columns
    matrix (a pair has entries only in the items it shared), and each pair's (first column,
    number of labels)."""
    from scipy import sparse  # scipy: heavy, only where this is computed

    position = {tuple(pair["raters"]): index for index, pair in enumerate(pairs)}
    entries: list[list[tuple]] = [[] for _ in pairs]
    for unit, values in enumerate(units):
        for (rater_a, value_a), (rater_b, value_b) in combinations(values.items(), 2):
            if str(rater_b) < str(rater_a):
                rater_a, rater_b, value_a, value_b = rater_b, rater_a, value_b, value_a
            entries[position[(rater_a, rater_b)]].append((item_index[unit], str(value_a), str(value_b)))
    rows: list[np.ndarray] = []
    columns: list[np.ndarray] = []
    data: list[np.ndarray] = []
    layout, offset = [], 0
    for shared in entries:
        labels = sorted({v for _, a, b in shared for v in (a, b)})
        code = {label: i for i, label in enumerate(labels)}
        size = len(labels)
        item_of = np.array([item for item, _, _ in shared], dtype=np.int64)
        agree = np.array([a == b for _, a, b in shared], dtype=np.float64)
        cell = np.array([code[a] * size + code[b] for _, a, b in shared], dtype=np.int64)
        rows += [item_of, item_of, item_of]
        columns += [
            np.full(len(shared), offset),
            np.full(len(shared), offset + 1),
            offset + 2 + cell,
        ]
        data += [agree, np.ones(len(shared)), np.ones(len(shared))]
        layout.append((offset, size))
        offset += 2 + size * size
    if not rows:
        return sparse.csr_matrix((n_items, 0)), layout
    # duplicates (an item's several units) are summed by the conversion
    matrix = sparse.coo_matrix(
        (np.concatenate(data), (np.concatenate(rows), np.concatenate(columns))),
        shape=(n_items, offset),
    ).tocsr()
    return matrix, layout


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


# -- the agreement page's tables, for download ------------------------------------------------
# One flat table per kind of number the page shows, built from project_agreement's result, so
# a CSV / JSON download holds the same numbers as the page (and the API), interval bounds in
# their own columns. Label values are the codes the API and the exports use.

_FIELD_NUMBERS = (
    "observed_agreement",
    "cohen_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_ordinal",
    "fleiss_kappa",
)


def _with_ci(names: Iterable[str]) -> list[str]:
    return [column for name in names for column in (name, f"{name}_ci_low", f"{name}_ci_high")]


def _numbers_with_ci(row: dict, names: Iterable[str]) -> list:
    ci = row.get("ci") or {}
    cells = []
    for name in names:
        interval = ci.get(name) or (None, None)
        cells += [row.get(name), interval[0], interval[1]]
    return cells


def _compared(extra: dict, numbers: Callable[[dict], list]) -> list[list]:
    rows = [["annotator A vs B", *numbers(extra["between_annotators"])]] if extra.get("between_annotators") else []
    return rows + [
        [f"{name} vs machine suggestion", *numbers(values)]
        for name, values in (extra.get("annotator_vs_machine") or {}).items()
    ]


def _gold_cells(gold: dict | None) -> list:
    return [gold["agreement"], gold["units"]] if gold else [None, None]


def _revision_rows(revisions: dict) -> list[tuple[str, dict]]:
    """(compared, {"sentences": numbers, "responses": numbers}) of step 3's revisions."""
    return [
        ("annotator A vs B", revisions.get("between_annotators") or {}),
        *(
            (f"{name} vs machine suggestion", units)
            for name, units in (revisions.get("against_suggestion") or {}).items()
        ),
    ]


def agreement_tables(result: dict, rater: dict | None = None) -> dict[str, dict]:
    """name → {"title", "columns", "rows", "per_field"} for every table of the agreement page
    (those of kind-specific numbers only when the result has them; the LLM rater's when
    ``rater``, annotation.research.rater_agreement's result, is given). ``per_field`` tables start with
    the field's name, so one field's rows can be picked out."""
    fields = result["fields"]
    tables = {
        "fields": {
            "title": "Agreement per field",
            "per_field": True,
            "columns": ["field", "label", "units", *_with_ci(_FIELD_NUMBERS)],
            "rows": [
                [name, f["label"], f["units"], *_numbers_with_ci(f, _FIELD_NUMBERS)] for name, f in fields.items()
            ],
        },
        "matrix": {
            "title": "Confusion matrices (annotator A × annotator B)",
            "per_field": True,
            "columns": ["field", "annotator_a", "annotator_b", "count"],
            "rows": [
                [name, a, b, count]
                for name, f in fields.items()
                for a, row in zip(
                    f["confusion_matrix"]["labels"],
                    f["confusion_matrix"]["rows_annotator_a_columns_annotator_b"],
                )
                for b, count in zip(f["confusion_matrix"]["labels"], row)
            ],
        },
        "pairs": {
            "title": "Agreement per annotator pair",
            "per_field": True,
            "columns": [
                "field",
                "annotator_1",
                "annotator_2",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa")),
            ],
            "rows": [
                [
                    name,
                    *pair["raters"],
                    pair["units"],
                    *_numbers_with_ci(pair, ("observed_agreement", "cohen_kappa")),
                ]
                for name, f in fields.items()
                for pair in f["pairs"]
            ],
        },
        "over_time": {
            "title": "Agreement per week of submission",
            "per_field": True,
            "columns": [
                "field",
                "week",
                "items",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa", "krippendorff_alpha")),
            ],
            "rows": [
                [
                    name,
                    week["week"],
                    week["items"],
                    week["units"],
                    *_numbers_with_ci(week, ("observed_agreement", "cohen_kappa", "krippendorff_alpha")),
                ]
                for name, f in fields.items()
                for week in f.get("over_time", ())
            ],
        },
        "versus_gold": {
            "title": "Each annotator against the gold records",
            "per_field": True,
            "columns": [
                "field",
                "annotator",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa")),
            ],
            "rows": [
                [
                    name,
                    row["annotator"],
                    row["units"],
                    *_numbers_with_ci(row, ("observed_agreement", "cohen_kappa")),
                ]
                for name, f in fields.items()
                for row in f.get("versus_gold", ())
            ],
        },
        "annotators": {
            "title": "Annotators",
            "per_field": False,
            "columns": [
                "annotator",
                "items_submitted",
                *(f"{column}_{name}" for name in fields for column in ("agreement_with_gold", "units_with_gold")),
            ],
            "rows": [
                [
                    a["username"],
                    a["items_submitted"],
                    *(value for name in fields for value in _gold_cells(a["agreement_with_gold"].get(name))),
                ]
                for a in result.get("annotators", ())
            ],
        },
    }
    if result.get("decomposition"):
        names = (
            "sentences",
            "same_claim_count",
            "same_claim_count_share",
            "paired_claims",
            "mean_normalised_edit_distance",
            "mean_word_overlap",
        )
        tables["decomposition"] = {
            "title": "Decomposition into claims",
            "per_field": False,
            "columns": ["compared", *names],
            "rows": _compared(result["decomposition"], lambda d: [d.get(n) for n in names]),
        }
    if result.get("grouping"):
        tables["grouping"] = {
            "title": "Grouping of facts into individuals",
            "per_field": False,
            "columns": ["compared", "items", "mean_adjusted_rand_index"],
            "rows": _compared(result["grouping"], lambda g: [g.get("items"), g.get("mean")]),
        }
    if result.get("corrections"):
        names = (
            "claims",
            "both_corrected",
            "both_corrected_share",
            "mean_normalised_edit_distance",
        )
        tables["corrections"] = {
            "title": "Corrections",
            "per_field": False,
            "columns": list(names),
            "rows": [[result["corrections"].get(n) for n in names]],
        }
    if result.get("revisions"):
        names = ("pairs", "identical_share", "mean_normalised_edit_distance", "mean_word_overlap")
        tables["revisions"] = {
            "title": "Revisions",
            "per_field": False,
            "columns": ["compared", "unit", *names],
            "rows": [
                [compared, unit, *(numbers.get(n) for n in names)]
                for compared, units in _revision_rows(result["revisions"])
                for unit, numbers in units.items()
            ],
        }
    if rater and rater.get("fields"):
        tables["llm_rater"] = {
            "title": "LLM rater beside the annotators",
            "per_field": True,
            "columns": [
                "field",
                "compared_1",
                "compared_2",
                "machine",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa")),
            ],
            "rows": [
                [
                    f["name"],
                    *row["compared"],
                    row.get("machine"),
                    row["units"],
                    *_numbers_with_ci(row, ("observed_agreement", "cohen_kappa")),
                ]
                for f in rater["fields"]
                for row in f["rows"]
            ],
        }
    return tables
