from django.urls import path

from . import research_views, views

app_name = "annotation"

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/new/", views.project_create, name="project-create"),
    path("users/new/", views.user_create, name="user-create"),
    path("projects/<int:project_id>/", views.project_detail, name="project"),
    path("projects/<int:project_id>/guidelines/", views.guidelines, name="guidelines"),
    path("projects/<int:project_id>/settings/", views.project_edit, name="project-edit"),
    path("projects/<int:project_id>/import/", views.project_import, name="project-import"),
    path("projects/<int:project_id>/members/", views.project_members, name="project-members"),
    path("projects/<int:project_id>/corpora/", views.project_corpus_upload, name="project-corpora"),
    path("projects/<int:project_id>/retry/", views.project_retry_failed, name="project-retry"),
    path("projects/<int:project_id>/items/<int:item_id>/", views.item_page, name="item"),
    path("projects/<int:project_id>/assignments/<int:assignment_id>/reassign/", views.reassign, name="reassign"),
    path("projects/<int:project_id>/items/<int:item_id>/claims/<int:claim>/retrieve/", views.project_retrieve_claim,
         name="retrieve-claim"),
    path("projects/<int:project_id>/export/<str:fmt>/", views.project_export, name="project-export"),
    path("projects/<int:project_id>/agreement/", views.agreement_page, name="agreement"),
    path("projects/<int:project_id>/agreement/status/", views.agreement_status, name="agreement-status"),
    path("projects/<int:project_id>/llm-rater/", research_views.llm_rater_page, name="llm-rater"),
    path("projects/<int:project_id>/leaderboard/", research_views.leaderboard_page, name="leaderboard"),
    path("projects/<int:project_id>/leaderboard/upload/", research_views.system_run_upload, name="system-run-upload"),
    path("projects/<int:project_id>/leaderboard/rescore/", research_views.system_runs_rescore, name="system-runs-rescore"),
    path("projects/<int:project_id>/system-runs/<int:run_id>/delete/", research_views.system_run_delete,
         name="system-run-delete"),
    path("projects/<int:project_id>/next/", views.next_item, name="next-item"),
    path("projects/<int:project_id>/consolidations/", views.consolidation_list, name="consolidations"),
    path("projects/<int:project_id>/consolidations/next/", views.next_consolidation, name="next-consolidation"),
    path("assignments/<int:assignment_id>/", views.annotate, name="annotate"),
    path("assignments/<int:assignment_id>/reopen/", views.reopen_submission, name="reopen"),
    path("consolidations/<int:consolidation_id>/", views.consolidate, name="consolidate"),
    path("consolidations/<int:consolidation_id>/discard/", views.consolidation_discard, name="consolidation-discard"),
    path("consolidations/<int:consolidation_id>/escalate/", views.consolidation_escalate, name="consolidation-escalate"),
]
