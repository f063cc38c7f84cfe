"""Forms of the browser pages."""
from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model

from annotation.kinds import KINDS
from annotation.models import ProjectKind, Role, ThirdRater
from annotation.exceptions import UploadTooLarge, readable_size
from annotation.services.imports import LABELS_AS, check_upload_size

User = get_user_model()


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=[(k, label) for k, label in ProjectKind.choices if k in KINDS])
    annotators_per_item = forms.IntegerField(min_value=1, max_value=10, initial=2)
    third_rater = forms.TypedChoiceField(
        choices=ThirdRater.choices, initial=ThirdRater.ESCALATION, label="Third rater", required=False,
        empty_value=ThirdRater.ESCALATION,
        help_text="Factcheck-Bench step 2: a third annotator answers blind before the consolidation, for every item "
                  "or only for items a consolidator escalates",
    )
    guidelines = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False, help_text="Markdown")


class ProjectEditForm(forms.Form):
    """A project's settings after creation; the pipeline settings as JSON, keys masked (a masked
    key keeps the stored one while its base URL stays; only staff change the endpoints)."""

    name = forms.CharField(max_length=200)
    annotators_per_item = forms.IntegerField(min_value=1, max_value=10)
    third_rater = forms.ChoiceField(choices=ThirdRater.choices, label="Third rater")
    guidelines = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}), required=False, help_text="Markdown")
    pipeline_settings = forms.JSONField(widget=forms.Textarea(attrs={"rows": 8}), required=False,
                                        help_text="JSON: segmentation, passages, embeddings, revision; llm and web_search (staff only)")


class UploadField(forms.FileField):
    """A file no larger than ``IMPORT_MAX_UPLOAD_BYTES``, refused with a readable message."""

    def clean(self, *args, **kwargs):
        upload = super().clean(*args, **kwargs)
        try:
            check_upload_size(getattr(upload, "size", None))
        except UploadTooLarge as exc:
            raise forms.ValidationError(str(exc)) from exc
        return upload


class ImportForm(forms.Form):
    file = UploadField(help_text="JSONL, one item a line")
    format = forms.ChoiceField(choices=[])
    labels_as = forms.ChoiceField(choices=[(v, v) for v in LABELS_AS], initial="ignore")

    def __init__(self, *args, formats=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(f, f) for f in formats]
        self.fields["file"].help_text = f"JSONL, one item a line; at most {readable_size(settings.IMPORT_MAX_UPLOAD_BYTES)}"


class CorpusForm(forms.Form):
    name = forms.CharField(max_length=200)
    file = UploadField(help_text='JSONL, one document a line: {"title", "url", "text"}')
    passage_sentences = forms.IntegerField(min_value=1, max_value=50, initial=5, help_text="sentences per passage")
    passage_stride = forms.IntegerField(min_value=1, max_value=50, initial=2, help_text="a passage starts every … sentences")


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = User.objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError(f"no user named {username!r}")
        self.cleaned_data["user"] = user
        return username


class DiscardForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class SplitForm(forms.Form):
    units = forms.CharField(widget=forms.Textarea(attrs={"rows": 8}), max_length=200_000,
                            help_text="one sentence (or segment) a line")


class EscalateForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)
