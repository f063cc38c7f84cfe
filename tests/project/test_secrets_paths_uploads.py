"""Issue 18's secrets and paths: the Django admin masks stored keys, a corpus loaded from a
server path shows only the file's name, and an upload cut off mid-body leaves no file behind."""

import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.client import encode_multipart

from annotation.models import Corpus, Project
from annotation.selectors import MASKED_SECRET

pytestmark = pytest.mark.django_db
LLM_KEY = "sk-llm-secret-0123456789"
SEARCH_KEY = "search-secret-9876543210"


@pytest.fixture
def superuser_client():
    user = get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-1234")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def project_with_keys(factcheck_project):
    factcheck_project.pipeline_settings = {
        "llm": {"base_url": "http://llm.lab.example/v1", "api_key": LLM_KEY, "model": "m"},
        "web_search": {"base_url": "http://search.lab.example", "api_key": SEARCH_KEY},
        "embeddings": False,
    }
    factcheck_project.save()
    return factcheck_project


def admin_form_data(project: Project, pipeline_settings: dict) -> dict:
    return {
        "name": project.name,
        "kind": project.kind,
        "guidelines": project.guidelines,
        "annotators_per_item": project.annotators_per_item,
        "overlap_share": project.overlap_share,
        "third_rater": project.third_rater,
        "pipeline_settings": json.dumps(pipeline_settings),
        "created_by": "",
    }


