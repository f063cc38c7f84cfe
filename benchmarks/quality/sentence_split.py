"""How often the offline sentence splitter reproduces Factcheck-Bench's released sentences.

Usage: python benchmarks/quality/sentence_split.py [path/to/factcheck-GPT-benchmark.jsonl] [--misses]

Prints the match rate (see pipeline/evaluation.py) for plain, untrained NLTK Punkt and for
pipeline.segmenter.split_sentences, plus the ceiling set by annotator-edited sentences.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from nltk.tokenize.punkt import PunktSentenceTokenizer  # noqa: E402

from pipeline.evaluation import load_factcheck_bench_sentences, sentence_match_rate  # noqa: E402
from pipeline.segmenter import split_sentences  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared/data/factcheck-bench/factcheck-GPT-benchmark.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--misses", action="store_true", help="list the sentences ours misses")
    args = parser.parse_args()

    items = load_factcheck_bench_sentences(args.data)
    splitters = {
        "plain Punkt (untrained)": PunktSentenceTokenizer().tokenize,
        "pipeline.segmenter": split_sentences,
    }
    print(f"{len(items)} responses from {args.data}")
    for name, split in splitters.items():
        started = time.perf_counter()
        report = sentence_match_rate(items, split)
        elapsed = time.perf_counter() - started
        print(f"{name:<26} {report.matched}/{report.reference} = {report.rate:.1%}   ({elapsed * 1000:.0f} ms)")
    print(
        f"{'ceiling (verbatim in text)':<26} {report.reachable}/{report.reference} = {report.ceiling:.1%}"
        f"   ours reaches {report.matched / report.reachable:.1%} of the reachable sentences"
    )
    if args.misses:
        for index, sentence in report.misses:
            print(f"  item {index}: {sentence!r}")


if __name__ == "__main__":
    main()
