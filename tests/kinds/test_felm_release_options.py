"""The FELM import options (``on_error``, ``domain``) through the API, the page form and the
import_items management command."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.imports.forms import ImportForm
from annotation.models import ImportJob, Item
from tests.helpers.builders import jsonl, post_import
from tests.helpers.felm_release import (
    BROKEN,
    BROKEN_ERRORS,
    NON_FINITE,
    mismatch_line,
    nan_prompt_line,
    released_file,
    wk_line,
)

pytestmark = pytest.mark.django_db


def test_the_api_carries_the_options_and_reports_skipped_lines_and_warnings(clients, felm_project):
    felm_project.annotators_per_item = 3
    felm_project.save()
    upload = jsonl([])
    upload.write(BROKEN)
    upload.seek(0)
    response, job = post_import(clients["admin"], felm_project.id, upload, "felm", on_error="skip", domain="wk")
    assert response.status_code == 202, response.content
    assert job["state"] == "done" and job["options"] == {"on_error": "skip", "domain": "wk"}
    assert job["result"]["skipped_lines"] == 2 and job["result"]["skipped"] == BROKEN_ERRORS
    assert job["result"]["warnings"][0].startswith("Items need 3 annotators each, but the project has 2")
    assert set(Item.objects.values_list("domain", flat=True)) == {"wk"}


def test_the_api_refuses_bad_options_with_the_field(clients, felm_project):
    bad_choice = clients["admin"].post(
        f"/api/projects/{felm_project.id}/import/",
        {"file": jsonl([wk_line()]), "format": "felm", "on_error": "maybe"},
        format="multipart",
    )
    assert bad_choice.status_code == 400 and "on_error" in bad_choice.json()
    bad_domain, _ = post_import(clients["admin"], felm_project.id, jsonl([wk_line()]), "felm", domain="sports")
    assert bad_domain.status_code == 400
    assert bad_domain.json()["errors"][0]["field"] == "domain"
    assert not ImportJob.objects.exists() and not Item.objects.exists()


def test_an_older_job_result_without_the_new_counts_still_reads(clients, felm_project):
    _, job = post_import(clients["admin"], felm_project.id, jsonl([wk_line()]), "felm")
    stored = ImportJob.objects.get()
    stored.result = {k: v for k, v in stored.result.items() if k not in ("skipped_lines", "skipped", "warnings")}
    stored.save()
    again = clients["admin"].get(job["url"]).json()
    assert (
        again["result"]["skipped_lines"] == 0 and again["result"]["skipped"] == [] and again["result"]["warnings"] == []
    )


def test_the_page_form_offers_the_options():
    form = ImportForm(formats=("felm", "plain"))
    assert form.fields["on_error"].initial == "refuse"
    assert [value for value, _ in form.fields["on_error"].choices] == ["refuse", "skip"]
    assert "domain" in form.fields and not form.fields["domain"].required


def test_the_page_form_imports_with_skip_and_domain_and_lists_the_skipped_lines(
    logged_in, felm_project, django_capture_on_commit_callbacks
):
    felm_project.annotators_per_item = 3
    felm_project.save()
    client = logged_in("admin")
    hostile = mismatch_line()
    hostile["labels"] = [True, "<b>x</b>"]  # an error message quoting user text is shown escaped
    upload = jsonl([])
    upload.write(released_file(wk_line(), hostile, nan_prompt_line()))
    upload.seek(0)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/projects/{felm_project.id}/import/",
            {
                "file": upload,
                "format": "felm",
                "labels_as": "ignore",
                "on_error": "skip",
                "domain": "science",
            },
        )
    page = client.get(f"/projects/{felm_project.id}/").content.decode()  # the recent imports list
    assert "Imported 1 item (2 assignments, 2 bad lines skipped)." in page
    assert "Items need 3 annotators each, but the project has 2" in page
    assert '<details class="skipped-lines" open>' in page
    assert "line 2, field labels: must be a list with one entry per segment (3), not 2" in page
    assert f"line 3, field prompt: {NON_FINITE}" in page
    assert "bad lines skipped, domain science" in page  # the job's options beside its name
    assert Item.objects.get().domain == "science"
    assert ImportJob.objects.get().options == {"on_error": "skip", "domain": "science"}


def test_the_page_form_refuses_by_default(logged_in, felm_project, django_capture_on_commit_callbacks):
    upload = jsonl([])
    upload.write(BROKEN)
    upload.seek(0)
    client = logged_in("admin")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/projects/{felm_project.id}/import/",
            {"file": upload, "format": "felm", "labels_as": "ignore"},
        )
    page = client.get(f"/projects/{felm_project.id}/").content.decode()
    assert "nothing was imported" in page.lower() and "line 4, field prompt" in page
    assert not Item.objects.exists()


def test_the_management_command_carries_the_options(felm_project, tmp_path, capsys):
    source = tmp_path / "math.jsonl"
    source.write_bytes(BROKEN)
    with pytest.raises(CommandError, match="line 2, field labels"):
        call_command("import_items", str(felm_project.id), str(source), "--format", "felm")
    call_command(
        "import_items",
        str(felm_project.id),
        str(source),
        "--format",
        "felm",
        "--labels-as",
        "gold",
        "--on-error",
        "skip",
        "--domain",
        "math",
    )
    out = capsys.readouterr().out
    assert "imported 3 items" in out and "skipped line 4, field prompt" in out
    assert set(Item.objects.values_list("domain", flat=True)) == {"math"}
