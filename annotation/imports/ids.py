"""What names an imported item, for every kind: exact duplicates, and external ids unique within
a domain. An item is named by its domain and external id (``id``, FELM's ``index``), one without
a domain by its id alone, so no other item may have that id: FELM's five domain files, each
numbered from "0", go into one project each with its domain. Items without an id are named by
their database id and never clash. annotation.imports.items applies both checks to each line."""

import hashlib

from annotation.imports.reading import line_error
from annotation.kinds.base import ParsedItem
from annotation.models import Item, Project


def identity(external_id: str, domain: str, prompt: str, response: str) -> bytes:
    """What makes two items exact duplicates, hashed to 16 bytes (about 90 bytes a line in memory)."""
    text = "\x00".join((external_id, domain, prompt, response)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()


def _identity_of(item: ParsedItem) -> bytes:
    return identity(item.external_id, item.domain, item.prompt, item.response)


def clash_error(item: ParsedItem, other_line: int | None, other_domain: str) -> dict:
    """The error of an item whose external id another item has (``other_line``: its line in the
    same file, None for an item imported before)."""
    other = f"the item on line {other_line}" if other_line else "an item imported before"
    where = f"{other}, of domain {other_domain!r}" if other_domain else f"{other}, which has no domain"
    if item.domain and item.domain == other_domain:
        fix = "give each item of a domain its own id"
    else:  # e.g. FELM's domain files, each numbered from "0", imported without their domains
        fix = "give each file's items their domain (the import's domain option, e.g. math for math.jsonl)"
    return line_error(
        item.line,
        item.id_field,
        f"{item.external_id!r} is already the id of {where}: an id is unique within its domain, and an "
        f"item without a domain shares its id with no other; {fix}",
    )


def _clashing_domain(item: ParsedItem, domains) -> str | None:
    """Which of the domains that have the item's id it clashes with, or None."""
    return next((d for d in sorted(domains) if not item.domain or d in ("", item.domain)), None)


class FileIds:
    """The (domain, external id) of a file's items so far, each hashed to a 96-bit number with its
    line (one entry a line: a file is not held in memory), and the file's domains."""

    def __init__(self):
        self.lines: dict[int, int] = {}
        self.domains: set[str] = set()

    def clash(self, item: ParsedItem) -> dict | None:
        if not item.external_id:
            return None
        for domain in (item.domain, "") if item.domain else ("", *self.domains):
            if (line := self.lines.get(_name_hash(domain, item.external_id))) is not None:
                return clash_error(item, line, domain)
        return None

    def add(self, item: ParsedItem) -> None:
        if item.external_id:
            self.lines[_name_hash(item.domain, item.external_id)] = item.line
            if item.domain:
                self.domains.add(item.domain)


def _name_hash(domain: str, external_id: str) -> int:
    text = f"{domain}\x00{external_id}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(text, digest_size=12).digest())


def stored_identities(project: Project, up_to: int | None, batch: list[ParsedItem]) -> set[bytes]:
    """The identities of the batch's items that the project held before the import (its items up
    to id ``up_to``; None: it had none)."""
    if up_to is None:
        return set()
    rows = Item.objects.filter(
        project=project,
        id__lte=up_to,
        external_id__in={p.external_id for p in batch},
        response__in={p.response for p in batch},
    ).values_list("external_id", "domain", "prompt", "response")
    return {identity(*row) for row in rows}


def stored_clashes(project: Project, up_to: int | None, batch: list[ParsedItem]) -> dict[int, dict]:
    """By line, the errors of the batch's items whose id an item the project held before the
    import has; exact duplicates are not clashes (they are skipped)."""
    ids = {p.external_id for p in batch if p.external_id}
    if up_to is None or not ids:
        return {}
    domains: dict[str, set[str]] = {}
    identities = set()
    rows = Item.objects.filter(project=project, id__lte=up_to, external_id__in=ids)
    for external_id, domain, prompt, response in rows.values_list("external_id", "domain", "prompt", "response"):
        domains.setdefault(external_id, set()).add(domain)
        identities.add(identity(external_id, domain, prompt, response))
    clashes = {}
    for p in batch:
        found = domains.get(p.external_id)
        if found and _identity_of(p) not in identities and (other := _clashing_domain(p, found)) is not None:
            clashes[p.line] = clash_error(p, None, other)
    return clashes
