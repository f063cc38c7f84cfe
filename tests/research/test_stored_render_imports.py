"""Rendering a stored result loads no numpy (issue 22: numpy costs a web worker ~25 MiB): the
agreement page and API read what the Celery task stored, the leaderboard the scores stored with
each run; only computing them needs numpy."""

import sys

import pytest

from tests.helpers.research import make_run

pytestmark = pytest.mark.django_db


class _NoNumpy:
    """A meta-path finder refusing numpy, with numpy taken out of sys.modules meanwhile."""

    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError(f"{name} imported while rendering a stored result")
        return None


@pytest.fixture
def without_numpy(monkeypatch):
    def block():
        for name in [n for n in sys.modules if n == "numpy" or n.startswith("numpy.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setattr(sys, "meta_path", [_NoNumpy(), *sys.meta_path])

    return block


def test_the_stored_agreement_and_leaderboard_render_without_numpy(logged_in, felm_gold, without_numpy):
    client = logged_in("admin")
    lines = [
        {"item": str(i), "segment": k, "label": "error" if (i + k) % 4 == 0 else "correct"}
        for i in range(6)
        for k in range(3)
    ]
    make_run(felm_gold, lines, resamples=20)
    pages = (
        f"/projects/{felm_gold.id}/agreement/",
        f"/api/projects/{felm_gold.id}/agreement/",
        f"/projects/{felm_gold.id}/leaderboard/",
    )
    for page in pages:  # computes and stores (in-process Celery): numpy is allowed here
        assert client.get(page, HTTP_ACCEPT="application/json").status_code == 200
    without_numpy()
    seen = {}
    for page in pages:
        response = client.get(page, HTTP_ACCEPT="application/json")
        assert response.status_code == 200, page
        seen[page] = response
    assert "numpy" not in sys.modules
    assert seen[pages[1]].status_code == 200 and seen[pages[1]].json()["fields"]  # the stored result, not a 202
    assert [row for row in seen[pages[2]].context["board"]["rows"] if row["kind"] != "baseline"]


def test_the_blocker_catches_a_numpy_import(without_numpy):
    without_numpy()
    with pytest.raises(ImportError):
        import numpy  # noqa: F401
