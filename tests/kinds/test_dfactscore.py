"""The dfactscore kind: import (both shapes, bad lines), payload rules, merge, agreement, scores
and the result export, the result-file command, the project settings."""

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import TestCase

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.kinds.base import AgreementItem, PayloadError
from annotation.models import GoldRecord, ItemStage, StageStatus
from annotation.research import selectors
from annotation.services.projects import validate_pipeline_settings
from tests.helpers.builders import jsonl, project_with_team

KIND = get_kind("dfactscore")
ARTIST = {
    "title": "Mara Quell (artist)",
    "url": "https://example.org/mara-artist",
    "text": "Mara Quell is an Estonian glassblower. She was born in Tallinn in 1971.",
}
ROWER = {
    "title": "Mara Quell (rower)",
    "url": "https://example.org/mara-rower",
    "text": "Mara Quell is a rower. She won a bronze medal in 1998.",
}
IVO = {
    "title": "Ivo Brandt",
    "url": "https://example.org/ivo",
    "text": "Ivo Brandt is a Danish cartographer.",
}
MARA_FACTS = [
    "Mara Quell is a glassblower.",
    "Mara Quell was born in Tallinn.",
    "Mara Quell won a rowing medal in 1998.",
    "Mara Quell coaches a rowing club in Tartu.",
]
MARA_RESPONSE = (
    "Mara Quell is a glassblower born in Tallinn. She won a rowing medal in 1998 and coaches a rowing club in Tartu."
)


def entry(atom, supported, topic=None):
    return {"atom": atom, "is_supported": supported, "supporting_topic": topic}


# A run of one model over three generations in the released result shape (the second abstained).
DECISIONS = [
    [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], True, ARTIST["title"]),
        entry(MARA_FACTS[2], True, ROWER["title"]),
        entry(MARA_FACTS[3], False),
    ],
    None,
    [
        entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
        entry("Ivo Brandt mapped the Faroe coast.", False),
    ],
]
GLOBAL_DECISIONS = [
    [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], True, ARTIST["title"]),
        entry(MARA_FACTS[2], False),
        entry(MARA_FACTS[3], False),
    ],
    None,
    [
        entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
        entry("Ivo Brandt mapped the Faroe coast.", False),
    ],
]
GENERATIONS = [
    {
        "prompt": "Tell me a bio of Mara Quell.",
        "name": "Mara Quell",
        "response": MARA_RESPONSE,
        "candidates": [ARTIST, ROWER],
        "model": "m1",
    },
    {
        "prompt": "Tell me a bio of Nils Varg.",
        "name": "Nils Varg",
        "response": "I do not know who that is.",
        "candidates": [],
        "model": "m1",
    },
    {
        "prompt": "Tell me a bio of Ivo Brandt.",
        "name": "Ivo Brandt",
        "response": "Ivo Brandt is a cartographer who mapped the Faroe coast.",
        "candidates": [IVO],
        "model": "m1",
    },
]


def result_lines():
    return [{**g, "decisions": d, "global_decisions": gd} for g, d, gd in zip(GENERATIONS, DECISIONS, GLOBAL_DECISIONS)]


def mara_line(**extra):
    return {
        "prompt": "Tell me a bio of Mara Quell.",
        "name": "Mara Quell",
        "response": MARA_RESPONSE,
        "atomic_facts": MARA_FACTS,
        "candidates": [ARTIST, ROWER],
        "model": "m1",
        **extra,
    }


@pytest.fixture
def project(users):
    project = project_with_team(users, "D-FActScore test", "dfactscore")
    project.pipeline_settings = {"embeddings": False}  # offline lexical similarity: no model download
    project.save()
    return project


def content_of(count=4, pages=2, **passes):
    return {
        "name": "Mara Quell",
        "facts": [{"text": f"fact {i}", "span": None} for i in range(count)],
        "candidates": [
            {"title": f"p{i}", "url": "https://example.org", "text": "t", "passages": ["t"]} for i in range(pages)
        ],
        "passes": passes,
    }


def fact(group=None, label=None, any_page=None, entity=None):
    return {"group": group, "label": label, "any_page": any_page, "entity": entity}


