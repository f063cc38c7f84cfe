"""The README and docs/: every relative link reaches a file (and heading) of the repository."""

import re
from pathlib import Path

from tests.helpers.paths import REPO_ROOT as REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def test_the_docs_are_there():
    names = {path.name for path in DOCS}
    assert {
        "README.md",
        "annotator.md",
        "consolidator.md",
        "admin.md",
        "researcher.md",
        "formats.md",
        "api.md",
        "deployment.md",
        "design.md",
    } <= names
    assert len((REPO / "README.md").read_text().splitlines()) < 80, "the README is the short door to docs/"


def test_every_relative_link_points_at_a_file_that_exists():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not ours to check here
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if REPO not in file.parents and file != REPO:
                broken.append(f"{doc.relative_to(REPO)}: {target} leaves the repository")
            elif not file.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target} does not exist")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{doc.relative_to(REPO)}: {target} names no heading of {file.name}")
    assert broken == []


def test_the_docs_point_at_nothing_outside_the_repository():
    for doc in DOCS:
        text = doc.read_text()
        assert "../shared" not in text and "DESIGN.md" not in text, doc.name
