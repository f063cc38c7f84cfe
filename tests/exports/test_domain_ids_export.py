"""Exports of a project of several FELM domains (issue 29): each domain file numbers its items
from "0", so every export that names an item names its domain beside it."""

import json

import pytest

from annotation.exports import formats as exports
from annotation.imports.items import import_jsonl
from annotation.services.projects import create_project
from tests.helpers.builders import segment, submit
from tests.helpers.felm_release import exported, import_domain_files, lines_of, released_file, wk_line

pytestmark = pytest.mark.django_db


def lines(project, fmt):
    return [json.loads(line) for line in exports.export_jsonl(project, fmt)]


def test_the_felm_export_gives_back_every_line_of_the_five_files_with_its_domain(felm_project):
    files = import_domain_files(felm_project, count=3)
    back = exported(felm_project)
    assert len(back) == 15
    by_name = {(line["domain"], line["index"]): line for line in back}
    for domain, records in files.items():
        for record in records:  # every value, the index's JSON type too, and the domain the import gave
            assert by_name[(domain, record["index"])] == {**record, "domain": domain}


@pytest.fixture
def unassigned(users):
    """A FELM project without members: the test writes the annotations itself."""
    return create_project(name="Domains", kind="felm", created_by=users["admin"])


def test_the_agreement_units_and_annotations_exports_name_the_domain(unassigned, users):
    felm_project = unassigned
    import_domain_files(felm_project, labels_as="ignore")
    for domain in ("math", "wk"):
        stage = felm_project.items.get(domain=domain, external_id="0").stages.get(stage=1)
        for name in ("alice", "bob"):
            submit(stage, users[name], {"segments": [segment(name == "alice"), segment(False)]})
    units = lines(felm_project, exports.AGREEMENT_UNITS)
    named = sorted({(u["domain"], u["item"]) for u in units})
    assert named == [("math", "0"), ("wk", "0")]
    assert list(units[0])[:3] == ["item", "domain", "item_id"]
    annotations = lines(felm_project, exports.RAW_ANNOTATIONS)
    assert sorted((a["domain"], a["external_id"], a["annotator"]) for a in annotations) == [
        ("math", "0", "alice"),
        ("math", "0", "bob"),
        ("wk", "0", "alice"),
        ("wk", "0", "bob"),
    ]


def test_an_item_without_a_domain_is_exported_without_one(unassigned, users):
    felm_project = unassigned
    import_jsonl(felm_project, lines_of(released_file(wk_line())), fmt="felm")
    stage = felm_project.items.get().stages.get(stage=1)
    submit(stage, users["alice"], {"segments": [segment(True), segment(False)]})
    assert all("domain" not in u for u in lines(felm_project, exports.AGREEMENT_UNITS))
    assert "domain" not in lines(felm_project, exports.RAW_ANNOTATIONS)[0]