def payload(individuals, links, facts):
    return {
        "individuals": individuals,
        "groups": [{"link": link} for link in links],
        "facts": facts,
    }


def complete_payload():
    return payload(
        2,
        [0, "none"],
        [
            fact(0, "supported"),
            fact(0, "not_supported"),
            fact(1, "irrelevant"),
            fact(1, "not_supported"),
        ],
    )


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


# -- consolidation ------------------------------------------------------------------------------


def test_merge_compares_groupings_as_partitions_and_lists_what_differs():
    a = payload(
        2,
        [0, "none"],
        [fact(0, "supported"), fact(0, "supported"), fact(1, "irrelevant"), fact(1, "supported")],
    )
    # the same partition with the individuals numbered the other way round; one label and one link differ
    b = payload(
        2,
        ["none", 1],
        [
            fact(1, "supported"),
            fact(1, "supported"),
            fact(0, "irrelevant"),
            fact(0, "not_supported"),
        ],
    )
    merged = KIND.merge(1, content_of(), [a, b])
    assert merged.draft["individuals"] == 2
    assert merged.draft["groups"] == [{"link": None}, {"link": "none"}]
    assert [f["group"] for f in merged.draft["facts"]] == [0, 0, 1, 1]
    assert [f["label"] for f in merged.draft["facts"]] == [
        "supported",
        "supported",
        "irrelevant",
        None,
    ]
    assert merged.disagreed == ["groups[0].link", "facts[3].label"]
    KIND.validate_payload(1, content_of(), merged.draft, complete=False)


def test_merge_with_different_numbers_of_individuals():
    a = payload(1, [0], [fact(0, "supported")] * 4)
    b = payload(
        2,
        [0, 1],
        [fact(0, "supported"), fact(0, "supported"), fact(1, "supported"), fact(1, "supported")],
    )
    merged = KIND.merge(1, content_of(), [a, b])
    assert merged.draft["individuals"] == 2
    assert merged.draft["groups"] == [{"link": None}, {"link": None}]
    assert [f["group"] for f in merged.draft["facts"]] == [0, 0, None, None]
    assert merged.disagreed == [
        "individuals",
        "groups[0].link",
        "groups[1].link",
        "facts[2].group",
        "facts[3].group",
    ]
    KIND.validate_payload(1, content_of(), merged.draft, complete=False)


# -- agreement ----------------------------------------------------------------------------------


def test_agreement_units_per_paragraph_and_fact():
    a = payload(2, [0, 1], [fact(0, "supported", "supported", 0), fact(1, "irrelevant")])
    b = payload(1, [0], [fact(0, "supported", "not_supported", "none"), fact(0, None)])
    units = KIND.agreement_units(1, {"a": a, "b": b})
    assert units["individuals"] == {"paragraph": {"a": 2, "b": 1}}
    assert units["label"] == {0: {"a": "supported", "b": "supported"}, 1: {"a": "irrelevant"}}
    assert units["any_page"] == {0: {"a": "supported", "b": "not_supported"}}
    assert units["entity"] == {0: {"a": "0", "b": "none"}}
    # the small arrays agreement fetches on PostgreSQL give the same units
    parts = {
        "individuals": [2],
        "labels": ["supported", "irrelevant"],
        "any_page": ["supported", None],
        "entity": [0, None],
    }
    assert KIND.agreement_units(1, {"a": parts})["entity"] == {0: {"a": "0"}}


def test_grouping_agreement_is_the_mean_adjusted_rand_index():
    # Item 1: {0,1}{2,3} against {0,1,2}{3}: ARI = (1 - 2·3/6) / ((2+3)/2 - 2·3/6) = 0 (by hand).
    # Item 2: the same partition numbered differently: ARI = 1. Mean 0.5.
    one = AgreementItem(
        {
            "a": payload(2, [0, 1], [fact(0), fact(0), fact(1), fact(1)]),
            "b": payload(2, [0, 1], [fact(0), fact(0), fact(0), fact(1)]),
        },
        suggestion={"groups": [[0, 1], [2, 3]]},
    )
    two = AgreementItem(
        {
            "a": payload(2, [0, 1], [fact(1), fact(1), fact(0)]),
            "b": payload(2, [0, 1], [fact(0), fact(0), fact(1)]),
        },
        suggestion=None,
    )
    grouping = KIND.extra_agreement(1, [one, two])["grouping"]
    assert grouping["between_annotators"] == {"items": 2, "mean": pytest.approx(0.5)}
    assert grouping["annotator_vs_machine"] == {
        "a": {"items": 1, "mean": pytest.approx(1.0)},
        "b": {"items": 1, "mean": pytest.approx(0.0)},
    }


