"""Browser pages. Thin: they check access, call selectors and services, render templates.

The annotation and consolidation pages are driven by static JavaScript that talks to the
REST API with the session cookie and CSRF token.
"""
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.db import IntegrityError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import agreement, exports, plots, selectors
from annotation import guidelines as guideline_text
from annotation.exceptions import DomainError, ImportFailed, UploadTooLarge
from annotation.downloads import attachment, file_stem, table_csv
from annotation.forms import (
    CorpusForm,
    DiscardForm,
    EscalateForm,
    ImportForm,
    MemberForm,
    MemberRoleForm,
    ProjectEditForm,
    ProjectForm,
    SplitForm,
    UserCreateForm,
)
from annotation.kinds import KINDS, get_kind
from annotation.kinds.page_rules import page_rules
from annotation.models import (
    Assignment,
    AssignmentRole,
    Consolidation,
    ConsolidationStatus,
    CorpusState,
    ImportJobState,
    Item,
    ItemStage,
    Membership,
    Project,
    Role,
    StageStatus,
)
from annotation.params import parse_natural
from annotation.services import annotations as annotation_services
from annotation.services import agreement_cache
from annotation.services import assignments as assignment_services
from annotation.services import consolidation as consolidation_services
from annotation.services import corpora as corpus_services
from annotation.services import evidence as evidence_services
from annotation.services import imports as import_services
from annotation.services import projects as project_services
from annotation.services import stages as stage_services
from annotation.services import third_rater as third_rater_services

RECENT_IMPORTS = 5


def project_for(request, project_id: int, roles: set[str] | None = None) -> tuple[Project, set[str]]:
    """The project if the user belongs to it (404 otherwise), with one of ``roles`` (403 otherwise)."""
    project = get_object_or_404(Project, pk=project_id)
    user_roles = selectors.user_roles(request.user, project)
    if not user_roles:
        raise Http404("no such project")
    if roles and not (user_roles & roles):
        raise PermissionDenied("your role in this project does not allow this page")
    return project, user_roles


@login_required
def home(request):
    projects = []
    for project in selectors.projects_for_user(request.user).order_by("name"):
        roles = selectors.user_roles(request.user, project)
        projects.append({
            "project": project, "roles": sorted(roles), "progress": selectors.user_progress(project, request.user),
            "consolidations": selectors.consolidation_counts(project) if roles & {Role.ADMIN, Role.CONSOLIDATOR} else None,
            "gold": selectors.gold_counts(project)["total"] if roles & {Role.ADMIN, Role.CONSOLIDATOR} else None,
        })
    return render(request, "annotation/home.html", {
        "projects": projects, "can_create": selectors.can_create_projects(request.user),
    })


@login_required
def project_create(request):
    if not selectors.can_create_projects(request.user):
        raise PermissionDenied("only staff administrators create projects")
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if Project.objects.filter(name=form.cleaned_data["name"]).exists():
            form.add_error("name", "a project with this name exists")
        else:
            project = project_services.create_project(created_by=request.user, **form.cleaned_data)
            messages.success(request, f"Project {project.name} created.")
            return redirect("annotation:project", project_id=project.id)
    # The form starts with the chosen kind's guidelines template (the page swaps it when the kind
    # changes and the text is still a template); left empty, the service fills it in too.
    templates = {key: spec.guidelines_template() for key, spec in KINDS.items()}
    if not form.is_bound:
        form.initial["guidelines"] = templates.get(form.fields["kind"].initial or form.fields["kind"].choices[0][0], "")
    return render(request, "annotation/project_form.html", {"form": form, "guideline_templates": templates})


