"""An import inside a function hides a dependency from the reader and from lint-imports: it is
allowed only with a stated reason (a heavy library kept out of a web worker's start-up, Django's
app-loading order), written as a comment on its line or the line above (issue 20)."""

import ast

from tests.helpers.paths import REPO_ROOT

PACKAGES = ("annotation", "api", "pipeline", "config")


def _block_says_why(lines: list[str], index: int) -> bool:
    """A comment right above the import, or above the run of import lines it belongs to."""
    while index > 0:
        above = lines[index - 1].strip()
        if above.startswith("#"):
            return True
        if not (above.startswith(("import ", "from ")) or above.endswith(",") or above in (")", "")):
            return False
        if above == "":
            return False
        index -= 1
    return False


def inline_imports_without_reason() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for inner in ast.walk(node):
                    if not isinstance(inner, ast.Import | ast.ImportFrom):
                        continue
                    line = lines[inner.lineno - 1]
                    if "#" not in line and not _block_says_why(lines, inner.lineno - 1):
                        found.append(f"{path.relative_to(REPO_ROOT)}:{inner.lineno}: {line.strip()}")
    return sorted(set(found))


def test_every_import_inside_a_function_says_why():
    missing = inline_imports_without_reason()
    assert not missing, "imports inside functions without a comment saying why:\n" + "\n".join(missing)
