"""The per-unit agreement export (``format=agreement-units``): one line per unit, named as the
kind's other exports name it, with each annotator's value, the gold value and ``agreed``."""

import json

import pytest

from annotation.exports import formats as exports
from annotation.models import (
    AssignmentRole,
    GoldRecord,
    Item,
    ItemStage,
    StageStatus,
)
from annotation.services.projects import create_project
from tests.helpers.builders import api_client, segment, submit


def lines(project, fmt=exports.AGREEMENT_UNITS):
    return [json.loads(line) for line in exports.export_jsonl(project, fmt)]


def make_item(project, external_id="", **fields):
    return Item.objects.create(
        project=project,
        external_id=external_id,
        prompt="Q?",
        response=fields.pop("response", "A."),
        **fields,
    )


def make_stage(item, stage, content, gold=None):
    item_stage = ItemStage.objects.create(
        item=item,
        stage=stage,
        content=content,
        status=StageStatus.DONE if gold is not None else StageStatus.ANNOTATING,
    )
    if gold is not None:
        GoldRecord.objects.create(item_stage=item_stage, payload=gold)
    return item_stage


def by_unit(records, *keys):
    return {tuple(r.get(k) for k in keys): r for r in records}


# -- FELM ---------------------------------------------------------------------------------------


@pytest.fixture
def felm(users):
    project = create_project(name="Units FELM", kind="felm", created_by=users["admin"])
    segments = ["One.", "Two.", "Three."]
    item = make_item(project, "felm-7", response=" ".join(segments), source="wk", metadata={})
    gold = {
        "segments": [
            segment(True),
            segment(False, "knowledge_error"),
            segment(False, "reasoning_error"),
        ]
    }
    stage = make_stage(item, 1, {"segments": segments}, gold)
    submit(
        stage,
        users["alice"],
        {"segments": [segment(True), segment(False, "knowledge_error"), segment(True)]},
    )
    submit(
        stage,
        users["bob"],
        {
            "segments": [
                segment(True),
                segment(False, "reasoning_error"),
                segment(False, "reasoning_error"),
            ]
        },
    )
    return project


def test_felm_gives_one_line_per_segment_and_field_with_values_gold_and_agreed(felm):
    records = lines(felm)
    units = by_unit(records, "segment", "field")
    assert set(units) == {
        (0, "label"),
        (1, "label"),
        (2, "label"),
        (1, "error_type"),
        (2, "error_type"),
    }
    first = units[(0, "label")]
    assert first == {
        "item": "felm-7",
        "item_id": first["item_id"],
        "step": 1,
        "segment": 0,
        "field": "label",
        "annotators": {"alice": "correct", "bob": "correct"},
        "third_rater": None,
        "gold": "correct",
        "agreed": True,
    }
    assert units[(2, "label")]["annotators"] == {"alice": "correct", "bob": "error"}
    assert units[(2, "label")]["agreed"] is False and units[(2, "label")]["gold"] == "error"
    assert units[(1, "error_type")]["agreed"] is False
    assert units[(1, "error_type")]["gold"] == "knowledge_error"
    # alice called segment 2 correct: no error type from her, so nothing to agree on
    assert units[(2, "error_type")]["annotators"] == {"alice": None, "bob": "reasoning_error"}
    assert units[(2, "error_type")]["agreed"] is None


def test_felm_ids_match_the_felm_export(felm):
    [record] = lines(felm, "felm")
    for line in lines(felm):
        assert line["item"] == record["index"]
        if line["field"] == "label":
            assert (line["gold"] == "correct") is record["labels"][line["segment"]]


def test_without_gold_the_gold_value_is_null(users):
    project = create_project(name="No gold", kind="felm", created_by=users["admin"])
    stage = make_stage(make_item(project), 1, {"segments": ["One."]})
    submit(stage, users["alice"], {"segments": [segment(True)]})
    submit(stage, users["bob"], {"segments": [segment(True)]}, submitted=False)  # a draft is left out
    [line] = lines(project)
    assert line["item"] == str(line["item_id"])  # no external id: the item's id, as the felm export
    assert line["gold"] is None and line["annotators"] == {"alice": "correct"} and line["agreed"] is None


