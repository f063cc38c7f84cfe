"""Predictions of a project of several FELM domains (issue 29): the five domain files each number
their items from "0", so a line names its item by ``item`` and ``domain`` (or the upload's
``domain`` option); a line that leaves the domain out where the item's index repeats is refused,
naming the line and saying to add it."""

import pytest

from annotation.models import SystemRunState
from annotation.research import scoring
from annotation.research.predictions import agreed_units
from tests.helpers.builders import segment, submit
from tests.helpers.felm_release import DOMAIN_LINES, import_domain_files
from tests.helpers.research import make_run, post_run, read, stored_predictions

pytestmark = pytest.mark.django_db


@pytest.fixture
def five_domains(felm_project):
    return felm_project, import_domain_files(felm_project)


def segment_lines(files, domains=DOMAIN_LINES, with_domain=True, wrong=False):
    """The gold of each segment of the domains' lines as predictions (every label flipped: ``wrong``)."""
    lines = []
    for domain in domains:
        for record in files[domain]:
            for index, correct in enumerate(record["labels"]):
                label = "correct" if correct != wrong else "error"
                lines.append(
                    {
                        "item": record["index"],
                        "segment": index,
                        "label": label,
                        **({"domain": domain} if with_domain else {}),
                    }
                )
    return lines


def test_lines_naming_their_domain_score_each_against_that_domains_item(five_domains):
    project, files = five_domains
    run = make_run(project, segment_lines(files), resamples=0)
    assert run.state == SystemRunState.DONE, run.errors
    scores = run.scores["segment"]
    assert (scores["units"], scores["missing"], scores["accuracy"]["value"]) == (20, 0, 1.0)
    assert scores["per_label"]["error"]["f1"]["value"] == 1.0
    assert stored_predictions(run, "segment")[:2] == [(("math", "0"), 0, "error"), (("math", "0"), 1, "error")]


def test_a_file_of_one_domain_without_domain_fields_is_refused_naming_each_line(five_domains):
    project, files = five_domains
    errors = read(project, segment_lines(files, ["math"], with_domain=False)).errors
    assert [(e["line"], e["field"]) for e in errors] == [(n, "domain") for n in range(1, 5)]
    assert errors[0]["message"] == (
        "is missing: the project has 5 items '0' (in domain 'math', in domain 'reasoning', in domain 'science', "
        "in domain 'wk', in domain 'writing_rec'); add \"domain\" to the line, or give the upload a domain "
        "when the whole file is of one"
    )


def test_the_upload_domain_option_names_the_domain_of_lines_without_one(five_domains, clients):
    project, files = five_domains
    _, run = post_run(clients["admin"], project.id, segment_lines(files, ["math"], with_domain=False), domain="math")
    assert run["state"] == SystemRunState.DONE, run["errors"]
    scores = run["scores"]["segment"]
    # the math items' four segments predicted, the other domains' sixteen missing (not math's ids elsewhere)
    assert (scores["predicted"], scores["missing"]) == (4, 16)
    assert scores["per_label"]["error"]["recall"]["value"] == 4 / 12  # math's 4 errors of the 12


def test_a_domain_the_item_is_not_in_or_the_project_has_not_is_refused(five_domains):
    project, files = five_domains
    line = {"item": "5", "domain": "math", "segment": 0, "label": "error"}
    assert [(e["field"], e["message"]) for e in read(project, [line]).errors] == [
        ("item", "item '5' matches no item with a gold record of the project")
    ]
    line = {"item": "0", "domain": "sports", "segment": 0, "label": "error"}
    assert [(e["field"], e["message"]) for e in read(project, [line]).errors] == [
        (
            "domain",
            "'sports' has no item '0'; the project has it in domain 'math', in domain 'reasoning', "
            "in domain 'science', in domain 'wk', in domain 'writing_rec'",
        )
    ]
    run = make_run(project, segment_lines(files, ["math"], with_domain=False), domain="sport")
    assert run.state == SystemRunState.FAILED
    assert run.errors == [
        {
            "line": 0,
            "field": "domain",
            "message": "the project has no item in domain 'sport' (its domains: 'math', 'reasoning', "
            "'science', 'wk', 'writing_rec')",
        }
    ]


def test_a_unit_predicted_twice_is_named_with_its_domain(five_domains):
    project, _ = five_domains
    first = {"item": "0", "domain": "wk", "segment": 0, "label": "error"}
    errors = read(project, [first, {**first, "domain": "math"}, {**first, "label": "correct"}]).errors
    assert errors == [
        {
            "line": 3,
            "field": "label",
            "message": "predicts label of the same segment as line 1: item '0' of domain 'wk' segment 0",
        }
    ]


def test_gold_units_and_agreed_units_key_items_by_domain(five_domains, users):
    project, files = five_domains
    tasks = scoring.project_tasks(project)
    assert ("math", "0") in {u.item for u in tasks["segment"].units}
    assert len({u.item for u in tasks["response"].units}) == 10
    # two annotators agree on the math item "0": only its units are agreed, not the other domains' "0"
    stage = project.items.get(domain="math", external_id="0").stages.get(stage=1)
    payload = {"segments": [segment(False), segment(False)]}
    submit(stage, users["alice"], payload)
    submit(stage, users["bob"], payload)
    agreed = agreed_units(project, tasks)
    assert agreed["segment"] == {(("math", "0"), 0), (("math", "0"), 1)}
    assert agreed["response"] == {(("math", "0"),)}
