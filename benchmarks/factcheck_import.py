"""Headline "Factcheck-Bench import": items/s of an import with gold, its export lines included.

Usage: .venv/bin/python benchmarks/factcheck_import.py [--items 10000] [--exports [--small-items 2000]]
           [--toast-compression pglz|lz4] [--db workbench_bench_factcheck]

Generated items in the released benchmark shape (``released_item``: 3 sentences of 2 claims, 5
evidence passages of ~90 words a claim, a revised response; the released items' average sizes)
are imported with ``labels_as=gold`` (every step consolidated), then the task after an import
stores their export lines. Reported: items/s of import + lines (target ≥ 1,000 at 10,000; the
first batch is parsed before anything is written, so 1,000 items fall a little short), wall and
Python CPU of each, PostgreSQL backend CPU and the stored sizes.

``--exports`` then times, in a fresh child process each, ``factcheck-bench`` from the stored lines,
the same with every stored line stale (rendered again) and the ``factcheck-subtasks`` zip, at
``--small-items`` and ``--items`` (target: factcheck-bench ≤ 2 s at 10,000, traced peak the same at
both sizes). The database is dropped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    Figure,
    Run,
    bench_database,
    configure_environment,
    database_cpu_seconds,
    django_setup,
    load_average,
    print_figures,
    print_table,
)

TARGET_ITEMS_S = 1000
TARGET_EXPORT_S = 2.0
SIZES = {"quick": 50, "full": 10_000}
WORDS = (
    "tower",
    "river",
    "treaty",
    "century",
    "museum",
    "engineer",
    "bridge",
    "painter",
    "element",
    "orbit",
    "capital",
    "language",
    "island",
    "emperor",
    "theory",
    "festival",
    "harbour",
    "library",
    "desert",
    "glacier",
)


def sentence(rng: random.Random, words: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def released_item(index: int, rng: random.Random) -> dict:
    """One item in the released shape with all three steps filled in."""
    sentences = {}
    for s in range(1, 4):  # the released items average 3.3 sentences, 2.2 claims each, 5 passages a claim
        text = sentence(rng)
        claims = [sentence(rng, 8) for _ in range(2)]
        needs = [rng.choice(("no", "no", "yes", "not_enough_evidence")) for _ in claims]
        sentences[f"sentence{s}"] = {
            "text": text,
            "decontext": text,
            "sentence_factuality_label": all(n == "no" for n in needs),
            "revised_decontext": text,
            "sentence_checkworthiness": "yes",
            "most_importance_sentence": "yes",
            "claims": claims,
            "claim_checkworthiness": ["factual"] * 2,
            "if_automatic_evidence_enough_to_verify": ["yes"] * 2,
            "human_evidence": ["NA"] * 2,
            "auto_evidence": [[" ".join(sentence(rng) for _ in range(6)) for _ in range(5)] for _ in claims],
            "auto_evidence_url": [[f"https://e.example/{index}/{s}/{k}/{p}" for p in range(5)] for k in range(2)],
            "stance_claim_autoEvid": [
                [rng.choice(("completely-support", "partially-support", "refute", "irrelevant")) for _ in range(5)]
                for _ in claims
            ],
            "if_claim_needs_edit": needs,
            "claims_factuality_label": [{"no": True, "yes": False, "not_enough_evidence": "unknown"}[n] for n in needs],
            "revised_claims": claims,
            "usedEvidence_index_in_revision": ["1" if n == "yes" else "-1" for n in needs],
            "if_most_important_claim": ["yes"] * 2,
        }
    response = " ".join(s["text"] for s in sentences.values())
    return {
        "prompt": f"Question {index}?",
        "response": response,
        "revised_response": response,
        "response_factuality": rng.random() < 0.4,
        "sentences": sentences,
    }


def load(items: int, name: str, tmp: Path) -> tuple[int, float]:
    """A Factcheck-Bench project of ``items`` items imported as gold, its export lines stored:
    (its id, items/s of import + lines)."""
    from annotation import tasks
    from annotation.imports import items as import_writer
    from annotation.imports.items import import_jsonl
    from annotation.services.projects import create_project

    rng = random.Random(items)
    path = tmp / f"factcheck-{items}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for index in range(items):
            handle.write(json.dumps(released_item(index, rng)) + "\n")
    project = create_project(name=name, kind="factcheck")
    enqueue = import_writer.enqueue_store_export_lines
    import_writer.enqueue_store_export_lines = lambda *args, **kwargs: None  # timed on its own below
    load_before, backend = load_average(), database_cpu_seconds()
    try:
        started, cpu = time.perf_counter(), time.process_time()
        with path.open("rb") as file:
            result = import_jsonl(project, file, fmt="factcheck-bench", labels_as="gold")
        import_wall, import_cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        import_writer.enqueue_store_export_lines = enqueue
    import_backend, backend = database_cpu_seconds() - backend, database_cpu_seconds()
    path.unlink()
    started, cpu = time.perf_counter(), time.process_time()
    stored = tasks.store_export_lines(project.id)
    lines_wall, lines_cpu = time.perf_counter() - started, time.process_time() - cpu
    rate = items / (import_wall + lines_wall)
    lines_backend = database_cpu_seconds() - backend
    database = (
        "" if lines_backend != lines_backend else f", PostgreSQL backend {import_backend:.2f} + {lines_backend:.2f} s"
    )
    print(
        f"  {result.items} items ({result.gold_records} gold records) and {stored} export lines more: {rate:.0f} "
        f"items/s ({import_wall:.2f} + {lines_wall:.2f} s wall; CPU: Python {import_cpu:.2f} + {lines_cpu:.2f} s"
        f"{database}; load {load_before:.1f} -> {load_average():.1f})"
    )
    return project.id, rate


def headline(run: Run) -> list[Figure]:
    items = run.options.get("items") or SIZES["quick" if run.quick else "full"]
    project_id, rate = load(items, f"factcheck import {items} {time.time_ns()}", run.tmp)
    from django.db import connection  # Django is set up by now

    if connection.vendor == "postgresql":
        print(f"  stored MiB: {_stored_mib(project_id)}")
    return [Figure(f"Factcheck-Bench import with gold, {items:,} items", rate, "items/s", TARGET_ITEMS_S, lower=False)]


def set_toast_compression(method: str) -> None:
    """Set the compression of the big JSON columns (as migration 0014 does with lz4), to compare."""
    from django.db import connection

    with connection.cursor() as cursor:
        for table, column in (
            ("annotation_item", "metadata"),
            ("annotation_itemstage", "content"),
            ("annotation_goldrecord", "payload"),
            ("annotation_exportline", "line"),
        ):
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")


def _stored_mib(project_id: int) -> str:
    """On-disk size (after TOAST compression) of the item, stage, gold and export-line JSON of a project."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sum(pg_column_size(i.metadata)), "
            "(SELECT sum(pg_column_size(s.content)) FROM annotation_itemstage s JOIN annotation_item i2 "
            " ON i2.id = s.item_id WHERE i2.project_id = %s), "
            "(SELECT sum(pg_column_size(g.payload)) FROM annotation_goldrecord g JOIN annotation_itemstage s "
            " ON s.id = g.item_stage_id JOIN annotation_item i3 ON i3.id = s.item_id WHERE i3.project_id = %s), "
            "(SELECT sum(pg_column_size(e.line)) FROM annotation_exportline e JOIN annotation_item i4 "
            " ON i4.id = e.item_id WHERE i4.project_id = %s) "
            "FROM annotation_item i WHERE i.project_id = %s",
            [project_id] * 4,
        )
        sizes = [(v or 0) / 2**20 for v in cursor.fetchone()]
    return "metadata {:.1f}, stage content {:.1f}, gold {:.1f}, export lines {:.1f}".format(*sizes)


