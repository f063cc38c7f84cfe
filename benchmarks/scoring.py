"""Scoring a system with confidence intervals: 10,000 items of 5 units each, 1,000 bootstrap
resamples over items (pipeline.scoring.score). Target: ≤ 2 s.

Usage: .venv/bin/python benchmarks/scoring.py [--items 10000] [--units 5] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import wall_and_cpu  # noqa: E402  (and the repository on the path)

# isort: split
from pipeline.scoring import Scored, score  # noqa: E402

TARGET_S = 2.0
LABELS = ("true", "false", "not_enough_evidence")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--units", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.items * args.units
    gold, predicted = rng.choice(LABELS, n), rng.choice(LABELS, n)
    units = [Scored(i // args.units, str(g), str(p)) for i, (g, p) in enumerate(zip(gold, predicted))]
    result, wall, cpu = wall_and_cpu(lambda: score(units, resamples=args.resamples))
    f1 = result["macro"]["f1"] if "macro" in result else None
    print(
        f"{result['items']:,} items, {result['units']:,} units, {args.resamples} resamples: "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU (target ≤ {TARGET_S} s: {'met' if wall <= TARGET_S else 'NOT met'})"
    )
    if f1 is not None:
        print(f"macro F1 {f1['value']:.3f} [{f1['low']:.3f}, {f1['high']:.3f}]")
    sys.exit(0 if wall <= TARGET_S else 1)


if __name__ == "__main__":
    main()
