"""LLM settings are secrets: a stored key goes only to the base URL it was entered with, the
server's LLM_API_KEY only to LLM_BASE_URL, and only staff change pipeline_settings.llm."""

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import ItemStage, Role
from annotation.services.projects import add_member, resolve_secret
from tests.helpers.builders import jsonl
from tests.helpers.fake_llm import FakeLLMServer, well_behaved_responder

pytestmark = pytest.mark.django_db

SECRET = "sk-project-secret"
ENV_SECRET = "sk-server-env-secret"
STAFF_ONLY = "only staff may change pipeline_settings.llm"


@pytest.fixture
def project_admin(users, factcheck_project):
    """mallory: an admin of the project who is not staff."""
    add_member(project=factcheck_project, user=users["mallory"], role=Role.ADMIN)
    return users["mallory"]


@pytest.fixture
def servers():
    with (
        FakeLLMServer(well_behaved_responder) as legit,
        FakeLLMServer(well_behaved_responder) as attacker,
    ):
        yield legit, attacker


def llm_settings(base_url, **extra):
    return {"llm": {"base_url": base_url, "model": "fake-model", "max_retries": 0, **extra}}


def patch_settings(client, project, settings):
    return client.patch(f"/api/projects/{project.id}/", {"pipeline_settings": settings}, format="json")


def pre_annotate(project, capture):
    with capture(execute=True):
        # a new prompt each time: an exact duplicate of an imported item is skipped
        prompt = f"q{ItemStage.objects.count()}"
        import_jsonl(
            project,
            jsonl([{"prompt": prompt, "response": "Paris is in France. It is big."}]),
            fmt="plain",
        )
    return ItemStage.objects.filter(item__project=project).latest("id")


def sent_keys(server):
    return [header for header in server.authorizations if header and (SECRET in header or ENV_SECRET in header)]


# ------------------------------------------------------------------------------ the capture


