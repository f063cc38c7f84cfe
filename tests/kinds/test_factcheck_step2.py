"""Factcheck-Bench step 2: evidence stance, factuality and correction. Schema and completeness
rules, consolidation, agreement units, the released step-2 fields in and out, and the released
evidence standing in for retrieval."""

import copy
import json
from collections import Counter

import pytest

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds import PayloadError, get_kind
from annotation.kinds.base import AgreementItem
from annotation.kinds.factcheck import step2_content
from annotation.kinds.factcheck.benchmark import STEP2_FIELDS, benchmark_record
from annotation.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    GoldRecord,
    ItemStage,
    StageStatus,
)
from annotation.research.selectors import project_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from tests.helpers.builders import jsonl
from tests.helpers.factcheck import (
    CLAIM,
    CS,
    HUMAN,
    IR,
    PS,
    RE,
    answer,
    content,
    manual,
    passage,
    released_line,
)
from tests.helpers.paths import shared_data_path

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


# -- the released shape: import and export -----------------------------------------------------


@pytest.mark.django_db
def test_released_step2_imports_as_content_and_gold_and_exports_unchanged(
    factcheck_project, django_capture_on_commit_callbacks
):
    line = released_line()
    with django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    assert result.gold_records == 2
    stage = ItemStage.objects.get(item__project=factcheck_project, stage=2)
    assert stage.status == StageStatus.DONE
    (checked,) = stage.content["claims"]  # the opinion claim is not verified
    assert (checked["sentence"], checked["claim"], checked["text"]) == (0, 0, CLAIM)
    assert [(p["text"], p["url"], p["rank"], p.get("nul_offsets")) for p in checked["evidence"]] == [
        ("Built 1887\u20131889.", "https://a.example/1", 1, None),
        ("TourEiffel", "https://a.example/2", 2, [4]),
    ]
    gold = stage.gold.payload
    assert gold["claims"] == [
        {
            "stances": [CS, RE],
            "reliable": [None, None],
            "decided": "no",
            "manual_evidence": [
                {
                    "text": HUMAN,
                    "url": "https://h.example/eiffel",
                    "query": "",
                    "reliable": None,
                    "sufficient": None,
                }
            ],
            "factuality": "false",
            "needs_edit": "yes",
            "correction": "The Eiffel Tower was completed in March 1889.",
            "used_evidence": [0, "manual:0"],
        }
    ]
    # only what the payload cannot say is kept as released
    assert gold["released"]["claims"]["0/0"] == {"usedEvidence_index_in_revision": "1, self-retrieved"}
    assert gold["released"]["claims"]["0/1"]["claim"] == "It is lovely."
    assert gold["released"]["sentences"] == {"1": {"revised_claims": ["The Eiffel Tower is nice to some."]}}
    step3 = ItemStage.objects.get(item__project=factcheck_project, stage=3)  # revision opens, pre-filled offline
    assert step3.status == StageStatus.ANNOTATING and step3.suggestion["response"]

    (exported,) = [json.loads(text) for text in export_jsonl(factcheck_project, "factcheck-bench")]
    for key, sentence in line["sentences"].items():
        for field in STEP2_FIELDS:
            assert exported["sentences"][key][field] == sentence[field], (key, field)
    first = exported["sentences"]["sentence1"]
    assert first["auto_evidence_reliable"] == [[None, None], []]
    assert first["human_evidence_metadata"] == [gold["claims"][0]["manual_evidence"], []]


@pytest.mark.django_db
def test_a_gold_record_without_released_values_exports_the_canonical_rendering(factcheck_project):
    import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="gold")
    record = GoldRecord.objects.get(item_stage__stage=2)
    record.payload = {"claims": record.payload["claims"]}  # e.g. consolidated again in the app
    record.save()
    (exported,) = [json.loads(text) for text in export_jsonl(factcheck_project, "factcheck-bench")]
    first = exported["sentences"]["sentence1"]
    assert first["usedEvidence_index_in_revision"] == ["1,self-retrieved", "NA"]
    assert first["auto_evidence"] == [
        ["Built 1887\u20131889.", "Tour\x00Eiffel"],
        [],
    ]  # the opinion claim's evidence is gone
    assert exported["sentences"]["sentence2"]["revised_claims"] == []


