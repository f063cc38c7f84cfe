"""The corpus API: who may upload, see and share corpora; the upload is a background job."""

import io
import json

import pytest

from annotation.models import Corpus, CorpusState, Role
from annotation.services.projects import add_member, create_project
from tests.helpers.evidence import DOCUMENTS

pytestmark = pytest.mark.django_db


def corpus_file(docs=DOCUMENTS):
    file = io.BytesIO("".join(json.dumps(d) + "\n" for d in docs).encode())
    file.name = "docs.jsonl"
    return file


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path


@pytest.fixture
def other_project(users):
    project = create_project(name="Other", kind="factcheck", created_by=users["admin"])
    add_member(project=project, user=users["mallory"], role=Role.ADMIN)
    return project


def upload(client, project_ids, **extra):
    return client.post(
        "/api/corpora/",
        {"name": "Docs", "file": corpus_file(), "projects": project_ids, **extra},
        format="multipart",
    )


def test_staff_upload_a_corpus_and_see_it_searchable(clients, factcheck_project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(clients["admin"], [factcheck_project.id], passage_sentences=3)
    assert response.status_code == 202, response.json()
    corpus_id = response.json()["id"]
    body = clients["admin"].get(f"/api/corpora/{corpus_id}/").json()
    assert (
        body["state"] == CorpusState.EMBEDDING and body["passages"] == 5 and body["projects"] == [factcheck_project.id]
    )


def test_a_project_admin_uploads_only_for_projects_they_run(clients, users, factcheck_project, other_project):
    assert upload(clients["mallory"], [other_project.id]).status_code == 202
    refused = upload(clients["mallory"], [factcheck_project.id])
    assert refused.status_code == 403 and str(factcheck_project.id) in refused.json()["detail"]
    assert upload(clients["mallory"], []).status_code == 403
    assert upload(clients["alice"], [factcheck_project.id]).status_code == 403  # an annotator
    assert upload(clients["anonymous"], [factcheck_project.id]).status_code == 401


def test_corpora_are_seen_by_staff_and_the_admins_of_their_projects_only(clients, factcheck_project, other_project):
    mine = Corpus.objects.create(name="Mallory's")
    mine.projects.set([other_project])
    theirs = Corpus.objects.create(name="Staff's")
    theirs.projects.set([factcheck_project])
    assert [c["name"] for c in clients["mallory"].get("/api/corpora/").json()["results"]] == ["Mallory's"]
    assert clients["mallory"].get(f"/api/corpora/{theirs.id}/").status_code == 404
    assert clients["alice"].get(f"/api/corpora/{theirs.id}/").status_code == 404
    assert len(clients["admin"].get("/api/corpora/").json()["results"]) == 2


def test_sharing_changes_only_projects_the_caller_administers(clients, factcheck_project, other_project):
    corpus = Corpus.objects.create(name="Shared")
    corpus.projects.set([other_project])
    url = f"/api/corpora/{corpus.id}/projects/"
    assert (
        clients["mallory"].put(url, {"projects": [other_project.id, factcheck_project.id]}, format="json").status_code
        == 403
    )
    assert (
        clients["admin"].put(url, {"projects": [other_project.id, factcheck_project.id]}, format="json").status_code
        == 200
    )
    assert (
        clients["mallory"].put(url, {"projects": [other_project.id]}, format="json").status_code == 403
    )  # removes theirs
    assert set(corpus.projects.values_list("id", flat=True)) == {
        other_project.id,
        factcheck_project.id,
    }


def test_bad_upload_settings_are_a_400_naming_the_field(clients, factcheck_project):
    response = upload(clients["admin"], [factcheck_project.id], passage_sentences=0)
    assert response.status_code == 400 and "passage_sentences" in response.json()
    response = upload(clients["admin"], [factcheck_project.id], passage_sentences=2, passage_stride=3)
    assert response.status_code == 400 and "passage_stride must not exceed" in response.json()["detail"]


def test_an_upload_over_the_limit_is_a_413(clients, factcheck_project, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 10
    response = upload(clients["admin"], [factcheck_project.id])
    assert response.status_code == 413 and response.json()["max_bytes"] == 10


def test_project_admins_upload_a_corpus_on_the_project_page_and_see_its_state(
    client, users, factcheck_project, django_capture_on_commit_callbacks
):
    client.force_login(users["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/projects/{factcheck_project.id}/corpora/",
            {
                "name": "Encyclo<script>",
                "file": corpus_file(),
                "passage_sentences": 3,
                "passage_stride": 2,
            },
            follow=True,
        )
    assert "Corpus Encyclo&lt;script&gt;: queued." in response.content.decode()  # the worker takes it after the request
    card = (
        client.get(f"/projects/{factcheck_project.id}/")
        .content.decode()
        .split("Evidence corpora")[1]
        .split("</section>")[0]
    )
    # no worker in tests: the card says plainly that only ranked passages get vectors (never "embedding" forever)
    assert (
        "Encyclo&lt;script&gt;" in card
        and ">Searchable<" in card
        and "no worker runs" in card
        and '<td data-role="passages">5</td>' in card
    )

    bad = corpus_file([DOCUMENTS[0], {"title": "no text"}])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/projects/{factcheck_project.id}/corpora/",
            {"name": "Bad", "file": bad, "passage_sentences": 5, "passage_stride": 2},
        )
    assert (
        "line 2, field text: is missing or empty" in client.get(f"/projects/{factcheck_project.id}/").content.decode()
    )

    client.force_login(users["alice"])  # annotators neither upload nor see the card
    assert client.post(f"/projects/{factcheck_project.id}/corpora/", {"name": "x"}).status_code == 403
    assert "Evidence corpora" not in client.get(f"/projects/{factcheck_project.id}/").content.decode()
