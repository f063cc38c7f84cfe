"""Stored export lines: the render paths as the import graph has them, and a source file of the
app as if edited, for the tests of the lines' version (annotation.exports.render_path)."""

import functools
from itertools import accumulate
from pathlib import Path

import grimp

from annotation.exports import lines as export_lines
from annotation.kinds import KINDS, get_kind

# The app's root packages (those of .importlinter): the path is followed through all of them.
APP_PACKAGES = ("annotation", "api", "config", "pipeline")


def app_graph() -> grimp.ImportGraph:
    return grimp.build_graph(*APP_PACKAGES, cache_dir=None)


def render_paths(graph: grimp.ImportGraph) -> dict[str, tuple[str, ...]]:
    """Kind key → the modules on the path that renders its stored lines, sorted, as
    annotation.exports.render_path describes them, from ``graph``."""
    registry = get_kind.__module__
    kind_packages = tuple(type(spec).__module__ for spec in KINDS.values())
    for imported in graph.find_modules_directly_imported_by(registry):
        # the registry gathers every kind (its class, its page): none of that is another kind's path
        if any(imported == package or imported.startswith(package + ".") for package in kind_packages):
            graph.remove_import(importer=registry, imported=imported)

    def with_imports(modules: set[str]) -> tuple[str, ...]:
        while True:  # with what each imports and the packages above each ("a.b.c": a, a.b)
            more = {up for name in modules for up in graph.find_upstream_modules(name)}
            more |= {package for name in modules for package in accumulate(name.split("."), "{}.{}".format)}
            if more <= modules:
                return tuple(sorted(modules))
            modules = modules | more

    return {
        key: with_imports({export_lines.__name__, type(spec).__module__})
        for key, spec in KINDS.items()
        if spec.stored_export_formats
    }


def edit_source(monkeypatch, path: Path, edit=lambda source: source + b"\n# edited\n") -> None:
    """Read ``path`` as if its source were edited, and the renderer versions as a process started
    now computes them (both undone by ``monkeypatch``; the file itself is left as it is)."""
    read = export_lines._source
    monkeypatch.setattr(export_lines, "_source", lambda p: edit(read(p)) if p == path else read(p))
    monkeypatch.setattr(export_lines, "_versions", functools.cache(export_lines._versions.__wrapped__))