def test_benchmark_record_writes_the_released_vocabularies():
    evidence = [passage(0), {**passage(1), "text": "ab", "nul_offsets": [1]}]
    row = {
        "prompt": "p",
        "response": "r",
        "content": {"sentences": ["S."]},
        "gold": {
            "sentences": [
                {
                    "decontext": "S.",
                    "importance": "yes",
                    "checkworthy": "yes",
                    "claims": [
                        {"text": "A.", "category": "factual", "importance": "yes"},
                        {"text": "B.", "category": "opinion", "importance": "no"},
                    ],
                }
            ]
        },
        "stages": {
            2: {
                "content": {"claims": [{"sentence": 0, "claim": 0, "text": "A.", "evidence": evidence}]},
                "gold": {
                    "claims": [
                        answer(
                            [PS, IR],
                            [True, False],
                            "yes",
                            [manual("Quote.", query="q")],
                            "true",
                            "no",
                            "A.",
                            [1, "manual:0"],
                        )
                    ]
                },
            }
        },
    }
    sentence = benchmark_record(row)["sentences"]["sentence1"]
    assert {field: sentence[field] for field in STEP2_FIELDS} == {
        "auto_evidence": [["Passage 0.", "a\x00b"], []],
        "auto_evidence_url": [["https://e.example/0", "https://e.example/1"], []],
        "stance_claim_autoEvid": [[PS, IR], []],
        "if_automatic_evidence_enough_to_verify": ["yes", "NA"],
        "human_evidence": ["https://m.example/a\nQuote.", "NA"],
        "claims_factuality_label": [True, "unknown"],
        "if_claim_needs_edit": ["no", "NA"],
        "revised_claims": ["A.", "B."],
        "usedEvidence_index_in_revision": ["2,self-retrieved", "NA"],
    }
    assert sentence["auto_evidence_reliable"] == [[True, False], []]
    assert sentence["human_evidence_metadata"] == [[manual("Quote.", query="q")], []]
    without = benchmark_record({**row, "stages": {}})["sentences"]["sentence1"]
    assert all(without[field] == [] for field in (*STEP2_FIELDS, "auto_evidence_reliable", "human_evidence_metadata"))


@pytest.mark.parametrize(
    "change, field, message",
    [
        (
            lambda s: s["stance_claim_autoEvid"][0].__setitem__(1, "supports"),
            "sentences.sentence1.stance_claim_autoEvid[0][1]",
            "must be one of completely-support, partially-support, refute, irrelevant, not 'supports'",
        ),
        (
            lambda s: s["stance_claim_autoEvid"].__setitem__(0, [CS]),
            "sentences.sentence1.stance_claim_autoEvid[0]",
            "must be empty or have one stance per passage (2)",
        ),
        (
            lambda s: s["auto_evidence_url"][0].pop(),
            "sentences.sentence1.auto_evidence_url[0]",
            "must have one URL per passage (2)",
        ),
        (
            lambda s: s["auto_evidence"].__setitem__(0, "text"),
            "sentences.sentence1.auto_evidence[0]",
            "must be a list of strings",
        ),
        (
            lambda s: s["if_claim_needs_edit"].__setitem__(0, "maybe"),
            "sentences.sentence1.if_claim_needs_edit[0]",
            "must be one of yes, no, not_enough_evidence, NA, not 'maybe'",
        ),
        (
            lambda s: s["if_automatic_evidence_enough_to_verify"].__setitem__(0, True),
            "sentences.sentence1.if_automatic_evidence_enough_to_verify[0]",
            "must be one of yes, no, NA, not True",
        ),
        (
            lambda s: s["claims_factuality_label"].__setitem__(0, "False"),
            "sentences.sentence1.claims_factuality_label[0]",
            'must be true, false, "unknown" or "NA", not \'False\'',
        ),
        (
            lambda s: s["claims_factuality_label"].__setitem__(0, 0),
            "sentences.sentence1.claims_factuality_label[0]",
            'must be true, false, "unknown" or "NA", not 0',
        ),
        (
            lambda s: s["human_evidence"].pop(),
            "sentences.sentence1.human_evidence",
            "must have one entry per claim (2), not 1",
        ),
        (
            lambda s: s.update(revised_claims="x"),
            "sentences.sentence1.revised_claims",
            "must be a list with one entry per claim",
        ),
        (
            lambda s: s["usedEvidence_index_in_revision"].__setitem__(0, 1),
            "sentences.sentence1.usedEvidence_index_in_revision[0]",
            "must be a string",
        ),
    ],
)
@pytest.mark.django_db
def test_bad_released_step2_fields_name_line_and_field(factcheck_project, change, field, message):
    bad = released_line()
    change(bad["sentences"]["sentence1"])
    with pytest.raises(ImportFailed) as error:
        import_jsonl(
            factcheck_project,
            jsonl([released_line(), bad]),
            fmt="factcheck-bench",
            labels_as="gold",
        )
    assert error.value.errors[0] == {"line": 2, "field": field, "message": message}
    assert not factcheck_project.items.exists()


