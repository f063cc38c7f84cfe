"""The pages' JavaScript is ES modules (issue 20 item 5): no globals, no inline scripts or
handlers in the templates, and no label of a kind's label list written into a script (the
labels come from the kind, annotation/kinds/page_rules.py, in the page's state)."""

import json
import re
from pathlib import Path

import pytest

from annotation.kinds import KINDS
from annotation.kinds.page_rules import RULES, page_rules
from tests.helpers.page_rules import rule_paths
from tests.helpers.paths import REPO_ROOT as REPO

SCRIPTS = sorted((REPO / "static" / "js").glob("*.js"))
TEMPLATES = sorted((REPO / "templates").rglob("*.html"))
MAX_LINES = 600


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


def test_imports_name_scripts_that_exist_and_export_what_is_imported():
    for script in SCRIPTS:
        for names, target in re.findall(r'^import (.+?) from "\./([\w.]+)";$', script_text(script), re.M):
            module = REPO / "static" / "js" / target
            assert module.exists(), f"{script.name} imports {target}"
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
        loaded |= set(re.findall(r"\{% static 'js/([\w.]+\.js)' %\}", text))
        assert not re.search(r"<script\b[^>]*>\s*[^<\s]", text), f"{template.name}: an inline script"
        assert not re.search(r"\son(submit|click|change|input|load)=", text), f"{template.name}: an inline handler"
    imported = {target for script in SCRIPTS for target in re.findall(r'from "\./([\w.]+)"', script_text(script))}
    for script in SCRIPTS:
        assert script.name in loaded | imported, f"{script.name} is neither loaded by a page nor imported"


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
    assert 'data-page="annotate"' in page and '<script type="module" src="/static/js/felm.js"></script>' in page


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
    assert (REPO / "static" / "js" / "completeness.js").exists()
    for kind, stage in (("felm", 1), ("factcheck", 1), ("factcheck", 2), ("factcheck", 3), ("dfactscore", 1)):
        assert page_rules(kind, stage)["completeness"], (kind, stage)


def required_field_keys() -> dict:
    text = script_text(REPO / "static" / "js" / "keys.js")
    return json.loads(re.search(r"^export const REQUIRED_FIELD_KEYS = (\{.*?^\});$", text, re.M | re.S).group(1))


def test_every_required_field_has_a_key():
    keys = required_field_keys()
    with_rules = {
        f"{kind}/{stage}": rules["completeness"] for (kind, stage), rules in RULES.items() if "completeness" in rules
    }
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
    """A required field answered from a label list has one key per label, in keys.js only."""
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
    same list, in keys.js: a second copy in a page script could differ from it."""
    assert written_key_lists('const KEYS = {label: ["s", "n", "i"], any_page: ["a", "A"]};') == [
        '["s", "n", "i"]',
        '["a", "A"]',
    ]
    # nor as the text the legends and hints show ("r / ⇧R"); the templates' key legends take
    # them from keys.js too (<dt data-keys="facts[].label">)
    shown = {
        " / ".join(f"⇧{key}" if key.isupper() else key for key in value)
        for fields in required_field_keys().values()
        for value in fields.values()
        if isinstance(value, list)
    }
    assert {"s / n / i", "r / ⇧R", "c / x"} <= shown
    for script in SCRIPTS:
        if script.name != "keys.js":
            text = re.sub(r"/\*.*?\*/|^\s*//.*$", "", script_text(script), flags=re.S | re.M)  # code only
            assert not written_key_lists(text), f"{script.name} writes a list of keys: use keys.js"
            written = {keys for keys in shown if re.search(r"[\"'`]" + re.escape(keys) + r"[\"'`]", text)}
            assert not written, f"{script.name} writes the keys {sorted(written)}: use keys.js"
    for template in TEMPLATES:
        written = set(re.findall(r"<dt>([^<]+)</dt>", template.read_text(encoding="utf-8"))) & shown
        assert not written, f"{template.name} writes the keys {sorted(written)}: <dt data-keys=…> shows them"
