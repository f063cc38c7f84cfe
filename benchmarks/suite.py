"""The headline benchmarks in one run, one table: figure, value, target, met/missed (`make benchmark`).

Usage: .venv/bin/python benchmarks/suite.py [--only import,export,...] [--evidence-passages 1000000]
           [--broker redis://127.0.0.1:6379/5] [--db workbench_bench_suite] [--markdown] [--json PATH]
       .venv/bin/python benchmarks/suite.py --quick      # small sizes on SQLite: the plumbing, in seconds

The headlines run one after another in one database (created, migrated, dropped at the end
whatever happens; on the PostgreSQL server at 127.0.0.1:5432, or a SQLite file with --quick),
each in projects of its own; each is a module of its own, runnable alone with the variants'
options (benchmarks/README.md). A headline that fails shows "error" in the table (its traceback
above) and the run exits with 1; a missed target does not change the exit status. With --quick
the sizes are far below the targets' (200 FELM items, 2 clients, 500 passages): its figures say
the path works, not how fast it is.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import traceback
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
import evidence_search  # noqa: E402
import factcheck_import  # noqa: E402
import felm_export  # noqa: E402
import felm_import  # noqa: E402
import saves  # noqa: E402
import web_memory  # noqa: E402
from harness import Figure, Run, bench_database, is_sqlite, load_average, print_figures  # noqa: E402

HEADLINES = {
    "import": felm_import.headline,
    "export": felm_export.headline,
    "saves": saves.headline,
    "memory": web_memory.headline,
    "evidence": evidence_search.headline,
    "factcheck": factcheck_import.headline,
}
DEFAULT_BROKER = "redis://127.0.0.1:6379/5"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes on SQLite, no broker")
    parser.add_argument("--only", default=",".join(HEADLINES), help=f"comma-separated, of: {', '.join(HEADLINES)}")
    parser.add_argument("--evidence-passages", type=int, help="corpus size (default 100,000; the targets': 1,000,000)")
    parser.add_argument("--broker", help=f"Redis for the Celery worker (default {DEFAULT_BROKER}; '' for none)")
    parser.add_argument("--db", help="database name, or a path for SQLite (default workbench_bench_suite)")
    parser.add_argument("--markdown", action="store_true", help="the table in Markdown")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(HEADLINES))
    if unknown:
        parser.error(f"--only: no headline {', '.join(unknown)} (there are: {', '.join(HEADLINES)})")
    if args.broker is None:
        args.broker = "" if args.quick else DEFAULT_BROKER
    return args


def check_broker(url: str) -> None:
    """Fail at once, saying what to do, when the broker does not answer."""
    try:
        redis.Redis.from_url(url, socket_timeout=3).ping()
    except redis.RedisError as exc:
        raise SystemExit(
            f"the broker {url} does not answer ({exc}): start Redis, or pass --broker '' to run tasks in the web process"
        ) from exc


def run_headlines(run: Run, names: list[str]) -> list[tuple[str, list[Figure]]]:
    results = []
    for name in names:
        print(f"\n== {name} (load average {load_average():.1f})", flush=True)
        try:
            figures = HEADLINES[name](run)
        except Exception:  # noqa: BLE001 - one headline failing leaves the others to run
            traceback.print_exc()
            figures = [Figure(f"{name}: failed (traceback above)", None, "")]
        results.append((name, figures))
        sys.stdout.flush()
    return results


def main(argv=None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp_name:
        tmp = Path(tmp_name)
        db_name = args.db or (str(tmp / "suite.sqlite3") if args.quick else "workbench_bench_suite")
        if args.broker:
            check_broker(args.broker)
        started = datetime.datetime.now().astimezone()
        print(
            f"benchmarks {'(quick) ' if args.quick else ''}{started.isoformat(timespec='seconds')}: {os.cpu_count()} "
            f"cores, load average {load_average():.1f}, Python {platform.python_version()}, "
            f"{'SQLite' if is_sqlite(db_name) else 'PostgreSQL'}, broker {args.broker or 'none (tasks in-process)'}"
        )
        with bench_database(db_name, tmp / "data", cache_url=args.broker or None):
            run = Run(db_name, tmp, args.broker or None, args.quick)
            results = []
            for name in args.only:
                sized = name == "evidence" and args.evidence_passages
                run.options = {"sizes": {"passages": args.evidence_passages}} if sized else {}
                results += run_headlines(run, [name])
    figures = [figure for _, group in results for figure in group]
    print(
        f"\nload average {load_average():.1f} at the end{' (quick: sizes far below the targets)' if args.quick else ''}"
    )
    print_figures(figures, markdown=args.markdown)
    if args.json:
        rows = [{"headline": name, **vars(f), "met": f.met} for name, group in results for f in group]
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if any(figure.value is None for figure in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