def consolidate_step1(project, users, claims):
    step1 = {
        "sentences": [
            {
                "decontext": CLAIM,
                "importance": "yes",
                "checkworthy": "yes",
                "claims": [{"text": text, "category": "factual", "importance": "yes"} for text in claims],
            },
            {
                "decontext": "It is nice.",
                "importance": "no",
                "checkworthy": "opinion",
                "claims": [],
            },
        ]
    }
    for name in ("alice", "bob"):
        save_annotation(assignment=users[name].assignments.get(), payload=step1, version=0, submit=True)
    consolidation = project.items.get().stages.get(stage=1).consolidation
    save_consolidation(consolidation=consolidation, user=users["carol"], payload=step1, version=0, submit=True)
    return ItemStage.objects.get(item__project=project, stage=2)


@pytest.mark.django_db
def test_opening_step2_uses_the_released_evidence_instead_of_retrieving(
    factcheck_project, users, monkeypatch, django_capture_on_commit_callbacks
):
    def no_retrieval(*args, **kwargs):
        raise AssertionError("the released evidence must replace retrieval")

    monkeypatch.setattr(step2_content, "retrieve_evidence", no_retrieval)
    with django_capture_on_commit_callbacks(execute=True):  # step 1 is pre-annotated offline
        import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="ignore")
    item = factcheck_project.items.get()
    assert item.metadata[step2_content.RELEASED_EVIDENCE_KEY]["sentences"][0]["claims"][0]["text"] == CLAIM
    with django_capture_on_commit_callbacks(execute=True):
        stage = consolidate_step1(factcheck_project, users, [f" {CLAIM}  "])  # the same claim, up to whitespace
    stage.refresh_from_db()
    assert stage.status == StageStatus.ANNOTATING, stage.precompute_error
    assert [p["text"] for p in stage.content["claims"][0]["evidence"]] == [
        "Built 1887\u20131889.",
        "TourEiffel",
    ]
    assert stage.provenance == {"evidence": {"sources": ["factcheck-bench"]}}
    assert stage.suggestion is None
    assert sorted(stage.assignments.values_list("user__username", flat=True)) == ["alice", "bob"]


@pytest.mark.django_db
def test_claims_the_released_evidence_does_not_cover_are_retrieved(
    factcheck_project, users, monkeypatch, django_capture_on_commit_callbacks
):
    asked = []

    def fake_retrieval(claims, settings, search):
        asked.extend(c["text"] for c in claims)
        for claim in claims:
            claim.update(queries=[claim["text"]], evidence=[passage(0)], problems=[])
        return {
            "content": {"claims": claims},
            "suggestion": None,
            "provenance": {"evidence": {"sources": ["corpus"]}},
        }

    monkeypatch.setattr(step2_content, "retrieve_evidence", fake_retrieval)
    with django_capture_on_commit_callbacks(execute=True):  # step 1 is pre-annotated offline
        import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="ignore")
    with django_capture_on_commit_callbacks(execute=True):
        stage = consolidate_step1(factcheck_project, users, ["The tower is in Paris.", CLAIM])
    stage.refresh_from_db()
    assert asked == ["The tower is in Paris."]
    assert [len(c["evidence"]) for c in stage.content["claims"]] == [1, 2]
    assert stage.content["claims"][1]["claim"] == 1
    assert stage.provenance == {"evidence": {"sources": ["factcheck-bench", "corpus"]}}


# -- the released file ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_released_file_step2_fields_round_trip_for_every_sentence(
    factcheck_project, django_capture_on_commit_callbacks
):
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    released = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(factcheck_project, handle, fmt="factcheck-bench", labels_as="gold")
    assert result.items == 94 and result.gold_records == 94 * 3
    exported = [json.loads(line) for line in export_jsonl(factcheck_project, "factcheck-bench")]
    compared = Counter()
    for original, ours in zip(released, exported, strict=True):
        for key, sentence in original["sentences"].items():
            for field in STEP2_FIELDS:
                assert ours["sentences"][key][field] == sentence[field], (key, field)
                compared[field] += 1
    assert compared == {field: 311 for field in STEP2_FIELDS}
    # the label counts of data/README.md (47 unknown claims = 30 verified + 17 not verified, "NA")
    golds = [g["claims"] for g in GoldRecord.objects.filter(item_stage__stage=2).values_list("payload", flat=True)]
    claims = [c for g in golds for c in g]
    assert len(claims) == 661
    assert Counter(s for c in claims for s in c["stances"]) == {IR: 2057, CS: 696, PS: 391, RE: 161}
    assert Counter(c["factuality"] for c in claims) == {"true": 472, "false": 159, "unknown": 30}
