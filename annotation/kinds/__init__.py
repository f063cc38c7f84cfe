"""Project kinds: what each kind of project imports, asks annotators, validates, compares
and exports. The workflow (assignment, blind double annotation, consolidation, agreement,
export streaming) is shared; a kind only describes its data.
"""

from .base import KindSpec, PayloadError
from .dfactscore import DfactscoreKind
from .factcheck import FactcheckKind
from .felm import FelmKind

KINDS: dict[str, KindSpec] = {spec.key: spec for spec in (FelmKind(), FactcheckKind(), DfactscoreKind())}


def get_kind(key: str) -> KindSpec:
    try:
        return KINDS[key]
    except KeyError:
        raise ValueError(f"project kind {key!r} is not supported yet") from None


__all__ = ["KINDS", "KindSpec", "PayloadError", "get_kind"]
