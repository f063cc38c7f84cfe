"""Factcheck-Bench exports at scale: 10,000 items whose three steps have gold records, exported
as ``factcheck-bench`` (JSONL) and ``factcheck-subtasks`` (zip of five JSONL files).

Usage: .venv/bin/python benchmarks/factcheck_export.py [--items 10000] [--small-items 2000] [--keep]

It creates its own PostgreSQL database (``workbench_export_bench`` on 127.0.0.1:5432, user
postgres), migrates it, imports generated items in the released benchmark shape with
``labels_as=gold`` (3 sentences of 2 claims, 5 evidence passages of ~90 words per claim, a
revised response: every step consolidated; sizes as the released items' averages), once with ``--small-items`` and once with
``--items``, and drops the database at the end (``--keep`` keeps it).

Each export runs in a fresh child process (multiprocessing "spawn"): a timing run (wall and CPU
time, output bytes) and a separate run under tracemalloc (peak of the traced Python heap), so
memory at the two sizes shows whether it grows with the item count. Target: factcheck-bench
≤ 2 s for 10,000 items, memory flat.

factcheck-bench serves each item's stored line (ExportLine, stored by an import as gold itself, or
by a task after an import or a consolidation): "stored" is that export; "rendered" is the first export after the stored
lines went stale (e.g. a new version of the export code), which renders every line.
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
    configure_environment,
    create_database,
    django_setup,
    drop_database,
    load_average,
    migrate,
    print_table,
)

DB = "workbench_export_bench"
TARGET_S = 2.0
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


def load(items: int, name: str) -> int:
    from annotation.imports.items import import_jsonl
    from annotation.models import Project
    from annotation.services.projects import create_project

    rng = random.Random(items)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as handle:
        for index in range(items):
            handle.write(json.dumps(released_item(index, rng)) + "\n")
        path = handle.name
    project = create_project(name=name, kind="factcheck")
    from annotation import tasks
    from annotation.imports import items as import_writer

    enqueue = import_writer.enqueue_store_export_lines
    import_writer.enqueue_store_export_lines = lambda *args, **kwargs: None  # timed on its own below
    load_before = load_average()
    backend = _backend_cpu()
    started, cpu = time.perf_counter(), time.process_time()
    with open(path, "rb") as file:
        result = import_jsonl(project, file, fmt="factcheck-bench", labels_as="gold")
    import_wall, import_cpu = time.perf_counter() - started, time.process_time() - cpu
    import_backend, backend = _backend_cpu() - backend, _backend_cpu()
    os.unlink(path)
    print(
        f"  imported {result.items} items ({result.gold_records} gold records) in {import_wall:.2f} s "
        f"(Python CPU {import_cpu:.2f} s)"
    )
    import_writer.enqueue_store_export_lines = enqueue
    started, cpu = time.perf_counter(), time.process_time()
    stored = tasks.store_export_lines(project.id)
    lines_wall, lines_cpu = time.perf_counter() - started, time.process_time() - cpu
    lines_backend = _backend_cpu() - backend
    print(
        f"  stored {stored} export lines (the task after an import) in {lines_wall:.2f} s (Python CPU {lines_cpu:.2f} s)"
    )
    print(
        f"  import + lines: {items / (import_wall + lines_wall):.0f} items/s "
        f"({import_wall:.2f} + {lines_wall:.2f} s wall, {import_cpu:.2f} + {lines_cpu:.2f} s Python CPU; "
        f"load average {load_before:.2f} -> {load_average():.2f}); PostgreSQL backend CPU "
        f"{import_backend:.2f} + {lines_backend:.2f} s; stored MiB: {_stored_mib(project.id)}"
    )
    return Project.objects.get(name=name).id


def _backend_cpu() -> float:
    """CPU seconds (user + system) of this connection's PostgreSQL backend process so far (a
    local server whose /proc this user can read; WAL writer, checkpointer and autovacuum are
    other processes, not counted). NaN when it cannot be read."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    configure_environment(os.environ.get("FACTCHECK_EXPORT_DB", DB))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--small-items", type=int, default=2_000)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--import-only", action="store_true", help="time the import and the lines, no exports")
    parser.add_argument(
        "--toast-compression", choices=("pglz", "lz4"), help="compression of the big JSON columns (default: migrated)"
    )
    parser.add_argument("--db", default=DB, help=f"the database to create and drop (default {DB})")
    args = parser.parse_args()
    os.environ["FACTCHECK_EXPORT_DB"] = args.db  # for the export's child processes
    configure_environment(args.db)
    create_database(args.db)
    try:
        django_setup()
        migrate()
        if args.toast_compression:
            set_toast_compression(args.toast_compression)
        print(f"load average {load_average():.2f}")
        projects = {n: load(n, f"export bench {n}") for n in (args.small_items, args.items)}
        rows = []
        for items, project_id in projects.items() if not args.import_only else ():
            for fmt, stored in (
                ("factcheck-bench", True),
                ("factcheck-bench", False),
                ("factcheck-subtasks", True),
            ):
                r = measure(project_id, fmt, stored)
                label = f"{fmt} ({'stored' if stored else 'rendered'} lines)" if fmt == "factcheck-bench" else fmt
                rows.append(
                    (
                        f"{items:,}",
                        label,
                        f"{r['seconds']:.2f}",
                        f"{r['cpu']:.2f}",
                        f"{r['bytes'] / 2**20:.1f}",
                        f"{r['peak_mib']:.1f}",
                    )
                )
        print()
        print_table(
            ("items", "format", "seconds", "CPU s", "MiB written", "traced peak MiB"),
            rows,
            markdown=True,
        )
        print(
            f"\nload average {load_average():.2f}; target: factcheck-bench ≤ {TARGET_S} s at {args.items:,} items, "
            "peak memory the same at both sizes"
        )
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_database(args.db)


if __name__ == "__main__":
    main()
