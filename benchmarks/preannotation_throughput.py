"""Throughput of the step-1 pre-annotation (pipeline.factcheck_step1.suggest_step1).

Usage: python benchmarks/preannotation_throughput.py [data.jsonl] [--llm-items N]
       [--latency 0.2] [--concurrency 8]

1. Offline backends over the released Factcheck-Bench responses: items per second.
2. LLM backends against a loopback OpenAI-compatible server that answers after ``--latency``
   seconds: items per second, and per item the wall time next to the sum of its calls' times,
   which shows that the calls of one item overlap (wall << sum).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO_ROOT, print_table  # noqa: E402  (and the repository on the path)

# isort: split
from pipeline.factcheck_step1 import suggest_step1  # noqa: E402
from pipeline.llm import LLMConfig  # noqa: E402
from tests.helpers.fake_llm import FakeLLMServer, well_behaved_responder  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared/data/factcheck-bench/factcheck-GPT-benchmark.jsonl"


def load_items(path: Path) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        return [(r["prompt"], r["response"]) for r in map(json.loads, handle) if r]


def bench_offline(items: list[tuple[str, str]]) -> None:
    suggest_step1(*items[0])  # warm-up: builds the Punkt tokenizer once
    started = time.perf_counter()
    sentences = claims = 0
    for prompt, response in items:
        payload = suggest_step1(prompt, response)
        sentences += len(payload["sentences"])
        claims += sum(len(s["claims"]) for s in payload["sentences"])
    elapsed = time.perf_counter() - started
    print(
        f"offline: {len(items)} items ({sentences} sentences, {claims} claims) in {elapsed:.2f} s"
        f" = {len(items) / elapsed:.0f} items/s ({elapsed / len(items) * 1000:.1f} ms/item)"
    )


def bench_llm(items: list[tuple[str, str]], latency: float, concurrency: int) -> None:
    rows = []
    # the fake LLM listens on loopback, which the outbound policy allows a staff-set service only with this
    os.environ["OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS"] = "1"
    with FakeLLMServer(well_behaved_responder, delay=latency) as server:
        config = LLMConfig(base_url=server.base_url, model="loopback", concurrency=concurrency)
        started = time.perf_counter()
        for prompt, response in items:
            first_call = len(server.handling_seconds)
            item_started = time.perf_counter()
            suggest_step1(prompt, response, config)
            wall = time.perf_counter() - item_started
            call_times = server.handling_seconds[first_call:]
            rows.append((wall, len(call_times), sum(call_times)))
        elapsed = time.perf_counter() - started
        max_in_flight = server.max_in_flight

    print(
        f"llm (loopback, {latency * 1000:.0f} ms/call, concurrency {concurrency}): {len(items)} items"
        f" in {elapsed:.2f} s = {len(items) / elapsed:.2f} items/s; max calls in flight {max_in_flight}"
    )
    print_table(
        ("item", "calls", "wall s", "sum of calls s", "overlap"),
        [
            (index, calls, f"{wall:.2f}", f"{call_sum:.2f}", f"{call_sum / wall:.1f}x")
            for index, (wall, calls, call_sum) in enumerate(rows)
        ],
    )
    walls = [r[0] for r in rows]
    sums = [r[2] for r in rows]
    print(
        f"mean wall {statistics.mean(walls):.2f} s/item vs mean sum of calls "
        f"{statistics.mean(sums):.2f} s/item ({sum(sums) / sum(walls):.1f}x overlap)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--llm-items", type=int, default=20, help="items for the LLM run")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per loopback call")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    items = load_items(args.data)
    bench_offline(items)
    bench_llm(items[: args.llm_items], args.latency, args.concurrency)


if __name__ == "__main__":
    main()
