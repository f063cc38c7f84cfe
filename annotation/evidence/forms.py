"""Forms of the evidence pages: a corpus upload."""

from django import forms

from annotation.imports.forms import UploadField


class CorpusForm(forms.Form):
    name = forms.CharField(max_length=200)
    file = UploadField(help_text='JSONL, one document a line: {"title", "url", "text"}')
    passage_sentences = forms.IntegerField(min_value=1, max_value=50, initial=5, help_text="sentences per passage")
    passage_stride = forms.IntegerField(
        min_value=1, max_value=50, initial=2, help_text="a passage starts every … sentences"
    )
