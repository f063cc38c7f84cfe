"""The pages' JavaScript is ES modules (issue 20 item 5): no globals, no inline scripts or
handlers in the templates, and no label of a kind's label list, nor a key of one, written into
a script (labels, rules and keys come from the kind, annotation/kinds/<kind>/page.py, in the
page's state). The scripts are the shared ones (static/js/) and each kind's (static/<kind>/)."""

import json
import posixpath
import re
from pathlib import Path

import pytest

from annotation.kinds import KINDS, PAGES, page_keys, page_rules
from tests.helpers.page_files import SCRIPTS, TEMPLATES, served
from tests.helpers.page_rules import rule_paths

MAX_LINES = 600
BY_URL = {served(script): script for script in SCRIPTS}
# every step page's rules and keys, by "kind/step"
RULES = {f"{key}/{stage}": rules for key, page in PAGES.items() for stage, rules in page.RULES.items()}


def script_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_every_script_is_a_module_without_globals():
    assert SCRIPTS
    for script in SCRIPTS:
        text = script_text(script)
        assert not re.search(r"^var\s", text, re.M), f"{script.name}: a top-level var"
        assert not re.search(r"\b(window|globalThis|self)\.\w+\s*=[^=]", text), f"{script.name}: assigns a global"
        assert not re.search(r"^const \w+ = \(\(\) => \{", text, re.M), f"{script.name}: a closure handing out a global"
        assert '"use strict"' not in text, f"{script.name}: modules are strict already"
        assert len(text.splitlines()) < MAX_LINES, f"{script.name} is too long"


