"""Factcheck-Bench step 2's agreement: its units and corrections by hand, the fields per stage, and
the project's agreement report and page."""

import pytest

from annotation.kinds import get_kind
from annotation.kinds.base import AgreementItem
from annotation.models import Annotation, Assignment, AssignmentStatus, ItemStage, StageStatus
from annotation.research.selectors import project_agreement
from tests.helpers.factcheck import CS, IR, PS, RE, answer, content

KIND = get_kind("factcheck")


# -- agreement ----------------------------------------------------------------------------------


def test_agreement_units_by_hand():
    alice = {
        "claims": [
            answer([CS, PS, IR], decided="yes", factuality="true", needs_edit="no"),
            answer([RE], decided="no", factuality="false", needs_edit="yes"),
        ]
    }
    bob = {
        "claims": [
            answer([PS, PS, None], decided="no", factuality="true", needs_edit="no"),
            answer([RE], decided=None, factuality="unknown", needs_edit="not_enough_evidence"),
        ]
    }
    units = KIND.agreement_units(2, {"a": alice, "b": bob})
    assert units == {
        "stance": {
            (0, 0): {"a": CS, "b": PS},
            (0, 1): {"a": PS, "b": PS},
            (0, 2): {"a": IR},
            (1, 0): {"a": RE, "b": RE},
        },
        "stance3": {
            (0, 0): {"a": "support", "b": "support"},
            (0, 1): {"a": "support", "b": "support"},
            (0, 2): {"a": "irrelevant"},
            (1, 0): {"a": "refute", "b": "refute"},
        },
        "decided": {0: {"a": "yes", "b": "no"}, 1: {"a": "no"}},
        "factuality": {0: {"a": "true", "b": "true"}, 1: {"a": "false", "b": "unknown"}},
        "needs_edit": {0: {"a": "no", "b": "no"}, 1: {"a": "yes", "b": "not_enough_evidence"}},
    }
    assert set(units) == set(KIND.agreement_fields_for(2))


def test_corrections_agreement_by_hand():
    # texts as given (the paper's measure): the extra space and one substitution, 2 edits in 25 characters
    both = {
        "a": {
            "claims": [
                answer([CS], needs_edit="yes", correction="The tower is 300 m tall."),
                answer([CS], needs_edit="yes", correction="Other."),
            ]
        },
        "b": {
            "claims": [
                answer([CS], needs_edit="yes", correction="The tower is  330 m tall."),
                answer([CS], needs_edit="no", correction="Other!"),
            ]
        },
    }
    alone = {"a": {"claims": [answer([CS], needs_edit="yes", correction="x")]}}
    result = KIND.extra_agreement(2, [AgreementItem(both), AgreementItem(alone)])
    assert result == {
        "corrections": {
            "claims": 2,
            "both_corrected": 1,
            "both_corrected_share": 0.5,
            "mean_normalised_edit_distance": pytest.approx(2 / 25),
        }
    }


def test_agreement_fields_are_per_stage():
    assert list(KIND.agreement_fields_for(1)) == [
        "sentence_checkworthy",
        "sentence_importance",
        "claim_category",
        "claim_importance",
    ]
    assert list(KIND.agreement_fields_for(2)) == [
        "stance",
        "stance3",
        "decided",
        "factuality",
        "needs_edit",
    ]
    felm = get_kind("felm")
    assert felm.agreement_fields_for(1) == felm.agreement_fields


@pytest.mark.django_db
def test_project_agreement_reports_stage_2_fields(factcheck_project, users):
    item = factcheck_project.items.create(prompt="p", response="r")
    stage = ItemStage.objects.create(item=item, stage=2, status=StageStatus.CONSOLIDATING, content=content(2))
    payloads = {
        "alice": {
            "claims": [
                answer(
                    [CS, IR],
                    [True, None],
                    needs_edit="yes",
                    factuality="false",
                    correction="Claim zero.",
                    used=[0],
                )
            ]
        },
        "bob": {
            "claims": [
                answer(
                    [PS, IR],
                    [True, None],
                    needs_edit="yes",
                    factuality="false",
                    correction="Claim zero.",
                    used=[0],
                )
            ]
        },
    }
    for name, payload in payloads.items():
        assignment = Assignment.objects.create(item_stage=stage, user=users[name], status=AssignmentStatus.SUBMITTED)
        Annotation.objects.create(assignment=assignment, payload=payload, submitted=True)
    result = project_agreement(factcheck_project, stage=2)
    assert list(result["fields"]) == ["stance", "stance3", "decided", "factuality", "needs_edit"]
    assert result["fields"]["stance"]["units"] == 2 and result["fields"]["stance"]["observed_agreement"] == 0.5
    assert result["fields"]["stance3"]["observed_agreement"] == 1.0
    assert (
        result["corrections"]["both_corrected"] == 1 and result["corrections"]["mean_normalised_edit_distance"] == 0.0
    )
    assert "decomposition" not in result
    assert list(project_agreement(factcheck_project, stage=1)["fields"])[0] == "sentence_checkworthy"


@pytest.mark.django_db
def test_the_agreement_page_shows_stage_2(factcheck_project, users, client):
    item = factcheck_project.items.create(prompt="p", response="r")
    stage = ItemStage.objects.create(item=item, stage=2, status=StageStatus.CONSOLIDATING, content=content(1))
    for name in ("alice", "bob"):
        assignment = Assignment.objects.create(item_stage=stage, user=users[name], status=AssignmentStatus.SUBMITTED)
        Annotation.objects.create(assignment=assignment, payload={"claims": [answer([CS])]}, submitted=True)
    client.force_login(users["carol"])
    url = f"/projects/{factcheck_project.id}/agreement/?stage=2"
    page = client.get(url).content.decode()
    assert "Evidence stance (claim × passage)" in page and 'id="corrections"' in page
    assert "Sentence checkworthiness" not in page and "Decomposition into claims" not in page
