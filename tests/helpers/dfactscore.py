"""A D-FActScore paragraph for the browser tests: two invented men who share a name, merged
into one paragraph, the project whose pipeline pre-annotates it, and an answer about it."""

from annotation.imports.items import import_jsonl
from annotation.models import Role, StageStatus
from annotation.services.projects import add_member, create_project

from .builders import jsonl

RESPONSE = (
    "Tobias Wrenfield is an English composer who scored The Lantern Coast. "
    "Born in 1958, Wrenfield played for Norwich City."
)
FACTS = [
    "Tobias Wrenfield is an English composer.",
    "Tobias Wrenfield scored The Lantern Coast.",
    "Tobias Wrenfield was born in 1958.",
    "Tobias Wrenfield played for Norwich City.",
]
CANDIDATES = [
    {
        "title": "Tobias Wrenfield (composer)",
        "url": "https://example.org/wiki/Tobias_Wrenfield_(composer)",
        "text": "Tobias Wrenfield (born 1958) is an English composer who wrote the music of The Lantern Coast.",
    },
    {
        "title": "Tobias Wrenfield (footballer)",
        "url": "https://example.org/wiki/Tobias_Wrenfield_(footballer)",
        "text": "Tobias Wrenfield (born 1961) is a former English footballer who played for Norwich City.",
    },
]


def paragraph_line():
    return {
        "prompt": "Tell me a bio of Tobias Wrenfield.",
        "name": "Tobias Wrenfield",
        "response": RESPONSE,
        "atomic_facts": FACTS,
        "candidates": CANDIDATES,
        "model": "demo-model",
        "id": "wrenfield",
    }


def dfactscore_paragraph_project(users, capture_on_commit):
    """A D-FActScore project (alice and bob annotate, carol consolidates) with the paragraph
    imported and pre-annotated."""
    project = create_project(
        name="D-FActScore test",
        kind="dfactscore",
        created_by=users["admin"],
        pipeline_settings={"dfactscore": {"factscore_pass": True}},
    )
    for name, role in (
        ("alice", Role.ANNOTATOR),
        ("bob", Role.ANNOTATOR),
        ("carol", Role.CONSOLIDATOR),
    ):
        add_member(project=project, user=users[name], role=role)
    with capture_on_commit(execute=True):
        import_jsonl(project, jsonl([paragraph_line()]), fmt="dfactscore")
    stage = project.items.get().stages.get()
    assert stage.status == StageStatus.ANNOTATING, stage.precompute_error
    return project


def answer(birth_year_group: int, birth_year_label: str) -> dict:
    facts = [
        {"group": group, "label": label, "any_page": "supported", "entity": None}
        for group, label in (
            (0, "supported"),
            (0, "supported"),
            (birth_year_group, birth_year_label),
            (1, "supported"),
        )
    ]
    return {"individuals": 2, "groups": [{"link": 0}, {"link": 1}], "facts": facts}
