"""Where SECRET_KEY comes from. A fixed fallback key would let anyone who read the source forge
sessions and password-reset links, so without one configured the server refuses to start."""

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

# Only with DJANGO_DEBUG=1 (development on loopback), never in a deployment.
DEBUG_ONLY_KEY = "django-insecure-debug-only-key-set-DJANGO_SECRET_KEY-for-real-use"


def load_secret_key(environ: Mapping[str, str], debug: bool) -> str:
    """DJANGO_SECRET_KEY; else the key in DJANGO_SECRET_KEY_FILE, generated there (mode 0600)
    if missing (the embedded ``make run`` default); else, only in debug, a development key."""
    key = environ.get("DJANGO_SECRET_KEY", "").strip()
    if key:
        return key
    key_file = environ.get("DJANGO_SECRET_KEY_FILE", "").strip()
    if key_file:
        return _key_from_file(Path(key_file))
    if debug:
        return DEBUG_ONLY_KEY
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set: set DJANGO_SECRET_KEY to a long random string (e.g. "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'), or DJANGO_SECRET_KEY_FILE to a file "
        "that keeps a generated one (make run uses var/secret_key), or DJANGO_DEBUG=1 for development only."
    )


def _key_from_file(path: Path) -> str:
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written whole under another name, then linked in: of several processes starting at
            # once, one key wins and nobody reads a half-written file.
            temporary = path.with_name(f".{path.name}.{os.getpid()}")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(50) + "\n")
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink()
        key = path.read_text().strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY_FILE={path}: cannot read or create it ({exc.strerror})") from exc
    if not key:
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY_FILE={path} is empty: delete it to have a key generated")
    return key
