"""The first `make run` prints what a user needs; the pipeline's messages go to a log file."""

import io
import logging
import os
import sys

import pytest
from django.core.management import call_command
from django.db import transaction

from annotation.management.commands import load_demo
from tests.helpers.deployment import clean_env, fake_venv
from tests.helpers.paths import REPO_ROOT as REPO


def noisy_load(self):
    """What the real loading does to a terminal: Python prints, logging, C-level writes, and the
    exporter's messages from the tasks that run when the transaction commits."""
    print("Replaced initializer 'val_22' with existing initializer 'val_19'")
    logging.getLogger("torch.onnx").warning("torchvision is not installed. Skipping torchvision::nms")
    os.write(2, b"Skipping constant folding for node 'node_Shape_2'\n")
    transaction.on_commit(lambda: sys.stderr.write("Task annotation.tasks.precompute_stages succeeded\n"))


@pytest.mark.django_db(transaction=True)
def test_the_demo_prints_progress_time_and_logins_and_logs_the_rest(monkeypatch, settings, tmp_path, capfd):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(load_demo.Command, "load", noisy_load)
    # a handler set up at start-up on the process's stderr, as the exporters' loggers have
    handler = logging.StreamHandler(sys.__stderr__)
    logging.getLogger("torch.onnx").addHandler(handler)
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    printed = out.getvalue() + "".join(capfd.readouterr())
    assert "Loading the demo users and projects (first run" in printed
    assert "Demo loaded in" in printed and "Demo logins (password demo-pass-123):" in printed
    assert "alice" in printed and "carol" in printed
    for noise in ("Replaced initializer", "torchvision", "constant folding", "precompute_stages"):
        assert noise not in printed
    log = (tmp_path / "log" / "load_demo.log").read_text()
    for noise in (
        "Replaced initializer",
        "torchvision is not installed",
        "constant folding",
        "precompute_stages",
    ):
        assert noise in log
    logging.getLogger("torch.onnx").removeHandler(handler)
    # -v 2 prints everything, as before
    call_command("load_demo", stdout=out, verbosity=2)
    assert "constant folding" in "".join(capfd.readouterr())


@pytest.mark.django_db(transaction=True)
def test_a_failing_load_shows_the_end_of_its_log(monkeypatch, settings, tmp_path, capfd):
    settings.DATA_DIR = tmp_path

    def failing(self):
        print("the exporter's last words")
        raise RuntimeError("export failed")

    monkeypatch.setattr(load_demo.Command, "load", failing)
    err = io.StringIO()
    with pytest.raises(RuntimeError):
        call_command("load_demo", stdout=io.StringIO(), stderr=err)
    assert "Loading the demo failed" in err.getvalue() and "the exporter's last words" in err.getvalue()


def test_make_migrate_says_what_it_does_and_logs_the_migrations(tmp_path):
    import subprocess

    venv = fake_venv(tmp_path)
    result = subprocess.run(
        ["make", "--no-print-directory", "migrate", f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Migrating the database (details in var/log/migrate.log)…"
    assert "args=manage.py migrate --noinput" in (REPO / "var" / "log" / "migrate.log").read_text()