def imported_url(script: Path, target: str) -> str:
    """The /static/ path an import of ``script`` names ("../js/common.js" from felm/felm.js)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(served(script)), target))


def test_imports_name_scripts_that_exist_and_export_what_is_imported():
    assert {"js/keys.js", "felm/felm.js", "factcheck/factcheck_step2.js", "dfactscore/dfactscore.js"} <= set(BY_URL)
    for script in SCRIPTS:
        for names, target in re.findall(r'^import (.+?) from "(\.\.?/[\w./]+)";$', script_text(script), re.M):
            assert imported_url(script, target) in BY_URL, f"{served(script)} imports {target}: not served"
            module = BY_URL[imported_url(script, target)]
            exported = set(
                re.findall(
                    r"^export (?:async )?(?:function|const|let|class) (\w+)",
                    script_text(module),
                    re.M,
                )
            )
            if names.startswith("{"):
                wanted = {name.strip().split(" as ")[0] for name in names.strip("{} ").split(",")}
                assert wanted <= exported, f"{script.name}: {sorted(wanted - exported)} not exported by {target}"
                body = re.sub(r"^import .*$", "", script_text(script), flags=re.M)
                unused = {name for name in wanted if not re.search(rf"\b{name}\b", body)}
                assert not unused, f"{script.name} imports {sorted(unused)} and does not use them"


def test_templates_load_scripts_as_modules_and_have_no_inline_code():
    loaded = set()
    for template in TEMPLATES:
        text = template.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert 'type="module"' in tag and "src=" in tag, f"{template.name}: {tag}"
        # a page's own script comes in through the block of the module tag in _workbench.html
        loaded |= set(re.findall(r"\{% static '([\w/.]+\.js)' %\}", text))
        assert not re.search(r"<script\b[^>]*>\s*[^<\s]", text), f"{template.name}: an inline script"
        assert not re.search(r"\son(submit|click|change|input|load)=", text), f"{template.name}: an inline handler"
    imported = {
        imported_url(script, target)
        for script in SCRIPTS
        for target in re.findall(r'from "(\.\.?/[\w./]+)"', script_text(script))
    }
    assert loaded <= set(BY_URL), sorted(loaded - set(BY_URL))
    for script in SCRIPTS:
        assert served(script) in loaded | imported, f"{served(script)} is neither loaded by a page nor imported"


def page_labels() -> set[str]:
    """The texts of every label list the kinds hand their pages, that differ from their value."""
    return {
        text
        for rules in RULES.values()
        for options in rules["choices"].values()
        for value, text in options
        if str(value).lower() != text.lower()
    }


def test_no_label_of_a_kind_is_written_into_a_script():
    labels = page_labels()
    assert {"Knowledge error", "Not supported", "Completely supports", "corrected"} <= labels
    for script in SCRIPTS:
        text = script_text(script)
        written = {label for label in labels if re.search(r"[\"'`]" + re.escape(label) + r"[\"'`]", text)}
        assert not written, f"{script.name} writes the labels {sorted(written)}: they come from state.rules"


def test_a_kind_serves_scripts_under_its_own_name_and_imports_the_shared_ones_as_served():
    """A kind's scripts are served at /static/<kind>/ (so none shadows a shared one), and reach
    the shared modules by their served place ("../js/save.js"), not beside themselves."""
    for key, spec in KINDS.items():
        folder = spec.folder / "static"
        if folder.is_dir():
            assert [path.name for path in folder.iterdir()] == [key], key
    felm = script_text(BY_URL["felm/felm.js"])
    assert 'from "../js/save.js";' in felm and 'from "./felm_model.js";' in felm


def test_every_annotatable_step_has_rules_naming_its_vocabularies():
    for kind in KINDS.values():
        for stage in kind.annotatable_stages:
            rules = page_rules(kind.key, stage)
            assert rules["choices"], (kind.key, stage)
            json.dumps(rules)  # goes into the page as json_script


@pytest.mark.django_db
def test_the_annotation_page_hands_the_script_its_rules(felm_items, users, client):
    assignment = users["alice"].assignments.first()
    client.force_login(users["alice"])
    page = client.get(f"/assignments/{assignment.id}/").content.decode()
    state = json.loads(re.search(r'<script id="state" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert state["rules"] == json.loads(json.dumps(page_rules("felm", 1)))
    assert state["keys"] == page_keys("felm", 1) and state["keys"]["segments[].label"] == ["c", "x"]
    assert 'data-page="annotate"' in page and '<script type="module" src="/static/felm/felm.js"></script>' in page


def rule_names(rules: list[dict]) -> set[str]:
    return {name for rule in rules for name in (rule["name"], *rule_names(rule.get("rules", [])))}


def test_no_completeness_rule_is_written_into_a_script():
    """What a submit needs comes from the kind (state.rules.completeness), applied by the one
    evaluator in completeness.js: no page script names a requirement of its own."""
    # names of three words or more: a shorter one ("page link") may also name a field in an error
    names = {
        name for rules in RULES.values() for name in rule_names(rules.get("completeness", [])) if name.count(" ") >= 2
    }
    assert {"stance of passage", "the revised response", "supported by any page?"} <= names
    for script in SCRIPTS:
        text = script_text(script)
        written = {name for name in names if re.search(r"[\"'`]" + re.escape(name) + r"[\"'`]", text)}
        assert not written, f"{script.name} writes the requirements {sorted(written)}: they come from state.rules"
    assert "js/completeness.js" in BY_URL
    for kind, stage in (("felm", 1), ("factcheck", 1), ("factcheck", 2), ("factcheck", 3), ("dfactscore", 1)):
        assert page_rules(kind, stage)["completeness"], (kind, stage)


def required_field_keys() -> dict:
    """Every step page's keys (each kind's page.py, handed in state.keys), by "kind/step"."""
    return {f"{key}/{stage}": keys for key, page in PAGES.items() for stage, keys in page.KEYS.items()}


def test_every_required_field_has_a_key():
    keys = required_field_keys()
    with_rules = {page: rules["completeness"] for page, rules in RULES.items() if "completeness" in rules}
    # every annotation page checks its answers by the kind's rules before a submit
    assert set(with_rules) == {f"{kind.key}/{stage}" for kind in KINDS.values() for stage in kind.annotatable_stages}
    assert set(keys) == set(with_rules)
    for page, rules in with_rules.items():
        assert set(keys[page]) == rule_paths(rules), page
        assert all(keys[page].values()), page


# The label lists (state.rules.choices) whose entries a required field's keys pick, one key each.
KEYED_CHOICES = {
    "felm/1": {"segments[].label": ("label",), "segments[].error_type": ("error_type",)},
    "factcheck/1": {
        "sentences[].importance": ("importance",),
        "sentences[].checkworthy": ("checkworthy", "checkworthy_more"),
        "sentences[].claims[].category": ("category",),
        "sentences[].claims[].importance": ("claim_importance",),
    },
    "factcheck/2": {
        "stances[]": ("stance",),
        "reliable[]": ("reliable",),
        "decided": ("decided",),
        "factuality": ("factuality",),
        "needs_edit": ("needs_edit",),
        "manual_evidence[].reliable": ("manual_reliable",),
        "manual_evidence[].sufficient": ("sufficient",),
    },
    "dfactscore/1": {"facts[].label": ("label",), "facts[].any_page": ("any_page",)},
}


def test_the_keys_of_a_label_list_are_one_per_label():
    """A required field answered from a label list has one key per label, in the kind's page.py only."""
    keys = required_field_keys()
    listed = {
        page: {path: value for path, value in fields.items() if isinstance(value, list)}
        for page, fields in keys.items()
    }
    assert {page: set(fields) for page, fields in listed.items() if fields} == {
        page: set(fields) for page, fields in KEYED_CHOICES.items()
    }
    for page, fields in KEYED_CHOICES.items():
        kind, stage = page.split("/")
        choices = page_rules(kind, int(stage))["choices"]
        for path, names in fields.items():
            labels = [value for name in names for value, _ in choices[name]]
            assert len(listed[page][path]) == len(labels), (page, path)
            assert len(set(listed[page][path])) == len(labels), (page, path, "a key twice")


