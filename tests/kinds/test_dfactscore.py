"""The dfactscore kind: import (both shapes, bad lines), payload rules, the project settings."""

import pytest
from django.core.exceptions import ValidationError
from django.test import TestCase

from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.kinds.base import PayloadError
from annotation.models import GoldRecord, ItemStage, StageStatus
from annotation.services.projects import validate_pipeline_settings
from tests.helpers.builders import jsonl
from tests.helpers.dfactscore_results import (
    ARTIST,
    DECISIONS,
    GLOBAL_DECISIONS,
    MARA_FACTS,
    MARA_RESPONSE,
    ROWER,
    complete_payload,
    content_of,
    dfactscore_project,
    fact,
    mara_line,
    payload,
    result_lines,
)

KIND = get_kind("dfactscore")


@pytest.fixture
def project(users):
    return dfactscore_project(users)


# -- import -------------------------------------------------------------------------------------


def test_import_with_atomic_facts_keeps_them_and_places_them_in_the_response(project):
    result = import_jsonl(project, jsonl([mara_line(extra_field="kept")]), fmt="dfactscore")
    assert result.items == 1
    stage = ItemStage.objects.get(item__project=project)
    assert [f["text"] for f in stage.content["facts"]] == MARA_FACTS
    start, end = stage.content["facts"][0]["span"]
    assert "glassblower" in MARA_RESPONSE[start:end]
    assert [c["title"] for c in stage.content["candidates"]] == [ARTIST["title"], ROWER["title"]]
    assert stage.content["candidates"][0]["passages"] == [ARTIST["text"]]
    assert stage.item.source == "m1"
    assert stage.item.metadata == {"name": "Mara Quell", "extra_field": "kept"}
    # The grouping, links and support are the machine's: the stage still waits for pre-annotation.
    assert stage.status == StageStatus.PRECOMPUTING


def test_import_without_atomic_facts_is_decomposed_by_the_pipeline(project):
    line = {key: value for key, value in mara_line().items() if key != "atomic_facts"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        import_jsonl(project, jsonl([line]), fmt="dfactscore")
    stage = ItemStage.objects.get(item__project=project)
    assert stage.status in (StageStatus.ANNOTATING, StageStatus.READY), stage.precompute_error
    assert stage.content["facts"] and all(f["text"] for f in stage.content["facts"])
    assert stage.suggestion["groups"] and stage.provenance
    empty = KIND.empty_payload(1, stage.content, stage.suggestion)
    # The suggestion is never pre-selected.
    assert empty == {
        "individuals": 0,
        "groups": [],
        "facts": [fact()] * len(stage.content["facts"]),
    }


@pytest.mark.parametrize(
    "change, field",
    [
        ({"name": None}, "name"),
        ({"name": "  "}, "name"),
        ({"candidates": "Mara Quell (artist)"}, "candidates"),
        ({"candidates": [ARTIST, "rower"]}, "candidates[1]"),
        ({"candidates": [{"title": "x", "text": "y"}]}, "candidates[0].url"),
        ({"candidates": [{"title": "x", "url": "ftp://a.b/c", "text": "y"}]}, "candidates[0].url"),
        ({"candidates": [{"url": "https://a.b/", "text": "y"}]}, "candidates[0].title"),
        ({"candidates": [ARTIST, ARTIST]}, "candidates[1].title"),
        ({"atomic_facts": "Mara is a glassblower."}, "atomic_facts"),
        ({"atomic_facts": ["ok", 3]}, "atomic_facts[1]"),
        ({"decisions": {"atom": "x"}}, "decisions"),
        ({"decisions": [{"atom": "x", "is_supported": "yes"}]}, "decisions[0].is_supported"),
        ({"global_decisions": [{"is_supported": True}]}, "global_decisions[0].atom"),
        ({"decisions": [{"atom": "x", "is_supported": 1}]}, "decisions[0].is_supported"),
    ],
)
def test_bad_lines_name_line_and_field_and_write_nothing(project, change, field):
    lines = [mara_line(), {**mara_line(), **change}]
    lines[1] = {k: v for k, v in lines[1].items() if v is not None}
    with pytest.raises(ImportFailed) as caught:
        import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="ignore")
    assert (caught.value.errors[0]["line"], caught.value.errors[0]["field"]) == (2, field)
    assert not project.items.exists()


