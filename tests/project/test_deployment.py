"""Production settings come from the environment: HTTPS behind a proxy with one switch, no
start without a secret key, `check --deploy` clean with the documented production environment."""

import json
import secrets
import stat
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.secret_key import load_secret_key
from tests.helpers.deployment import clean_env, fake_venv
from tests.helpers.paths import REPO_ROOT as REPO

SECURITY_SETTINGS = [
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER",
    "TRUST_X_FORWARDED_FOR",
]


def manage(*args, **variables) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "manage.py"), *args],
        env=clean_env(**variables),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_in(**variables) -> dict:
    script = (
        "import json; from django.conf import settings as s; print(json.dumps({n: getattr(s, n, None) for n in "
        f"{SECURITY_SETTINGS!r}}} | {{'AXES_FAILURE_LIMIT': s.AXES_FAILURE_LIMIT, "
        "'AXES_COOLOFF_SECONDS': s.AXES_COOLOFF_TIME.total_seconds()}))"
    )
    result = manage("shell", "-c", script, **variables)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


PRODUCTION = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_HTTPS": "1",
    "DJANGO_ALLOWED_HOSTS": "workbench.example.org",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://workbench.example.org",
    "DATABASE_URL": "postgres://workbench:secret@db.example.org:5432/workbench",
    "CELERY_BROKER_URL": "redis://redis.example.org:6379/0",
}


def test_check_deploy_has_no_issues_with_the_documented_production_environment():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_https_switch_turns_on_the_whole_set():
    values = settings_in(DJANGO_SECRET_KEY="x" * 60, DJANGO_HTTPS="1")
    assert values == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "TRUST_X_FORWARDED_FOR": True,
        "AXES_FAILURE_LIMIT": 5,
        "AXES_COOLOFF_SECONDS": 900.0,
    }


def test_plain_http_default_has_no_redirect_and_no_secure_cookies():
    values = settings_in(DJANGO_SECRET_KEY="x" * 60)
    assert values["SECURE_SSL_REDIRECT"] is False and values["SECURE_HSTS_SECONDS"] == 0
    assert values["SESSION_COOKIE_SECURE"] is False and values["CSRF_COOKIE_SECURE"] is False
    assert values["SECURE_PROXY_SSL_HEADER"] is None and values["TRUST_X_FORWARDED_FOR"] is False


def test_each_setting_can_be_overridden_and_the_login_limits_come_from_the_environment():
    values = settings_in(
        DJANGO_SECRET_KEY="x" * 60,
        DJANGO_HTTPS="1",
        DJANGO_SECURE_HSTS_PRELOAD="0",
        DJANGO_SECURE_HSTS_SECONDS="3600",
        DJANGO_TRUST_X_FORWARDED_FOR="0",
        AXES_FAILURE_LIMIT="3",
        AXES_COOLOFF_MINUTES="2",
    )
    assert (
        values["SECURE_HSTS_PRELOAD"],
        values["SECURE_HSTS_SECONDS"],
        values["TRUST_X_FORWARDED_FOR"],
    ) == (False, 3600, False)
    assert values["SECURE_SSL_REDIRECT"] is True
    assert (values["AXES_FAILURE_LIMIT"], values["AXES_COOLOFF_SECONDS"]) == (3, 120.0)


REQUESTS_SCRIPT = """
import json
from django.test import Client
client = Client()
plain = client.get("/accounts/login/")
page = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps({"plain": [plain.status_code, plain.get("Location")], "https": page.status_code,
                  "hsts": page.get("Strict-Transport-Security"), "csrf_secure": bool(page.cookies["csrftoken"]["secure"])}))
"""


def test_behind_the_tls_proxy_plain_http_redirects_and_cookies_are_secure():
    result = manage("shell", "-c", REQUESTS_SCRIPT, DJANGO_SECRET_KEY="x" * 60, DJANGO_HTTPS="1")
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers == {
        "plain": [301, "https://testserver/accounts/login/"],
        "https": 200,
        "hsts": "max-age=31536000; includeSubDomains; preload",
        "csrf_secure": True,
    }
    result = manage("shell", "-c", REQUESTS_SCRIPT, DJANGO_SECRET_KEY="x" * 60)  # the plain-HTTP default
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers == {"plain": [200, None], "https": 200, "hsts": None, "csrf_secure": False}


# ------------------------------------------------------------------------------ the secret key


def test_the_server_refuses_to_start_without_a_secret_key_unless_debugging():
    result = manage("check")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DJANGO_SECRET_KEY is not set" in result.stderr
    assert manage("check", DJANGO_DEBUG="1").returncode == 0
    bad = manage("check", DJANGO_DEBUG="1", AXES_FAILURE_LIMIT="five")
    assert bad.returncode != 0 and "AXES_FAILURE_LIMIT must be a whole number, not 'five'" in bad.stderr


def test_a_key_file_is_generated_once_with_owner_only_permissions(tmp_path):
    path = tmp_path / "var" / "secret_key"
    key = load_secret_key({"DJANGO_SECRET_KEY_FILE": str(path)}, debug=False)
    assert len(key) >= 50 and path.read_text().strip() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret_key({"DJANGO_SECRET_KEY_FILE": str(path)}, debug=False) == key
    assert load_secret_key({"DJANGO_SECRET_KEY_FILE": str(path), "DJANGO_SECRET_KEY": "given"}, debug=False) == "given"
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temporary file left


def test_an_unusable_key_file_is_named_in_the_error(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ImproperlyConfigured, match=f"DJANGO_SECRET_KEY_FILE={empty} is empty"):
        load_secret_key({"DJANGO_SECRET_KEY_FILE": str(empty)}, debug=False)
    blocked = tmp_path / "file" / "secret_key"
    (tmp_path / "file").write_text("a file, not a directory")
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY_FILE=.*cannot read or create it"):
        load_secret_key({"DJANGO_SECRET_KEY_FILE": str(blocked)}, debug=False)


def test_a_key_file_keeps_the_same_key_across_processes(tmp_path):
    path = tmp_path / "secret_key"
    script = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = manage("shell", "-c", script, DJANGO_SECRET_KEY_FILE=str(path))
    second = manage("shell", "-c", script, DJANGO_SECRET_KEY_FILE=str(path))
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip().splitlines()[-1]
    assert key == path.read_text().strip() and second.stdout.strip().splitlines()[-1] == key


@pytest.mark.parametrize("target", ["migrate", "demo", "run", "worker"])
def test_make_targets_keep_a_generated_key_in_var(tmp_path, target):
    venv = fake_venv(tmp_path)
    result = subprocess.run(
        ["make", "--no-print-directory", target, f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr

    def printed(result):  # the migrations' messages go to var/log/migrate.log
        return result.stdout + ((REPO / "var" / "log" / "migrate.log").read_text() if target == "migrate" else "")

    lines = [line for line in printed(result).splitlines() if "key_file=" in line]
    assert lines and all(f"key_file={REPO}/var/secret_key " in line for line in lines)
    if target == "run":
        assert "--timeout 60 --graceful-timeout 30" in lines[-1]
    # a key file chosen by the caller wins
    result = subprocess.run(
        ["make", "--no-print-directory", target, f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(DJANGO_SECRET_KEY_FILE="/elsewhere/key"),
        timeout=60,
    )
    assert "key_file=/elsewhere/key " in printed(result)
