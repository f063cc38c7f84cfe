"""Pages of the imports wing: an item import, its summary and the recent imports, and retrying
failed pre-annotations."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import selectors
from annotation.exceptions import ImportFailed, UploadTooLarge
from annotation.imports import items as import_services
from annotation.imports import jobs as import_jobs
from annotation.imports.forms import ImportForm
from annotation.kinds import get_kind
from annotation.models import ImportJobState, Project, Role
from annotation.pages import project_for

RECENT_IMPORTS = 5


@login_required
@require_POST
def project_import(request, project_id):
    """Store the upload and queue its import; the project page shows its progress and outcome."""
    project, _ = project_for(request, project_id, {Role.ADMIN})
    form = ImportForm(
        request.POST,
        request.FILES,
        formats=get_kind(project.kind).import_formats,
        kind=project.kind,
    )
    if not form.is_valid():
        messages.error(request, f"Import refused: {form.errors.as_text()}")
        return redirect("annotation:project", project_id=project.id)
    try:
        job = import_jobs.create_import_job(
            project=project,
            user=request.user,
            upload=form.cleaned_data["file"],
            fmt=form.cleaned_data["format"],
            labels_as=form.cleaned_data["labels_as"],
            on_error=form.cleaned_data["on_error"],
            domain=form.cleaned_data["domain"],
        )
    except (ImportFailed, UploadTooLarge) as exc:
        errors = getattr(exc, "errors", None)
        messages.error(
            request,
            f"Import refused, nothing was imported: {import_errors_text(errors) if errors else exc}",
        )
        return redirect("annotation:project", project_id=project.id)
    job.refresh_from_db()  # without a broker the task has already run
    if job.state == ImportJobState.DONE:
        messages.success(request, import_summary(job.result))
    elif job.state == ImportJobState.FAILED:
        messages.error(request, f"Import refused, nothing was imported: {import_errors_text(job.errors)}")
    else:
        messages.info(
            request,
            f"Import of {job.file_name or 'the file'} started: its progress is shown under Import.",
        )
    return redirect("annotation:project", project_id=project.id)


def import_summary(result: dict, with_warnings: bool = True) -> str:
    parts = [f"{result['gold_records']} gold records"] if result["gold_records"] else []
    if result["precomputing"]:
        parts.append(f"{result['precomputing']} being pre-annotated; their assignments follow when that is done")
    if result["assignments"] or not result["precomputing"]:
        parts.append(f"{result['assignments']} assignments")
    if result.get("duplicates_skipped"):
        parts.append(f"{result['duplicates_skipped']} exact duplicates skipped")
    if result.get("skipped_lines"):
        parts.append(f"{result['skipped_lines']} bad {'line' if result['skipped_lines'] == 1 else 'lines'} skipped")
    noun = "item" if result["items"] == 1 else "items"
    return " ".join(
        [
            f"Imported {result['items']} {noun} ({', '.join(parts)}).",
            *(result.get("warnings", []) if with_warnings else []),
        ]
    )


def recent_imports(project: Project) -> list[dict]:
    """The last imports with what the page says of them (the script updates running ones)."""
    return [
        {
            "job": job,
            "api_url": reverse("project-import-job", args=[project.id, job.id]),
            "summary": import_summary(job.result, with_warnings=False)
            if job.state == ImportJobState.DONE and job.result
            else "",
            "errors": import_errors_text(job.errors) if job.state == ImportJobState.FAILED else "",
            "warnings": (job.result or {}).get("warnings", []) if job.state == ImportJobState.DONE else [],
            "skipped": (job.result or {}).get("skipped", []) if job.state == ImportJobState.DONE else [],
        }
        for job in selectors.import_jobs(project)[:RECENT_IMPORTS]
    ]


@login_required
@require_POST
def project_retry_failed(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    count = import_services.retry_failed_precompute(project)
    messages.success(request, f"Pre-annotation restarted for {count} items.")
    return redirect("annotation:project", project_id=project.id)


def import_errors_text(errors: list[dict]) -> str:
    return "; ".join(f"line {e['line']}, field {e['field']}: {e['message']}" for e in errors)