def test_project_agreement_reports_the_kind_fields_and_grouping(project, clients, users, logged_in):
    from annotation.models import Assignment

    import_jsonl(project, jsonl([result_lines()[0]]), fmt="dfactscore", labels_as="suggestion")
    answers = {
        "alice": payload(
            2,
            [0, 1],
            [
                fact(0, "supported"),
                fact(0, "supported"),
                fact(1, "supported"),
                fact(1, "not_supported"),
            ],
        ),
        "bob": payload(
            1,
            [0],
            [
                fact(0, "supported"),
                fact(0, "supported"),
                fact(0, "not_supported"),
                fact(0, "not_supported"),
            ],
        ),
    }
    for name, answer in answers.items():
        assignment = Assignment.objects.get(user=users[name])
        response = clients[name].put(
            f"/api/assignments/{assignment.id}/annotation/",
            {"payload": answer, "version": 0, "submit": True},
            format="json",
        )
        assert response.status_code == 200, response.content
    result = selectors.project_agreement(project)
    assert result["fields"]["label"]["pairs"][0]["observed_agreement"] == pytest.approx(0.75)
    assert result["fields"]["individuals"]["pairs"][0]["observed_agreement"] == 0
    assert result["grouping"]["between_annotators"] == {"items": 1, "mean": pytest.approx(0.0)}
    page = logged_in("admin").get(f"/projects/{project.id}/agreement/").content.decode()
    assert "Grouping of facts into individuals" in page and "Mean adjusted Rand index" in page


# -- scores and export --------------------------------------------------------------------------


def test_importing_a_result_as_gold_gives_back_its_scores_exactly(project):
    import_jsonl(project, jsonl(result_lines()), fmt="dfactscore", labels_as="gold")
    lines = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert len(lines) == 1 and lines[0]["model"] == "m1"
    # init_score = mean(3/4, 1/2) = 0.625, init_global_score = mean(2/4, 1/2) = 0.5 (by hand)
    assert lines[0]["init_score"] == 0.625 and lines[0]["init_global_score"] == 0.5
    assert lines[0]["respond_ratio"] == pytest.approx(2 / 3)
    assert lines[0]["num_facts_per_response"] == 3.0
    assert lines[0]["decisions"] == DECISIONS and lines[0]["global_decisions"] == GLOBAL_DECISIONS


