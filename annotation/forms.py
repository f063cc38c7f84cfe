"""Forms of the browser pages."""

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import password_validators_help_text_html

from annotation.kinds import KINDS
from annotation.models import Project, ProjectKind, Role, ThirdRater

User = get_user_model()


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=[(k, label) for k, label in ProjectKind.choices if k in KINDS])
    annotators_per_item = forms.IntegerField(min_value=1, max_value=10, initial=2)
    overlap_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=1,
        required=False,
        label="Share of items annotated by all of them",
        help_text="0–1: the others get one annotator, whose submission is their gold record (no consolidation; "
        "agreement is measured on the shared items). D-FActScore double-annotated 0.1.",
    )
    third_rater = forms.TypedChoiceField(
        choices=ThirdRater.choices,
        initial=ThirdRater.ESCALATION,
        label="Third rater",
        required=False,
        empty_value=ThirdRater.ESCALATION,
        help_text="Factcheck-Bench step 2: a third annotator answers blind before the consolidation, for every item "
        "or only for items a consolidator escalates",
    )
    guidelines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 16}),
        required=False,
        help_text="Markdown; starts with the label definitions of the kind's paper",
    )

    def clean_overlap_share(self):
        share = self.cleaned_data.get("overlap_share")
        return 1.0 if share is None else share


class ProjectEditForm(forms.Form):
    """A project's settings after creation; the pipeline settings as JSON, keys masked (a masked
    key keeps the stored one while its base URL stays; only staff change the endpoints)."""

    name = forms.CharField(max_length=200)
    annotators_per_item = forms.IntegerField(min_value=1, max_value=10)
    overlap_share = forms.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        label="Share of items annotated by all of them",
        help_text="0–1: the others get one annotator, whose submission is their gold record (no consolidation; "
        "agreement is measured on the shared items). D-FActScore double-annotated 0.1.",
    )
    third_rater = forms.ChoiceField(choices=ThirdRater.choices, label="Third rater")
    guidelines = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}), required=False, help_text="Markdown")
    pipeline_settings = forms.JSONField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        help_text="JSON: segmentation, passages, embeddings, revision; llm and web_search (staff only)",
    )

    def clean_overlap_share(self):
        share = self.cleaned_data.get("overlap_share")
        return self.initial.get("overlap_share", 1.0) if share is None else share


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


class MemberRoleForm(forms.Form):
    """Move a member to another role (the membership by id)."""

    change = forms.IntegerField(min_value=1)
    role = forms.ChoiceField(choices=Role.choices)


class UserCreateForm(forms.Form):
    """A new account (staff only); optionally a member of one of the creator's projects at once."""

    username = forms.CharField(
        max_length=150,
        validators=[User.username_validator],
        help_text="letters, digits and @ . + - _ only",
    )
    password = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        strip=False,
        help_text=password_validators_help_text_html(),
    )
    email = forms.EmailField(required=False)
    is_staff = forms.BooleanField(
        required=False,
        label="Staff",
        help_text="may create projects and accounts and change pipeline endpoints",
    )
    project = forms.ModelChoiceField(
        queryset=None,
        required=False,
        empty_label="no project",
        help_text="add the new user to this project",
    )
    role = forms.ChoiceField(choices=[("", "—"), *Role.choices], required=False, label="Role in the project")

    def __init__(self, *args, projects=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = projects if projects is not None else Project.objects.none()

    def clean(self):
        data = super().clean()
        if data.get("project") and not data.get("role"):
            self.add_error("role", "choose the role the user has in the project")
        elif data.get("role") and not data.get("project"):
            self.add_error("project", "choose the project the role is in")
        return data


class DiscardForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


class SplitForm(forms.Form):
    units = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        max_length=200_000,
        help_text="one sentence (or segment) a line",
    )


class EscalateForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)
