"""The D-FActScore kind's answer vocabulary and its project settings (the "dfactscore" section)."""

from typing import Any

LABELS = ("supported", "not_supported", "irrelevant")
ANY_PAGE = ("supported", "not_supported")
NONE = "none"  # "none of these" pages
DEFAULT_SETTINGS = {
    "factscore_pass": False,
    "entity_pass": False,
    "irrelevant": "exclude",
    "linking": "argmax",
    "support_threshold": 0.5,
}
SETTING_CHOICES = {"irrelevant": ("exclude", "not_supported"), "linking": ("argmax", "hungarian")}


def dfactscore_settings(settings: dict | None) -> dict:
    """The project's "dfactscore" settings with their defaults filled in."""
    return {**DEFAULT_SETTINGS, **((settings or {}).get("dfactscore") or {})}


def settings_error(section: Any) -> str | None:
    """Why a "dfactscore" settings section is wrong (naming the key), or None."""
    if not isinstance(section, dict):
        return "dfactscore must be an object"
    if unknown := set(section) - set(DEFAULT_SETTINGS):
        return f"dfactscore has unknown keys: {', '.join(sorted(unknown))}"
    for key in ("factscore_pass", "entity_pass"):
        if not isinstance(section.get(key, False), bool):
            return f"dfactscore.{key} must be true or false"
    for key, choices in SETTING_CHOICES.items():
        if section.get(key, DEFAULT_SETTINGS[key]) not in choices:
            return f"dfactscore.{key} must be one of {', '.join(choices)}, not {section[key]!r}"
    threshold = section.get("support_threshold", DEFAULT_SETTINGS["support_threshold"])
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        return f"dfactscore.support_threshold must be a number from 0 to 1, not {threshold!r}"
    return None


def empty_fact() -> dict:
    return {"group": None, "label": None, "any_page": None, "entity": None}
