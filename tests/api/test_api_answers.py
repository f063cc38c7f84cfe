"""Answers the API gives outside its views: JSON 404s for any path under /api/ (a newline in an
id included), and the server's 414 for an over-long request line, documented in the schema."""

import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import RequestFactory
from drf_spectacular.generators import SchemaGenerator

from api.views import page_not_found
from tests.helpers.paths import REPO_ROOT as REPO

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/api/projects/1%0A/",
        "/api/projects/%0A/",
        "/api/projects/1/items/1%0A/stages/1/split/",
        "/api/projects/1/items/%0A1/stages/1/reopen/",
        "/api/assignments/1%0A2/annotation/",
        "/api/corpora/%0A%0A/",
        "/api/%0A/",
    ],
)
def test_an_api_path_with_a_newline_is_a_json_404(path, clients, felm_project):
    for method in ("get", "post", "put", "delete"):
        response = getattr(clients["admin"], method)(path.replace("/1", f"/{felm_project.id}", 1))
        assert response.status_code == 404, (method, path)
        assert response["Content-Type"] == "application/json", (method, path, response.content[:80])
        assert "detail" in response.json()


def test_the_404_handler_answers_json_under_api_and_the_page_elsewhere():
    factory = RequestFactory()
    api = page_not_found(factory.get("/api/anything\n"), Exception("x"))
    assert api.status_code == 404 and api["Content-Type"] == "application/json"
    page = page_not_found(factory.get("/projects/x/"), Exception("x"))
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_a_page_path_with_a_newline_is_still_the_html_404(logged_in):
    response = logged_in("alice").get("/projects/1%0A/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_the_schema_documents_414_on_every_operation():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = [(path, method, op) for path, item in schema["paths"].items() for method, op in item.items()]
    assert len(operations) > 40
    for path, method, op in operations:
        answer = op["responses"].get("414")
        assert answer is not None, (method, path)
        assert "text/html" in answer["content"], (method, path)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gunicorn_answers_an_over_long_request_line_as_the_schema_says(tmp_path):
    """The server's own answer (status and content type) is what the schema documents."""
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env.pop("CELERY_BROKER_URL", None)
    gunicorn = Path(sys.executable).with_name("gunicorn")
    server = subprocess.Popen(
        [str(gunicorn), "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/projects/?q=" + "x" * 5000)
        response = conn.getresponse()
        assert response.status == 414
        assert response.getheader("Content-Type").startswith("text/html")
        conn.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_an_unknown_api_path_is_a_json_404_for_a_session_write_without_csrf_token(users):
    """The catch-all writes nothing: no CSRF check (which answers the site's HTML 403)."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(users["alice"])
    response = client.put(
        "/api/assignments/202413191901483696128/annotation/",
        data="{}",
        content_type="application/json",
    )
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