@login_required
def user_create(request):
    """Staff create accounts here, optionally adding the new user to one of their projects."""
    if not selectors.can_create_users(request.user):
        raise PermissionDenied("only staff create accounts")
    projects = selectors.projects_administered_by(request.user)
    project_id = parse_natural(request.GET.get("project", ""))
    initial = {"project": project_id, "role": Role.ANNOTATOR if project_id else ""}
    form = UserCreateForm(request.POST or None, projects=projects, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = project_services.create_user(
                username=data["username"], password=data["password"], email=data["email"], is_staff=data["is_staff"],
                project=data["project"], role=data["role"] or None)
        except DjangoValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        except IntegrityError:  # the same name created by a concurrent request
            form.add_error("username", "a user with this username exists")
        else:
            where = f" and added to {data['project'].name} as {data['role']}" if data["project"] else ""
            messages.success(request, f"User {user.username} created{where}.")
            if data["project"]:
                return redirect("annotation:project", project_id=data["project"].id)
            return redirect("annotation:user-create")
    return render(request, "annotation/user_form.html", {"form": form})


@login_required
def project_edit(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    initial = {"name": project.name, "annotators_per_item": project.annotators_per_item,
               "overlap_share": project.overlap_share, "third_rater": project.third_rater,
               "guidelines": project.guidelines, "pipeline_settings": selectors.masked_pipeline_settings(project)}
    form = ProjectEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        changes = {key: value for key, value in form.cleaned_data.items() if value != initial[key]}
        if "pipeline_settings" in changes and changes["pipeline_settings"] is None:
            changes["pipeline_settings"] = {}
        if Project.objects.filter(name=changes.get("name", "")).exclude(pk=project.pk).exists():
            form.add_error("name", "a project with this name exists")
        else:
            try:
                project_services.update_project(project=project, changed_by=request.user, **changes)
            except (DjangoValidationError, PermissionDenied) as exc:
                form.add_error("pipeline_settings", "; ".join(getattr(exc, "messages", [str(exc)])))
            else:
                messages.success(request, "Project settings saved." if changes else "Nothing changed.")
                return redirect("annotation:project", project_id=project.id)
    return render(request, "annotation/project_form.html", {"form": form, "project": project, "title": f"Settings of {project.name}",
                                                            "button": "Save"})


@login_required
def project_detail(request, project_id):
    project, roles = project_for(request, project_id)
    context = {"project": project, "roles": roles, "is_admin": Role.ADMIN in roles,
               "can_consolidate": bool(roles & {Role.ADMIN, Role.CONSOLIDATOR})}
    if context["can_consolidate"]:
        context["consolidations"] = selectors.consolidation_counts(project)
        context["gold"] = selectors.gold_counts(project)
        context["waiting_without_rater"] = selectors.waiting_without_third_rater(project).count()
        annotators = selectors.members(project).filter(role=Role.ANNOTATOR).count()
        context["too_few_annotators"] = (annotators, project.annotators_per_item) if annotators < project.annotators_per_item else None
        able, annotating = selectors.consolidators_who_annotate(project)
        context["every_consolidator_annotates"] = able > 0 and annotating == able
    if Role.ANNOTATOR in roles:
        context["my_assignments"] = selectors.assignments_for_user(project, request.user)
        context["my_progress"] = selectors.user_progress(project, request.user)
    if context["is_admin"]:
        items = Item.objects.filter(project=project).prefetch_related("stages").order_by("id")
        status = request.GET.get("status")
        if status and status not in StageStatus.values:
            # A NUL byte here was a database error (500) on PostgreSQL.
            raise BadRequest(f"status: must be one of {', '.join(StageStatus.values)}")
        if status:
            items = items.filter(stages__status=status).distinct()
        context.update({
            "progress": selectors.project_progress(project),
            "overview": selectors.project_overview(project),
            "items_page": Paginator(items, 50).get_page(request.GET.get("page")),
            "status_filter": status or "",
            "statuses": StageStatus.choices,
            "members": selectors.members(project),
            "import_form": ImportForm(formats=get_kind(project.kind).import_formats, kind=project.kind),
            "import_jobs": recent_imports(project),
            "corpora": project.corpora.order_by("-id") if get_kind(project.kind).searches_evidence else None,
            "corpus_form": CorpusForm(),
            "corpus_worker": corpus_services.embedded_by_worker(),
            "import_max_bytes": settings.IMPORT_MAX_UPLOAD_BYTES,
            "member_form": MemberForm(),
            "roles": Role.choices,
            "can_create_users": selectors.can_create_users(request.user),
            "export_summary": selectors.export_summary(project),
            "export_formats": [(fmt, "zip" if fmt in get_kind(project.kind).archive_formats else "JSONL",
                                fmt if fmt in exports.COMMON_FORMATS else "") for fmt in exports.export_formats(project)],
            # Read-only here for everyone: only staff change them, through the API.
            "pipeline_settings": selectors.masked_pipeline_settings(project),
            "can_change_llm_settings": selectors.can_change_llm_settings(request.user),
        })
    if get_kind(project.kind).has_paragraph_scores and context["can_consolidate"]:
        context["dfactscore_scores"] = selectors.consolidated_scores(project)
    return render(request, "annotation/project_detail.html", context)


@login_required
def guidelines(request, project_id):
    project, _ = project_for(request, project_id)
    html = guideline_text.render(project.guidelines)
    return render(request, "annotation/guidelines.html", {"project": project, "guidelines_html": html})


@login_required
@require_POST
def project_import(request, project_id):
    """Store the upload and queue its import; the project page shows its progress and outcome."""
    project, _ = project_for(request, project_id, {Role.ADMIN})
    form = ImportForm(request.POST, request.FILES, formats=get_kind(project.kind).import_formats, kind=project.kind)
    if not form.is_valid():
        messages.error(request, f"Import refused: {form.errors.as_text()}")
        return redirect("annotation:project", project_id=project.id)
    try:
        job = import_services.create_import_job(
            project=project, user=request.user, upload=form.cleaned_data["file"], fmt=form.cleaned_data["format"],
            labels_as=form.cleaned_data["labels_as"], on_error=form.cleaned_data["on_error"],
            domain=form.cleaned_data["domain"],
        )
    except (ImportFailed, UploadTooLarge) as exc:
        errors = getattr(exc, "errors", None)
        messages.error(request, f"Import refused, nothing was imported: {import_errors_text(errors) if errors else exc}")
        return redirect("annotation:project", project_id=project.id)
    job.refresh_from_db()  # without a broker the task has already run
    if job.state == ImportJobState.DONE:
        messages.success(request, import_summary(job.result))
    elif job.state == ImportJobState.FAILED:
        messages.error(request, f"Import refused, nothing was imported: {import_errors_text(job.errors)}")
    else:
        messages.info(request, f"Import of {job.file_name or 'the file'} started: its progress is shown under Import.")
    return redirect("annotation:project", project_id=project.id)


@login_required
@require_POST
def project_corpus_upload(request, project_id):
    """Upload a passage corpus for the project's step-2 evidence retrieval (imported by a worker)."""
    project, _ = project_for(request, project_id, {Role.ADMIN})
    form = CorpusForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, f"Corpus refused: {form.errors.as_text()}")
        return redirect("annotation:project", project_id=project.id)
    data = form.cleaned_data
    try:
        corpus = corpus_services.create_corpus(
            name=data["name"], user=request.user, upload=data["file"], projects=[project],
            passage_sentences=data["passage_sentences"], passage_stride=data["passage_stride"])
    except DomainError as exc:
        messages.error(request, f"Corpus refused: {exc}")
        return redirect("annotation:project", project_id=project.id)
    corpus.refresh_from_db()  # without a broker the import has already run
    if corpus.state == CorpusState.FAILED:
        messages.error(request, f"Corpus {corpus.name} not imported: {import_errors_text(corpus.errors)}")
    else:
        messages.success(request, f"Corpus {corpus.name}: {corpus.get_state_display().lower()}"
                                  f"{f', {corpus.passages} passages' if corpus.passages else ''}.")
    return redirect("annotation:project", project_id=project.id)


def import_errors_text(errors: list[dict]) -> str:
    return "; ".join(f"line {e['line']}, field {e['field']}: {e['message']}" for e in errors)


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
    return " ".join([f"Imported {result['items']} {noun} ({', '.join(parts)}).",
                     *(result.get("warnings", []) if with_warnings else [])])


def recent_imports(project: Project) -> list[dict]:
    """The last imports with what the page says of them (the script updates running ones)."""
    return [
        {"job": job, "api_url": reverse("project-import-job", args=[project.id, job.id]),
         "summary": import_summary(job.result, with_warnings=False) if job.state == ImportJobState.DONE and job.result else "",
         "errors": import_errors_text(job.errors) if job.state == ImportJobState.FAILED else "",
         "warnings": (job.result or {}).get("warnings", []) if job.state == ImportJobState.DONE else [],
         "skipped": (job.result or {}).get("skipped", []) if job.state == ImportJobState.DONE else []}
        for job in selectors.import_jobs(project)[:RECENT_IMPORTS]
    ]


@login_required
@require_POST
def project_members(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    if request.POST.get("remove"):
        membership = get_object_or_404(Membership, project=project, pk=parse_natural(request.POST["remove"]) or 0)
        try:
            project_services.remove_member(project=project, user=membership.user, role=membership.role)
        except DomainError as exc:
            messages.error(request, f"Not removed: {exc}.")
        else:
            messages.success(request, f"{membership.user.username} is no longer {membership.role}"
                             + ("; their open assignments went to the other annotators." if membership.role == Role.ANNOTATOR else "."))
        return redirect("annotation:project", project_id=project.id)
    if request.POST.get("change"):
        change_member_role(request, project)
        return redirect("annotation:project", project_id=project.id)
    form = MemberForm(request.POST)
    if form.is_valid():
        project_services.add_member(project=project, user=form.cleaned_data["user"], role=form.cleaned_data["role"])
        messages.success(request, f"{form.cleaned_data['username']} added as {form.cleaned_data['role']}.")
    else:
        messages.error(request, "Member not added: " + "; ".join(
            f"{field}: {message}" for field, errors in form.errors.items() for message in errors))
    return redirect("annotation:project", project_id=project.id)


def change_member_role(request, project: Project) -> None:
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Role not changed: " + "; ".join(
            f"{field}: {message}" for field, errors in form.errors.items() for message in errors))
        return
    membership = get_object_or_404(Membership.objects.select_related("user"), project=project, pk=form.cleaned_data["change"])
    old_role, role = membership.role, form.cleaned_data["role"]
    if role == old_role:
        messages.info(request, f"{membership.user.username} is already {role}.")
        return
    try:
        project_services.change_member_role(project=project, membership=membership, role=role)
    except DomainError as exc:
        messages.error(request, f"Role not changed: {exc}.")
    else:
        messages.success(request, f"{membership.user.username} is now {role}, no longer {old_role}"
                         + ("; their open assignments went to the other annotators." if old_role == Role.ANNOTATOR else "."))


