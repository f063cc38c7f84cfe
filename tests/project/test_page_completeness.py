"""The completeness rules a page checks before a submit come from the server (state.rules
.completeness, annotation/kinds/<kind>/page.py): they name exactly the fields the kind's submit
validation requires, so a page never lets through, nor holds back, what the server would not."""

import re

import pytest

from annotation.kinds import KINDS, page_rules
from annotation.kinds.base import PayloadError
from annotation.models import Assignment
from tests.helpers.factcheck import CS, IR, answer, content, manual
from tests.helpers.page_rules import rule_paths

# Where a step's rules apply: step 2's to each claim answer, the others' to the whole payload.
UNIT_PREFIX = {("factcheck", 2): "claims[]."}


def pattern(field: str) -> str:
    return re.sub(r"\[\d+\]", "[]", field)


def named_on_submit(kind: str, stage: int, item_content: dict, drafts: list) -> set[str]:
    """Every field path the kind's submit validation names for the drafts."""
    named = set()
    for draft in drafts:
        with pytest.raises(PayloadError) as refused:
            KINDS[kind].validate_payload(stage, item_content, draft, complete=True)
        named |= {pattern(e["field"]) for e in refused.value.errors}
    return named


def required_by_rules(kind: str, stage: int) -> set[str]:
    return rule_paths(page_rules(kind, stage)["completeness"], UNIT_PREFIX.get((kind, stage), ""))


STEP2_CONTENT = content(2)
STEP2_DRAFTS = [
    {"claims": [KINDS["factcheck"].empty_payload(2, STEP2_CONTENT, None)["claims"][0]]},
    {
        "claims": [
            answer(
                [CS, IR],
                decided="no",
                manual=[manual(text="", url="", reliable=None, sufficient=None)],
                factuality=None,
                needs_edit="yes",
                correction=" ",
            )
        ]
    },
    {"claims": [answer([CS, CS], reliable=[True, True], decided="no")]},
]
FELM_CONTENT = {"segments": ["One.", "Two.", " "]}
FELM_DRAFTS = [
    KINDS["felm"].empty_payload(1, FELM_CONTENT, None),
    {"segments": [{"label": False, "error_type": None, "comment": " ", "refs": []}, {"label": True}, {"label": None}]},
]
STEP1_CONTENT = {"sentences": ["One.", "Two."]}
STEP1_DRAFTS = [
    {
        "sentences": [
            {"decontext": " ", "importance": None, "checkworthy": None, "claims": []},
            {
                "decontext": "Two.",
                "importance": "yes",
                "checkworthy": "yes",
                "claims": [{"text": "", "category": None}],
            },
        ]
    },
    {"sentences": [{"decontext": "One.", "claims": [{"text": "x", "category": "factual", "importance": None}]}] * 2},
]
STEP3_CONTENT = {"sentences": [{"text": "One."}, {"text": "Two."}]}
DFS_CONTENT = {
    "facts": [{"text": "A."}, {"text": "B."}],
    "candidates": [{"title": "P", "url": "https://p.example", "text": "P."}],
    "passes": {"factscore_pass": True, "entity_pass": True},
}
DFS_DRAFTS = [
    KINDS["dfactscore"].empty_payload(1, DFS_CONTENT, None),
    {
        "individuals": 2,
        "groups": [{"link": None}, {"link": None}],
        "facts": [{"group": 0, "label": "supported", "any_page": "supported", "entity": 0}] * 2,
    },
]


@pytest.mark.parametrize(
    ("kind", "stage", "item_content", "drafts"),
    [
        ("felm", 1, FELM_CONTENT, FELM_DRAFTS),
        ("factcheck", 1, STEP1_CONTENT, STEP1_DRAFTS),
        ("factcheck", 2, STEP2_CONTENT, STEP2_DRAFTS),
        ("factcheck", 3, STEP3_CONTENT, [{"sentences": [{"revised": None}, {"revised": ""}], "response": None}]),
        ("dfactscore", 1, DFS_CONTENT, DFS_DRAFTS),
    ],
)
def test_the_page_rules_require_what_the_submit_validation_requires(kind, stage, item_content, drafts):
    assert named_on_submit(kind, stage, item_content, drafts) == required_by_rules(kind, stage)


@pytest.mark.django_db
def test_a_dfactscore_submit_through_the_api_names_only_fields_the_rules_require(dfactscore_project, users, client):
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item__project=dfactscore_project)
    facts = len(assignment.item_stage.content["facts"])
    client.force_login(users["alice"])
    required = required_by_rules("dfactscore", 1)
    named = set()
    drafts = [
        {"individuals": 0, "groups": [], "facts": [{"group": None, "label": None, "any_page": None}] * facts},
        {"individuals": 2, "groups": [{"link": None}, {"link": None}], "facts": [{"group": 0}] * facts},
    ]
    for draft in drafts:
        response = client.put(
            f"/api/assignments/{assignment.id}/annotation/",
            {"payload": draft, "version": 0, "submit": True},
            content_type="application/json",
        )
        assert response.status_code == 400, response.content
        named |= {pattern(e["field"]) for e in response.json()["errors"]}
    # the project runs the FActScore pass, not the entity pass: the entity is not required
    assert named == required - {"facts[].entity"}