def test_released_result_shapes_import_as_gold_and_come_back_unchanged(project):
    """The shapes the released result files use (issue 19): ``supporting_topic`` as ``[]`` (no
    page), a topic no candidate is titled, an entry without ``is_supported`` (not judged), a
    generation whose lists are ``[]`` or null. Nothing is refused, the result export gives every
    list back as given, and the scores are the means computed directly from the lists."""
    lines = result_lines()
    lines[0]["decisions"] = [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], True, []),
        entry(MARA_FACTS[2], True, "Mara Quell (poet)"),
        entry(MARA_FACTS[3], False, []),
    ]
    lines[0]["global_decisions"] = [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], False, []),
        entry(MARA_FACTS[2], False, []),
        {"atom": MARA_FACTS[3], "supporting_topic": None, "extra": "kept"},
    ]
    lines[1]["decisions"], lines[1]["global_decisions"] = [], None
    lines[2]["global_decisions"] = [
        entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
        entry("Ivo Brandt mapped the Faroe coast.", False, []),
    ]
    result = import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="gold")
    assert result.items == 3
    (exported,) = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert exported["decisions"] == [line["decisions"] for line in lines]
    assert exported["global_decisions"] == [line["global_decisions"] for line in lines]
    assert exported["decisions"][0][1]["supporting_topic"] == []

    def direct(lists):  # FActScore's mean of shares over generations with judged facts
        shares = []
        for entries in lists:
            judged = [e["is_supported"] for e in entries or [] if "is_supported" in e]
            if judged:
                shares.append(sum(judged) / len(judged))
        return sum(shares) / len(shares)

    assert exported["init_score"] == pytest.approx(direct(exported["decisions"]))
    assert exported["init_global_score"] == pytest.approx(direct(exported["global_decisions"]))
    # by hand: decisions (3/4 + 1/2) / 2; global (1/3 + 1/2) / 2, the unjudged fact left out
    assert exported["init_score"] == pytest.approx(0.625)
    assert exported["init_global_score"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert exported["respond_ratio"] == pytest.approx(2 / 3)
    # the supported page "Ivo Brandt" counts as a topic, [] does not
    assert exported["num_supporting_topics"] == pytest.approx((2 + 1) / 2)
    mara = GoldRecord.objects.filter(item_stage__item__project=project).order_by("item_stage__item_id").first().payload
    assert [f["group"] for f in mara["facts"]] == [0, None, None, None]
    assert [f["label"] for f in mara["facts"]] == [
        "supported",
        "not_supported",
        "not_supported",
        None,
    ]


def test_a_result_line_with_an_empty_supporting_topic_list_is_accepted_as_gold(project):
    """The line of issue 19: decisions carrying ``"supporting_topic": []`` (refused before as
    "must be a string or null")."""
    line = {
        **GENERATIONS[2],
        "decisions": [
            entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
            entry("Ivo Brandt mapped the Faroe coast.", False, []),
        ],
        "global_decisions": [
            entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
            entry("Ivo Brandt mapped the Faroe coast.", False, []),
        ],
    }
    import_jsonl(project, jsonl([line]), fmt="dfactscore", labels_as="gold")
    (exported,) = [json.loads(text) for text in export_jsonl(project, "dfactscore-result")]
    assert exported["decisions"] == [line["decisions"]] and exported["global_decisions"] == [line["global_decisions"]]
    assert exported["init_score"] == exported["init_global_score"] == 0.5


def test_result_export_groups_rows_by_model_from_annotated_gold(project):
    lines = result_lines()
    lines[2]["model"] = "m2"
    import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="suggestion")
    stages = list(ItemStage.objects.filter(item__project=project).order_by("item_id"))
    # Human gold for the Mara paragraph: two individuals, artist and rower; the Tartu fact unsupported.
    human = payload(
        2,
        [0, 1],
        [
            fact(0, "supported"),
            fact(0, "supported"),
            fact(1, "supported"),
            fact(1, "not_supported"),
        ],
    )
    ivo = payload(1, [0], [fact(0, "supported"), fact(0, "irrelevant")])
    for stage, gold in zip(stages, (human, {"individuals": 0, "groups": [], "facts": []}, ivo)):
        GoldRecord.objects.create(item_stage=stage, payload=gold)
        ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.DONE)
    records = {r["model"]: r for r in map(json.loads, export_jsonl(project, "dfactscore-result"))}
    assert set(records) == {"m1", "m2"}
    assert records["m1"]["init_global_score"] == pytest.approx(0.75)  # 3 of 4; the abstention does not count
    assert records["m1"]["respond_ratio"] == pytest.approx(0.5)
    assert records["m1"]["num_groups"] == 2
    assert records["m1"]["global_decisions"][0][2] == entry(MARA_FACTS[2], True, ROWER["title"])
    assert records["m1"]["global_decisions"][1] is None
    assert records["m2"]["init_global_score"] == 1.0  # the irrelevant fact is left out (default)
    paragraphs = [json.loads(line) for line in export_jsonl(project, "dfactscore")]
    assert [p["individuals"] for p in paragraphs] == [2, 0, 1]
    assert paragraphs[0]["facts"][2] == {
        "text": MARA_FACTS[2],
        "group": 1,
        "link": ROWER["title"],
        "label": "supported",
        "any_page": None,
        "entity": None,
    }
    assert paragraphs[0]["dfactscore"] == pytest.approx(0.75) and paragraphs[0]["model"] == "m1"

    scores = selectors.consolidated_scores(project)
    by_model = {m["model"]: m for m in scores["models"]}
    # The machine (the imported decisions as suggestion): Mara 2/4 against the paper's 3/4 → 0.25 apart.
    assert by_model["m1"]["human"]["init_global_score"] == pytest.approx(0.75)
    assert by_model["m1"]["machine"]["init_global_score"] == pytest.approx(0.5)
    assert by_model["m1"]["difference"]["init_global_score"] == pytest.approx(0.25)
    assert scores["paragraph_count"] == 3 and scores["paragraphs"][0]["human"]["num_groups"] == 2


