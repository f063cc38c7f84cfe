"""The version stored export lines are stamped with (annotation.exports.lines.renderer_version):
it changes with the source of every module on the path that renders a kind's lines, and with no
other; the path (annotation.exports.render_path) is the import graph's."""

import configparser
import pprint

import pytest

from annotation.exports import lines as export_lines
from annotation.exports.render_path import RENDER_PATHS
from annotation.kinds import KINDS
from tests.helpers.exports import APP_PACKAGES, app_graph, edit_source, render_paths
from tests.helpers.paths import REPO_ROOT

STORED = sorted(key for key, spec in KINDS.items() if spec.stored_export_formats)


def version(key: str) -> str:
    return export_lines.renderer_version(KINDS[key])


def test_the_declared_paths_are_the_import_graphs():
    graphs = render_paths(app_graph())
    assert RENDER_PATHS == graphs, (
        "an import changed the code that renders stored export lines: make RENDER_PATHS in "
        "annotation/exports/render_path.py\n" + pprint.pformat(graphs, width=100)
    )


def test_the_graph_spans_the_app_packages_of_the_import_contracts():
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / ".importlinter")
    assert set(APP_PACKAGES) == set(config["importlinter"]["root_packages"].split())


@pytest.mark.parametrize("key", STORED)
def test_the_path_holds_the_rendering_code_the_rows_and_the_kind(key):
    path = set(RENDER_PATHS[key])
    own = type(KINDS[key]).__module__
    assert {"annotation", "annotation.exports.lines", "annotation.gold", "annotation.kinds.base", own} <= path
    # another kind's module only where imported; the core's other reads, the other wings are off it
    assert "annotation.kinds.dfactscore" not in path
    assert not {"annotation.selectors", "annotation.exports.formats", "annotation.research.scoring"} & path


def test_the_shared_plain_line_is_on_both_paths_and_neither_kind_on_the_other():
    assert "annotation.kinds.plain" in RENDER_PATHS["factcheck"]
    assert "annotation.kinds.plain" in RENDER_PATHS["felm"]
    assert not any(name.startswith("annotation.kinds.factcheck") for name in RENDER_PATHS["felm"])
    assert not any(name.startswith("annotation.kinds.felm") for name in RENDER_PATHS["factcheck"])


def test_a_new_import_puts_the_module_on_the_path():
    graph = app_graph()
    graph.add_import(importer="annotation.kinds.plain", imported="annotation.selectors")
    paths = render_paths(graph)
    assert set(paths["felm"]) - set(RENDER_PATHS["felm"]) == {"annotation.selectors"}
    assert "annotation.selectors" in paths["factcheck"]  # both kinds import the plain line


@pytest.mark.parametrize("key", STORED)
def test_a_change_to_any_module_on_the_path_changes_the_version(key, monkeypatch):
    before = version(key)
    seen = {before}
    for name in RENDER_PATHS[key]:
        with monkeypatch.context() as patch:
            edit_source(patch, export_lines.source_path(name))
            after = version(key)
        assert after not in seen, f"editing {name} leaves the {key} lines' version as it was"
        seen.add(after)
    assert version(key) == before


@pytest.mark.parametrize("key", STORED)
def test_a_change_to_a_module_off_the_path_keeps_the_version(key, monkeypatch):
    before = version(key)
    off = sorted(set(app_graph().modules) - set(RENDER_PATHS[key]))
    assert "annotation.selectors" in off and len(off) > 50
    for name in off:
        with monkeypatch.context() as patch:
            edit_source(patch, export_lines.source_path(name))
            assert version(key) == before, f"editing {name}, off the path, changes the {key} lines' version"
