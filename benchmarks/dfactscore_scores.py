"""D-FActScore scores and grouping agreement at the paper's scale (pipeline.dfactscore_scores).

Usage: python benchmarks/dfactscore_scores.py [--paragraphs 10000] [--facts 21] [--models 4] [--seed 0]

Generates paragraphs of ``--facts`` facts (the paper's average is 21) with two annotators' complete
payloads each (2-3 individuals, links, labels, both optional passes), then times, in one process,
pure Python/numpy, no database:

1. ``paragraph_scores`` of every paragraph (human gold = annotator A's payload);
2. ``model_scores`` per source model (``--models`` of them, paragraphs dealt round-robin);
3. ``partition_agreements``: adjusted Rand index of the two annotators' groupings, all paragraphs.

Prints each step's wall seconds, the total (budget 2 s; exit status 1 when over) and the CPU
seconds of the process (a busy machine stretches wall time, not CPU time).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from pipeline.dfactscore_scores import (  # noqa: E402
    model_scores,
    paragraph_scores,
    partition_agreements,
)

LABELS = ("supported", "supported", "supported", "not_supported", "irrelevant")
BUDGET_SECONDS = 2.0


def make_paragraph(rng: random.Random, facts: int) -> tuple[dict, dict, dict]:
    """(content, payload of annotator A, payload of annotator B)."""
    candidates = [
        {"title": f"Person {c}", "url": f"https://example.org/{c}", "text": "", "passages": []} for c in range(4)
    ]
    content = {
        "name": "Person",
        "facts": [{"text": f"Person did thing {i}.", "span": None} for i in range(facts)],
        "candidates": candidates,
    }

    def payload(base: list[int] | None) -> dict:
        individuals = rng.randint(2, 3)
        groups = [
            g if base is not None and rng.random() < 0.85 else rng.randrange(individuals)
            for g in (base or [None] * facts)
        ]
        groups = [g % individuals for g in groups]
        groups[:individuals] = range(individuals)  # every group holds a fact
        return {
            "individuals": individuals,
            "groups": [{"link": rng.choice([0, 1, 2, 3, "none"])} for _ in range(individuals)],
            "facts": [fact(g) for g in groups],
        }

    def fact(group: int) -> dict:
        label = rng.choice(LABELS)
        # a fact its individual's page supports is supported by some page (FActScore ≥ D-FActScore)
        any_page = "supported" if label == "supported" else rng.choice(("supported", "not_supported"))
        return {
            "group": group,
            "label": label,
            "any_page": any_page,
            "entity": rng.choice([0, 1, 2, 3, "none"]),
        }

    first = payload(None)
    return content, first, payload([f["group"] for f in first["facts"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paragraphs", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=21)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    data = [make_paragraph(rng, args.facts) for _ in range(args.paragraphs)]
    print(f"{args.paragraphs:,} paragraphs x {args.facts} facts, two annotators each, {args.models} models")

    cpu_started = time.process_time()
    started = time.perf_counter()
    scored = [paragraph_scores(content, gold) for content, gold, _ in data]
    t_paragraphs = time.perf_counter() - started

    started = time.perf_counter()
    per_model = {f"model-{m}": model_scores(scored[m :: args.models]) for m in range(args.models)}
    t_models = time.perf_counter() - started

    started = time.perf_counter()
    agreements = partition_agreements(
        [([f["group"] for f in a["facts"]], [f["group"] for f in b["facts"]]) for _, a, b in data]
    )
    t_agreement = time.perf_counter() - started

    total = t_paragraphs + t_models + t_agreement
    cpu = time.process_time() - cpu_started
    print(f"paragraph_scores      {t_paragraphs:6.3f} s")
    print(f"model_scores          {t_models:6.3f} s")
    print(f"partition_agreements  {t_agreement:6.3f} s")
    print(
        f"total                 {total:6.3f} s  (budget {BUDGET_SECONDS:.1f} s: {'ok' if total <= BUDGET_SECONDS else 'OVER'}); "
        f"CPU {cpu:.3f} s (wall > CPU: the machine is busy)"
    )
    for model, result in per_model.items():
        print(
            f"  {model}: FActScore {result['init_score']:.4f}  D-FActScore {result['init_global_score']:.4f}  "
            f"groups {result['num_groups']:.2f}  facts/response {result['num_facts_per_response']:.2f}"
        )
    valid = [a for a in agreements if a is not None]
    print(f"  mean adjusted Rand index {sum(valid) / len(valid):.4f} over {len(valid):,} paragraphs")
    if total > BUDGET_SECONDS:
        sys.exit(1)


if __name__ == "__main__":
    main()
