"""Headline "export": the FELM export of 10,000 submitted items with gold.

Usage: .venv/bin/python benchmarks/felm_export.py [--items 10000] [--repeats 3] [--sizes 2000,5000]
           [--agreement] [--db workbench_bench_export]

A FELM project of ``--items`` generated items (felm_data: 5 given segments each), imported
in-process, both annotators' submissions and a gold record per item (felm_data.populate_submissions:
20 items through the services, the rest in bulk, ~10 % of segment labels disagreeing), then
ANALYZE as autovacuum would. ``export_jsonl(project, "felm")`` is consumed ``--repeats`` times
after one warm-up; the best run is the figure (the Python CPU of it is printed beside).

Variants: ``--sizes`` exports projects of those sizes too under tracemalloc and prints the peak
of the traced heap at each (flat in the item count: the export streams); ``--agreement`` times
``project_agreement`` over the project's N x 5 doubly-labelled segments (target ≤ 1 s at 10,000).
The database is dropped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from felm_data import analyze_tables, create_felm_project, generate_felm_jsonl, populate_submissions  # noqa: E402
from harness import Figure, Run, bench_database, load_average, print_figures  # noqa: E402

TARGET_S = 0.3
TARGET_AGREEMENT_S = 1.0
SIZES = {"quick": 200, "full": 10_000}


def submitted_project(tmp: Path, items: int, seed: int = 2024) -> int:
    """A FELM project of ``items`` items both annotators submitted, each with a gold record."""
    from annotation.imports.items import import_jsonl
    from annotation.models import Project

    path = tmp / f"felm-export-{items}.jsonl"
    generate_felm_jsonl(path, items, seed)
    project_id = create_felm_project(f"felm export {uuid.uuid4().hex[:8]}")
    with path.open("rb") as file:
        import_jsonl(Project.objects.get(pk=project_id), file, fmt="felm")
    populate_submissions(project_id, seed=seed + 1)
    analyze_tables()
    return project_id


def export_once(project_id: int) -> tuple[float, float, int]:
    """(wall seconds, Python CPU seconds, characters) of one export written to /dev/null."""
    from annotation.exports.formats import export_jsonl
    from annotation.models import Project

    project = Project.objects.get(pk=project_id)
    chars = 0
    started, cpu = time.perf_counter(), time.process_time()
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for line in export_jsonl(project, "felm"):
            sink.write(line)
            chars += len(line)
    return time.perf_counter() - started, time.process_time() - cpu, chars


def headline(run: Run) -> list[Figure]:
    items = run.options.get("items") or SIZES["quick" if run.quick else "full"]
    repeats = run.options.get("repeats", 2 if run.quick else 3)
    project_id = submitted_project(run.tmp, items)
    export_once(project_id)  # warm-up: the kind's modules, the database's pages
    runs = [export_once(project_id) for _ in range(repeats)]
    best = min(runs)
    print(
        f"  export: best {best[0]:.3f} s of {repeats} (Python CPU {best[1]:.3f} s, {best[2] / 2**20:.1f} MiB); "
        f"load {load_average():.1f}"
    )
    if run.options.get("agreement"):
        agreement(project_id)
    return [Figure(f"FELM export, {items:,} items", best[0], "s", TARGET_S)]


def agreement(project_id: int) -> None:
    from annotation.models import Project
    from annotation.research.selectors import project_agreement

    started, cpu = time.perf_counter(), time.process_time()
    result = project_agreement(Project.objects.get(pk=project_id))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    label = result["fields"]["label"]
    print(
        f"  agreement over {label['units']} doubly-labelled segments: {wall:.3f} s (Python CPU {cpu:.3f} s; target "
        f"≤ {TARGET_AGREEMENT_S} s at 50,000); observed {label['observed_agreement']:.3f}, "
        f"Krippendorff's alpha {label['krippendorff_alpha']:.3f}"
    )


def traced_peaks(tmp: Path, sizes: list[int]) -> None:
    """The traced heap's peak of one export at each size: flat when the export streams."""
    for items in sizes:
        project_id = submitted_project(tmp, items)
        export_once(project_id)
        tracemalloc.start()
        export_once(project_id)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  export of {items:,} items: traced peak {peak / 2**20:.2f} MiB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=SIZES["full"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="", help="comma-separated sizes for the traced peaks, e.g. 2000,5000")
    parser.add_argument("--agreement", action="store_true")
    parser.add_argument("--db", default="workbench_bench_export")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="felm-export-") as tmp, bench_database(args.db, Path(tmp) / "data"):
        options = {"items": args.items, "repeats": args.repeats, "agreement": args.agreement}
        print_figures(headline(Run(args.db, Path(tmp), options=options)))
        if args.sizes:
            traced_peaks(Path(tmp), sorted({int(n) for n in args.sizes.split(",")} | {args.items}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
