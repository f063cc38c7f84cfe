from django.urls import path, register_converter

from .evidence import views as evidence_views
from .exports import views as export_views
from .imports import views as import_views
from .params import NATURAL
from .research import views as research_views
from .views import annotate as annotate_views
from .views import projects as project_views


class IdConverter:
    """Path ids of at most 18 digits (a 64-bit column): a longer one is a 404, not a lookup the
    database cannot hold (OverflowError on SQLite: a 500)."""

    regex = NATURAL.pattern

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(value)


register_converter(IdConverter, "id")

app_name = "annotation"

urlpatterns = [
    path("", project_views.home, name="home"),
    path("projects/new/", project_views.project_create, name="project-create"),
    path("users/new/", project_views.user_create, name="user-create"),
    path("projects/<id:project_id>/", project_views.project_detail, name="project"),
    path("projects/<id:project_id>/guidelines/", project_views.guidelines, name="guidelines"),
    path("projects/<id:project_id>/settings/", project_views.project_edit, name="project-edit"),
    path("projects/<id:project_id>/import/", import_views.project_import, name="project-import"),
    path("projects/<id:project_id>/members/", project_views.project_members, name="project-members"),
    path(
        "projects/<id:project_id>/corpora/",
        evidence_views.project_corpus_upload,
        name="project-corpora",
    ),
    path("projects/<id:project_id>/retry/", import_views.project_retry_failed, name="project-retry"),
    path("projects/<id:project_id>/items/<id:item_id>/", project_views.item_page, name="item"),
    path(
        "projects/<id:project_id>/assignments/<id:assignment_id>/reassign/",
        project_views.reassign,
        name="reassign",
    ),
    path(
        "projects/<id:project_id>/items/<id:item_id>/claims/<id:claim>/retrieve/",
        evidence_views.project_retrieve_claim,
        name="retrieve-claim",
    ),
    path(
        "projects/<id:project_id>/export/<str:fmt>/",
        export_views.project_export,
        name="project-export",
    ),
    path("projects/<id:project_id>/agreement/", research_views.agreement_page, name="agreement"),
    path(
        "projects/<id:project_id>/agreement/status/",
        research_views.agreement_status,
        name="agreement-status",
    ),
    path("projects/<id:project_id>/llm-rater/", research_views.llm_rater_page, name="llm-rater"),
    path("projects/<id:project_id>/leaderboard/", research_views.leaderboard_page, name="leaderboard"),
    path(
        "projects/<id:project_id>/leaderboard/upload/",
        research_views.system_run_upload,
        name="system-run-upload",
    ),
    path(
        "projects/<id:project_id>/leaderboard/rescore/",
        research_views.system_runs_rescore,
        name="system-runs-rescore",
    ),
    path(
        "projects/<id:project_id>/system-runs/<id:run_id>/delete/",
        research_views.system_run_delete,
        name="system-run-delete",
    ),
    path("projects/<id:project_id>/next/", annotate_views.next_item, name="next-item"),
    path("projects/<id:project_id>/consolidations/", annotate_views.consolidation_list, name="consolidations"),
    path(
        "projects/<id:project_id>/consolidations/next/",
        annotate_views.next_consolidation,
        name="next-consolidation",
    ),
    path("assignments/<id:assignment_id>/", annotate_views.annotate, name="annotate"),
    path("assignments/<id:assignment_id>/reopen/", annotate_views.reopen_submission, name="reopen"),
    path("consolidations/<id:consolidation_id>/", annotate_views.consolidate, name="consolidate"),
    path(
        "consolidations/<id:consolidation_id>/discard/",
        annotate_views.consolidation_discard,
        name="consolidation-discard",
    ),
    path(
        "consolidations/<id:consolidation_id>/escalate/",
        annotate_views.consolidation_escalate,
        name="consolidation-escalate",
    ),
]
