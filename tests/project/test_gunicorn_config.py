"""config/gunicorn.py: web workers are recycled after a bounded number of requests (issue 22)."""

import runpy

from tests.helpers.paths import REPO_ROOT

CONFIG = REPO_ROOT / "config" / "gunicorn.py"


def test_workers_are_recycled_with_jitter(monkeypatch):
    monkeypatch.delenv("GUNICORN_MAX_REQUESTS", raising=False)
    settings = runpy.run_path(str(CONFIG))
    assert 0 < settings["max_requests"] <= 5000
    assert 0 < settings["max_requests_jitter"] < settings["max_requests"]


def test_recycling_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("GUNICORN_MAX_REQUESTS", "0")
    settings = runpy.run_path(str(CONFIG))
    assert settings["max_requests"] == 0 and settings["max_requests_jitter"] == 0
