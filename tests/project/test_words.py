"""The words of the pages agree with each other and with the README (issue 21, point 14)."""

import re

import pytest

from annotation.kinds import KINDS
from annotation.models import Role
from annotation.services.projects import add_member, create_project
from tests.helpers.page_files import SCRIPTS
from tests.helpers.paths import REPO_ROOT as REPO


def test_every_tick_hint_names_a_box_the_script_shows():
    """A hint "tick “X”" (in a script, or in the completeness rules the server sends the page)
    names the label X of a checkbox that a script renders."""
    scripts = "\n".join(script.read_text() for script in SCRIPTS)
    hints = scripts + "".join((spec.folder / "page.py").read_text() for spec in KINDS.values())
    labels = re.findall(r"tick “([^”]+)”", hints)
    for label in labels:
        assert re.search(r'"\s*' + re.escape(label) + r'\s*"', scripts), f"no box reads “{label}”"
    assert len(labels) >= 2


@pytest.mark.django_db
def test_the_domain_help_lists_felm_domains_only_on_felm_projects(client, users):
    client.force_login(users["admin"])
    pages = {}
    for kind in ("felm", "dfactscore", "factcheck"):
        project = create_project(name=f"{kind} words", kind=kind, created_by=users["admin"])
        add_member(project=project, user=users["alice"], role=Role.ANNOTATOR)
        pages[kind] = client.get(f"/projects/{project.id}/").content.decode()
        assert "fills the domain of items whose line has none" in pages[kind]
    assert "writing_rec" in pages["felm"]
    assert "writing_rec" not in pages["dfactscore"] and "writing_rec" not in pages["factcheck"]


@pytest.mark.django_db
def test_the_readme_names_the_buttons_as_the_pages_do(client, users, felm_project):
    """The annotator's button reads "Annotate" on the home and project pages, and so in the docs."""
    client.force_login(users["alice"])
    button = re.compile(r'<a class="button[^"]*" href="/projects/\d+/next/">([^<]+)</a>')
    assert set(button.findall(client.get("/").content.decode())) == {"Annotate"}
    assert set(button.findall(client.get(f"/projects/{felm_project.id}/").content.decode())) == {"Annotate"}
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for doc in docs:
        assert "Start annotating" not in doc.read_text(), doc.name