@login_required
@require_POST
def project_retry_failed(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    count = import_services.retry_failed_precompute(project)
    messages.success(request, f"Pre-annotation restarted for {count} items.")
    return redirect("annotation:project", project_id=project.id)


@login_required
def item_page(request, project_id, item_id):
    """One item across its steps, for its admins and consolidators (never other annotators)."""
    project, roles = project_for(request, project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    item = get_object_or_404(Item, pk=item_id, project=project)
    is_admin = Role.ADMIN in roles
    if request.method == "POST":
        if not is_admin:
            raise PermissionDenied("only the project's admins change an item")
        stage = get_object_or_404(ItemStage, item=item, stage=parse_natural(request.POST.get("stage", "")) or 0)
        if "reopen" in request.POST:
            try:
                consolidation = consolidation_services.reopen_stage(stage=stage, user=request.user,
                                                                    reason=request.POST.get("reason", ""))
            except DomainError as exc:
                messages.error(request, f"Not reopened: {exc}.")
            else:
                messages.success(request, f"Step {stage.stage} is being consolidated again.")
                return redirect("annotation:consolidate", consolidation_id=consolidation.id)
            return redirect("annotation:item", project_id=project.id, item_id=item.id)
        form = SplitForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Give the sentences, one a line.")
        else:
            try:
                stage_services.correct_split(stage=stage, units=form.cleaned_data["units"].splitlines())
            except DomainError as exc:
                messages.error(request, f"Not changed: {exc}.")
            else:
                messages.success(request, f"Step {stage.stage} has the new split; its pre-annotation runs again.")
        return redirect("annotation:item", project_id=project.id, item_id=item.id)
    return render(request, "annotation/item_detail.html", {
        "project": project, "item": item, "steps": selectors.item_detail(item), "is_admin": is_admin,
    })


@login_required
@require_POST
def reassign(request, project_id, assignment_id):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    assignment = get_object_or_404(Assignment, pk=assignment_id, item_stage__item__project=project)
    try:
        moved = assignment_services.reassign(assignment)
    except DomainError as exc:
        messages.error(request, f"Not reassigned: {exc}.")
    else:
        messages.success(request, f"Given to {moved.user.username}.")
    return redirect("annotation:project", project_id=project.id)


@login_required
@require_POST
def project_retrieve_claim(request, project_id, item_id, claim):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    stage = get_object_or_404(ItemStage, item__project=project, item_id=item_id,
                              stage__in=get_kind(project.kind).retrievable_stages)
    try:
        evidence_services.request_retrieval(stage=stage, index=claim)
    except DomainError as exc:
        messages.error(request, f"Not retrieved again: {exc}.")
    else:
        messages.success(request, f"The evidence of claim {claim + 1} is being retrieved again; annotators' stances of it start over.")
    return redirect("annotation:project", project_id=project.id)


@login_required
def project_export(request, project_id, fmt):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    if fmt not in exports.export_formats(project):
        raise Http404("unknown export format")
    return exports.download(project, fmt)


@login_required
def agreement_page(request, project_id):
    """The agreement of one step, read from the cache a Celery task fills (services.agreement_cache):
    on a miss the page shows the task's progress (and the point estimates once stored) and
    updates itself; downloads wait for the full result (409 meanwhile)."""
    project, stage, resamples, seed, problem = _agreement_request(request, project_id)
    download = request.GET.get("download")
    if problem is not None:
        if download is not None:
            return _bad_download(problem)
        raise BadRequest(problem)
    if download is not None and download not in AGREEMENT_DOWNLOADS:
        return _bad_download(f"download: must be one of {', '.join(AGREEMENT_DOWNLOADS)}, not {download[:40]!r}")
    found = agreement_cache.lookup(project, stage, resamples, seed)
    if download is not None:
        if not found.ready:
            return _agreement_not_ready(found, resamples)
        rater = found.result["rater_agreement"] if request.GET.get("table") == "llm_rater" else None
        return _agreement_download(request, project, found.result["agreement"], download, rater)
    kind = get_kind(project.kind)
    shown = found.result or found.points
    result = shown["agreement"] if shown else None
    rater = shown["rater_agreement"] if shown else None
    # the download links keep the page's step and bootstrap options
    keep = request.GET.copy()
    for name in ("download", "table", "field"):
        keep.pop(name, None)

    def links(table, field=None):
        if not found.ready:  # offered once the numbers they hold are all there
            return {}
        query = keep.copy()
        query["table"] = table
        if field is not None:
            query["field"] = field
        return {fmt: f"?{query.urlencode()}&download={fmt}" for fmt in AGREEMENT_DOWNLOADS}

    for name, field in (result or {}).get("fields", {}).items():
        matrix = field["confusion_matrix"]
        peak = max((v for row in matrix["rows_annotator_a_columns_annotator_b"] for v in row), default=0) or 1
        field["matrix_columns"] = [kind.value_name(label) for label in matrix["labels"]]
        field["matrix_rows"] = [
            {"label": label, "cells": [{"value": v, "shade": round(v / peak, 2)} for v in row]}
            for label, row in zip(field["matrix_columns"], matrix["rows_annotator_a_columns_annotator_b"])
        ]
        field["plots"] = plots.agreement_figures(field, kind.value_name)
        field["downloads"] = {table: links(table, name) for table in ("matrix", "pairs", "over_time", "versus_gold")}
    downloads = {table: links(table) for table in agreement.agreement_tables(result, rater)} if found.ready else {}
    status_query = keep.copy()
    status_query.setlist("stage", [str(stage)])
    # one link per step, keeping the bootstrap options
    steps = []
    for number in kind.annotatable_stages:
        step_query = keep.copy()
        step_query.setlist("stage", [str(number)])
        steps.append({"number": number, "url": f"?{step_query.urlencode()}", "current": number == stage})
    return render(request, "annotation/agreement.html", {
        "project": project, "stage": stage, "agreement": result, "downloads": downloads,
        "several_steps": len(kind.annotatable_stages) > 1, "steps": steps, "rater_agreement": rater,
        "requested": {"resamples": resamples, "seed": seed},
        "computed": {"at": datetime.fromisoformat(found.result["computed_at"]), "seconds": found.result["seconds"]}
        if found.ready else None,
        "computing": None if found.ready else found.status(),
        "status_url": f"{reverse('annotation:agreement-status', args=[project.id])}?{status_query.urlencode()}",
    })


@login_required
def agreement_status(request, project_id):
    """How far the computation of the agreement page's numbers is (the page polls it): JSON
    ``{"state": queued|running|ready|failed, "points", "done", "total", "step", "error"}``."""
    project, stage, resamples, seed, problem = _agreement_request(request, project_id)
    if problem is not None:
        return JsonResponse({"detail": problem}, status=400)
    return JsonResponse(agreement_cache.lookup(project, stage, resamples, seed, poll=True).status())


def _agreement_request(request, project_id):
    """The project (admins and consolidators), step and bootstrap options of an agreement
    request; ``problem`` names a bad option (a step the kind does not have is a 404)."""
    project, _ = project_for(request, project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    stage = selectors.annotated_stage(project, request.GET.get("stage"))
    if stage is None:
        annotatable = get_kind(project.kind).annotatable_stages
        raise Http404(f"{project.get_kind_display()} projects are annotated in stage "
                      f"{', '.join(map(str, annotatable))} only, not {request.GET['stage']!r}")
    try:
        resamples, seed = selectors.bootstrap_options(request.GET.get("resamples"), request.GET.get("seed"))
    except ValueError as error:
        return project, stage, None, None, "; ".join(f"{name}: {message}" for name, message in error.args[0].items())
    return project, stage, resamples, seed, None


def _agreement_not_ready(found, resamples: int) -> HttpResponse:
    """A download asked before its numbers are stored: 409 with what is going on, and when to
    ask again (the computation is queued by this request if it was not already)."""
    if found.state == "failed":
        message = f"The agreement could not be computed: {found.error}. Try again in a few minutes."
    else:
        what = f"with {resamples:,}-resample bootstrap intervals " if resamples else ""
        progress = f" ({found.progress['step']})" if found.progress and found.progress.get("step") else ""
        message = (f"The agreement numbers {what}are being computed{progress}. "
                   "Download again in a few seconds; the agreement page shows when they are ready.")
    response = HttpResponse(message + "\n", status=409, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(agreement_cache.FAILURE_SECONDS if found.state == "failed" else 5)
    return response


AGREEMENT_DOWNLOADS = ("csv", "json")


def _bad_download(message: str) -> HttpResponse:
    """A 400 that says what is wrong (Django's 400 page cannot: it never sees the exception)."""
    return HttpResponse(f"Bad request: {message}\n", status=400, content_type="text/plain; charset=utf-8")


def _agreement_download(request, project, result: dict, fmt: str, rater: dict | None) -> HttpResponse:
    """One table of the agreement page (``?table=``, optionally one field's rows: ``?field=``) as
    a CSV or JSON file named after the project, step and table."""
    tables = agreement.agreement_tables(result, rater)
    name, field = request.GET.get("table", ""), request.GET.get("field")
    if name not in tables:
        return _bad_download(f"table: must be one of {', '.join(tables)}, not {name[:40]!r}")
    table, rows = tables[name], tables[name]["rows"]
    if field is not None:
        if not table["per_field"] or field not in result["fields"]:
            return _bad_download(f"field: the {name} table has no field {field[:40]!r}"
                                 + (f" (fields: {', '.join(result['fields'])})" if table["per_field"] else ""))
        rows = [row for row in rows if row[0] == field]
    filename = f"{file_stem(project)}-step{result['stage']}-agreement-{name}{f'-{field}' if field else ''}.{fmt}"
    if fmt == "csv":
        response = HttpResponse(table_csv(table["columns"], rows), content_type="text/csv; charset=utf-8")
    else:
        response = JsonResponse({"project": project.name, "step": result["stage"], "table": name, "title": table["title"],
                                 "field": field, "bootstrap": result["bootstrap"], "columns": table["columns"],
                                 "rows": [dict(zip(table["columns"], row)) for row in rows]})
    return attachment(response, filename)


def after_param(request) -> int | None:
    """``?after=`` of the "next" links: an id, or nothing; anything else is a 400, not a 500."""
    raw = request.GET.get("after")
    if not raw:
        return None
    after = parse_natural(raw)
    if after is None:
        raise BadRequest(f"after: must be an id in digits 0-9, not {raw[:40]!r}")
    return after


@login_required
def next_item(request, project_id):
    project, _ = project_for(request, project_id, {Role.ANNOTATOR})
    assignment = selectors.next_assignment(project, request.user, after_param(request))
    if assignment is None:
        messages.info(request, "Nothing left to annotate in this project. Thank you!")
        return redirect("annotation:project", project_id=project.id)
    return redirect("annotation:annotate", assignment_id=assignment.id)


@login_required
def annotate(request, assignment_id):
    # Only the assignee may open an assignment: anyone else gets 404, not a hint that it exists.
    assignment = get_object_or_404(
        Assignment.objects.select_related("item_stage__item__project"), pk=assignment_id, user=request.user
    )
    stage = assignment.item_stage
    if stage.status not in selectors.VISIBLE_TO_ANNOTATORS:
        raise Http404("this item is not open for annotation yet")
    project = stage.item.project
    annotation_state = selectors.annotation_state(assignment)
    return render(request, stage_template("annotate", project.kind, stage.stage), {
        "project": project, "assignment": assignment, "item": stage.item, "stage": stage,
        "state": {"assignment_id": assignment.id, "content": stage.content, "suggestion": stage.suggestion,
                  "provenance": stage.provenance,
                  # Submitted work is final even while the other annotator is still working.
                  "read_only": stage.status != StageStatus.ANNOTATING or annotation_state["submitted"],
                  **annotation_state,
                  "api_url": reverse("assignment-annotation", args=[assignment.id]),
                  "next_url": reverse("annotation:next-item", args=[project.id]) + f"?after={assignment.id}",
                  **stage_page_state(project, stage)},
        "progress": selectors.user_progress(project, request.user),
        "can_reopen": annotation_state["submitted"] and stage.status == StageStatus.ANNOTATING,
        "third_rater": assignment.role == AssignmentRole.THIRD_RATER,
    })


@login_required
@require_POST
def reopen_submission(request, assignment_id):
    assignment = get_object_or_404(Assignment, pk=assignment_id, user=request.user)
    try:
        annotation_services.reopen_annotation(assignment=assignment, user=request.user)
    except DomainError as exc:
        messages.error(request, f"Not reopened: {exc}.")
    else:
        messages.success(request, "Reopened: your answer is a draft again. Submit it when you are done.")
    return redirect("annotation:annotate", assignment_id=assignment.id)


@login_required
def consolidation_list(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    # by default what is still to do: open, and waiting for a third rater (shown as such)
    status = request.GET.get("status") or "todo"
    filters = [("todo", "to do (open or waiting)"), ("open", "open"), ("waiting", "waiting for a third rater"),
               ("done", "done"), ("discarded", "discarded"), ("all", "all")]
    if status not in dict(filters):
        raise Http404(f"no consolidation status {status!r}")
    chosen = {"all": None, "todo": [ConsolidationStatus.OPEN, ConsolidationStatus.WAITING]}.get(status, status)
    consolidations = selectors.consolidations_for_project(project, chosen)
    page = Paginator(consolidations, 50).get_page(request.GET.get("page"))
    return render(request, "annotation/consolidation_list.html",
                  {"project": project, "page": page, "status": status, "status_filters": filters})


@login_required
def next_consolidation(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    consolidation = selectors.next_consolidation(project, after_param(request), request.user)
    if consolidation is None:
        messages.info(request, "No open consolidations left.")
        return redirect("annotation:consolidations", project_id=project.id)
    return redirect("annotation:consolidate", consolidation_id=consolidation.id)


def consolidation_for(request, consolidation_id) -> Consolidation:
    consolidation = get_object_or_404(Consolidation.objects.select_related("item_stage__item__project"), pk=consolidation_id)
    project_for(request, consolidation.item_stage.item.project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    consolidation_services.check_not_annotator(consolidation, request.user)
    return consolidation


@login_required
def consolidate(request, consolidation_id):
    consolidation = consolidation_for(request, consolidation_id)
    stage = consolidation.item_stage
    project = stage.item.project
    has_third = stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists()
    can_escalate = (consolidation.status == ConsolidationStatus.OPEN and third_rater_services.allows_third_rater(project, stage.stage)
                    and not has_third)
    return render(request, stage_template("consolidate", project.kind, stage.stage), {
        "project": project, "consolidation": consolidation, "item": stage.item, "stage": stage, "discard_form": DiscardForm(),
        "escalate_form": EscalateForm() if can_escalate else None,
        "item_warnings": get_kind(project.kind).item_warnings(stage.stage, stage.content or {}, stage.item.metadata or {},
                                                              consolidation.draft),
        # with nobody free, an escalated item waits for the next annotator added (said before and after)
        "no_free_third_rater": (can_escalate or consolidation.status == ConsolidationStatus.WAITING) and not has_third
        and not assignment_services.free_annotators(stage, {request.user.pk}),
        "state": {
            "consolidation_id": consolidation.id, "status": consolidation.status, "content": stage.content,
            "version": consolidation.version,
            "payload": consolidation.draft,
            "disagreed": consolidation.disagreed,
            "alignment": consolidation.alignment,
            "draft_rows": consolidation.draft_rows,
            "annotations": selectors.consolidation_annotations(consolidation),
            "read_only": consolidation.status != "open",
            "api_url": reverse("consolidation-detail", args=[consolidation.id]),
            "next_url": reverse("annotation:next-consolidation", args=[project.id]) + f"?after={consolidation.id}",
            "provenance": stage.provenance,
            **stage_page_state(project, stage),
        },
    })


def stage_page_state(project: Project, stage) -> dict:
    """What a later step's page also shows: the step before (its content and gold record), and
    where to search for evidence in projects whose annotators do."""
    kind = get_kind(project.kind)
    state = {"response": stage.item.response, "guideline": kind.stage_guideline(stage.stage),
             "rules": page_rules(project.kind, stage.stage)}
    if stage.stage > 1:
        state["previous"] = selectors.previous_step(stage)
    if kind.searches_evidence:
        state["search_url"] = reverse("project-evidence-searches", args=[project.id])
    state.update(kind.page_extras(lambda: project.pipeline_settings))
    return state


def stage_template(page: str, kind: str, stage: int) -> list[str]:
    """For render(): ``annotation/<page>_<kind>_step<n>.html`` where a step has a page of its own, else the kind's."""
    return [f"annotation/{page}_{kind}_step{stage}.html", f"annotation/{page}_{kind}.html"]


def _consolidation_form_action(request, consolidation_id, form_class, act, *, invalid: str, done: str, failed: str):
    """A consolidator's form on the consolidation page (discard, escalate): the form's reason to
    ``act``; back to the page on a refusal, on to the next consolidation when done."""
    consolidation = consolidation_for(request, consolidation_id)
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(request, invalid)
        return redirect("annotation:consolidate", consolidation_id=consolidation.id)
    try:
        act(consolidation=consolidation, user=request.user, reason=form.cleaned_data["reason"])
    except DomainError as exc:
        messages.error(request, f"{failed}: {exc}.")
        return redirect("annotation:consolidate", consolidation_id=consolidation.id)
    messages.success(request, done(consolidation) if callable(done) else done)
    return redirect("annotation:next-consolidation", project_id=consolidation.item_stage.item.project_id)


@login_required
@require_POST
def consolidation_escalate(request, consolidation_id):
    return _consolidation_form_action(
        request, consolidation_id, EscalateForm, consolidation_services.escalate, invalid="Say why the item needs a third rater.",
        done=_escalated_message, failed="Not escalated")


def _escalated_message(consolidation) -> str:
    if consolidation.item_stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists():
        return "A third rater now annotates this item; it comes back here when they submit."
    return ("No annotator of the project is free to be the third rater: the item waits until an annotator is added "
            "to the project, who is then given it (the project page says so too).")


@login_required
@require_POST
def consolidation_discard(request, consolidation_id):
    return _consolidation_form_action(
        request, consolidation_id, DiscardForm, consolidation_services.discard_item_stage,
        invalid="A reason is required to discard an item.", done="Item discarded.", failed="Not discarded")
