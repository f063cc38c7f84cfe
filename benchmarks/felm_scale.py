"""FELM at scale on PostgreSQL: import, export, agreement and the annotation-save endpoint.

Usage: .venv/bin/python benchmarks/felm_scale.py [--items 10000] [--small-items 2000,5000]
           [--clients 20] [--saves 100] [--configs sync:2,sync:3,gthread:2x4] [--think-ms 600]
           [--skip-http] [--profile]          (--help lists every option)

It creates its own PostgreSQL database (``workbench_bench`` on 127.0.0.1:5432, user postgres),
migrates it, and always drops it at the end. Everything runs on loopback; every loop is bounded.

What is measured (each step is a function below):

1. ``bench_import``: ``import_jsonl(project, open(path, 'rb'), fmt="felm")`` of N generated items
   in FELM's released shape (5 given segments each) into a FELM project with 2 annotators and a
   consolidator; this includes writing the items, their stages and the 2N assignments.
2. ``bench_export``: ``export_jsonl(project, "felm")`` consumed to /dev/null, after both
   annotators submitted every item (~10 % of segment labels disagree) and every item has a gold
   record; also at smaller sizes, to show whether peak memory grows with the item count.
3. ``bench_agreement``: ``selectors.project_agreement(project)`` over the N x 5 doubly-labelled
   segments.
4. ``bench_save`` (felm_saves.py): latency (p50/p95/p99) and throughput of ``PUT /api/assignments/{id}/annotation/``
   (draft saves, version tracked per assignment) from concurrent clients (threads using
   ``http.client``, keep-alive when the server allows it) against gunicorn, for several worker
   configurations, clients saving back to back (closed loop: latency ~ clients / throughput);
   then the best configuration again with clients pausing ``--think-ms`` after each answer (the
   browser autosaves 600 ms after the last change). While the load runs, the PostgreSQL backends'
   wait events are sampled (cpu, Lock:tuple / Lock:transactionid = row locks, IO:WALSync = commit
   flush). Before that, the same save in-process (Django test client) with its SQL statements.

How time and memory are taken: every import/export/agreement measurement runs in a fresh child
process (multiprocessing "spawn", app modules imported before measuring), so earlier steps do not
hide its memory. The TIMING run has no tracing; it reports wall time, the Python process's CPU
time (the rest is PostgreSQL, I/O or waiting for a CPU) and the ru_maxrss delta (growth of the
child's peak resident set during the step, whole process incl. C allocations). A SEPARATE run of
the same step under tracemalloc reports the peak of the traced Python heap and the number of SQL
statements (tracemalloc slows code down, so its run is never used for time). The machine's load
average is printed next to each time: other work on the machine inflates wall times.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import gc
import multiprocessing
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from felm_data import (  # noqa: E402
    SEGMENTS_PER_ITEM,
    analyze_tables,
    create_felm_project,
    generate_felm_jsonl,
    populate_submissions,
    warm_imports,
)
from felm_saves import DEFAULT_DB, bench_save  # noqa: E402
from harness import (  # noqa: E402
    PG_SERVER,
    configure_environment,
    create_database,
    django_setup,
    drop_database,
    load_average,
    maxrss_mib,
    migrate,
    print_table,
)

TARGETS = {"import_s": 3.0, "export_s": 2.0, "agreement_s": 1.0, "save_p95_ms": 50.0}
DEFAULT_CONFIGS = "sync:2,sync:3,sync:4,sync:5,gthread:2x4,gthread:3x4,gthread:2x8"


# -- steps measured in a fresh child process ---------------------------------------------------


def _step_import(project_id: int, path: str) -> dict:
    from annotation.imports.items import import_jsonl
    from annotation.models import Project

    project = Project.objects.get(pk=project_id)
    with open(path, "rb") as file:
        return import_jsonl(project, file, fmt="felm").as_dict()


def _step_export(project_id: int) -> dict:
    from annotation.exports.formats import export_jsonl
    from annotation.models import Project

    project = Project.objects.get(pk=project_id)
    lines = chars = 0
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for line in export_jsonl(project, "felm"):
            sink.write(line)
            lines += 1
            chars += len(line)
    return {"lines": lines, "chars": chars}


def _step_agreement(project_id: int) -> dict:
    from annotation.models import Project
    from annotation.research.selectors import project_agreement

    result = project_agreement(Project.objects.get(pk=project_id))
    label = result["fields"]["label"]
    return {
        "units": label["units"],
        "observed": label["observed_agreement"],
        "cohen_kappa": label["cohen_kappa"],
        "alpha": label["krippendorff_alpha"],
        "error_type_units": result["fields"]["error_type"]["units"],
    }


STEPS = {"import": _step_import, "export": _step_export, "agreement": _step_agreement}


class _QueryCounter:
    def __init__(self):
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def _measure_in_child(step: str, kwargs: dict, trace: bool, repeats: int) -> dict:
    """Runs in a spawned process: set Django up, then run ``step`` ``repeats`` times."""
    django_setup()
    from django.db import connection

    connection.ensure_connection()
    warm_imports()
    fn = STEPS[step]
    gc.collect()
    rss_before = maxrss_mib()
    seconds, cpu, result, queries, peak = [], [], None, None, None
    counter = _QueryCounter()
    for _ in range(repeats):
        gc.collect()
        if trace:
            tracemalloc.start()
            with connection.execute_wrapper(counter):
                result = fn(**kwargs)
            peak = max(peak or 0, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            queries = counter.count
        else:
            started, cpu_started = time.perf_counter(), time.process_time()
            result = fn(**kwargs)
            seconds.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
    connection.close()
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "result": result,
        "rss_delta_mib": maxrss_mib() - rss_before,
        "tracemalloc_peak_mib": None if peak is None else peak / 2**20,
        "queries": None if queries is None else queries // max(repeats, 1),
    }


def measure(step: str, *, trace: bool, repeats: int = 1, **kwargs) -> dict:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_measure_in_child, step, kwargs, trace, repeats).result(timeout=1800)


def _fmt_seconds(run: dict) -> str:
    """Wall time (best and median when repeated), the Python process's CPU time of the best
    run (the rest is PostgreSQL, I/O or waiting), and the load average of the machine."""
    values, cpu = run["seconds"], run["cpu_seconds"]
    best = values.index(min(values))
    text = (
        f"{values[0]:.3f} s"
        if len(values) == 1
        else f"best {values[best]:.3f} s, median {statistics.median(values):.3f} s of {len(values)}"
    )
    return f"{text} [python cpu {cpu[best]:.3f} s; load avg {load_average():.1f}]"


# -- 1. import ---------------------------------------------------------------------------------


def bench_import(tmp: Path, items: int, seed: int) -> dict:
    """Time import_jsonl of ``items`` FELM lines (untraced run), then trace a second import of
    the same file into a second, identical project for the Python-heap peak."""
    path = tmp / f"felm-{items}.jsonl"
    size = generate_felm_jsonl(path, items, seed)
    print(f"  generated {items} FELM items x {SEGMENTS_PER_ITEM} segments: {size / 2**20:.1f} MiB JSONL")
    project_id = create_felm_project(f"felm bench {items}")
    timed = measure("import", trace=False, project_id=project_id, path=str(path))
    mem_project = create_felm_project(f"felm bench {items} memory run")
    traced = measure("import", trace=True, project_id=mem_project, path=str(path))
    result = timed["result"]
    print(f"  import_jsonl: {_fmt_seconds(timed)}  ({result['items']} items, {result['assignments']} assignments)")
    print(
        f"    memory: ru_maxrss delta {timed['rss_delta_mib']:.1f} MiB (timed run); "
        f"tracemalloc peak {traced['tracemalloc_peak_mib']:.1f} MiB, {traced['queries']} SQL statements (traced run)"
    )
    return {
        "project_id": project_id,
        "path": path,
        "seconds": timed["seconds"][0],
        "rss_delta_mib": timed["rss_delta_mib"],
        "tracemalloc_peak_mib": traced["tracemalloc_peak_mib"],
        "queries": traced["queries"],
        **result,
    }


# -- 2. export ---------------------------------------------------------------------------------


def prepare_submitted_project(tmp: Path, items: int, seed: int, project_id: int | None = None) -> int:
    """A project of ``items`` items that both annotators submitted and that all have gold."""
    if project_id is None:
        from annotation.imports.items import import_jsonl
        from annotation.models import Project

        path = tmp / f"felm-{items}.jsonl"
        generate_felm_jsonl(path, items, seed)
        project_id = create_felm_project(f"felm bench {items}")
        with path.open("rb") as file:
            import_jsonl(Project.objects.get(pk=project_id), file, fmt="felm")
    filled = populate_submissions(project_id, seed=seed + 1)
    analyze_tables()
    print(
        f"  project {project_id}: {filled['annotations']} submitted annotations "
        f"({filled['via_services']} items via services, rest in bulk), {filled['done_stages']} gold records "
        f"[setup {filled['seconds']:.1f} s, then ANALYZE]"
    )
    return project_id


def bench_export(sizes: dict[int, int], repeats: int) -> dict:
    """Export FELM at each size (items → project id): time (untraced), memory (traced run)."""
    out = {}
    for items, project_id in sorted(sizes.items()):
        timed = measure("export", trace=False, repeats=repeats, project_id=project_id)
        traced = measure("export", trace=True, project_id=project_id)
        print(
            f"  export_jsonl felm, {items} items: {_fmt_seconds(timed)}  "
            f"({timed['result']['lines']} lines, {timed['result']['chars'] / 2**20:.1f} MiB)"
        )
        print(
            f"    memory: ru_maxrss delta {timed['rss_delta_mib']:.1f} MiB (timed runs); "
            f"tracemalloc peak {traced['tracemalloc_peak_mib']:.2f} MiB, {traced['queries']} SQL statements (traced run)"
        )
        out[items] = {
            "seconds": min(timed["seconds"]),
            "median_s": statistics.median(timed["seconds"]),
            "rss_delta_mib": timed["rss_delta_mib"],
            "tracemalloc_peak_mib": traced["tracemalloc_peak_mib"],
            "queries": traced["queries"],
            "lines": timed["result"]["lines"],
            "chars": timed["result"]["chars"],
        }
    if len(out) >= 2:
        # Django's .iterator(chunk_size=2000) holds at most two fetched chunks, so below 2 x 2000
        # items the peak still rises; what matters is the marginal cost per item at the top sizes.
        sizes_sorted = sorted(out)
        mid, large = sizes_sorted[-2], sizes_sorted[-1]
        per_item_kib = (out[large]["tracemalloc_peak_mib"] - out[mid]["tracemalloc_peak_mib"]) * 1024 / (large - mid)
        output_kib = out[large]["chars"] / 1024 / large
        flat = per_item_kib < 0.05 * output_kib
        peaks = ", ".join(f"{n}: {out[n]['tracemalloc_peak_mib']:.2f} MiB" for n in sizes_sorted)
        print(f"  export peak memory by item count: {peaks}")
        print(
            f"    marginal {per_item_kib:.3f} KiB per extra item between {mid} and {large} items "
            f"(each exported line is {output_kib:.2f} KiB) -> {'FLAT' if flat else 'GROWS with the item count'}"
        )
        if mid < 2 * 2000:
            print(
                "    (below 4000 items the export holds fewer than two 2000-row chunks, so the peak still "
                "rises there; compare sizes of at least 4000 items)"
            )
        out["flat"] = flat
        out["per_item_kib"] = per_item_kib
    return out


# -- 3. agreement ------------------------------------------------------------------------------


def bench_agreement(project_id: int, repeats: int) -> dict:
    timed = measure("agreement", trace=False, repeats=repeats, project_id=project_id)
    traced = measure("agreement", trace=True, project_id=project_id)
    r = timed["result"]
    print(f"  project_agreement over {r['units']} doubly-labelled segments: {_fmt_seconds(timed)}")
    obs = r["observed"]
    print(
        f"    label: observed {obs:.3f}, Cohen's kappa {r['cohen_kappa']:.3f}, Krippendorff alpha {r['alpha']:.3f}; "
        f"error_type units {r['error_type_units']}"
    )
    print(
        f"    memory: ru_maxrss delta {timed['rss_delta_mib']:.1f} MiB (timed runs); "
        f"tracemalloc peak {traced['tracemalloc_peak_mib']:.1f} MiB, {traced['queries']} SQL statements (traced run)"
    )
    return {
        "seconds": min(timed["seconds"]),
        "median_s": statistics.median(timed["seconds"]),
        "units": r["units"],
        "tracemalloc_peak_mib": traced["tracemalloc_peak_mib"],
        "rss_delta_mib": timed["rss_delta_mib"],
        "queries": traced["queries"],
    }


# -- profiling (optional) ----------------------------------------------------------------------


def profile_steps(tmp: Path, import_path: Path, items: int, export_project: int) -> None:
    """cProfile of import (into a fresh project), export and agreement, in this process."""
    import cProfile
    import pstats

    profile_project = create_felm_project(f"felm bench {items} profile run")
    for step, kwargs in (
        ("import", {"project_id": profile_project, "path": str(import_path)}),
        ("export", {"project_id": export_project}),
        ("agreement", {"project_id": export_project}),
    ):
        profiler = cProfile.Profile()
        profiler.enable()
        STEPS[step](**kwargs)
        profiler.disable()
        print(f"\n--- cProfile: {step} (top 18 by cumulative time) ---")
        pstats.Stats(profiler).strip_dirs().sort_stats("cumulative").print_stats(18)
        print(f"--- cProfile: {step} (top 12 by own time) ---")
        pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(12)


# -- main --------------------------------------------------------------------------------------


def print_header(args) -> None:
    pg = "?"
    try:
        import psycopg

        with psycopg.connect(f"{PG_SERVER}/postgres") as conn:
            pg = conn.execute("SHOW server_version").fetchone()[0]
    except Exception as exc:  # noqa: BLE001 - informational only
        pg = f"unreachable ({exc})"
    print("FELM scale benchmark")
    print(f"  date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"  python: {platform.python_version()} ({sys.executable})")
    print(
        f"  machine: {platform.platform()}, {os.cpu_count()} CPUs, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB RAM, PostgreSQL {pg}"
    )
    print(
        f"  items: {args.items} (also exported at {', '.join(map(str, args.small_items))}), "
        f"{SEGMENTS_PER_ITEM} segments each; load average now {load_average():.1f}"
    )


def print_summary(results: dict, args) -> None:
    print("\nSummary (targets from benchmarks/README.md, felm_scale.py):")
    rows = []
    if "import" in results:
        r = results["import"]
        rows.append(
            (
                f"import {args.items} items",
                f"{r['seconds']:.2f} s",
                f"<= {TARGETS['import_s']:.0f} s",
                r["seconds"] <= TARGETS["import_s"],
            )
        )
    if "export" in results:
        r = results["export"]
        big = r[max(k for k in r if isinstance(k, int))]  # noqa: E501
        rows.append(
            (
                f"export {args.items} items",
                f"{big['seconds']:.2f} s",
                f"<= {TARGETS['export_s']:.0f} s",
                big["seconds"] <= TARGETS["export_s"],
            )
        )
        if "flat" in r:
            rows.append(
                (
                    "export memory flat in item count",
                    f"{r['per_item_kib']:+.3f} KiB/item",
                    "~0",
                    r["flat"],
                )
            )
    if "agreement" in results:
        r = results["agreement"]
        rows.append(
            (
                f"agreement {r['units']} segments",
                f"{r['seconds']:.2f} s",
                f"<= {TARGETS['agreement_s']:.0f} s",
                r["seconds"] <= TARGETS["agreement_s"],
            )
        )
    if "save" in results:
        best = results["save"]["runs"][results["save"]["best"]]
        rows.append(
            (
                f"save p95, {args.clients} clients ({best['label']})",
                f"{best['p95_ms']:.1f} ms (p50 {best['p50_ms']:.1f})",
                f"<= {TARGETS['save_p95_ms']:.0f} ms",
                best["p95_ms"] <= TARGETS["save_p95_ms"],
            )
        )
        paced = results["save"]["paced"]
        if paced:
            rows.append(
                (
                    f"save p95, {args.clients} clients, {results['save']['think_ms']} ms pauses",
                    f"{paced['p95_ms']:.1f} ms (p50 {paced['p50_ms']:.1f})",
                    f"<= {TARGETS['save_p95_ms']:.0f} ms",
                    paced["p95_ms"] <= TARGETS["save_p95_ms"],
                )
            )
    print_table(
        ("measure", "value", "target", ""),
        [(name, value, target, "ok" if ok else "MISSED") for name, value, target, ok in rows],
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10000, help="FELM items to import/export (default 10000)")
    parser.add_argument(
        "--small-items",
        default="2000,5000",
        help="smaller export sizes for the memory comparison, comma-separated (default 2000,5000)",
    )
    parser.add_argument("--clients", type=int, default=20, help="concurrent HTTP clients (default 20)")
    parser.add_argument("--saves", type=int, default=100, help="measured saves per client (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up saves per client (default 10)")
    parser.add_argument("--per-client", type=int, default=5, help="own assignments per client (default 5)")
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help=f"gunicorn configurations (default {DEFAULT_CONFIGS})",
    )
    parser.add_argument(
        "--think-ms",
        type=int,
        default=600,
        help="pause per client between saves for the extra paced run (default 600, 0: skip it)",
    )
    parser.add_argument("--think-saves", type=int, default=40, help="measured saves per client in the paced run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of export and agreement (default 3)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--db-name",
        default=DEFAULT_DB,
        help="database created and dropped, must start with workbench_bench (default workbench_bench)",
    )
    parser.add_argument("--skip-http", action="store_true", help="skip the gunicorn save benchmark")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print cProfile tables of import/export/agreement",
    )
    args = parser.parse_args(argv)
    try:
        args.small_items = sorted({int(n) for n in args.small_items.split(",") if n.strip()} - {args.items})
    except ValueError:
        parser.error("--small-items must be comma-separated integers")
    if any(not 1 <= n <= 1_000_000 for n in args.small_items):
        parser.error("--small-items must be between 1 and 1000000")
    if not args.db_name.startswith(DEFAULT_DB) or not args.db_name.replace("_", "").isalnum():
        parser.error(f"--db-name must start with {DEFAULT_DB} (the database is dropped at the end)")
    if not 0 <= args.warmup <= 10_000:
        parser.error("--warmup must be between 0 and 10000")
    if not 0 <= args.think_ms <= 10_000:
        parser.error("--think-ms must be between 0 and 10000")
    for name in ("items", "clients", "saves", "per_client", "repeats", "think_saves"):
        if not 1 <= getattr(args, name) <= 1_000_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 1000000")
    return args


def _raise_system_exit(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_system_exit)  # so the finally below drops the database
    print_header(args)
    configure_environment(args.db_name)
    create_database(args.db_name)
    results: dict = {}
    try:
        with tempfile.TemporaryDirectory(prefix="felm-bench-") as tmp_name:
            tmp = Path(tmp_name)
            started = time.perf_counter()
            django_setup()
            setup_s = time.perf_counter() - started
            started = time.perf_counter()
            warm_imports()
            print(
                f"  start-up: django.setup {setup_s:.2f} s, then importing the domain modules "
                f"(annotation.kinds → pipeline/) {time.perf_counter() - started:.2f} s"
            )
            print(f"  database {args.db_name} created and migrated in {migrate():.1f} s")

            print("\n1. Import")
            results["import"] = bench_import(tmp, args.items, args.seed)

            print("\n2. Export (setting up submitted annotations and gold records first)")
            big = prepare_submitted_project(tmp, args.items, args.seed, results["import"]["project_id"])
            sizes = {args.items: big}
            for offset, small in enumerate(args.small_items, start=1):
                sizes[small] = prepare_submitted_project(tmp, small, args.seed + 10 * offset)
            results["export"] = bench_export(sizes, args.repeats)

            print("\n3. Agreement")
            results["agreement"] = bench_agreement(big, args.repeats)

            if not args.skip_http:
                print("\n4. Annotation saves over HTTP (gunicorn)")
                results["save"] = bench_save(
                    tmp,
                    clients=args.clients,
                    per_client=args.per_client,
                    warmup=args.warmup,
                    saves=args.saves,
                    configs=[c for c in args.configs.split(",") if c],
                    think_ms=args.think_ms,
                    think_saves=args.think_saves,
                    db_name=args.db_name,
                )
            print_summary(results, args)
            if args.profile:
                profile_steps(tmp, results["import"]["path"], args.items, big)
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may not be set up yet
            pass
        drop_database(args.db_name)
        print(f"\n  database {args.db_name} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
