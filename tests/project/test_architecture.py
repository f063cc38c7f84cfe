"""The architecture holds: the import contracts (.importlinter, docs/layers.md) and kinds that
own their rules (no module outside annotation/kinds/ switches on a kind's name)."""

import ast
import configparser
import subprocess
import sys
from pathlib import Path

from annotation.kinds import KINDS
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


def test_the_contracts_keep_every_registered_kind_in_its_folder():
    """A kind added to the registry is covered by the contracts that keep its package to itself:
    only the registry imports it, and it imports no other kind."""
    contracts = configparser.ConfigParser()
    contracts.read(REPO / ".importlinter")
    protected = contracts["importlinter:contract:kinds-in-their-folders"]
    apart = contracts["importlinter:contract:kinds-apart"]
    packages = [f"annotation.kinds.{key}" for key in KINDS]
    modules = [name for package in packages for name in (package, f"{package}.**")]
    assert protected["protected_modules"].split() == modules
    assert protected["allowed_importers"].split() == ["annotation.kinds", *modules]
    assert apart["modules"].split() == packages


def _is_kind(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "kind") or (
        isinstance(node, ast.Name) and node.id == "kind"
    )


def _texts(node: ast.AST) -> set[str]:
    """The strings a comparison side writes: "felm", or each string of ("felm", "plain")."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {text for element in node.elts for text in _texts(element)}
    return {node.value} if isinstance(node, ast.Constant) and isinstance(node.value, str) else set()


def kind_names() -> frozenset[str]:
    """Every name that stands for a kind: its key, its import and export formats, its settings section."""
    return frozenset(
        name
        for spec in KINDS.values()
        for name in (spec.key, *spec.import_formats, *spec.export_formats, spec.settings_section)
        if name
    )


def _kind_test(node: ast.AST, names: frozenset[str]) -> bool:
    """``x.kind == "…"`` (any text), or any comparison or ``case`` with a kind's name: ``fmt ==
    "felm"``, ``"dfactscore" in settings``, ``case "plain":``."""
    if isinstance(node, ast.MatchValue):
        return bool(_texts(node.value) & names)
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    written = set().union(*map(_texts, sides))
    return bool(written & names) or (bool(written) and any(_is_kind(side) for side in sides))


def kind_name_comparisons(root: Path, names: frozenset[str] | None = None) -> list[str]:
    """Tests of a kind's name outside annotation/kinds/ (see _kind_test)."""
    names = kind_names() if names is None else names
    found = []
    for package in APP_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith("annotation/kinds/") or "/migrations/" in relative:
                continue
            source = path.read_text(encoding="utf-8")
            for node in ast.walk(ast.parse(source)):
                if _kind_test(node, names):
                    found.append(f"{relative}:{node.lineno}: {ast.get_source_segment(source, node)}")
    return found


def test_no_module_outside_kinds_compares_a_kind_to_its_name():
    """What differs between kinds is a KindSpec hook or attribute (get_kind(project.kind)…)."""
    assert kind_name_comparisons(REPO) == []


def test_the_scan_finds_a_kind_comparison(tmp_path):
    """Named by the kinds themselves: every kind's key, formats and settings section count."""
    assert {"felm", "factcheck", "dfactscore", "plain", "factcheck-bench", "dfactscore-result"} <= kind_names()
    (tmp_path / "annotation" / "kinds").mkdir(parents=True)
    (tmp_path / "annotation" / "kinds" / "felm.py").write_text('ok = kind == "felm"\n')
    (tmp_path / "annotation" / "views.py").write_text(
        'a = project.kind == "felm"\nb = kind != "x"\nc = p.kind in ("felm", "dfactscore")\nd = p.kind == other\n'
    )
    assert [line.split(":")[1] for line in kind_name_comparisons(tmp_path)] == ["1", "2", "3"]


def test_the_scan_finds_a_kind_name_tested_in_any_variable(tmp_path):
    """A format or a settings section is a kind's name too, whatever the variable holding it."""
    (tmp_path / "annotation" / "services").mkdir(parents=True)
    (tmp_path / "annotation" / "services" / "projects.py").write_text(
        'a = "dfactscore" in settings\n'
        'b = fmt == "felm" or "index" in data\n'
        'c = fmt in ("plain", "json")\n'
        "d = fmt == other\n"
        'e = "segmentation" in settings\n'
        'match fmt:\n    case "factcheck-bench":\n        pass\n'
    )
    found = kind_name_comparisons(tmp_path, frozenset({"dfactscore", "felm", "plain", "factcheck-bench"}))
    assert sorted(int(line.split(":")[1]) for line in found) == [1, 2, 3, 7]