def test_the_irrelevant_setting_changes_the_scores_selector(project):
    project.pipeline_settings = {
        **project.pipeline_settings,
        "dfactscore": {"irrelevant": "not_supported"},
    }
    project.save()
    import_jsonl(project, jsonl([result_lines()[2]]), fmt="dfactscore", labels_as="suggestion")
    stage = ItemStage.objects.get(item__project=project)
    GoldRecord.objects.create(item_stage=stage, payload=payload(1, [0], [fact(0, "supported"), fact(0, "irrelevant")]))
    ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.DONE)
    scores = selectors.consolidated_scores(project)
    assert scores["irrelevant"] == "not_supported"
    assert scores["models"][0]["human"]["init_global_score"] == pytest.approx(0.5)
    # and the exports follow the same setting
    (result,) = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert result["init_global_score"] == pytest.approx(0.5)
    project.pipeline_settings = {
        **project.pipeline_settings,
        "dfactscore": {"irrelevant": "exclude"},
    }
    project.save()
    (result,) = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert result["init_global_score"] == pytest.approx(1.0)


# -- the result-file command --------------------------------------------------------------------


def test_dfactscore_lines_joins_a_result_file_and_its_generations(tmp_path, project):
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"init_score": 0.625, "decisions": DECISIONS, "global_decisions": GLOBAL_DECISIONS}))
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    out = tmp_path / "lines.jsonl"
    call_command("dfactscore_lines", str(result), str(generations), "-o", str(out), stderr=io.StringIO())
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines == result_lines()
    with out.open("rb") as file:
        import_jsonl(project, file, fmt="dfactscore", labels_as="gold")
    exported = json.loads(next(export_jsonl(project, "dfactscore-result")))
    assert (exported["init_score"], exported["init_global_score"]) == (0.625, 0.5)


def test_dfactscore_lines_passes_the_released_shapes_through(tmp_path, project):
    decisions = [[entry(MARA_FACTS[0], True, []), {"atom": MARA_FACTS[1]}], [], None]
    global_decisions = [[entry(MARA_FACTS[0], False, [])], None, []]
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"decisions": decisions, "global_decisions": global_decisions, "nan": 0}))
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    out = tmp_path / "lines.jsonl"
    call_command("dfactscore_lines", str(result), str(generations), "-o", str(out), stderr=io.StringIO())
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["decisions"] for line in lines] == decisions
    assert [line["global_decisions"] for line in lines] == global_decisions
    with out.open("rb") as file:
        import_jsonl(project, file, fmt="dfactscore", labels_as="gold")
    exported = json.loads(next(export_jsonl(project, "dfactscore-result")))
    assert exported["decisions"] == decisions and exported["global_decisions"] == global_decisions
    assert (exported["init_score"], exported["init_global_score"]) == (1.0, 0.0)


def test_dfactscore_lines_refuses_lists_that_do_not_match_the_generations(tmp_path):
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"decisions": DECISIONS[:2]}))
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    with pytest.raises(CommandError, match="decisions has 2 entries, the generations file 3 lines"):
        call_command("dfactscore_lines", str(result), str(generations), stderr=io.StringIO())
    generations.write_text(json.dumps(GENERATIONS[0]) + "\n{not json\n")
    with pytest.raises(CommandError, match="line 2: not JSON"):
        call_command("dfactscore_lines", str(result), str(generations), stderr=io.StringIO())


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
