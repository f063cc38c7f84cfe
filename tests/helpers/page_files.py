"""The pages' files wherever they live: the shared templates and scripts (templates/, static/js/)
and each kind's (annotation/kinds/<kind>/templates/ and static/<kind>/, from the registry)."""

from pathlib import Path

from annotation.kinds import kind_dirs
from tests.helpers.paths import REPO_ROOT

STATIC_ROOTS = (REPO_ROOT / "static", *kind_dirs("static"))
SCRIPTS = sorted(path for root in STATIC_ROOTS for path in root.rglob("*.js"))
TEMPLATES = sorted(path for root in (REPO_ROOT / "templates", *kind_dirs("templates")) for path in root.rglob("*.html"))


def served(path: Path) -> str:
    """A script's path under /static/ ("js/keys.js", "felm/felm.js"), as the pages load it."""
    root = next(root for root in STATIC_ROOTS if path.is_relative_to(root))
    return path.relative_to(root).as_posix()