def test_changed_base_url_with_the_masked_key_never_receives_the_stored_key(
    clients,
    factcheck_project,
    project_admin,
    servers,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    legit, attacker = servers
    monkeypatch.setenv("LLM_BASE_URL", legit.base_url)
    monkeypatch.setenv("LLM_API_KEY", ENV_SECRET)
    assert (
        patch_settings(clients["admin"], factcheck_project, llm_settings(legit.base_url, api_key=SECRET)).status_code
        == 200
    )
    # a save that sends the masked key back with the same base URL keeps it, for that URL
    shown = clients["admin"].get(f"/api/projects/{factcheck_project.id}/").json()["pipeline_settings"]
    assert shown["llm"]["api_key"] == "********"
    assert patch_settings(clients["admin"], factcheck_project, {**shown, "segmentation": "sentence"}).status_code == 200
    pre_annotate(factcheck_project, django_capture_on_commit_callbacks)
    assert legit.authorizations and set(legit.authorizations) == {f"Bearer {SECRET}"}
    legit.authorizations.clear()

    # the non-staff project admin may not point the project elsewhere at all
    refused = patch_settings(clients["mallory"], factcheck_project, llm_settings(attacker.base_url, api_key="********"))
    assert refused.status_code == 403 and STAFF_ONLY in refused.json()["detail"]
    factcheck_project.refresh_from_db()
    assert factcheck_project.pipeline_settings["llm"]["base_url"] == legit.base_url

    # staff changing the base URL without entering a new key drops the stored key
    changed = patch_settings(clients["admin"], factcheck_project, llm_settings(attacker.base_url, api_key="********"))
    assert changed.status_code == 200 and "api_key" not in changed.json()["pipeline_settings"]["llm"]
    factcheck_project.refresh_from_db()
    assert "api_key" not in factcheck_project.pipeline_settings["llm"]

    stage = pre_annotate(factcheck_project, django_capture_on_commit_callbacks)
    assert stage.provenance["backend"] == "llm"
    assert attacker.authorizations, "the pipeline never called the changed base URL"
    assert sent_keys(attacker) == [] and not legit.authorizations


def test_the_server_key_goes_only_to_the_server_base_url(
    factcheck_project, servers, monkeypatch, django_capture_on_commit_callbacks
):
    legit, attacker = servers
    monkeypatch.setenv("LLM_BASE_URL", legit.base_url)
    monkeypatch.setenv("LLM_API_KEY", ENV_SECRET)
    factcheck_project.pipeline_settings = llm_settings(attacker.base_url)
    factcheck_project.save()
    pre_annotate(factcheck_project, django_capture_on_commit_callbacks)
    assert attacker.authorizations and sent_keys(attacker) == []

    factcheck_project.pipeline_settings = llm_settings(legit.base_url + "/")
    factcheck_project.save()
    pre_annotate(factcheck_project, django_capture_on_commit_callbacks)
    assert legit.authorizations and set(legit.authorizations) == {f"Bearer {ENV_SECRET}"}


@pytest.mark.parametrize(
    "stored, new, expected",
    [
        (
            {"base_url": "http://a/v1", "api_key": "k"},
            {"base_url": "http://a/v1/", "api_key": "********"},
            {"base_url": "http://a/v1/", "api_key": "k"},
        ),
        (
            {"base_url": "http://a/v1", "api_key": "k"},
            {"base_url": "http://b/v1", "api_key": "********"},
            {"base_url": "http://b/v1"},
        ),
        (
            {"api_key": "k"},
            {"base_url": "http://b/v1", "api_key": "********"},
            {"base_url": "http://b/v1"},
        ),
        ({}, {"base_url": "http://a/v1", "api_key": "********"}, {"base_url": "http://a/v1"}),
        (
            {"base_url": "http://a/v1", "api_key": "k"},
            {"base_url": "http://b/v1", "api_key": "new"},
            {"base_url": "http://b/v1", "api_key": "new"},
        ),
    ],
)
def test_the_masked_key_stands_for_the_stored_one_only_on_the_same_base_url(stored, new, expected):
    assert resolve_secret(stored, new) == expected


def test_a_new_project_stores_no_masked_key(clients):
    created = clients["admin"].post(
        "/api/projects/",
        {
            "name": "masked",
            "kind": "factcheck",
            "pipeline_settings": llm_settings("http://127.0.0.1:9/v1", api_key="********"),
        },
        format="json",
    )
    assert created.status_code == 201
    from annotation.models import Project

    assert "api_key" not in Project.objects.get(pk=created.json()["id"]).pipeline_settings["llm"]


# ------------------------------------------------------------------------------ who may set them


def test_staff_change_llm_settings_and_non_staff_project_admins_do_not(clients, factcheck_project, project_admin):
    assert (
        patch_settings(
            clients["admin"],
            factcheck_project,
            llm_settings("http://127.0.0.1:9/v1", api_key=SECRET),
        ).status_code
        == 200
    )
    factcheck_project.refresh_from_db()
    assert factcheck_project.pipeline_settings["llm"]["api_key"] == SECRET
    refused = patch_settings(
        clients["mallory"],
        factcheck_project,
        llm_settings("http://127.0.0.1:9/v1", api_key="sk-mine"),
    )
    assert refused.status_code == 403 and STAFF_ONLY in refused.json()["detail"]


@pytest.mark.parametrize(
    "change",
    [
        lambda llm: {**llm, "base_url": "http://127.0.0.1:9/evil"},
        lambda llm: {**llm, "api_key": "sk-mine"},
        lambda llm: {**llm, "api_key": None},
        lambda llm: {**llm, "model": "other"},
        lambda llm: {**llm, "concurrency": 64},
        lambda llm: None,
    ],
    ids=["base_url", "new key", "key removed", "model", "concurrency", "llm removed"],
)
def test_non_staff_project_admin_cannot_change_llm_settings(clients, factcheck_project, project_admin, change):
    assert (
        patch_settings(
            clients["admin"],
            factcheck_project,
            llm_settings("http://127.0.0.1:9/v1", api_key=SECRET),
        ).status_code
        == 200
    )
    shown = clients["mallory"].get(f"/api/projects/{factcheck_project.id}/").json()["pipeline_settings"]
    new_llm = change(shown["llm"])
    settings = {"segmentation": "sentence"} if new_llm is None else {**shown, "llm": new_llm}
    refused = patch_settings(clients["mallory"], factcheck_project, settings)
    assert refused.status_code == 403 and STAFF_ONLY in refused.json()["detail"]
    factcheck_project.refresh_from_db()
    assert factcheck_project.pipeline_settings == llm_settings("http://127.0.0.1:9/v1", api_key=SECRET)


def test_non_staff_project_admin_cannot_set_a_first_llm_endpoint(clients, factcheck_project, project_admin):
    refused = patch_settings(clients["mallory"], factcheck_project, llm_settings("http://127.0.0.1:9/v1"))
    assert refused.status_code == 403 and STAFF_ONLY in refused.json()["detail"]
    # annotators change no project settings at all
    assert patch_settings(clients["alice"], factcheck_project, llm_settings("http://127.0.0.1:9/v1")).status_code == 403
    factcheck_project.refresh_from_db()
    assert factcheck_project.pipeline_settings == {}


def test_non_staff_project_admin_keeps_llm_as_read_and_changes_the_rest(clients, factcheck_project, project_admin):
    assert (
        patch_settings(
            clients["admin"],
            factcheck_project,
            llm_settings("http://127.0.0.1:9/v1", api_key=SECRET),
        ).status_code
        == 200
    )
    shown = clients["mallory"].get(f"/api/projects/{factcheck_project.id}/").json()["pipeline_settings"]
    assert shown["llm"]["api_key"] == "********"
    ok = patch_settings(clients["mallory"], factcheck_project, {**shown, "segmentation": "sentence"})
    assert ok.status_code == 200
    factcheck_project.refresh_from_db()
    assert factcheck_project.pipeline_settings == {
        "segmentation": "sentence",
        **llm_settings("http://127.0.0.1:9/v1", api_key=SECRET),
    }
    # ...while a change of the endpoint in the same request is refused
    moved = {**shown, "llm": {**shown["llm"], "base_url": "http://127.0.0.1:9/evil"}}
    assert patch_settings(clients["mallory"], factcheck_project, moved).status_code == 403


def test_project_page_shows_llm_settings_read_only_with_the_key_masked(
    client, clients, users, factcheck_project, project_admin
):
    assert (
        patch_settings(
            clients["admin"],
            factcheck_project,
            llm_settings("http://127.0.0.1:9/v1", api_key=SECRET),
        ).status_code
        == 200
    )
    client.force_login(project_admin)
    page = client.get(f"/projects/{factcheck_project.id}/").content.decode()
    assert "Pipeline settings" in page and "http://127.0.0.1:9/v1" in page and "********" in page
    assert SECRET not in page
    assert "Only staff change the LLM settings" in page
    section = page.split("pipeline-settings", 1)[1].split("</section>", 1)[0]
    assert "<form" not in section and "<input" not in section
    client.force_login(users["alice"])  # annotators do not see the settings at all
    assert "Pipeline settings" not in client.get(f"/projects/{factcheck_project.id}/").content.decode()


# ------------------------------------------------------------------------------ web search: the same rules

WEB = {"web_search": {"base_url": "http://127.0.0.1:9/searx", "api_key": SECRET, "timeout": 5}}


def test_the_web_search_key_is_masked_staff_only_and_dropped_with_a_new_url(
    client, clients, factcheck_project, project_admin
):
    assert patch_settings(clients["admin"], factcheck_project, WEB).status_code == 200
    shown = clients["mallory"].get(f"/api/projects/{factcheck_project.id}/").json()["pipeline_settings"]
    assert shown["web_search"]["api_key"] == "********"
    moved = {"web_search": {**shown["web_search"], "base_url": "http://127.0.0.1:9/evil"}}
    refused = patch_settings(clients["mallory"], factcheck_project, moved)
    assert (
        refused.status_code == 403 and "only staff may change pipeline_settings.web_search" in refused.json()["detail"]
    )
    assert (
        patch_settings(clients["mallory"], factcheck_project, {**shown, "passages": {"sentences": 4}}).status_code
        == 200
    )
    client.force_login(project_admin)
    page = client.get(f"/projects/{factcheck_project.id}/").content.decode()
    assert "http://127.0.0.1:9/searx" in page and "Web search API key" in page and SECRET not in page
    assert patch_settings(clients["admin"], factcheck_project, moved).status_code == 200
    factcheck_project.refresh_from_db()
    assert factcheck_project.pipeline_settings["web_search"] == {
        "base_url": "http://127.0.0.1:9/evil",
        "timeout": 5,
    }


@pytest.mark.parametrize(
    "pipeline_settings, message",
    [
        ({"web_search": {"base_url": 5}}, "web_search.base_url must be a string"),
        ({"web_search": {"proxy": "x"}}, "unknown web_search settings: proxy"),
        ({"passages": {"sentences": 0}}, "passages.sentences must be a whole number from 1 to 50"),
        ({"embeddings": "yes"}, "embeddings must be true or false"),
    ],
)
def test_bad_retrieval_settings_name_the_key(clients, factcheck_project, pipeline_settings, message):
    refused = patch_settings(clients["admin"], factcheck_project, pipeline_settings)
    assert refused.status_code == 400 and message in str(refused.json())


def test_the_server_web_search_key_goes_only_to_the_server_url():
    from pipeline.websearch import WebSearchConfig

    env = {"WEB_SEARCH_URL": "http://search.internal/", "WEB_SEARCH_API_KEY": ENV_SECRET}
    assert WebSearchConfig.from_env(None, env).api_key == ENV_SECRET
    assert WebSearchConfig.from_env({"base_url": "http://search.internal"}, env).api_key == ENV_SECRET
    assert WebSearchConfig.from_env({"base_url": "http://elsewhere.example"}, env).api_key is None
    assert WebSearchConfig.from_env({"base_url": "http://elsewhere.example", "api_key": "own"}, env).api_key == "own"
    assert not WebSearchConfig.from_env(None, {}).is_configured
