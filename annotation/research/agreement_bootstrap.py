"""Bootstrap confidence intervals of the agreement numbers (annotation.research.agreement's
``field_agreement``): 95 % percentile intervals, resampling items, for the totals and per rater pair.

Every statistic is a function of sums over units (category counts, coincidences, the A×B
confusion matrix). Summed per item, a resample's sums are the resample-weight matrix (how often
each item was drawn) times the per-item sums: one matrix product per chunk of resamples instead
of recomputing each statistic a thousand times.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from itertools import combinations
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

CI_LEVEL = 0.95
_CHUNK = 100  # resamples per weight matrix: bounded memory (100 × items)


def bootstrap_draws(n_items: int, resamples: int, seed: int) -> Iterable[np.ndarray]:
    """Chunks of drawn item indices, (chunk, n_items) each: resample r draws
    ``default_rng(seed).integers(0, n_items, n_items)`` in turn (chunking gives the same draws)."""
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    rng = np.random.default_rng(seed)
    for start in range(0, resamples, _CHUNK):
        yield rng.integers(0, n_items, size=(min(_CHUNK, resamples - start), n_items))


def _weights(draws: np.ndarray, n_items: int) -> np.ndarray:
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    rows = draws.shape[0]
    offsets = (np.arange(rows)[:, None] * n_items + draws).ravel()
    return np.bincount(offsets, minlength=rows * n_items).reshape(rows, n_items).astype(np.float64)


def _interval(samples: np.ndarray) -> list[float] | None:
    """Percentile interval over the resamples where the statistic is defined (None if none is)."""
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return None
    low, high = np.quantile(defined, [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return [float(low), float(high)]


def _ratio(numerator: np.ndarray, denominator: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(undefined, np.nan, numerator / np.where(undefined, 1, denominator))


def _kappa_batch(confusion: np.ndarray) -> np.ndarray:
    """Cohen's κ of (resamples, C, C) confusion matrices; NaN where undefined."""
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

    total = confusion.sum(axis=(1, 2))
    safe = np.where(total == 0, 1, total)
    p_o = np.trace(confusion, axis1=1, axis2=2) / safe
    p_e = (confusion.sum(axis=2) * confusion.sum(axis=1)).sum(axis=1) / (safe * safe)
    return _ratio(p_o - p_e, 1 - p_e, (total == 0) | (p_e == 1))


def _ordinal_delta(n_c: np.ndarray) -> np.ndarray:
    """Squared ordinal distances δ²_ck for (resamples, C) marginals → (resamples, C, C)."""
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)

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
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)
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
    import numpy as np  # here, not at module import: web workers need not load it (issue 22, memory)
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