def test_gold_import_keeps_the_released_lists_and_groups_by_supporting_page(project):
    lines = result_lines()
    lines[0]["atomic_facts"] = MARA_FACTS + ["Mara Quell likes tea."]  # not in either list: left open
    import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="gold")
    golds = list(GoldRecord.objects.filter(item_stage__item__project=project).order_by("item_stage__item_id"))
    assert [g.item_stage.status for g in golds] == [StageStatus.DONE] * 3
    mara = golds[0].payload
    assert mara["released"] == {"decisions": DECISIONS[0], "global_decisions": GLOBAL_DECISIONS[0]}
    assert mara["individuals"] == 1 and mara["groups"] == [{"link": 0}]
    assert [f["group"] for f in mara["facts"]] == [0, 0, None, None, None]
    assert [f["label"] for f in mara["facts"]] == [
        "supported",
        "supported",
        "not_supported",
        "not_supported",
        None,
    ]
    assert [f["any_page"] for f in mara["facts"]] == [
        "supported",
        "supported",
        "supported",
        "not_supported",
        None,
    ]
    abstained = golds[1]
    assert abstained.item_stage.content["facts"] == []
    assert abstained.payload == {
        "individuals": 0,
        "groups": [],
        "facts": [],
        "released": {"decisions": None, "global_decisions": None},
    }
    # Without atomic_facts the facts are the grouped list's atoms.
    assert [f["text"] for f in golds[2].item_stage.content["facts"]] == [e["atom"] for e in GLOBAL_DECISIONS[2]]


def test_labels_as_suggestion_become_hints_not_answers(project):
    import_jsonl(project, jsonl([result_lines()[0]]), fmt="dfactscore", labels_as="suggestion")
    stage = ItemStage.objects.get(item__project=project)
    assert stage.status == StageStatus.ANNOTATING
    assert stage.provenance == {"suggestion": "import:labels"}
    assert stage.suggestion["groups"] == [[0, 1]] and stage.suggestion["links"] == [0]
    assert stage.suggestion["labels"] == [
        "supported",
        "supported",
        "not_supported",
        "not_supported",
    ]
    assert stage.suggestion["any_page"] == ["supported", "supported", "supported", "not_supported"]
    assert KIND.empty_payload(1, stage.content, stage.suggestion)["individuals"] == 0


def test_gold_import_needs_the_result_lists(project):
    with pytest.raises(ImportFailed) as caught:
        import_jsonl(project, jsonl([mara_line()]), fmt="dfactscore", labels_as="gold")
    assert caught.value.errors[0]["field"] == "labels"


# -- payload rules ------------------------------------------------------------------------------


def test_a_complete_payload_is_accepted_and_kept():
    assert KIND.validate_payload(1, content_of(), complete_payload(), complete=True) == complete_payload()


def test_drafts_may_be_partial_but_submit_names_every_missing_answer():
    draft = payload(2, [None, 0], [fact(0), fact(None, "supported"), fact(), fact()])
    assert KIND.validate_payload(1, content_of(), draft, complete=False) == draft
    with pytest.raises(PayloadError) as caught:
        KIND.validate_payload(1, content_of(), draft, complete=True)
    fields = {e["field"] for e in caught.value.errors}
    assert fields == {
        "groups[0].link",
        "facts[0].label",
        "facts[1].group",
        "facts[2].group",
        "facts[2].label",
        "facts[3].group",
        "facts[3].label",
        "groups[1]",
    }  # groups[1] holds no fact


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda p: p.update(individuals=-1), "individuals"),
        (lambda p: p.update(individuals=True), "individuals"),
        (lambda p: p.update(individuals=3), "groups"),
        (lambda p: p["facts"].pop(), "facts"),
        (lambda p: p["groups"][0].update(link=2), "groups[0].link"),
        (lambda p: p["groups"][0].update(link="nobody"), "groups[0].link"),
        (lambda p: p["facts"][1].update(group=2), "facts[1].group"),
        (lambda p: p["facts"][1].update(label="true"), "facts[1].label"),
        (lambda p: p["facts"][1].update(any_page="irrelevant"), "facts[1].any_page"),
        (lambda p: p["facts"][1].update(entity=5), "facts[1].entity"),
        (lambda p: p.update(released={"decisions": "x"}), "released.decisions"),
    ],
)
def test_bad_payloads_name_the_field_in_drafts_too(change, field):
    bad = complete_payload()
    change(bad)
    with pytest.raises(PayloadError) as caught:
        KIND.validate_payload(1, content_of(), bad, complete=False)
    assert caught.value.errors[0]["field"] == field


