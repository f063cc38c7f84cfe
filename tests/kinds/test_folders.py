"""Everything of a kind lives in its folder (issue 30): its templates and page scripts are
found there by name (annotation/kinds/folders.py), its guidelines and page (labels, rules, keys)
come through the registry, and Project.kind's choices are the registry's."""

from io import StringIO

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.template.loader import get_template

from annotation.kinds import KINDS, kind_choices, kind_dirs, page_keys, page_rules
from annotation.models import Project, ProjectKind
from tests.helpers.paths import REPO_ROOT as REPO

KINDS_DIR = REPO / "annotation" / "kinds"


def test_a_kind_page_template_is_found_in_its_folder_and_extends_the_shared_one():
    template = get_template("annotation/annotate_felm.html")
    assert template.origin.name == str(KINDS_DIR / "felm" / "templates" / "annotation" / "annotate_felm.html")
    assert get_template("annotation/_workbench.html").origin.name == str(
        REPO / "templates" / "annotation" / "_workbench.html"
    )
    assert get_template("annotation/_factcheck_step2_workbench.html").origin.name.startswith(
        str(KINDS_DIR / "factcheck")
    )


def test_a_kind_template_is_named_after_the_kind_so_none_stands_in_for_a_shared_one():
    shared = {path.name for path in (REPO / "templates" / "annotation").glob("*.html")}
    for key, spec in KINDS.items():
        own = [path.relative_to(spec.folder / "templates") for path in (spec.folder / "templates").rglob("*.html")]
        assert own, key
        for path in own:
            assert path.parent.as_posix() == "annotation" and key in path.name, (key, path)
            assert path.name not in shared, (key, path)


def test_the_finders_serve_each_kind_scripts_under_its_name_beside_the_shared_ones():
    assert finders.find("felm/felm.js") == str(KINDS_DIR / "felm" / "static" / "felm" / "felm.js")
    assert finders.find("dfactscore/dfactscore_model.js").startswith(str(KINDS_DIR / "dfactscore"))
    assert finders.find("js/keys.js") == str(REPO / "static" / "js" / "keys.js")
    assert finders.find("js/felm.js") is None  # moved, not served twice
    assert kind_dirs("static") == [spec.folder / "static" for spec in KINDS.values()]


@pytest.mark.django_db
def test_the_site_serves_a_kind_script_at_its_url(client):
    response = client.get("/static/factcheck/factcheck_step3.js")
    assert response.status_code == 200
    assert b'from "../js/save.js";' in b"".join(response.streaming_content)


def test_collectstatic_gathers_each_kind_scripts(tmp_path, settings):
    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", "--noinput", stdout=StringIO())
    for key in KINDS:
        assert (tmp_path / key / f"{key}.js").is_file(), key
    assert (tmp_path / "js" / "save.js").is_file()


def test_a_kind_guidelines_and_page_come_from_its_folder():
    felm = KINDS["felm"]
    assert felm.folder == KINDS_DIR / "felm"
    assert felm.guidelines_template() == (KINDS_DIR / "felm" / "guidelines.md").read_text(encoding="utf-8")
    assert page_rules("factcheck", 2)["choices"]["stance"][0] == ["completely-support", "Completely supports"]
    assert page_keys("dfactscore", 1)["facts[].label"] == ["s", "n", "i"]
    assert page_rules("factcheck", 4) == {"choices": {}} and page_keys("factcheck", 4) == {}


def test_the_project_kinds_are_the_registry_ones():
    assert (
        ProjectKind.choices
        == kind_choices()
        == [
            ("felm", "FELM segment labelling"),
            ("factcheck", "Factcheck-Bench"),
            ("dfactscore", "D-FActScore"),
        ]
    )
    assert Project._meta.get_field("kind").choices == kind_choices()
    assert ProjectKind.FELM == "felm"