def written_key_lists(text: str) -> list[str]:
    """Lists of one-character strings in a script (["s", "n", "i"]): a label list's keys."""
    return re.findall(r"\[\s*[\"'][^\"']{1}[\"'](?:\s*,\s*[\"'][^\"']{1}[\"'])+\s*\]", text)


def test_no_page_script_writes_its_own_keys_for_a_label_list():
    """The keys a page binds to a label list and the keys its hints and legend name are the
    same list, the kind's (page.py, handed in state.keys): a second copy in a page script could
    differ from it."""
    assert written_key_lists('const KEYS = {label: ["s", "n", "i"], any_page: ["a", "A"]};') == [
        '["s", "n", "i"]',
        '["a", "A"]',
    ]
    # nor as the text the legends and hints show ("r / ⇧R"); the templates' key legends take
    # them from state.keys too (<dt data-keys="facts[].label">)
    shown = {
        " / ".join(f"⇧{key}" if key.isupper() else key for key in value)
        for fields in required_field_keys().values()
        for value in fields.values()
        if isinstance(value, list)
    }
    assert {"s / n / i", "r / ⇧R", "c / x"} <= shown
    for script in SCRIPTS:
        text = re.sub(r"/\*.*?\*/|^\s*//.*$", "", script_text(script), flags=re.S | re.M)  # code only
        assert not written_key_lists(text), f"{script.name} writes a list of keys: use state.keys"
        written = {keys for keys in shown if re.search(r"[\"'`]" + re.escape(keys) + r"[\"'`]", text)}
        assert not written, f"{script.name} writes the keys {sorted(written)}: use state.keys"
    for template in TEMPLATES:
        written = set(re.findall(r"<dt>([^<]+)</dt>", template.read_text(encoding="utf-8"))) & shown
        assert not written, f"{template.name} writes the keys {sorted(written)}: <dt data-keys=…> shows them"