# -- Factcheck ----------------------------------------------------------------------------------


def claim(text, category="factual", importance="yes"):
    return {"text": text, "category": category, "importance": importance}


def sentence(checkworthy, claims, importance="yes", decontext="S."):
    return {
        "decontext": decontext,
        "importance": importance,
        "checkworthy": checkworthy,
        "claims": claims,
    }


def answer(stances, factuality="true", needs_edit="no", decided="yes", correction="c"):
    return {
        "stances": stances,
        "reliable": [True] * len(stances),
        "decided": decided,
        "manual_evidence": [],
        "factuality": factuality,
        "needs_edit": needs_edit,
        "correction": correction,
        "used_evidence": [],
    }


def passage(text):
    return {
        "text": text,
        "url": f"https://example.org/{text}",
        "title": text,
        "source": "web",
        "query": "q",
        "rank": 1,
    }


@pytest.fixture
def factcheck(users):
    project = create_project(name="Units Factcheck", kind="factcheck", created_by=users["admin"])
    item = make_item(project, "fc-1", response="Paris is in France. I like it.")
    step1_gold = {
        "sentences": [
            sentence("yes", [claim("Paris is a city."), claim("Paris is in France.")]),
            sentence("opinion", [], importance="no"),
        ]
    }
    stage1 = make_stage(item, 1, {"sentences": ["Paris is in France.", "I like it."]}, step1_gold)
    # alice's claims in the other order; bob's with one claim more and another category
    submit(
        stage1,
        users["alice"],
        {
            "sentences": [
                sentence("yes", [claim("Paris is in France."), claim("Paris is a city.")]),
                sentence("opinion", [], importance="no"),
            ]
        },
    )
    submit(
        stage1,
        users["bob"],
        {
            "sentences": [
                sentence(
                    "yes",
                    [
                        claim("The Eiffel Tower stands tall there."),
                        claim("Paris is a city."),
                        claim("Paris is in France.", category="opinion"),
                    ],
                ),
                sentence("no", [], importance="no"),
            ]
        },
    )
    content2 = {
        "claims": [
            {
                "sentence": 0,
                "claim": 0,
                "text": "Paris is a city.",
                "evidence": [passage("a"), passage("b")],
            },
            {"sentence": 0, "claim": 1, "text": "Paris is in France.", "evidence": [passage("c")]},
        ]
    }
    gold2 = {
        "claims": [
            answer(["completely-support", "irrelevant"]),
            answer(["refute"], "false", "yes", correction="x"),
        ]
    }
    stage2 = make_stage(item, 2, content2, gold2)
    submit(
        stage2,
        users["alice"],
        {
            "claims": [
                answer(["completely-support", "irrelevant"]),
                answer(["refute"], "false", "yes", correction="x"),
            ]
        },
    )
    submit(
        stage2,
        users["bob"],
        {"claims": [answer(["partially-support", "irrelevant"]), answer(["completely-support"])]},
    )
    submit(
        stage2,
        users["carol"],
        {
            "claims": [
                answer(["completely-support", "irrelevant"]),
                answer(["refute"], "false", "yes", correction="y"),
            ]
        },
        role=AssignmentRole.THIRD_RATER,
    )
    stage3 = make_stage(item, 3, {"sentences": [{"decontext": "Paris is in France."}, {"decontext": "I like it."}]})
    submit(
        stage3,
        users["alice"],
        {
            "sentences": [{"revised": "Paris is  in France."}, {"revised": "I like it."}],
            "response": "Paris is in France. I like it.",
        },
    )
    submit(
        stage3,
        users["bob"],
        {
            "sentences": [{"revised": "Paris is in France."}, {"revised": "I love it."}],
            "response": "Paris is in France. I love it.",
        },
    )
    return project


