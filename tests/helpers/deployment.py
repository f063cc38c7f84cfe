"""What the deployment tests share: a clean environment for the settings, and
a fake virtualenv whose tools print what they were started with."""

import os
from pathlib import Path


def clean_env(**variables) -> dict:
    """This process's environment without the settings' variables, plus ``variables``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "AXES_", "SECURE_")) and k not in {"DATABASE_URL", "CELERY_BROKER_URL"}
    }
    return {**env, **variables}


def fake_venv(tmp_path: Path) -> Path:
    """A virtualenv whose python and gunicorn print the secret key variable and their arguments."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for tool in ("python", "gunicorn", "celery"):
        script = venv / "bin" / tool
        script.write_text(f'#!/bin/sh\necho "{tool} key_file=$DJANGO_SECRET_KEY_FILE args=$*"\n')
        script.chmod(0o755)
    for marker in (".installed", ".installed-dev"):
        (venv / marker).touch()
    return venv
