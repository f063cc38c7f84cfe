"""Factcheck-Bench step 2: evidence stance, factuality and correction. Schema and completeness
rules, consolidation, agreement units. (The released step-2 fields: test_factcheck_step2_released.py.)"""

import copy

import pytest

from annotation.kinds import PayloadError, get_kind
from annotation.kinds.base import AgreementItem
from annotation.models import Annotation, Assignment, AssignmentStatus, ItemStage, StageStatus
from annotation.research.selectors import project_agreement
from tests.helpers.factcheck import CS, IR, PS, RE, answer, content, manual

KIND = get_kind("factcheck")
COMPLETE = answer([CS, IR, RE], reliable=[True, None, False])


def errors_of(payload, stage_content=None, complete=True):
    with pytest.raises(PayloadError) as error:
        KIND.validate_payload(2, stage_content or content(3), payload, complete=complete)
    return error.value.errors


# -- schema -------------------------------------------------------------------------------------


def test_empty_payload_preselects_nothing_and_starts_the_correction_from_the_claim():
    hinted = content(2)
    hinted["claims"][0]["evidence"][0]["stance_hint"] = RE
    empty = KIND.empty_payload(2, hinted, None)
    assert empty == {"claims": [answer([None, None], decided=None, factuality=None, needs_edit=None)]}
    assert KIND.validate_payload(2, hinted, empty, complete=False) == empty
    assert {e["field"] for e in errors_of(empty, hinted)} >= {
        "claims[0].stances[0]",
        "claims[0].decided",
    }


def test_a_complete_answer_passes_and_is_normalised():
    payload = {
        "claims": [{**COMPLETE, "used_evidence": []}],
        "released": {"claims": {}},
        "extra": 1,
    }
    assert KIND.validate_payload(2, content(3), payload, complete=True) == {"claims": [COMPLETE]}
    # "manual:01" is stored as "manual:0"
    with_manual = answer([CS, IR, RE], [True, None, False], manual=[manual()], used=["manual:00", 2])
    assert KIND.validate_payload(2, content(3), {"claims": [with_manual]}, complete=True)["claims"][0][
        "used_evidence"
    ] == ["manual:0", 2]


@pytest.mark.parametrize(
    "change, field, message",
    [
        (
            lambda c: c["stances"].__setitem__(1, "supports"),
            "claims[0].stances[1]",
            "must be one of completely-support, partially-support, refute, irrelevant",
        ),
        (
            lambda c: c["stances"].pop(),
            "claims[0].stances",
            "must be a list with one stance per evidence passage (3)",
        ),
        (
            lambda c: c.update(reliable="yes"),
            "claims[0].reliable",
            "must be a list with one true/false/null per evidence passage (3)",
        ),
        (
            lambda c: c["reliable"].__setitem__(0, "yes"),
            "claims[0].reliable[0]",
            "must be true, false or null",
        ),
        (lambda c: c.update(decided="maybe"), "claims[0].decided", "must be one of yes, no"),
        (
            lambda c: c.update(factuality=True),
            "claims[0].factuality",
            "must be one of true, false, unknown",
        ),
        (
            lambda c: c.update(needs_edit="NA"),
            "claims[0].needs_edit",
            "must be one of yes, no, not_enough_evidence",
        ),
        (lambda c: c.update(correction=5), "claims[0].correction", "must be a string"),
        (
            lambda c: c.update(manual_evidence={}),
            "claims[0].manual_evidence",
            "must be a list of evidence objects",
        ),
        (
            lambda c: c.update(manual_evidence=["x"]),
            "claims[0].manual_evidence[0]",
            "must be an object with text, url, query, reliable and sufficient",
        ),
        (
            lambda c: c.update(manual_evidence=[manual(url="ftp://m.example/a")]),
            "claims[0].manual_evidence[0].url",
            "must be an http or https URL",
        ),
        (
            lambda c: c.update(manual_evidence=[manual(sufficient="yes")]),
            "claims[0].manual_evidence[0].sufficient",
            "must be true, false or null",
        ),
        (
            lambda c: c.update(manual_evidence=[manual(query=3)]),
            "claims[0].manual_evidence[0].query",
            "must be a string",
        ),
        (
            lambda c: c.update(used_evidence=[3]),
            "claims[0].used_evidence[0]",
            "must be a passage index below 3",
        ),
        (
            lambda c: c.update(used_evidence=[True]),
            "claims[0].used_evidence[0]",
            'must be a passage index or "manual:N"',
        ),
        (
            lambda c: c.update(used_evidence=["passage 1"]),
            "claims[0].used_evidence[0]",
            'must be a passage index or "manual:N"',
        ),
        (
            lambda c: c.update(used_evidence=["manual:0"]),
            "claims[0].used_evidence[0]",
            "names manual evidence that does not exist (there are 0)",
        ),
        (
            lambda c: c.update(used_evidence=[1, 1]),
            "claims[0].used_evidence[1]",
            "repeats an entry",
        ),
        (
            lambda c: c.update(used_evidence="1"),
            "claims[0].used_evidence",
            'must be a list of passage indexes or "manual:N"',
        ),
    ],
)
def test_bad_input_names_the_field_path_even_in_drafts(change, field, message):
    claim = copy.deepcopy(COMPLETE)
    change(claim)
    assert errors_of({"claims": [claim]}, complete=False) == [{"field": field, "message": message}]


