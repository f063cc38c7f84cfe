"""Forms of the research pages: a system's predictions to score."""

from django import forms

from annotation.imports.forms import UploadField


class PredictionsForm(forms.Form):
    """An automatic fact-checker's predictions to score (research.predictions)."""

    file = UploadField(
        help_text='JSONL keyed like the exports, e.g. {"item": "q7", "sentence": "sentence1", "checkworthy": "yes"}'
    )
    system = forms.CharField(max_length=100, help_text="the fact-checker's name")
    version = forms.CharField(max_length=50, required=False, help_text="optional; each version is a row of its own")
    resamples = forms.IntegerField(
        min_value=0,
        max_value=10_000,
        initial=1000,
        required=False,
        help_text="bootstrap resamples of the 95 % intervals (0: none)",
    )
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, initial=0, required=False)
    domain = forms.CharField(
        max_length=50,
        required=False,
        help_text="optional: the domain of the lines that name none, for a file of one domain (e.g. FELM's math)",
    )
    replace = forms.BooleanField(required=False, label="Replace the scores of this system and version if they exist")

    def clean_resamples(self):
        value = self.cleaned_data.get("resamples")
        return 1000 if value is None else value

    def clean_seed(self):
        value = self.cleaned_data.get("seed")
        return 0 if value is None else value
