"""WSGI entry point (gunicorn config.wsgi)."""

import os
import sys

from django.core.wsgi import get_wsgi_application


def import_drf_without_requests() -> None:
    """Import DRF's `rest_framework.compat` as if `requests` were not installed.

    Issue 22 (web worker memory): `rest_framework.compat` imports `requests` when it can (with
    urllib3: many modules in every worker), only for the test client `rest_framework.test.
    RequestsClient`; a server never uses it and the project calls out with httpx. DRF supports
    running without requests (`compat.requests = None`). Only this import sees requests as missing:
    any later `import requests` in the process loads it as usual. Nothing happens when DRF or
    requests is already loaded (a test process, a management command)."""
    if "rest_framework.compat" in sys.modules or "requests" in sys.modules:
        return
    sys.modules["requests"] = None  # makes `import requests` raise ImportError
    try:
        # here, not at the top: it must run while requests is hidden
        import rest_framework.compat  # noqa: F401
    finally:
        del sys.modules["requests"]


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import_drf_without_requests()
application = get_wsgi_application()