def test_factcheck_step1_sentences_and_claims_aligned_to_the_gold_claims(factcheck):
    step1 = [r for r in lines(factcheck) if r["step"] == 1]
    units = by_unit(step1, "sentence", "claim", "field")
    checkworthy = units[("sentence2", None, "sentence_checkworthy")]
    assert checkworthy["annotators"] == {"alice": "opinion", "bob": "no"}
    assert checkworthy["gold"] == "opinion" and checkworthy["agreed"] is False
    assert units[("sentence1", None, "sentence_checkworthy")]["agreed"] is True
    # alice wrote "Paris is in France." first: aligned by text to the gold record's claim 1
    in_france = units[("sentence1", 1, "claim_category")]
    assert in_france["annotators"] == {"alice": "factual", "bob": "opinion"}
    assert in_france["gold"] == "factual" and in_france["agreed"] is False
    assert units[("sentence1", 0, "claim_category")]["agreed"] is True
    # bob's extra claim has no gold claim: its row comes first, named by no claim index
    extra = units[("sentence1", None, "claim_category")]
    assert extra["annotators"] == {"alice": None, "bob": "factual"} and extra["gold"] is None
    assert {r["claim"] for r in step1 if r["field"].startswith("claim_")} == {None, 0, 1}


def test_factcheck_step1_claims_before_consolidation_are_named_by_their_aligned_pair(factcheck):
    """Issue 29.8: without a gold record no claim has a gold index (``claim`` null), so each
    claim unit is named by its row of the annotators' alignment (``pair``, the same on every
    field of those claims) with each annotator's claim text beside it."""
    GoldRecord.objects.filter(item_stage__stage=1).delete()
    ItemStage.objects.filter(stage=1).update(status=StageStatus.ANNOTATING)
    claims = [r for r in lines(factcheck) if r["step"] == 1 and r["field"].startswith("claim_")]
    assert {r["claim"] for r in claims} == {None}
    by_pair = {}
    for line in claims:
        by_pair.setdefault((line["sentence"], line["pair"]), []).append(line)
    # alice's two claims, bob's three: his extra (first) one has a row of its own, placed before
    # the row of the claim that follows it in his list
    assert {pair: lines_[0]["claim_texts"] for pair, lines_ in by_pair.items()} == {
        ("sentence1", 0): {"alice": None, "bob": "The Eiffel Tower stands tall there."},
        ("sentence1", 1): {"alice": "Paris is in France.", "bob": "Paris is in France."},
        ("sentence1", 2): {"alice": "Paris is a city.", "bob": "Paris is a city."},
    }
    for (_, pair), found in by_pair.items():
        assert {r["field"] for r in found} == {"claim_category", "claim_importance"}
        assert len({json.dumps(r["claim_texts"]) for r in found}) == 1
    in_france = next(r for r in by_pair[("sentence1", 1)] if r["field"] == "claim_category")
    assert in_france["annotators"] == {"alice": "factual", "bob": "opinion"} and in_france["agreed"] is False
    # after consolidation the gold record leads the alignment: its claim index and the pair together
    checked = [r for r in lines(factcheck) if r["step"] == 1 and r["field"] == "claim_category"]
    assert all(isinstance(r["pair"], int) and "gold" not in r["claim_texts"] for r in checked)


def test_factcheck_step2_stance_per_passage_and_claim_fields_with_a_third_rater(factcheck):
    step2 = [r for r in lines(factcheck) if r["step"] == 2]
    units = by_unit(step2, "claim", "evidence", "field")
    stance = units[(0, 0, "stance")]
    assert stance["sentence"] == "sentence1"
    assert stance["annotators"] == {
        "alice": "completely-support",
        "bob": "partially-support",
        "carol": "completely-support",
    }
    assert stance["third_rater"] == "carol" and stance["agreed"] is False and stance["gold"] == "completely-support"
    assert units[(0, 0, "stance3")]["agreed"] is True  # both kinds of support are "support"
    assert units[(0, 1, "stance")]["agreed"] is True
    factuality = units[(1, None, "factuality")]
    assert factuality["annotators"] == {"alice": "false", "bob": "true", "carol": "false"}
    assert factuality["gold"] == "false" and factuality["agreed"] is False
    assert units[(0, None, "factuality")]["agreed"] is True


