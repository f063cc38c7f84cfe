"""The architecture holds: the import contracts (.importlinter, docs/layers.md) and kinds that
own their rules (no module outside annotation/kinds/ switches on a kind's name)."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO_ROOT as REPO

APP_PACKAGES = ("annotation", "api", "config", "pipeline")


def test_import_contracts_hold():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _is_kind(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "kind") or (
        isinstance(node, ast.Name) and node.id == "kind"
    )


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_text(element) for element in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def kind_name_comparisons(root: Path) -> list[str]:
    """``x.kind == "felm"``, ``kind != "…"``, ``project.kind in ("…", …)`` outside annotation/kinds/."""
    found = []
    for package in APP_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith("annotation/kinds/") or "/migrations/" in relative:
                continue
            source = path.read_text(encoding="utf-8")
            for node in ast.walk(ast.parse(source)):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                if any(_is_kind(side) for side in sides) and any(_is_text(side) for side in sides):
                    found.append(f"{relative}:{node.lineno}: {ast.get_source_segment(source, node)}")
    return found


def test_no_module_outside_kinds_compares_a_kind_to_its_name():
    """What differs between kinds is a KindSpec hook or attribute (get_kind(project.kind)…)."""
    assert kind_name_comparisons(REPO) == []


def test_the_scan_finds_a_kind_comparison(tmp_path):
    (tmp_path / "annotation" / "kinds").mkdir(parents=True)
    (tmp_path / "annotation" / "kinds" / "felm.py").write_text('ok = kind == "felm"\n')
    (tmp_path / "annotation" / "views.py").write_text(
        'a = project.kind == "felm"\nb = kind != "x"\nc = p.kind in ("felm", "dfactscore")\nd = p.kind == other\n'
    )
    assert [line.split(":")[1] for line in kind_name_comparisons(tmp_path)] == ["1", "2", "3"]
