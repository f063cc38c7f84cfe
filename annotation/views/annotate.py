"""Browser pages of the work itself: the annotate and consolidate pages, their queues ("next" links, the
consolidation list) and the forms posted from them (reopen, discard, escalate). Thin like the project pages.

The annotation and consolidation pages are driven by static JavaScript that talks to the
REST API with the session cookie and CSRF token.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import selectors
from annotation.exceptions import DomainError
from annotation.forms import DiscardForm, EscalateForm
from annotation.kinds import get_kind, page_keys, page_rules
from annotation.models import Assignment, AssignmentRole, Consolidation, ConsolidationStatus, Project, Role, StageStatus
from annotation.pages import project_for
from annotation.params import parse_natural
from annotation.services import annotations as annotation_services
from annotation.services import assignments as assignment_services
from annotation.services import consolidation as consolidation_services
from annotation.services import third_rater as third_rater_services


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
        Assignment.objects.select_related("item_stage__item__project"),
        pk=assignment_id,
        user=request.user,
    )
    stage = assignment.item_stage
    if stage.status not in selectors.VISIBLE_TO_ANNOTATORS:
        raise Http404("this item is not open for annotation yet")
    project = stage.item.project
    annotation_state = selectors.annotation_state(assignment)
    return render(
        request,
        stage_template("annotate", project.kind, stage.stage),
        {
            "project": project,
            "assignment": assignment,
            "item": stage.item,
            "stage": stage,
            "state": {
                "assignment_id": assignment.id,
                "content": stage.content,
                "suggestion": stage.suggestion,
                "provenance": stage.provenance,
                # Submitted work is final even while the other annotator is still working.
                "read_only": stage.status != StageStatus.ANNOTATING or annotation_state["submitted"],
                **annotation_state,
                "api_url": reverse("assignment-annotation", args=[assignment.id]),
                "next_url": reverse("annotation:next-item", args=[project.id]) + f"?after={assignment.id}",
                **stage_page_state(project, stage),
            },
            "progress": selectors.user_progress(project, request.user),
            "can_reopen": annotation_state["submitted"] and stage.status == StageStatus.ANNOTATING,
            "third_rater": assignment.role == AssignmentRole.THIRD_RATER,
        },
    )


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
    filters = [
        ("todo", "to do (open or waiting)"),
        ("open", "open"),
        ("waiting", "waiting for a third rater"),
        ("done", "done"),
        ("discarded", "discarded"),
        ("all", "all"),
    ]
    if status not in dict(filters):
        raise Http404(f"no consolidation status {status!r}")
    chosen = {"all": None, "todo": [ConsolidationStatus.OPEN, ConsolidationStatus.WAITING]}.get(status, status)
    consolidations = selectors.consolidations_for_project(project, chosen)
    page = Paginator(consolidations, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/consolidation_list.html",
        {"project": project, "page": page, "status": status, "status_filters": filters},
    )


@login_required
def next_consolidation(request, project_id):
    project, _ = project_for(request, project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    consolidation = selectors.next_consolidation(project, after_param(request), request.user)
    if consolidation is None:
        messages.info(request, "No open consolidations left.")
        return redirect("annotation:consolidations", project_id=project.id)
    return redirect("annotation:consolidate", consolidation_id=consolidation.id)


def consolidation_for(request, consolidation_id) -> Consolidation:
    consolidation = get_object_or_404(
        Consolidation.objects.select_related("item_stage__item__project"), pk=consolidation_id
    )
    project_for(request, consolidation.item_stage.item.project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    consolidation_services.check_not_annotator(consolidation, request.user)
    return consolidation


@login_required
def consolidate(request, consolidation_id):
    consolidation = consolidation_for(request, consolidation_id)
    stage = consolidation.item_stage
    project = stage.item.project
    has_third = stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists()
    can_escalate = (
        consolidation.status == ConsolidationStatus.OPEN
        and third_rater_services.allows_third_rater(project, stage.stage)
        and not has_third
    )
    return render(
        request,
        stage_template("consolidate", project.kind, stage.stage),
        {
            "project": project,
            "consolidation": consolidation,
            "item": stage.item,
            "stage": stage,
            "discard_form": DiscardForm(),
            "escalate_form": EscalateForm() if can_escalate else None,
            "item_warnings": get_kind(project.kind).item_warnings(
                stage.stage, stage.content or {}, stage.item.metadata or {}, consolidation.draft
            ),
            # with nobody free, an escalated item waits for the next annotator added (said before and after)
            "no_free_third_rater": (can_escalate or consolidation.status == ConsolidationStatus.WAITING)
            and not has_third
            and not assignment_services.free_annotators(stage, {request.user.pk}),
            "state": {
                "consolidation_id": consolidation.id,
                "status": consolidation.status,
                "content": stage.content,
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
        },
    )


def stage_page_state(project: Project, stage) -> dict:
    """What a later step's page also shows: the step before (its content and gold record), and
    where to search for evidence in projects whose annotators do."""
    kind = get_kind(project.kind)
    state = {
        "response": stage.item.response,
        "guideline": kind.stage_guideline(stage.stage),
        "rules": page_rules(project.kind, stage.stage),
        "keys": page_keys(project.kind, stage.stage),
    }
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
        request,
        consolidation_id,
        EscalateForm,
        consolidation_services.escalate,
        invalid="Say why the item needs a third rater.",
        done=_escalated_message,
        failed="Not escalated",
    )


def _escalated_message(consolidation) -> str:
    if consolidation.item_stage.assignments.filter(role=AssignmentRole.THIRD_RATER).exists():
        return "A third rater now annotates this item; it comes back here when they submit."
    return (
        "No annotator of the project is free to be the third rater: the item waits until an annotator is added "
        "to the project, who is then given it (the project page says so too)."
    )


@login_required
@require_POST
def consolidation_discard(request, consolidation_id):
    return _consolidation_form_action(
        request,
        consolidation_id,
        DiscardForm,
        consolidation_services.discard_item_stage,
        invalid="A reason is required to discard an item.",
        done="Item discarded.",
        failed="Not discarded",
    )
