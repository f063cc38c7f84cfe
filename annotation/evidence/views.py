"""Pages of the evidence wing: a corpus upload, and retrieving a claim's evidence again."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from annotation.evidence import corpora as corpus_services
from annotation.evidence import retrieval as evidence_services
from annotation.evidence.forms import CorpusForm
from annotation.exceptions import DomainError
from annotation.imports.views import import_errors_text
from annotation.kinds import get_kind
from annotation.models import CorpusState, ItemStage, Role
from annotation.pages import project_for


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
            name=data["name"],
            user=request.user,
            upload=data["file"],
            projects=[project],
            passage_sentences=data["passage_sentences"],
            passage_stride=data["passage_stride"],
        )
    except DomainError as exc:
        messages.error(request, f"Corpus refused: {exc}")
        return redirect("annotation:project", project_id=project.id)
    corpus.refresh_from_db()  # without a broker the import has already run
    if corpus.state == CorpusState.FAILED:
        messages.error(request, f"Corpus {corpus.name} not imported: {import_errors_text(corpus.errors)}")
    else:
        messages.success(
            request,
            f"Corpus {corpus.name}: {corpus.get_state_display().lower()}"
            f"{f', {corpus.passages} passages' if corpus.passages else ''}.",
        )
    return redirect("annotation:project", project_id=project.id)


@login_required
@require_POST
def project_retrieve_claim(request, project_id, item_id, claim):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    stage = get_object_or_404(
        ItemStage,
        item__project=project,
        item_id=item_id,
        stage__in=get_kind(project.kind).retrievable_stages,
    )
    try:
        evidence_services.request_retrieval(stage=stage, index=claim)
    except DomainError as exc:
        messages.error(request, f"Not retrieved again: {exc}.")
    else:
        messages.success(
            request,
            f"The evidence of claim {claim + 1} is being retrieved again; annotators' stances of it start over.",
        )
    return redirect("annotation:project", project_id=project.id)
