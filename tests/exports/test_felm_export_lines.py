"""FELM's export streams stored lines (ExportLine) on PostgreSQL: the same bytes as rendering
every line, and never a stale one."""

import pytest

from annotation.exports import lines as export_lines
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.models import ExportLine, GoldRecord, Item
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.exports import edit_source

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("lines are stored on PostgreSQL only (elsewhere every export renders every line)"),
]


@pytest.fixture
def imported(felm_project):
    lines = [
        felm_line(
            i,
            [f"Claim {i}.", "Another."],
            labels=[True, i % 2 == 0],
            comment=["", "Wrong date."],
            type=[None, "knowledge_error"] if i % 2 else [None, None],
            metadata_note=f"n{i}",
        )
        for i in range(5)
    ]
    import_jsonl(felm_project, jsonl(lines), fmt="felm", labels_as="gold")
    return felm_project


def rendered(project, monkeypatch) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(type(get_kind("felm")), "stored_export_formats", ())
        return "".join(export_jsonl(project, "felm"))


def test_the_stored_lines_are_the_rendered_ones(imported, monkeypatch):
    assert ExportLine.objects.filter(item__project=imported, format="felm").count() == 5
    assert "".join(export_jsonl(imported, "felm")) == rendered(imported, monkeypatch)


def test_a_gold_record_written_behind_the_services_back_is_never_served_stale(imported, monkeypatch):
    first = Item.objects.filter(project=imported).order_by("id").first()
    gold = GoldRecord.objects.get(item_stage__item=first)
    segments = [
        {**s, "label": False, "error_type": "reasoning_error", "comment": "Now wrong."}
        for s in gold.payload["segments"]
    ]
    GoldRecord.objects.filter(pk=gold.pk).update(payload={"segments": segments})
    exported = "".join(export_jsonl(imported, "felm"))
    assert exported == rendered(imported, monkeypatch) and "Now wrong." in exported


@pytest.mark.parametrize("module", ["annotation.kinds.felm", "annotation.kinds.base", "annotation.gold"])
def test_a_change_to_the_code_that_renders_the_lines_serves_none_of_the_old_ones(imported, monkeypatch, module):
    ExportLine.objects.update(line='{"served": "old code"}\n')
    edit_source(monkeypatch, export_lines.source_path(module))
    assert "old code" not in "".join(export_jsonl(imported, "felm"))


@pytest.mark.parametrize("module", ["annotation.selectors", "annotation.kinds.factcheck"])
def test_a_change_to_code_off_the_path_keeps_serving_the_stored_lines(imported, monkeypatch, module):
    ExportLine.objects.update(line='{"served": "stored"}\n')
    edit_source(monkeypatch, export_lines.source_path(module))
    assert "".join(export_jsonl(imported, "felm")) == '{"served": "stored"}\n' * 5