def test_the_payload_must_have_one_answer_per_claim():
    assert errors_of({"claims": [COMPLETE]}, content(3, 1), complete=False) == [
        {"field": "claims", "message": "has 1 entries, the item has 2 claims"}
    ]
    assert errors_of({"sentences": []}, complete=False) == [
        {"field": "claims", "message": "must be a list with one object per claim"}
    ]
    assert errors_of({"claims": ["x"]}, complete=False) == [{"field": "claims[0]", "message": "must be an object"}]


@pytest.mark.parametrize(
    "change, expected",
    [
        # 1. a stance for every passage
        (
            dict(stances=[CS, None, RE]),
            [("claims[0].stances[1]", "is required: choose the stance of this passage")],
        ),
        # 2. reliability of every relevant passage (passage 1 is irrelevant: none needed)
        (
            dict(reliable=[None, None, False]),
            [
                (
                    "claims[0].reliable[0]",
                    "is required: say whether the source of this relevant passage is reliable",
                )
            ],
        ),
        # 3. decided, factuality, needs_edit
        (
            dict(decided=None, factuality=None, needs_edit=None),
            [
                (
                    "claims[0].decided",
                    "is required: choose the whether the evidence decides the claim",
                ),
                ("claims[0].factuality", "is required: choose the factuality"),
                ("claims[0].needs_edit", "is required: choose the whether the claim needs an edit"),
            ],
        ),
        # 4. complete manual evidence
        (
            dict(manual_evidence=[manual(text=" ", url="", reliable=None, sufficient=None)]),
            [
                (
                    "claims[0].manual_evidence[0].text",
                    "is required: quote the evidence or remove it",
                ),
                (
                    "claims[0].manual_evidence[0].url",
                    "is required: give the evidence's http or https URL",
                ),
                ("claims[0].manual_evidence[0].reliable", "is required: answer yes or no"),
                ("claims[0].manual_evidence[0].sufficient", "is required: answer yes or no"),
            ],
        ),
        # 5. undecidable from the retrieved evidence: evidence of one's own, or not enough evidence
        (
            dict(decided="no"),
            [
                (
                    "claims[0].manual_evidence",
                    "is required when the retrieved evidence cannot decide the claim: "
                    "add the evidence you found, or choose not_enough_evidence",
                )
            ],
        ),
        # 6. factuality follows needs_edit
        (
            dict(needs_edit="yes", used_evidence=[2], correction="Fixed."),
            [("claims[0].factuality", "must be false when needs_edit is yes")],
        ),
        (
            dict(needs_edit="not_enough_evidence", factuality="false"),
            [("claims[0].factuality", "must be unknown when needs_edit is not_enough_evidence")],
        ),
        (
            dict(needs_edit="no", factuality="unknown"),
            [("claims[0].factuality", "must be true when needs_edit is no")],
        ),
        # 7. a correction and the evidence it rests on
        (
            dict(needs_edit="yes", factuality="false", correction="  "),
            [
                ("claims[0].correction", "is required when the claim needs an edit"),
                (
                    "claims[0].used_evidence",
                    "is required when the claim needs an edit: name the evidence the correction rests on",
                ),
            ],
        ),
    ],
)
def test_submit_rules_name_each_missing_or_inconsistent_field(change, expected):
    claim = {**copy.deepcopy(COMPLETE), **change}
    assert [(e["field"], e["message"]) for e in errors_of({"claims": [claim]})] == expected
    KIND.validate_payload(2, content(3), {"claims": [claim]}, complete=False)  # a draft may be like this