def test_factcheck_ids_match_the_benchmark_export(factcheck):
    [record] = lines(factcheck, "factcheck-bench")
    sentences = record["sentences"]
    checked = 0
    for line in lines(factcheck):
        if line["gold"] is None:
            continue
        s = sentences[line["sentence"]]
        expected = {
            "sentence_checkworthy": lambda: s["sentence_checkworthiness"],
            "claim_category": lambda: s["claim_checkworthiness"][line["claim"]],
            "stance": lambda: s["stance_claim_autoEvid"][line["claim"]][line["evidence"]],
            "needs_edit": lambda: s["if_claim_needs_edit"][line["claim"]],
        }.get(line["field"])
        if expected:
            assert line["gold"] == expected(), line
            checked += 1
    assert checked == 2 + 2 + 3 + 2


def test_factcheck_step3_revised_sentences_not_consolidated_yet(factcheck):
    step3 = by_unit([r for r in lines(factcheck) if r["step"] == 3], "sentence", "field")
    assert step3[("sentence1", "revised")]["agreed"] is True  # up to spacing, as consolidation compares
    assert step3[("sentence2", "revised")]["annotators"] == {
        "alice": "I like it.",
        "bob": "I love it.",
    }
    assert step3[("sentence2", "revised")]["agreed"] is False
    assert step3[(None, "revised_response")]["agreed"] is False
    assert all(r["gold"] is None for r in step3.values())


# -- D-FActScore --------------------------------------------------------------------------------


def fact(group, label, any_page="supported", entity=0):
    return {"group": group, "label": label, "any_page": any_page, "entity": entity}


def test_dfactscore_units_are_facts_and_the_paragraph(users):
    project = create_project(name="Units DFS", kind="dfactscore", created_by=users["admin"])
    stage = make_stage(make_item(project, "bio-3"), 1, {"facts": [{"text": "a"}, {"text": "b"}]})
    submit(
        stage,
        users["alice"],
        {
            "individuals": 1,
            "groups": [{"link": 0}],
            "facts": [fact(0, "supported"), fact(0, "not_supported")],
        },
    )
    submit(
        stage,
        users["bob"],
        {
            "individuals": 2,
            "groups": [{"link": 0}, {"link": 1}],
            "facts": [fact(0, "supported"), fact(1, "supported")],
        },
    )
    units = by_unit(lines(project), "fact", "field")
    assert units[(None, "individuals")]["annotators"] == {"alice": 1, "bob": 2}
    assert units[(0, "label")]["agreed"] is True and units[(1, "label")]["agreed"] is False
    assert units[(1, "label")]["item"] == "bio-3" and units[(1, "label")]["gold"] is None


# -- availability -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["felm", "factcheck", "dfactscore"])
def test_every_kind_lists_the_format(users, kind):
    project = create_project(name=f"Formats {kind}", kind=kind, created_by=users["admin"])
    assert exports.AGREEMENT_UNITS in exports.export_formats(project)
    assert lines(project) == []


def test_the_api_and_the_page_stream_it_to_admins_only(felm, users, client):
    response = api_client(users["admin"]).get(f"/api/projects/{felm.id}/export/", {"format": "agreement-units"})
    assert response.status_code == 200 and response["Content-Type"].startswith("application/jsonl")
    assert len(b"".join(response.streaming_content).splitlines()) == 5
    client.force_login(users["admin"])
    page = client.get(f"/projects/{felm.id}/")
    assert f"/projects/{felm.id}/export/agreement-units/".encode() in page.content
    assert client.get(f"/projects/{felm.id}/export/agreement-units/").status_code == 200
    client.force_login(users["alice"])
    assert client.get(f"/projects/{felm.id}/export/agreement-units/").status_code in (403, 404)
