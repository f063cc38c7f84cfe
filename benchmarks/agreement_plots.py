"""The numbers behind the agreement page's plots at scale: agreement per week of submission and
each annotator against gold, with bootstrap intervals (annotation.research.agreement).

Usage: python benchmarks/agreement_plots.py [--items 10000] [--units 5] [--resamples 1000]
       [--annotators 6] [--weeks 20] [--seed 0]

Data as benchmarks/agreement_ci.py (two of ``--annotators`` per item, ordinal 3-label scale, about
80 % agreement), each item submitted on a random day of ``--weeks`` weeks and every item with a
gold record (the true label). Times, pure Python/numpy, no database, for one field:

1. ``field_agreement`` with intervals (what the page computed before the plots), for reference;
2. ``agreement_over_time``: the same numbers per ISO week;
3. ``agreement_with_reference`` for every annotator against gold;
4. the plots' geometry of the field (``plots.agreement_figures``).

Prints each step's wall seconds and whether 2 + 3 + 4 stay within the budget (exit status 1 when
over). Set OPENBLAS_NUM_THREADS=1 on a shared machine: threads fighting over cores make the
small matrix products of the bootstrap several times slower.
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import date, timedelta
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import timed  # noqa: E402  (and the repository on the path)

# isort: split
from annotation.research.agreement import (  # noqa: E402
    agreement_over_time,
    agreement_with_reference,
    field_agreement,
)
from annotation.research.plots import agreement_figures  # noqa: E402

ORDER = ["yes", "intermediate", "no"]
BUDGET_SECONDS = 2.0


def campaign(items: int, units: int, annotators: int, weeks: int, seed: int):
    rng = random.Random(seed)
    pairs = list(combinations(range(annotators), 2))
    ratings, gold, submitted = {}, {}, {}
    for item in range(items):
        a, b = pairs[item % len(pairs)]
        submitted[item] = date(2024, 1, 1) + timedelta(days=rng.randrange(weeks * 7))
        for unit in range(units):
            truth = rng.choice(ORDER)
            ratings[(item, unit)] = {
                a: truth if rng.random() < 0.9 else rng.choice(ORDER),
                b: truth if rng.random() < 0.8 else rng.choice(ORDER),
            }
            gold[(item, unit)] = truth
    return ratings, gold, submitted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--units", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--annotators", type=int, default=6)
    parser.add_argument("--weeks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    ratings, gold, submitted = campaign(args.items, args.units, args.annotators, args.weeks, args.seed)
    options = {
        "labels": ORDER,
        "resamples": args.resamples,
        "seed": args.seed,
        "item_of": lambda key: key[0],
    }
    field, [reference_seconds] = timed(lambda: field_agreement(ratings, ordinal=True, **options))
    field["over_time"], [week_seconds] = timed(lambda: agreement_over_time(ratings, submitted, ordinal=True, **options))

    def versus_gold():
        return [
            {
                "annotator": str(rater),
                **agreement_with_reference(
                    {key: (values[rater], gold[key]) for key, values in ratings.items() if rater in values},
                    **options,
                ),
            }
            for rater in range(args.annotators)
        ]

    field["versus_gold"], [gold_seconds] = timed(versus_gold)
    _, [plot_seconds] = timed(lambda: agreement_figures(field))
    added = week_seconds + gold_seconds + plot_seconds

    print(
        f"{args.items:,} items × {args.units} units, {args.annotators} annotators, {args.weeks} weeks, "
        f"{args.resamples:,} resamples"
    )
    print(f"field_agreement with intervals (reference): {reference_seconds:6.3f} s")
    print(f"agreement per week ({len(field['over_time'])} weeks):      {week_seconds:6.3f} s")
    print(f"each annotator against gold ({args.annotators}):        {gold_seconds:6.3f} s")
    print(f"plot geometry:                              {plot_seconds:6.3f} s")
    for row in field["versus_gold"]:
        low, high = row["ci"]["cohen_kappa"]
        print(
            f"  annotator {row['annotator']} vs gold: κ {row['cohen_kappa']:.4f} [{low:.4f}, {high:.4f}] on {row['units']:,} units"
        )
    within = added <= BUDGET_SECONDS
    print(f"plots' numbers {added:.3f} s, budget {BUDGET_SECONDS} s: {'ok' if within else 'OVER'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
