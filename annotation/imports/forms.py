"""Forms of the import pages: the upload field every upload form uses, and the item import."""

from django import forms
from django.conf import settings

from annotation.exceptions import UploadTooLarge, readable_size
from annotation.imports.items import LABELS_AS
from annotation.imports.reading import check_upload_size
from annotation.kinds import get_kind


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
    on_error = forms.ChoiceField(
        label="Bad lines",
        initial="refuse",
        required=False,  # absent (older pages, scripts): refuse
        choices=[
            ("refuse", "refuse the file (nothing is imported, every bad line is listed)"),
            ("skip", "skip them (the good lines are imported, the skipped ones listed)"),
        ],
    )
    domain = forms.CharField(
        required=False,
        max_length=50,
        strip=False,
        help_text="fills the domain of items whose line has none (free text, e.g. the topic of the file)",
    )

    def clean_on_error(self):
        return self.cleaned_data["on_error"] or "refuse"

    def __init__(self, *args, formats=(), kind: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(f, f) for f in formats]
        if domains := (get_kind(kind).domains if kind else ()):
            self.fields["domain"].help_text = (
                f"fills the domain of items whose line has none ({', '.join(domains)} "
                "— the released files are named after it)"
            )
        self.fields[
            "file"
        ].help_text = f"JSONL, one item a line; at most {readable_size(settings.IMPORT_MAX_UPLOAD_BYTES)}"
