"""FELM's error type ``irrelevant`` is named ``irrelevant_with_qst`` as in the released data:
rename it in the work already stored (suggestions, drafts, submissions, consolidations, gold)."""
from django.db import migrations

OLD, NEW = "irrelevant", "irrelevant_with_qst"


def _renamed(value):
    if not isinstance(value, dict) or not isinstance(value.get("segments"), list):
        return value, False
    changed = False
    segments = []
    for segment in value["segments"]:
        if isinstance(segment, dict) and segment.get("error_type") == OLD:
            segment, changed = {**segment, "error_type": NEW}, True
        segments.append(segment)
    return ({**value, "segments": segments} if changed else value), changed


def rename(apps, schema_editor):
    felm = {"item_stage__item__project__kind": "felm"}
    for model, field, lookup in (
        ("ItemStage", "suggestion", {"item__project__kind": "felm"}),
        ("Annotation", "payload", {"assignment__item_stage__item__project__kind": "felm"}),
        ("Consolidation", "draft", felm),
        ("GoldRecord", "payload", felm),
    ):
        Model = apps.get_model("annotation", model)
        for row in Model.objects.filter(**lookup).only("pk", field).iterator(chunk_size=500):
            value, changed = _renamed(getattr(row, field))
            if changed:
                Model.objects.filter(pk=row.pk).update(**{field: value})


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_export_lines")]
    operations = [migrations.RunPython(rename, migrations.RunPython.noop)]
