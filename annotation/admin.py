"""Django admin for staff: every table browsable, with the filters staff need to find things."""

from django import forms
from django.contrib import admin

from . import selectors
from .models import (
    Annotation,
    Assignment,
    Consolidation,
    GoldRecord,
    ImportJob,
    Item,
    ItemStage,
    Membership,
    Project,
)
from .services.projects import ENDPOINT_SECTIONS, resolve_secret


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


class ProjectAdminForm(forms.ModelForm):
    """Pipeline settings with every endpoint's api_key masked, as everywhere else; sent back
    masked, the key stands for the stored one while the base URL stays (resolve_secret)."""

    class Meta:
        model = Project
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["pipeline_settings"] = selectors.masked_pipeline_settings(self.instance)

    def clean_pipeline_settings(self):
        value = self.cleaned_data.get("pipeline_settings")
        if not isinstance(value, dict):
            return value
        # The instance still holds the stored settings here (the form's values go in after cleaning).
        stored = (self.instance.pipeline_settings or {}) if self.instance.pk else {}
        return {
            name: resolve_secret(stored.get(name) or {}, section)
            if name in ENDPOINT_SECTIONS and isinstance(section, dict)
            else section
            for name, section in value.items()
        }


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectAdminForm
    list_display = ["name", "kind", "annotators_per_item", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "external_id", "source", "domain"]
    list_filter = ["project"]
    search_fields = ["external_id", "prompt", "response"]


@admin.register(ItemStage)
class ItemStageAdmin(admin.ModelAdmin):
    list_display = ["id", "item", "stage", "status", "updated_at"]
    list_filter = ["status", "stage", "item__project"]
    raw_id_fields = ["item"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "item_stage", "user", "role", "status", "submitted_at", "active_seconds"]
    list_filter = ["status", "role", "item_stage__item__project"]
    raw_id_fields = ["item_stage"]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["id", "assignment", "version", "submitted", "updated_at"]
    list_filter = ["submitted"]
    raw_id_fields = ["assignment"]


@admin.register(Consolidation)
class ConsolidationAdmin(admin.ModelAdmin):
    list_display = ["id", "item_stage", "status", "consolidator", "updated_at"]
    list_filter = ["status"]
    raw_id_fields = ["item_stage"]


@admin.register(GoldRecord)
class GoldRecordAdmin(admin.ModelAdmin):
    list_display = ["id", "item_stage", "source", "consolidated_by", "updated_at"]
    list_filter = ["source"]
    raw_id_fields = ["item_stage"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "project",
        "state",
        "format",
        "file_name",
        "lines_read",
        "created_by",
        "created_at",
        "finished_at",
    ]
    list_filter = ["state", "project"]
    readonly_fields = [f.name for f in ImportJob._meta.fields]  # written by the task only
