"""Project kinds: what each kind of project imports, asks annotators, validates, compares
and exports. The workflow (assignment, blind double annotation, consolidation, agreement,
export streaming) is shared; a kind only describes its data.

This module is the registry. Everything of a kind lives in its folder, annotation/kinds/<key>/:
its spec (``__init__.py``), its page (``page.py``: its name, and per step the label lists,
completeness rules and keys its page is handed), its templates (``templates/annotation/``), its
page scripts (``static/<key>/``, served at ``/static/<key>/``) and its guidelines
(``guidelines.md``). Adding a kind: its folder, a line in REGISTERED, and a migration recording
the new choice of ``Project.kind``. Only this module imports a kind's package.
"""

from pathlib import Path
from types import ModuleType

from .base import KindSpec, PayloadError
from .dfactscore import DfactscoreKind
from .dfactscore import page as dfactscore_page
from .factcheck import FactcheckKind
from .factcheck import page as factcheck_page
from .felm import FelmKind
from .felm import page as felm_page

# Each kind's spec and page module, in the order the choices list them.
REGISTERED: tuple[tuple[KindSpec, ModuleType], ...] = (
    (FelmKind(), felm_page),
    (FactcheckKind(), factcheck_page),
    (DfactscoreKind(), dfactscore_page),
)

KINDS: dict[str, KindSpec] = {spec.key: spec for spec, _ in REGISTERED}
PAGES: dict[str, ModuleType] = {spec.key: page for spec, page in REGISTERED}


def get_kind(key: str) -> KindSpec:
    try:
        return KINDS[key]
    except KeyError:
        raise ValueError(f"project kind {key!r} is not supported yet") from None


def kind_choices() -> list[tuple[str, str]]:
    """(key, the kind's name for people) of every kind: the choices of ``Project.kind``."""
    return [(key, page.TITLE) for key, page in PAGES.items()]


def page_rules(key: str, stage: int) -> dict:
    """The label lists and rules of a kind's step page (empty for a step without a page)."""
    return PAGES[key].RULES.get(stage, {"choices": {}})


def page_keys(key: str, stage: int) -> dict:
    """The keys of the fields a kind's step page requires (none for a step without a page)."""
    return PAGES[key].KEYS.get(stage, {})


def kind_dirs(name: str) -> list[Path]:
    """Each kind's folder ``name`` (templates, static) that exists, in registry order."""
    return [path for spec in KINDS.values() if (path := spec.folder / name).is_dir()]


__all__ = [
    "KINDS",
    "PAGES",
    "KindSpec",
    "PayloadError",
    "get_kind",
    "kind_choices",
    "kind_dirs",
    "page_keys",
    "page_rules",
]