def test_zero_individuals_only_for_a_paragraph_without_facts():
    empty = {"individuals": 0, "groups": [], "facts": []}
    assert KIND.validate_payload(1, content_of(count=0), empty, complete=True) == empty
    with pytest.raises(PayloadError) as caught:
        KIND.validate_payload(1, content_of(count=1), {**empty, "facts": [fact(None, "supported")]}, complete=True)
    assert {e["field"] for e in caught.value.errors} == {"individuals", "facts[0].group"}


def test_the_optional_passes_are_required_on_submit_only_when_turned_on():
    done = complete_payload()
    KIND.validate_payload(1, content_of(), done, complete=True)
    with pytest.raises(PayloadError) as caught:
        KIND.validate_payload(1, content_of(factscore_pass=True, entity_pass=True), done, complete=True)
    fields = {e["field"] for e in caught.value.errors}
    assert fields == {f"facts[{i}].{key}" for i in range(4) for key in ("any_page", "entity")}
    KIND.validate_payload(1, content_of(factscore_pass=True, entity_pass=True), done, complete=False)
    answered = {
        **done,
        "facts": [{**f, "any_page": "supported", "entity": "none" if i else 1} for i, f in enumerate(done["facts"])],
    }
    KIND.validate_payload(1, content_of(factscore_pass=True, entity_pass=True), answered, complete=True)


def test_payload_content_reads_the_passes_from_the_project_settings():
    content = KIND.payload_content({"facts": []}, lambda: {"dfactscore": {"factscore_pass": True}})
    assert content["passes"] == {"factscore_pass": True, "entity_pass": False}


def test_submitting_through_the_api_applies_the_project_pass(project, clients, users):
    from annotation.models import Assignment

    project.pipeline_settings = {
        **project.pipeline_settings,
        "dfactscore": {"factscore_pass": True},
    }
    project.save()
    import_jsonl(project, jsonl([result_lines()[2]]), fmt="dfactscore", labels_as="suggestion")
    assignment = Assignment.objects.get(user=users["alice"])
    answer = payload(1, [0], [fact(0, "supported"), fact(0, "not_supported")])
    url = f"/api/assignments/{assignment.id}/annotation/"
    refused = clients["alice"].put(url, {"payload": answer, "version": 0, "submit": True}, format="json")
    assert refused.status_code == 400 and "facts[0].any_page" in refused.content.decode()
    answer["facts"] = [{**f, "any_page": "supported"} for f in answer["facts"]]
    accepted = clients["alice"].put(url, {"payload": answer, "version": 0, "submit": True}, format="json")
    assert accepted.status_code == 200, accepted.content


# -- project settings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "section, message",
    [
        ([], "dfactscore must be an object"),
        ({"passes": True}, "unknown keys: passes"),
        ({"factscore_pass": "yes"}, "dfactscore.factscore_pass must be true or false"),
        ({"entity_pass": 1}, "dfactscore.entity_pass must be true or false"),
        (
            {"irrelevant": "supported"},
            "dfactscore.irrelevant must be one of exclude, not_supported",
        ),
        ({"linking": "greedy"}, "dfactscore.linking must be one of argmax, hungarian"),
        ({"support_threshold": 1.5}, "dfactscore.support_threshold must be a number from 0 to 1"),
        ({"support_threshold": True}, "dfactscore.support_threshold must be a number from 0 to 1"),
    ],
)
def test_bad_dfactscore_settings_are_refused_naming_the_key(section, message):
    with pytest.raises(ValidationError, match=message):
        validate_pipeline_settings({"dfactscore": section})


def test_good_dfactscore_settings_are_kept():
    good = {
        "dfactscore": {
            "factscore_pass": True,
            "entity_pass": False,
            "irrelevant": "not_supported",
            "linking": "hungarian",
            "support_threshold": 0.3,
        }
    }
    assert validate_pipeline_settings(good) == good


def test_new_projects_start_with_the_papers_definitions(project):
    assert "D-FActScore" in project.guidelines and "`not_supported`" in project.guidelines
