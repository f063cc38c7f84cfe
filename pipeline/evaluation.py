"""Measuring the segmenter against human sentence splits (used by a benchmark and a test).

The metric is the one the project tracks for the offline splitter: the share of reference
sentence texts (whitespace-normalised) that occur exactly among the splitter's sentences for
the same response. ``reachable`` counts the reference sentences that occur verbatim in their
response at all; the rest were edited by annotators (clause splits, typo fixes) and no
splitter can produce them, which bounds the attainable rate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path


def normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


@dataclass
class SplitMatchReport:
    matched: int = 0
    reference: int = 0
    reachable: int = 0
    misses: list[tuple[int, str]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.matched / self.reference if self.reference else 0.0

    @property
    def ceiling(self) -> float:
        """Best rate any splitter could reach: reference sentences found verbatim in responses."""
        return self.reachable / self.reference if self.reference else 0.0


def sentence_match_rate(items: Iterable[tuple[str, list[str]]], split: Callable[[str], list[str]]) -> SplitMatchReport:
    """Compare ``split(response)`` with the reference sentences of each (response, sentences)."""
    report = SplitMatchReport()
    for index, (response, reference_sentences) in enumerate(items):
        produced = {normalise_whitespace(s) for s in split(response)}
        normalised_response = normalise_whitespace(response)
        for sentence in reference_sentences:
            wanted = normalise_whitespace(sentence)
            report.reference += 1
            report.reachable += wanted in normalised_response
            if wanted in produced:
                report.matched += 1
            else:
                report.misses.append((index, sentence))
    return report


def load_factcheck_bench_sentences(path: str | Path) -> list[tuple[str, list[str]]]:
    """Read (response, released sentence texts) pairs from factcheck-GPT-benchmark.jsonl."""
    pairs = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                sentences = [s["text"] for s in record["sentences"].values()]
                pairs.append((record["response"], sentences))
    return pairs