def _export(project_id: int, fmt: str, traced: bool, queue, stored: bool = True) -> None:
    configure_environment(os.environ["FACTCHECK_EXPORT_DB"])
    django_setup()
    from annotation.exports import formats as exports
    from annotation.models import Project

    project = Project.objects.get(pk=project_id)
    if not stored:  # every stored line stale, and the lines rendered now not stored afterwards
        from annotation.exports import lines as export_lines

        export_lines.renderer_version = lambda kind: "a new version"
        exports.enqueue_store_export_lines = lambda *args, **kwargs: None
    if traced:
        tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    size = 0
    for chunk in exports.export(project, fmt).chunks:
        size += len(chunk)
    result = {
        "seconds": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "bytes": size,
    }
    if traced:
        result["peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
    queue.put(result)


def measure(project_id: int, fmt: str, stored: bool = True) -> dict:
    context = multiprocessing.get_context("spawn")
    results = {}
    for traced in (False, True):
        queue = context.Queue()
        child = context.Process(target=_export, args=(project_id, fmt, traced, queue, stored))
        child.start()
        result = queue.get()
        child.join()
        results.update(result if not traced else {"peak_mib": result["peak_mib"]})
    return results


def exports(tmp: Path, sizes: list[int]) -> None:
    rows = []
    for items in sizes:
        project_id, _ = load(items, f"factcheck export {items} {time.time_ns()}", tmp)
        for fmt, stored in (("factcheck-bench", True), ("factcheck-bench", False), ("factcheck-subtasks", True)):
            r = measure(project_id, fmt, stored)
            label = f"{fmt} ({'stored' if stored else 'rendered'} lines)" if fmt == "factcheck-bench" else fmt
            cells = (f"{r['seconds']:.2f}", f"{r['cpu']:.2f}", f"{r['bytes'] / 2**20:.1f}", f"{r['peak_mib']:.1f}")
            rows.append((f"{items:,}", label, *cells))
    print_table(("items", "format", "seconds", "CPU s", "MiB written", "traced peak MiB"), rows)
    print(f"  target: factcheck-bench ≤ {TARGET_EXPORT_S} s at 10,000 items, the traced peak the same at both sizes")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=SIZES["full"])
    parser.add_argument("--exports", action="store_true", help="then time the exports at --small-items and --items")
    parser.add_argument("--small-items", type=int, default=2_000)
    parser.add_argument(
        "--toast-compression", choices=("pglz", "lz4"), help="compression of the big JSON columns (default: migrated)"
    )
    parser.add_argument("--db", default="workbench_bench_factcheck")
    args = parser.parse_args(argv)
    os.environ["FACTCHECK_EXPORT_DB"] = args.db  # for the export's child processes
    with tempfile.TemporaryDirectory(prefix="factcheck-") as tmp, bench_database(args.db, Path(tmp) / "data"):
        if args.toast_compression:
            set_toast_compression(args.toast_compression)
        print_figures(headline(Run(args.db, Path(tmp), options={"items": args.items})))
        if args.exports:
            exports(Path(tmp), [args.small_items, args.items])
    return 0


if __name__ == "__main__":
    sys.exit(main())