@pytest.mark.parametrize(
    "change",
    [
        dict(decided="no", needs_edit="not_enough_evidence", factuality="unknown"),
        dict(decided="no", manual_evidence=[manual()]),
        dict(needs_edit="yes", factuality="false", correction="Claim 0 fixed.", used_evidence=[0]),
    ],
)
def test_consistent_answers_are_accepted(change):
    claim = {**copy.deepcopy(COMPLETE), **change}
    assert KIND.validate_payload(2, content(3), {"claims": [claim]}, complete=True)["claims"][0] == claim


# -- consolidation ------------------------------------------------------------------------------


def test_merge_prefills_agreement_lists_disagreement_and_offers_all_manual_evidence():
    shared_a, shared_b = (
        manual("Doc  two says so.", "https://m.example/2"),
        manual("Doc two says so.", "https://m.example/2", reliable=False),
    )
    alice = {
        "claims": [
            answer(
                [CS, IR, RE],
                [True, None, False],
                "no",
                [manual("Doc one.", "https://m.example/1"), shared_a],
                "false",
                "yes",
                "Claim  zero fixed.",
                [0, "manual:1"],
            ),
            answer([PS, IR], decided="yes", factuality="true", needs_edit="no", correction="Claim 1."),
        ]
    }
    bob = {
        "claims": [
            answer(
                [CS, IR, IR],
                [True, None, None],
                "no",
                [shared_b, manual("Doc three.", "https://m.example/3")],
                "false",
                "yes",
                "Claim zero fixed.",
                ["manual:0", 0],
            ),
            answer(
                [PS, IR],
                decided="yes",
                factuality="unknown",
                needs_edit="not_enough_evidence",
                correction="Claim one?",
            ),
        ]
    }
    result = KIND.merge(2, content(3, 2), [alice, bob])
    first, second = result.draft["claims"]
    assert first["stances"] == [CS, IR, None] and first["reliable"] == [True, None, None]
    assert (first["decided"], first["factuality"], first["needs_edit"]) == ("no", "false", "yes")
    assert first["correction"] == "Claim zero fixed."
    # union of the manual evidence, the same URL and text (up to whitespace) once
    assert [m["url"] for m in first["manual_evidence"]] == [
        "https://m.example/1",
        "https://m.example/2",
        "https://m.example/3",
    ]
    assert first["manual_evidence"][1]["reliable"] is None and first["manual_evidence"][1]["sufficient"] is True
    assert result.alignment == [[[0, None], [1, 0], [None, 1]], []]
    # both used passage 0 and the shared document (alice's manual:1, bob's manual:0)
    assert first["used_evidence"] == [0, "manual:1"]
    assert second["stances"] == [PS, IR] and second["factuality"] is None and second["needs_edit"] is None
    assert second["correction"] == "Claim 1."  # disagreed: back to the claim
    assert result.disagreed == [
        "claims[0].stances[2]",
        "claims[0].reliable[2]",
        "claims[0].manual_evidence[1].reliable",
        "claims[0].manual_evidence",
        "claims[1].factuality",
        "claims[1].needs_edit",
        "claims[1].correction",
    ]
    # the draft is a valid starting point for the consolidator
    KIND.validate_payload(2, content(3, 2), result.draft, complete=False)


def test_merge_of_used_evidence_that_differs_is_disagreed():
    alice = {"claims": [answer([CS], used=[0])]}
    bob = {"claims": [answer([CS], used=[])]}
    result = KIND.merge(2, content(1), [alice, bob])
    assert result.draft["claims"][0]["used_evidence"] == [] and result.disagreed == ["claims[0].used_evidence"]


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
