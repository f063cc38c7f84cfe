"""Stored export lines: a source file of the app as if edited, for the tests of the lines' version."""

import functools
from pathlib import Path

from annotation.exports import lines as export_lines


def edit_source(monkeypatch, path: Path, edit=lambda source: source + b"\n# edited\n") -> None:
    """Read ``path`` as if its source were edited, and the renderer versions as a process started
    now computes them (both undone by ``monkeypatch``; the file itself is left as it is)."""
    read = export_lines._source
    monkeypatch.setattr(export_lines, "_source", lambda p: edit(read(p)) if p == path else read(p))
    monkeypatch.setattr(export_lines, "_versions", functools.cache(export_lines._versions.__wrapped__))
