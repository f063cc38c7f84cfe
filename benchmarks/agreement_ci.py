"""Bootstrap confidence intervals of agreement at scale (annotation.research.agreement.field_agreement).

Usage: python benchmarks/agreement_ci.py [--items 10000] [--units 5] [--resamples 1000] [--annotators 6] [--seed 0]

Generates ``--items`` items of ``--units`` units each, every item rated by two of ``--annotators``
annotators (pairs rotate over items, so there are several pairs), on the ordinal 3-label scale
(yes / intermediate / no), about 80 % agreement. Then times, pure Python/numpy, no database:

1. the point numbers alone (``resamples=0``): observed agreement, Cohen's κ (A vs B and per pair),
   Fleiss' κ, Krippendorff's α nominal and ordinal;
2. the same with 95 % bootstrap intervals of all of them over ``--resamples`` resamples of the items.

Prints each step's wall seconds, the intervals' share (2 − 1), the CPU seconds of the process, and
whether step 2 is within the 2 s budget (exit status 1 when over).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from itertools import combinations
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from annotation.research.agreement import field_agreement  # noqa: E402

ORDER = ["yes", "intermediate", "no"]
BUDGET_SECONDS = 2.0


def ratings(items: int, units: int, annotators: int, seed: int) -> dict:
    rng = random.Random(seed)
    pairs = list(combinations(range(annotators), 2))
    data = {}
    for item in range(items):
        a, b = pairs[item % len(pairs)]
        for unit in range(units):
            truth = rng.choice(ORDER)
            data[(item, unit)] = {a: truth, b: truth if rng.random() < 0.8 else rng.choice(ORDER)}
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--units", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--annotators", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    data = ratings(args.items, args.units, args.annotators, args.seed)
    cpu = time.process_time()
    start = time.perf_counter()
    point = field_agreement(data, labels=ORDER, ordinal=True)
    point_seconds = time.perf_counter() - start
    start = time.perf_counter()
    result = field_agreement(
        data,
        labels=ORDER,
        ordinal=True,
        resamples=args.resamples,
        seed=args.seed,
        item_of=lambda key: key[0],
    )
    total_seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu

    print(
        f"{args.items:,} items × {args.units} units = {result['units']:,} units, {len(result['pairs'])} annotator pairs, "
        f"{args.resamples:,} resamples"
    )
    print(f"point numbers only:        {point_seconds:6.3f} s")
    print(f"point numbers + intervals: {total_seconds:6.3f} s  (intervals ≈ {total_seconds - point_seconds:.3f} s)")
    print(f"CPU seconds of the process: {cpu:.3f}")
    for name, interval in result["ci"].items():
        print(f"  {name:28} {point[name]:.4f} [{interval[0]:.4f}, {interval[1]:.4f}]")
    within = total_seconds <= BUDGET_SECONDS
    print(f"budget {BUDGET_SECONDS} s: {'ok' if within else 'OVER'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
