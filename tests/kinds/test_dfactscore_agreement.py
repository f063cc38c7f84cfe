"""The dfactscore kind's consolidation and agreement: merging groupings as partitions, the
agreement units and the grouping agreement (mean adjusted Rand index)."""

import pytest

from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.kinds.base import AgreementItem
from annotation.research import selectors
from tests.helpers.builders import jsonl
from tests.helpers.dfactscore_results import (
    content_of,
    dfactscore_project,
    fact,
    payload,
    result_lines,
)

KIND = get_kind("dfactscore")


@pytest.fixture
def project(users):
    return dfactscore_project(users)


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
