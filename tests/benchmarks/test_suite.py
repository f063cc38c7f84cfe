"""benchmarks/suite.py: the table of figures against their targets, and the quick run of every
headline on SQLite (so that the runner and each headline's plumbing cannot rot unseen)."""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import harness, suite
from tests.helpers.paths import REPO_ROOT


def test_a_figure_is_met_on_the_right_side_of_its_target():
    assert harness.Figure("import", 0.9, "s", 1.0).met is True
    assert harness.Figure("import", 1.1, "s", 1.0).met is False
    assert harness.Figure("rate", 1100, "items/s", 1000, lower=False).met is True
    assert harness.Figure("rate", 900, "items/s", 1000, lower=False).met is False
    assert harness.Figure("no target here", 5, "ms").met is None
    assert harness.Figure("failed", None, "").met is None


def test_the_table_has_one_row_a_figure_with_value_target_and_met_or_missed(capsys):
    harness.print_figures(
        [
            harness.Figure("save p95, paced", 8.9, "ms", 15, note="20 clients"),
            harness.Figure("Factcheck-Bench import", 906, "items/s", 1000, lower=False),
            harness.Figure("web tier", 129, "MiB"),
            harness.Figure("evidence: failed", None, ""),
        ]
    )
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["figure", "value", "target", "met/missed"]
    assert rows[0].split()[-5:] == ["clients)", "≤", "15", "ms", "met"]
    assert rows[1].split()[-5:] == ["items/s", "≥", "1,000", "items/s", "missed"]
    assert rows[2].split()[-3:] == ["MiB", "–", "–"]
    assert "error" in rows[3]


def test_a_headline_that_fails_is_an_error_row_and_the_others_still_run(monkeypatch, tmp_path, capsys):
    def broken(run):
        raise RuntimeError("no server")

    monkeypatch.setitem(suite.HEADLINES, "import", broken)
    monkeypatch.setitem(suite.HEADLINES, "export", lambda run: [harness.Figure("export", 0.1, "s", 0.3)])
    results = suite.run_headlines(harness.Run("unused", tmp_path), ["import", "export"])
    assert [name for name, _ in results] == ["import", "export"]
    assert results[0][1][0].value is None and "failed" in results[0][1][0].name
    assert results[1][1][0].met is True
    assert "RuntimeError: no server" in capsys.readouterr().err


def test_the_options_name_only_headlines_that_exist_and_quick_runs_without_a_broker():
    with pytest.raises(SystemExit):
        suite.parse_args(["--only", "import,speed"])
    assert suite.parse_args(["--quick"]).broker == ""
    assert suite.parse_args([]).broker == suite.DEFAULT_BROKER
    assert suite.parse_args(["--only", "saves, memory"]).only == ["saves", "memory"]


def test_a_sqlite_database_is_a_path_and_dropping_it_removes_its_files(tmp_path):
    name = str(tmp_path / "bench.sqlite3")
    assert harness.is_sqlite(name) and not harness.is_sqlite("workbench_bench_suite")
    assert harness.database_url(name) == f"sqlite:///{name}"
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"bench.sqlite3{suffix}").write_bytes(b"x")
    harness.drop_database(name)
    assert not list(tmp_path.iterdir())


def test_the_quick_run_measures_every_headline_and_prints_the_table(tmp_path):
    out = tmp_path / "figures.json"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    done = subprocess.run(
        [sys.executable, "benchmarks/suite.py", "--quick", "--json", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert {row["headline"] for row in figures} == set(suite.HEADLINES)
    assert all(isinstance(row["value"], int | float) and row["value"] > 0 for row in figures)
    targeted = {row["name"].split(",")[0] for row in figures if row["target"] is not None}
    assert {"FELM import", "FELM export", "save p95", "one web worker", "Factcheck-Bench import with gold"} <= targeted
    table = done.stdout[done.stdout.index("  figure ") :].splitlines()
    assert len(table) == 1 + len(figures)
    assert all(line.rstrip().endswith(("met", "missed", "–")) for line in table[1:])
