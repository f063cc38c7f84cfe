"""The version stored export lines are stamped with (annotation.exports.lines.renderer_version):
it changes with the source of every module on the path that renders a kind's lines, and with no
other."""

import configparser

import grimp
import pytest

from annotation.exports import lines as export_lines
from annotation.kinds import KINDS
from tests.helpers.exports import edit_source
from tests.helpers.paths import REPO_ROOT

STORED = sorted(key for key, spec in KINDS.items() if spec.stored_export_formats)


def app_modules() -> set[str]:
    graph = grimp.build_graph(*export_lines.APP_PACKAGES, cache_dir=None)
    return set(graph.modules)


def version(key: str) -> str:
    return export_lines.renderer_version(KINDS[key])


def test_both_kinds_with_stored_lines_are_checked():
    assert STORED == ["factcheck", "felm"]


def test_the_path_follows_the_import_graph_through_all_the_app_packages():
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / ".importlinter")
    assert set(export_lines.APP_PACKAGES) == set(config["importlinter"]["root_packages"].split())


@pytest.mark.parametrize("key", STORED)
def test_the_path_holds_the_rendering_code_the_rows_and_the_kind(key):
    path = export_lines.render_paths()[key]
    own = type(KINDS[key]).__module__
    assert {"annotation.exports.lines", "annotation.gold", "annotation.kinds", "annotation.kinds.base", own} <= path
    # what the kind's module imports is on it, and another kind's module is not unless imported
    assert {"pipeline.segmenter", "annotation"} <= path
    assert "annotation.kinds.dfactscore" not in path
    # the core's other reads, the pages, the other wings' modules are off it
    assert not {"annotation.selectors", "annotation.exports.formats", "annotation.research.scoring"} & path


def test_factcheck_whose_module_imports_felm_has_felm_on_its_path_and_felm_not_factcheck():
    paths = export_lines.render_paths()
    assert "annotation.kinds.felm" in paths["factcheck"]
    assert not any(name.startswith("annotation.kinds.factcheck") for name in paths["felm"])


@pytest.mark.parametrize("key", STORED)
def test_a_change_to_any_module_on_the_path_changes_the_version(key, monkeypatch):
    before = version(key)
    seen = {before}
    for name in sorted(export_lines.render_paths()[key]):
        with monkeypatch.context() as patch:
            edit_source(patch, export_lines.source_path(name))
            after = version(key)
        assert after not in seen, f"editing {name} leaves the {key} lines' version as it was"
        seen.add(after)
    assert version(key) == before


@pytest.mark.parametrize("key", STORED)
def test_a_change_to_a_module_off_the_path_keeps_the_version(key, monkeypatch):
    before = version(key)
    off = sorted(app_modules() - export_lines.render_paths()[key])
    assert "annotation.selectors" in off and len(off) > 50
    for name in off:
        with monkeypatch.context() as patch:
            edit_source(patch, export_lines.source_path(name))
            assert version(key) == before, f"editing {name}, off the path, changes the {key} lines' version"


def test_a_new_import_puts_the_module_and_what_it_imports_on_the_path(monkeypatch):
    build = grimp.build_graph

    def with_a_new_import(*packages, **options):
        graph = build(*packages, **options)
        graph.add_import(importer="annotation.kinds.felm", imported="annotation.selectors")
        return graph

    before = export_lines.render_paths()
    monkeypatch.setattr(grimp, "build_graph", with_a_new_import)
    monkeypatch.setattr(export_lines, "render_paths", export_lines.render_paths.__wrapped__)
    after = export_lines.render_paths()
    assert after["felm"] - before["felm"] == {"annotation.selectors"}
    assert "annotation.selectors" in after["factcheck"]  # factcheck imports felm
    assert after["dfactscore"] == before["dfactscore"]
