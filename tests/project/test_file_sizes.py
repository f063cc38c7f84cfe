"""No source file over 600 lines: the Python of the app, the benchmarks and the tests (migrations
aside) and the pages' scripts (shared and each kind's), each file named with its length when one
grows past the limit."""

from pathlib import Path

from tests.helpers.paths import REPO_ROOT as REPO

MAX_LINES = 600
PYTHON_FOLDERS = ("annotation", "api", "pipeline", "config", "benchmarks", "tests")
# the shared scripts and each kind's (annotation/kinds/<kind>/static/<kind>/)
SCRIPTS = ("static/js/*.js", "annotation/kinds/*/static/*/*.js")


def checked_files(root: Path) -> list[Path]:
    """The .py files of PYTHON_FOLDERS outside any migrations folder, and the SCRIPTS."""
    files = [
        path
        for folder in PYTHON_FOLDERS
        for path in (root / folder).rglob("*.py")
        if "migrations" not in path.relative_to(root).parts
    ]
    return sorted(files + [path for pattern in SCRIPTS for path in root.glob(pattern)])


def line_count(path: Path) -> int:
    # bytes.splitlines breaks at line ends only, as wc -l counts them (str.splitlines also at \f, \x1c…)
    return len(path.read_bytes().splitlines())


def oversized_files(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``"path: N lines"`` for every checked file longer than limit."""
    return [
        f"{path.relative_to(root).as_posix()}: {count} lines"
        for path in checked_files(root)
        if (count := line_count(path)) > limit
    ]


def test_no_source_file_is_over_600_lines():
    assert checked_files(REPO)
    oversized = oversized_files(REPO)
    assert not oversized, f"over {MAX_LINES} lines, split by topic:\n" + "\n".join(oversized)


def test_the_scan_names_long_files_and_leaves_out_migrations_and_other_folders(tmp_path):
    def write(relative: str, lines: int):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * lines)

    write("annotation/kinds/long.py", 601)
    write("annotation/short.py", 600)
    write("annotation/migrations/0001_initial.py", 900)
    write("tests/kinds/test_long.py", 700)
    write("benchmarks/harness.py", 650)
    write("static/js/save.js", 601)
    write("static/js/vendor/big.js", 900)  # static/js/*.js only
    write("annotation/kinds/felm/static/felm/felm.js", 640)
    write("docs/long.py", 900)  # not an app, benchmark or test folder
    assert oversized_files(tmp_path) == [
        "annotation/kinds/felm/static/felm/felm.js: 640 lines",
        "annotation/kinds/long.py: 601 lines",
        "benchmarks/harness.py: 650 lines",
        "static/js/save.js: 601 lines",
        "tests/kinds/test_long.py: 700 lines",
    ]