def test_the_admin_page_of_a_project_masks_the_stored_keys(superuser_client, project_with_keys):
    page = superuser_client.get(f"/admin/annotation/project/{project_with_keys.id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert LLM_KEY not in html and SEARCH_KEY not in html
    keys = re.findall(r"api_key&quot;: &quot;([^&]*)&quot;", html)  # the field and its hidden initial value
    assert keys and set(keys) == {MASKED_SECRET} and "llm.lab.example" in html


def test_the_admin_form_sent_back_masked_keeps_the_keys_and_a_new_base_url_drops_them(
    project_with_keys,
):
    from annotation.admin import ProjectAdminForm

    shown = ProjectAdminForm(instance=project_with_keys).initial["pipeline_settings"]
    assert shown["llm"]["api_key"] == MASKED_SECRET and shown["web_search"]["api_key"] == MASKED_SECRET
    form = ProjectAdminForm(admin_form_data(project_with_keys, shown), instance=project_with_keys)
    assert form.is_valid(), form.errors
    form.save()
    project_with_keys.refresh_from_db()
    assert project_with_keys.pipeline_settings["llm"]["api_key"] == LLM_KEY
    assert project_with_keys.pipeline_settings["web_search"]["api_key"] == SEARCH_KEY

    moved = {
        **shown,
        "llm": {**shown["llm"], "base_url": "http://elsewhere.example/v1"},
        "web_search": {**shown["web_search"], "api_key": "typed-now"},
    }
    form = ProjectAdminForm(admin_form_data(project_with_keys, moved), instance=project_with_keys)
    assert form.is_valid(), form.errors
    form.save()
    project_with_keys.refresh_from_db()
    assert "api_key" not in project_with_keys.pipeline_settings["llm"]  # never sent to a server it was not for
    assert project_with_keys.pipeline_settings["web_search"]["api_key"] == "typed-now"


def test_a_corpus_loaded_from_a_server_path_shows_only_the_file_name(factcheck_project, users, tmp_path):
    from django.core.management import call_command
    from rest_framework.test import APIClient

    path = tmp_path / "private" / "lab-docs" / "docs.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"title": "T", "url": "https://example.org/t", "text": "One. Two. Three."}) + "\n")
    call_command(
        "import_corpus",
        str(path),
        "--name",
        "Cli",
        "--project",
        factcheck_project.name,
        stdout=io.StringIO(),
    )
    assert Corpus.objects.get(name="Cli").file_name == "docs.jsonl"
    client = APIClient()
    client.force_authenticate(users["admin"])
    body = client.get("/api/corpora/").json()
    rows = body["results"] if isinstance(body, dict) else body
    assert [row["file_name"] for row in rows if row["name"] == "Cli"] == ["docs.jsonl"]
    assert str(tmp_path) not in json.dumps(body)


class CutPayload:
    """A request body that breaks off after ``cut`` bytes as a dropped connection does, noting
    which upload files exist at that moment."""

    def __init__(self, body: bytes, cut: int, watched: list[Path]):
        self.stream, self.cut, self.watched, self.seen_at_cut = io.BytesIO(body), cut, watched, None

    def read(self, size=-1):
        if self.stream.tell() >= self.cut:
            self.seen_at_cut = {str(d): sorted(p.name for p in d.glob("*")) if d.exists() else [] for d in self.watched}
            raise OSError("connection reset by peer")
        size = self.cut - self.stream.tell() if size is None or size < 0 else min(size, self.cut - self.stream.tell())
        return self.stream.read(size)

    def readline(self, size=-1):
        return self.read(size)


def test_an_upload_cut_off_mid_body_goes_to_the_data_directory_and_leaves_no_file(
    users, factcheck_project, settings, tmp_path, monkeypatch
):
    from rest_framework.test import APIClient

    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10_000  # to a temporary file, as large uploads go
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    upload_tmp = Path(settings.FILE_UPLOAD_TEMP_DIR)
    assert upload_tmp.is_relative_to(settings.DATA_DIR) and not upload_tmp.exists()  # made on first use

    line = json.dumps({"title": "T", "url": "https://example.org/t", "text": "A sentence. " * 50}) + "\n"
    body = encode_multipart(
        "BoUnDaRy",
        {
            "name": "Cut",
            "projects": [factcheck_project.id],
            "file": _named(io.BytesIO(line.encode() * 200), "docs.jsonl"),
        },
    )
    payload = CutPayload(body, len(body) // 2, [upload_tmp, system_tmp])
    client = APIClient()
    client.force_authenticate(users["admin"])
    response = client.generic(
        "POST",
        "/api/corpora/",
        body,
        content_type="multipart/form-data; boundary=BoUnDaRy",
        **{"wsgi.input": payload, "CONTENT_LENGTH": str(len(body))},
    )
    assert response.status_code == 400, response.content
    # The partial file was written in the data directory, not the system's temp directory ...
    assert len(payload.seen_at_cut[str(upload_tmp)]) == 1 and payload.seen_at_cut[str(system_tmp)] == []
    # ... and is gone once the request has failed, though the request object still lives.
    assert response.wsgi_request is not None
    assert list(upload_tmp.iterdir()) == [] and list(system_tmp.iterdir()) == []
    assert not Corpus.objects.filter(name="Cut").exists()


def test_a_whole_upload_still_works_through_a_temporary_file(users, factcheck_project, settings):
    from rest_framework.test import APIClient

    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10_000
    line = json.dumps({"title": "T", "url": "https://example.org/t", "text": "A sentence. " * 50}) + "\n"
    client = APIClient()
    client.force_authenticate(users["admin"])
    response = client.post(
        "/api/corpora/",
        {
            "name": "Whole",
            "projects": [factcheck_project.id],
            "file": _named(io.BytesIO(line.encode() * 200), "docs.jsonl"),
        },
        format="multipart",
    )
    assert response.status_code == 202, response.content
    assert response.json()["file_name"] == "docs.jsonl"
    assert list(Path(settings.FILE_UPLOAD_TEMP_DIR).iterdir()) == []


def test_abandoned_temporary_uploads_are_removed_by_the_next_upload(settings, tmp_path):
    import os
    import time

    from annotation.imports.uploads import ABANDONED_AFTER_SECONDS, remove_abandoned_uploads

    directory = tmp_path / "upload-tmp"
    directory.mkdir()
    old, fresh = directory / "tmpold.upload.jsonl", directory / "tmpnew.upload.jsonl"
    old.write_bytes(b"x")
    fresh.write_bytes(b"y")
    past = time.time() - ABANDONED_AFTER_SECONDS - 60
    os.utime(old, (past, past))
    remove_abandoned_uploads(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["tmpnew.upload.jsonl"]


def _named(handle: io.BytesIO, name: str) -> io.BytesIO:
    handle.name = name
    return handle
