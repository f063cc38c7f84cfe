"""Where the repository and the released data are, wherever a test module sits (plain Python:
the pipeline tests use it too)."""

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_data_path(*parts: str) -> Path:
    """A file of the released data; skipped outside CI when it is absent, a failure in CI."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is missing: CI must have ../shared beside the clone")
        pytest.skip(f"released data not found at {path} (../shared/data beside the repository)")
    return path
