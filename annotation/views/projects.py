"""Browser pages of the workflow core's projects: home, creating projects and users, a project's page,
settings, guidelines and members, an item across its steps, reassigning. Thin: they check access, call
selectors and services, render templates."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.db import IntegrityError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation import guidelines as guideline_text
from annotation import selectors
from annotation.evidence import corpora as corpus_services
from annotation.evidence.forms import CorpusForm
from annotation.exceptions import DomainError
from annotation.exports import formats as exports
from annotation.exports import selectors as export_selectors
from annotation.forms import MemberForm, MemberRoleForm, ProjectEditForm, ProjectForm, SplitForm, UserCreateForm
from annotation.imports.forms import ImportForm
from annotation.imports.views import recent_imports
from annotation.kinds import KINDS, get_kind
from annotation.models import Assignment, Item, ItemStage, Membership, Project, Role, StageStatus
from annotation.pages import project_for
from annotation.params import parse_natural
from annotation.research import selectors as research_selectors
from annotation.services import assignments as assignment_services
from annotation.services import consolidation as consolidation_services
from annotation.services import projects as project_services
from annotation.services import stages as stage_services


@login_required
def home(request):
    projects = []
    for project in selectors.projects_for_user(request.user).order_by("name"):
        roles = selectors.user_roles(request.user, project)
        projects.append(
            {
                "project": project,
                "roles": sorted(roles),
                "progress": selectors.user_progress(project, request.user),
                "consolidations": selectors.consolidation_counts(project)
                if roles & {Role.ADMIN, Role.CONSOLIDATOR}
                else None,
                "gold": selectors.gold_counts(project)["total"] if roles & {Role.ADMIN, Role.CONSOLIDATOR} else None,
            }
        )
    return render(
        request,
        "annotation/home.html",
        {
            "projects": projects,
            "can_create": selectors.can_create_projects(request.user),
        },
    )


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
                username=data["username"],
                password=data["password"],
                email=data["email"],
                is_staff=data["is_staff"],
                project=data["project"],
                role=data["role"] or None,
            )
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
    initial = {
        "name": project.name,
        "annotators_per_item": project.annotators_per_item,
        "overlap_share": project.overlap_share,
        "third_rater": project.third_rater,
        "guidelines": project.guidelines,
        "pipeline_settings": selectors.masked_pipeline_settings(project),
    }
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
    return render(
        request,
        "annotation/project_form.html",
        {
            "form": form,
            "project": project,
            "title": f"Settings of {project.name}",
            "button": "Save",
        },
    )


@login_required
def project_detail(request, project_id):
    project, roles = project_for(request, project_id)
    context = {
        "project": project,
        "roles": roles,
        "is_admin": Role.ADMIN in roles,
        "can_consolidate": bool(roles & {Role.ADMIN, Role.CONSOLIDATOR}),
    }
    if context["can_consolidate"]:
        context["consolidations"] = selectors.consolidation_counts(project)
        context["gold"] = selectors.gold_counts(project)
        context["waiting_without_rater"] = selectors.waiting_without_third_rater(project).count()
        annotators = selectors.members(project).filter(role=Role.ANNOTATOR).count()
        context["too_few_annotators"] = (
            (annotators, project.annotators_per_item) if annotators < project.annotators_per_item else None
        )
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
        context.update(
            {
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
                "export_summary": export_selectors.export_summary(project),
                "export_formats": [
                    (
                        fmt,
                        "zip" if fmt in get_kind(project.kind).archive_formats else "JSONL",
                        fmt if fmt in exports.COMMON_FORMATS else "",
                    )
                    for fmt in exports.export_formats(project)
                ],
                # Read-only here for everyone: only staff change them, through the API.
                "pipeline_settings": selectors.masked_pipeline_settings(project),
                "can_change_llm_settings": selectors.can_change_llm_settings(request.user),
            }
        )
    if get_kind(project.kind).has_paragraph_scores and context["can_consolidate"]:
        context["dfactscore_scores"] = research_selectors.consolidated_scores(project)
    return render(request, "annotation/project_detail.html", context)


@login_required
def guidelines(request, project_id):
    project, _ = project_for(request, project_id)
    html = guideline_text.render(project.guidelines)
    return render(request, "annotation/guidelines.html", {"project": project, "guidelines_html": html})


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
            messages.success(
                request,
                f"{membership.user.username} is no longer {membership.role}"
                + (
                    "; their open assignments went to the other annotators."
                    if membership.role == Role.ANNOTATOR
                    else "."
                ),
            )
        return redirect("annotation:project", project_id=project.id)
    if request.POST.get("change"):
        change_member_role(request, project)
        return redirect("annotation:project", project_id=project.id)
    form = MemberForm(request.POST)
    if form.is_valid():
        project_services.add_member(project=project, user=form.cleaned_data["user"], role=form.cleaned_data["role"])
        messages.success(request, f"{form.cleaned_data['username']} added as {form.cleaned_data['role']}.")
    else:
        messages.error(
            request,
            "Member not added: "
            + "; ".join(f"{field}: {message}" for field, errors in form.errors.items() for message in errors),
        )
    return redirect("annotation:project", project_id=project.id)


def change_member_role(request, project: Project) -> None:
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(
            request,
            "Role not changed: "
            + "; ".join(f"{field}: {message}" for field, errors in form.errors.items() for message in errors),
        )
        return
    membership = get_object_or_404(
        Membership.objects.select_related("user"), project=project, pk=form.cleaned_data["change"]
    )
    old_role, role = membership.role, form.cleaned_data["role"]
    if role == old_role:
        messages.info(request, f"{membership.user.username} is already {role}.")
        return
    try:
        project_services.change_member_role(project=project, membership=membership, role=role)
    except DomainError as exc:
        messages.error(request, f"Role not changed: {exc}.")
    else:
        messages.success(
            request,
            f"{membership.user.username} is now {role}, no longer {old_role}"
            + ("; their open assignments went to the other annotators." if old_role == Role.ANNOTATOR else "."),
        )


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
                consolidation = consolidation_services.reopen_stage(
                    stage=stage, user=request.user, reason=request.POST.get("reason", "")
                )
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
    return render(
        request,
        "annotation/item_detail.html",
        {
            "project": project,
            "item": item,
            "steps": selectors.item_detail(item),
            "is_admin": is_admin,
        },
    )


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
