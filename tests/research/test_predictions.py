"""Scoring automatic fact-checkers: uploads of predictions (API, page, command), every
validation rule with its line and field, stored predictions and scores equal to
annotation.research.scoring's, baselines, paired differences, agreed-only scores, versions, the API's
permission rules, and two uploads of the same system and version at once."""

import io
import json
import threading

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase

from annotation.imports.items import import_jsonl
from annotation.models import SystemRun, SystemRunSource, SystemRunState
from annotation.research import predictions as prediction_services
from annotation.research import scoring
from annotation.research.prediction_files import MAX_REPORTED_ERRORS
from annotation.research.predictions import (
    agreed_units,
    create_system_run,
    run_system_run,
    task_difference,
)
from annotation.services.projects import add_member, create_project
from pipeline.scoring import Scored, difference
from tests.helpers.builders import jsonl
from tests.helpers.research import ITEMS, bench_line, make_run, read, system_lines, upload

pytestmark = pytest.mark.django_db


def post_run(client, project_id, lines, **fields):
    """POST predictions to the API, let the task run (on commit, eagerly), then read the run."""
    fields.setdefault("system", "checker")
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(
            f"/api/projects/{project_id}/system-runs/",
            {"file": upload(lines), **fields},
            format="multipart",
        )
    if response.status_code != 202:
        return response, None
    run = client.get(response["Location"])
    assert run.status_code == 200, run.content
    return response, run.json()


def errors_of(project, lines) -> list[tuple]:
    return [(e["line"], e["field"], e["message"]) for e in read(project, lines).errors]


# -- validation, one rule at a time --------------------------------------------------------------------

GOOD = {"item": "q0", "sentence": "sentence1", "checkworthy": "yes"}


@pytest.mark.parametrize(
    "bad, field, message",
    [
        ("not json", "(json)", "is not valid JSON"),
        ("[1, 2]", "(line)", "must be a JSON object with the unit's ids and the predicted labels"),
        (
            {"item": "q0", "claim": 0, "category": "factual"},
            "sentence",
            "is missing: category is predicted per (item, sentence, claim)",
        ),
        (
            {"sentence": "sentence1", "checkworthy": "yes"},
            "item",
            "is missing: checkworthy is predicted per (item, sentence)",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "evidence": 0, "checkworthy": "yes"},
            "evidence",
            "is not a key of checkworthy, which is predicted per (item, sentence)",
        ),
        (
            {"item": "q0", "claim": 0},
            "(keys)",
            "(item, claim) match no task of this project; lines are keyed (item, sentence) "
            "for checkworthy; (item, sentence, claim) for category, factuality",
        ),
        (
            {"item": "q9", "sentence": "sentence4", "claim": 2, "category": "factual"},
            "item",
            "item 'q9' matches no item with a gold record of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence4", "claim": 2, "category": "factual"},
            "sentence",
            "item 'q0' sentence 'sentence4' matches no sentence of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": 2, "category": "factual"},
            "claim",
            "item 'q0' sentence 'sentence1' claim 2 matches no claim of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": 0, "evidence": 5, "stance": "refute"},
            "evidence",
            "item 'q0' sentence 'sentence1' claim 0 evidence 5 matches no evidence passage of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "checkworthy": "maybe"},
            "checkworthy",
            '"maybe" is not a label of checkworthy: one of "yes", "no", "opinion", "not_a_claim", "other"',
        ),
        (
            {"item": "q0", "sentence": "sentence1", "checkworthy": True},
            "checkworthy",
            "true is not a label of checkworthy",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": "0", "category": "factual"},
            "claim",
            'must be a whole number from 0 (an index as the exports give it), not "0"',
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": True, "category": "factual"},
            "claim",
            "must be a whole number",
        ),
        (
            {"item": "q0", "sentence": 1, "checkworthy": "yes"},
            "sentence",
            "must be a string (the id as the exports give it), not 1",
        ),
        (
            {"item": "q0", "sentence": "sentence1"},
            "(line)",
            "has no prediction: lines keyed (item, sentence) carry checkworthy",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "stance": "refute"},
            "stance",
            "is not predicted per (item, sentence): stance is keyed (item, sentence, claim, evidence)",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "checkworthy": "yes", "confidence": 0.9},
            "confidence",
            "is not a prediction field of this project: lines keyed (item, sentence) carry checkworthy",
        ),
        (
            {"item": "q0", "revised_response": 3},
            "revised_response",
            "must be a string (the revised text), not 3",
        ),
    ],
)
def test_each_bad_line_is_named_with_its_line_and_field(gold, bad, field, message):
    other = {"item": "q1", "sentence": "sentence1", "checkworthy": "no"}
    errors = errors_of(gold, [other, bad if isinstance(bad, str) else bad, GOOD])
    assert len(errors) == 1, errors
    line, got_field, got_message = errors[0]
    assert (line, got_field) == (2, field) and got_message.startswith(message), errors


def test_a_revision_with_a_nul_character_is_refused(gold):
    assert errors_of(gold, [{"item": "q0", "revised_response": "A\u0000B"}]) == [
        (1, "revised_response", "contains the NUL character (U+0000), which cannot be stored")
    ]


def test_a_project_without_gold_refuses_the_upload_with_one_reason(clients, factcheck_project):
    response, run = post_run(clients["admin"], factcheck_project.id, system_lines())
    assert response.status_code == 202 and run["state"] == "failed"
    assert run["errors"] == [
        {
            "line": 0,
            "field": "(project)",
            "message": "has no consolidated gold record yet: there is nothing to score against",
        }
    ]


def test_a_second_prediction_of_the_same_unit_is_refused_naming_the_first_line(gold):
    errors = errors_of(
        gold,
        [
            GOOD,
            {"item": "q0", "sentence": "sentence2", "checkworthy": "no"},
            {"item": "q0", "sentence": "sentence1", "checkworthy": "no"},
        ],
    )
    assert errors == [
        (
            3,
            "checkworthy",
            "predicts checkworthy of the same sentence as line 1: item 'q0' sentence 'sentence1'",
        )
    ]
    # the same claim may carry category and factuality on two lines, but not factuality twice
    claim = {"item": "q0", "sentence": "sentence1", "claim": 0}
    errors = errors_of(
        gold,
        [
            {**claim, "category": "factual"},
            {**claim, "factuality": "true"},
            {**claim, "factuality": "false", "category": "opinion"},
        ],
    )
    assert [(line, field) for line, field, _ in errors] == [(3, "factuality"), (3, "category")]


def test_every_error_is_collected_with_its_line_up_to_a_cap(gold):
    errors = errors_of(
        gold,
        [
            GOOD,
            "{",
            {"item": "q0", "sentence": "sentence9", "checkworthy": "yes"},
            {"item": "q1", "sentence": "sentence1", "checkworthy": "perhaps", "x": 1},
        ],
    )
    assert [(line, field) for line, field, _ in errors] == [
        (2, "(json)"),
        (3, "sentence"),
        (4, "x"),
        (4, "checkworthy"),
    ]
    many = errors_of(
        gold,
        [{"item": f"z{i}", "sentence": "sentence1", "checkworthy": "yes"} for i in range(MAX_REPORTED_ERRORS + 50)],
    )
    assert len(many) == MAX_REPORTED_ERRORS + 1
    assert many[-1] == (0, "(file)", f"reading stopped after {MAX_REPORTED_ERRORS} errors")
    assert many[MAX_REPORTED_ERRORS - 1][0] == MAX_REPORTED_ERRORS


def test_an_empty_file_or_one_without_a_scored_unit_is_refused(gold):
    assert errors_of(gold, []) == [(0, "(file)", "contains no predictions")]
    assert errors_of(gold, ["", "  "]) == [(0, "(file)", "contains no predictions")]
    # the factuality of the opinion claim: it exists, but no gold factuality (it was never verified)
    unverified = {"item": "q0", "sentence": "sentence1", "claim": 1, "factuality": "true"}
    assert errors_of(gold, [unverified]) == [(0, "(file)", "contains no predictions for a unit with a gold label")]


def test_a_prediction_of_a_unit_without_this_tasks_gold_is_counted_not_refused(gold):
    got = read(
        gold,
        [
            {
                "item": "q0",
                "sentence": "sentence1",
                "claim": 1,
                "category": "opinion",
                "factuality": "true",
            }
        ],
    )
    assert got.errors == []
    assert got.by_task["claim_category"] == {("q0", "sentence1", 1): "opinion"}
    assert got.by_task["factuality"] == {} and got.ignored == {
        "factuality": 1,
        "factuality_without_nee": 1,
    }
    # the revision of an item whose step 3 is not consolidated: the item exists
    assert read(gold, [{"item": "q0", "revised_response": "A is C."}]).ignored == {"revision": 1}


def test_indexes_counted_from_one_are_refused_at_the_end_of_each_list(gold):
    """A passage that does not exist (q0's verified claim has two) refuses the file; so does a
    stance of a claim that was never verified (it has no passages)."""
    one_based = [{"item": "q0", "sentence": "sentence1", "claim": 0, "evidence": e, "stance": "refute"} for e in (1, 2)]
    assert errors_of(gold, one_based) == [
        (
            2,
            "evidence",
            "item 'q0' sentence 'sentence1' claim 0 evidence 2 matches no evidence passage of the project",
        )
    ]
    assert errors_of(
        gold,
        [{"item": "q0", "sentence": "sentence1", "claim": 1, "evidence": 0, "stance": "refute"}],
    ) == [
        (
            1,
            "evidence",
            "item 'q0' sentence 'sentence1' claim 1 evidence 0 matches no evidence passage of the project",
        )
    ]


def test_one_line_feeds_every_task_of_its_key_and_field(gold):
    """A stance feeds both stance tasks; a claim line may carry category and factuality; FELM's
    released ids are numbers and are read as the exports' strings."""
    got = read(
        gold,
        [
            {"item": "q1", "sentence": "sentence1", "claim": 0, "evidence": 0, "stance": "refute"},
            {
                "item": "q1",
                "sentence": "sentence1",
                "claim": 0,
                "category": "factual",
                "factuality": "unknown",
            },
        ],
    )
    assert got.errors == []
    assert got.by_task["stance4"] == got.by_task["stance3"] == {("q1", "sentence1", 0, 0): "refute"}
    assert got.by_task["claim_category"] == {("q1", "sentence1", 0): "factual"}
    assert got.by_task["factuality"] == got.by_task["factuality_without_nee"] == {("q1", "sentence1", 0): "unknown"}


def test_numeric_item_ids_are_read_as_the_exports_strings(felm_gold):
    got = read(felm_gold, [{"item": 0, "segment": 1, "label": "error"}])
    assert got.errors == [] and got.by_task["segment"] == {("0", 1): "error"}


def test_dfactscore_predictions_take_booleans_and_are_scored_per_source_model(dfs_project, logged_in):
    lines = [
        {"item": "A", "fact": 0, "supported": True, "global_supported": True},
        {"item": "A", "fact": 1, "supported": False},
        {"item": "A", "fact": 3, "supported": "not_supported"},
        {"item": "B", "fact": 0, "supported": "supported"},
        {"item": "C", "fact": 0, "global_supported": False},
    ]
    assert errors_of(dfs_project, [*lines, {"item": "A", "fact": 9, "supported": 1}]) == [
        (
            6,
            "supported",
            '1 is not a label of supported: one of "not_supported", "supported", true, false',
        )
    ]
    assert errors_of(dfs_project, [{"item": "A", "fact": 9, "supported": True}]) == [
        (1, "fact", "item 'A' fact 9 matches no fact of the project")
    ]
    got = read(dfs_project, lines)
    assert got.ignored == {"support": 1}  # A/3 is irrelevant: no FActScore decision (the default setting)
    run = make_run(dfs_project, lines, resamples=20)
    tasks = scoring.project_tasks(dfs_project)
    for name in ("support", "global_support"):
        expected = scoring.score_task(tasks[name], got.by_task[name], resamples=20)
        assert {key: run.scores[name][key] for key in expected} == json.loads(json.dumps(expected))
    assert [m["model"] for m in run.scores["support"]["paragraph_scores"]["models"]] == ["m1", "m2"]
    page = logged_in("admin").get(f"/projects/{dfs_project.id}/leaderboard/?task=support").content.decode()
    assert "Per source model: the system" in page


# -- a run: stored, scored, refused ------------------------------------------------------------------------


def test_the_api_answers_202_and_the_run_holds_predictions_scores_and_progress(clients, gold, data_dir):
    response, run = post_run(clients["admin"], gold.id, system_lines(), system="checker", version="1.0", resamples=50)
    assert response.status_code == 202 and response["Location"] == response.json()["url"] == run["url"]
    assert run["url"] == f"/api/projects/{gold.id}/system-runs/{run['id']}/"
    assert run["state"] == "done" and run["errors"] == [] and run["created_by"] == "admin"
    assert (run["system"], run["version"], run["source"], run["file_name"]) == (
        "checker",
        "1.0",
        "upload",
        "predictions.jsonl",
    )
    assert run["options"] == {"resamples": 50, "seed": 0}
    assert run["units_total"] > len(system_lines()) and run["units_done"] == run["units_total"]
    assert set(run["scores"]) == {
        "checkworthiness",
        "claim_category",
        "stance4",
        "stance3",
        "factuality",
        "factuality_without_nee",
    }  # no revision predicted: not scored
    stored = SystemRun.objects.get(pk=run["id"])
    assert stored.predictions["checkworthiness"][0] == ["q0", "sentence1", "no"]
    assert len(stored.predictions["stance4"]) == 2 * ITEMS and not stored.file_path
    assert not list((data_dir / "predictions").iterdir())  # the upload is deleted once scored
    listed = clients["admin"].get(f"/api/projects/{gold.id}/system-runs/").json()
    assert [r["id"] for r in listed["results"]] == [run["id"]]


def test_stored_scores_equal_score_task_and_the_baselines_scorings(gold):
    lines = system_lines()
    run = make_run(gold, lines, resamples=40, seed=7)
    tasks = scoring.project_tasks(gold)
    predictions = read(gold, lines).by_task
    machine = scoring.machine_predictions(gold)
    for name, entry in run.scores.items():
        task = tasks[name]
        expected = scoring.score_task(task, predictions[name], resamples=40, seed=7)
        assert {key: entry[key] for key in expected} == json.loads(json.dumps(expected)), name
        assert entry["baselines"] == json.loads(
            json.dumps(scoring.baselines(task, resamples=40, seed=7, machine=machine.get(name)))
        ), name
        assert entry["title"] == task.title and entry["predicted"] == len(predictions[name])
        assert entry["fingerprint"] == prediction_services.fingerprint(task.units)
        assert entry["agreed"] is None  # imported gold: nobody annotated, nothing agreed on


def test_a_file_with_errors_stores_nothing_and_the_run_lists_every_error(clients, gold, data_dir):
    lines = system_lines()
    lines[3] = {**lines[3], "category": "fact"}
    lines[10] = {**lines[10], "item": "q99"}
    response, run = post_run(clients["admin"], gold.id, lines)
    assert response.status_code == 202 and run["state"] == "failed" and run["scores"] is None
    assert [(e["line"], e["field"]) for e in run["errors"]] == [(4, "category"), (11, "item")]
    assert run["units_done"] == run["units_total"] == len(lines)
    stored = SystemRun.objects.get(pk=run["id"])
    assert stored.predictions == {} and not list((data_dir / "predictions").iterdir())


def test_a_system_and_version_is_uploaded_once_unless_replaced(clients, gold):
    first, run = post_run(clients["admin"], gold.id, system_lines(), version="1", resamples=0)
    again, _ = post_run(clients["carol"], gold.id, system_lines(wrong_every=2), version="1", resamples=0)
    assert again.status_code == 400
    assert again.json()["errors"] == [
        {
            "line": 0,
            "field": "version",
            "message": (
                f"system 'checker' version '1' was uploaded already (run {run['id']}, done): give another version, or replace it"
            ),
        }
    ]
    other, second = post_run(clients["admin"], gold.id, system_lines(wrong_every=2), version="2", resamples=0)
    no_version, third = post_run(clients["admin"], gold.id, system_lines(), resamples=0)
    assert other.status_code == no_version.status_code == 202
    replaced, fourth = post_run(
        clients["carol"],
        gold.id,
        system_lines(wrong_every=2),
        version="1",
        resamples=0,
        replace="true",
    )
    assert replaced.status_code == 202 and fourth["created_by"] == "carol"
    assert set(SystemRun.objects.values_list("id", flat=True)) == {
        second["id"],
        third["id"],
        fourth["id"],
    }
    assert fourth["scores"]["checkworthiness"]["accuracy"] != run["scores"]["checkworthiness"]["accuracy"]


def test_a_failed_upload_is_replaced_without_asking(clients, gold):
    _, failed = post_run(clients["admin"], gold.id, [{"item": "nope", "sentence": "sentence1", "checkworthy": "yes"}])
    assert failed["state"] == "failed"
    response, fixed = post_run(clients["admin"], gold.id, system_lines(), resamples=0)
    assert response.status_code == 202 and fixed["state"] == "done"
    assert list(SystemRun.objects.values_list("id", flat=True)) == [fixed["id"]]


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"system": ""}, "system"),
        ({"system": "   "}, "system"),
        ({"system": "x" * 101}, "system"),
        ({"version": "v" * 51}, "version"),
        ({"resamples": 10_001}, "resamples"),
        ({"resamples": -1}, "resamples"),
        ({"seed": -1}, "seed"),
        ({"replace": "perhaps"}, "replace"),
        ({"system": "two\nlines"}, "system"),
    ],
)
def test_bad_options_are_refused_before_anything_is_stored(clients, gold, data_dir, fields, field):
    response, _ = post_run(clients["admin"], gold.id, system_lines(), **fields)
    assert response.status_code == 400
    body = response.json()
    assert field in body or any(e["field"] == field for e in body.get("errors", [])), body
    assert not SystemRun.objects.exists() and not list((data_dir / "predictions").glob("*"))


def test_a_request_without_a_file_is_refused(clients, gold):
    response = clients["admin"].post(f"/api/projects/{gold.id}/system-runs/", {"system": "x"}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()


# -- differences, agreed units, rescoring -----------------------------------------------------------------


def test_each_run_stores_paired_differences_to_the_earlier_runs_and_the_baselines(gold):
    first = make_run(gold, system_lines(wrong_every=3), system="a", resamples=200, seed=1)
    second = make_run(gold, system_lines(wrong_every=2), system="b", resamples=200, seed=1)
    assert "run:" not in json.dumps(first.scores["checkworthiness"]["differences"])
    task = scoring.project_tasks(gold)["checkworthiness"]
    mine, theirs = second.scores["checkworthiness"], first.scores["checkworthiness"]
    diff = mine["differences"][f"run:{first.id}"]
    assert mine["labels"] == theirs["labels"] == ["no", "yes"]  # the same labels: the point is the difference
    for name in ("accuracy", "balanced_accuracy"):
        assert diff[name]["value"] == pytest.approx(mine[name]["value"] - theirs[name]["value"])
    assert diff["macro_f1"]["value"] == pytest.approx(mine["macro"]["f1"]["value"] - theirs["macro"]["f1"]["value"])
    assert diff["macro_f1"]["low"] <= diff["macro_f1"]["value"] <= diff["macro_f1"]["high"]
    # and it is pipeline.scoring.difference on the same units, with the run's resamples and seed
    a = {tuple(row[:-1]): row[-1] for row in second.predictions["checkworthiness"]}
    b = {tuple(row[:-1]): row[-1] for row in first.predictions["checkworthiness"]}
    assert diff == json.loads(json.dumps(task_difference(task, a, b, None, 200, 1)))
    majority = mine["differences"]["baseline:majority"]
    assert majority["accuracy"]["value"] == pytest.approx(
        mine["accuracy"]["value"] - mine["baselines"]["majority"]["scores"]["accuracy"]["value"]
    )


def test_a_difference_with_a_system_that_left_units_out(gold):
    """One system predicts every unit, the other some (the rest "(no prediction)"): the paired
    difference still compares them on the same units and labels (a regression: the two
    confusion matrices had different sizes)."""
    units = [Scored(i // 2, "yes" if i % 3 else "no", "yes") for i in range(12)]
    partial = [Scored(u.item, u.gold, "(no prediction)" if i < 4 else u.gold) for i, u in enumerate(units)]
    result = difference(units, partial, labels=["no", "yes"], resamples=50)
    assert result["accuracy"]["value"] == pytest.approx(8 / 12 - 8 / 12)
    assert result["accuracy"]["low"] is not None


def test_differences_of_revisions_are_paired_means_of_the_distances_to_the_gold(gold):
    task = scoring.Task(
        "revision",
        "revision",
        ("item",),
        field="revised_response",
        measure="revision",
        units=[scoring.GoldUnit((f"r{i}",), "the dog sat", "the cat sat") for i in range(4)],
    )
    exact = {u.key: "the dog sat" for u in task.units}
    unchanged = {u.key: "the cat sat" for u in task.units}
    result = task_difference(task, exact, unchanged, None, 0, 0)
    # the paper's word overlap: "the" and "sat" of the three words of the longer text
    assert result["word_overlap"]["value"] == pytest.approx(1 - 2 / 3)
    assert result["normalised_edit_distance"]["value"] == pytest.approx(0 - 3 / 11)


def test_agreed_units_are_those_all_annotators_agreed_on(felm_gold):
    tasks = scoring.project_tasks(felm_gold)
    agreed = agreed_units(felm_gold, tasks)
    assert agreed["segment"] == {(str(i), k) for i in range(6) for k in range(3) if k != 1 or i % 2}
    # a response: when they agreed on every segment of it
    assert agreed["response"] == {("1",), ("3",), ("5",)}


def test_agreed_only_scores_are_score_tasks_on_the_agreed_units(felm_gold):
    lines = [
        {"item": str(i), "segment": k, "label": "error" if (i + k) % 4 == 0 else "correct"}
        for i in range(6)
        for k in range(3)
    ]
    lines += [{"item": str(i), "response_label": "error" if i % 2 else "correct"} for i in range(6)]
    run = make_run(felm_gold, lines, resamples=30, seed=2)
    tasks = scoring.project_tasks(felm_gold)
    predictions = read(felm_gold, lines).by_task
    agreed = agreed_units(felm_gold, tasks)
    for name in ("segment", "response"):
        entry = run.scores[name]["agreed"]
        expected = scoring.score_task(tasks[name], predictions[name], resamples=30, seed=2, only=agreed[name])
        assert {key: entry[key] for key in expected} == json.loads(json.dumps(expected))
        assert entry["units"] == len(agreed[name]) < run.scores[name]["units"]
        majority = scoring.score_task(
            tasks[name],
            {u.key: "correct" for u in tasks[name].units},
            resamples=30,
            seed=2,
            only=agreed[name],
        )
        assert entry["baselines"]["majority"]["scores"] == json.loads(json.dumps(majority))


def test_a_run_is_scored_again_on_the_current_gold(clients, gold):
    run = make_run(gold, system_lines(), resamples=0)
    import_jsonl(gold, jsonl([bench_line(ITEMS)]), fmt="factcheck-bench", labels_as="gold")
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert prediction_services.rescore_system_runs(gold) == 1
    rescored = SystemRun.objects.get(pk=run.id)
    assert rescored.state == SystemRunState.DONE
    assert rescored.scores["checkworthiness"]["units"] == run.scores["checkworthiness"]["units"] + 2
    assert rescored.scores["checkworthiness"]["missing"] == 2  # the new item has no predictions
    assert rescored.scores["checkworthiness"]["fingerprint"] != run.scores["checkworthiness"]["fingerprint"]
    assert rescored.predictions == run.predictions


def test_a_run_with_stored_predictions_and_no_file_is_only_scored(gold):
    """How an LLM rater's answers are scored: stored predictions, no upload."""
    run = SystemRun.objects.create(
        project=gold,
        system="llm",
        source=SystemRunSource.LLM_RATER,
        options={"resamples": 0, "seed": 0},
        predictions={"checkworthiness": [[f"q{i}", "sentence1", "yes"] for i in range(ITEMS)]},
    )
    with TestCase.captureOnCommitCallbacks(execute=True):
        prediction_services.rescore_system_runs(gold)  # only ended runs: not this one
    assert SystemRun.objects.get(pk=run.id).state == SystemRunState.QUEUED
    scored = run_system_run(run.id)
    assert scored.state == SystemRunState.DONE and set(scored.scores) == {"checkworthiness"}
    assert scored.scores["checkworthiness"]["missing"] == ITEMS  # sentence2 of every item
    assert run_system_run(run.id).scores == scored.scores  # an ended run is not run again


def test_a_run_whose_file_is_gone_fails_with_a_reason(gold, data_dir):
    with TestCase.captureOnCommitCallbacks(execute=False):
        run = create_system_run(project=gold, user=None, upload=upload(system_lines()), system="x")
    (data_dir / run.file_path).unlink()
    ended = run_system_run(run.id)
    assert ended.state == SystemRunState.FAILED
    assert ended.errors[0]["message"].startswith("the uploaded file is gone from the server")


def test_deleting_a_run_removes_it_and_its_scores(clients, gold):
    _, run = post_run(clients["admin"], gold.id, system_lines(), resamples=0)
    assert clients["carol"].delete(f"/api/projects/{gold.id}/system-runs/{run['id']}/").status_code == 204
    assert not SystemRun.objects.exists()
    assert clients["admin"].get(f"/api/projects/{gold.id}/system-runs/{run['id']}/").status_code == 404


# -- the management command ---------------------------------------------------------------------------------


def test_the_command_prints_the_scores(gold, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(upload(system_lines()).getvalue())
    out = io.StringIO()
    call_command(
        "import_predictions",
        str(gold.id),
        str(path),
        "--system",
        "cli",
        "--version",
        "3",
        "--resamples",
        "20",
        stdout=out,
    )
    text = out.getvalue()
    run = SystemRun.objects.get()
    assert (run.system, run.version, run.state, run.file_name) == (
        "cli",
        "3",
        SystemRunState.DONE,
        "p.jsonl",
    )
    f1 = run.scores["checkworthiness"]["macro"]["f1"]
    assert f"scored cli 3 on {gold.name} (run {run.id})" in text
    assert f"Macro F1 {f1['value']:.3f} [{f1['low']:.3f}, {f1['high']:.3f}]" in text
    assert "baseline always yes: Macro F1" in text


def test_the_command_exits_with_every_bad_line(gold, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(
        upload([GOOD, {"item": "q0", "sentence": "sentence1", "claim": 9, "category": "factual"}, "x"]).getvalue()
    )
    with pytest.raises(CommandError) as caught:
        call_command("import_predictions", gold.name, str(path), "--system", "cli")
    assert str(caught.value).splitlines() == [
        "nothing stored:",
        "  line 2, field claim: item 'q0' sentence 'sentence1' claim 9 matches no claim of the project",
        "  line 3, field (json): is not valid JSON: Expecting value at column 1, near «⟨here⟩x»",
    ]
    assert SystemRun.objects.get().state == SystemRunState.FAILED
    with pytest.raises(CommandError, match="refused:\n  system: is required"):
        call_command("import_predictions", gold.name, str(path), "--system", " ")


# -- permissions (API) ----------------------------------------------------------------------------------------


@pytest.fixture
def scored(gold):
    return make_run(gold, system_lines(), resamples=0)


@pytest.mark.parametrize(
    "who, status",
    [("admin", 202), ("carol", 202), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_upload_predictions(clients, gold, who, status):
    response, _ = post_run(clients[who], gold.id, system_lines(), system=f"by {who}", resamples=0)
    assert response.status_code == status
    assert SystemRun.objects.filter(system=f"by {who}").exists() == (status == 202)


@pytest.mark.parametrize(
    "who, status",
    [("admin", 200), ("carol", 200), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_read_runs_and_the_leaderboard(clients, scored, who, status):
    project = scored.project_id
    for url in (
        f"/api/projects/{project}/system-runs/",
        f"/api/projects/{project}/system-runs/{scored.id}/",
        f"/api/projects/{project}/leaderboard/",
    ):
        assert clients[who].get(url).status_code == status, url


@pytest.mark.parametrize(
    "who, status",
    [("admin", 204), ("carol", 204), ("alice", 403), ("mallory", 404), ("anonymous", 401)],
)
def test_who_may_delete_a_run(clients, scored, who, status):
    assert clients[who].delete(f"/api/projects/{scored.project_id}/system-runs/{scored.id}/").status_code == status
    assert SystemRun.objects.filter(pk=scored.id).exists() == (status != 204)


def test_a_run_of_another_project_is_not_found(clients, scored, users):
    other = create_project(name="Other", kind="factcheck", created_by=users["admin"])
    assert clients["admin"].get(f"/api/projects/{other.id}/system-runs/{scored.id}/").status_code == 404
    assert clients["admin"].delete(f"/api/projects/{other.id}/system-runs/{scored.id}/").status_code == 404


def test_a_consolidator_of_another_project_may_not_read_it(clients, scored, users):
    other = create_project(name="Theirs", kind="factcheck", created_by=users["admin"])
    add_member(project=other, user=users["mallory"], role="consolidator")
    assert clients["mallory"].get(f"/api/projects/{scored.project_id}/system-runs/").status_code == 404


# -- two uploads of the same system and version at once --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("the race is tested on PostgreSQL")
def test_two_uploads_of_the_same_system_and_version_at_once_exactly_one_wins(
    racer, live_server, factcheck_project, users
):
    import requests

    import_jsonl(
        factcheck_project,
        jsonl([bench_line(i) for i in range(ITEMS)]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    body = upload(system_lines()).getvalue()
    path = f"/api/projects/{factcheck_project.id}/system-runs/"
    clients = 4
    for round_ in range(5):
        token = {"Authorization": f"Token {racer.token(users['admin'])}"}
        prepared = [
            requests.Request(
                "POST",
                live_server.url + path,
                headers=token,
                files={"file": (f"p{i}.jsonl", body)},
                data={"system": "racer", "version": str(round_), "resamples": "0"},
            ).prepare()
            for i in range(clients)
        ]
        answers = racer.race_raw([("POST", path, request.body, dict(request.headers)) for request in prepared])
        statuses = sorted(status for status, _ in answers)
        assert statuses == [202] + [400] * (clients - 1), answers
        winner = next(answer for status, answer in answers if status == 202)
        assert all("uploaded already" in answer["errors"][0]["message"] for status, answer in answers if status == 400)
        runs = SystemRun.objects.filter(project=factcheck_project, system="racer", version=str(round_))
        assert list(runs.values_list("id", flat=True)) == [winner["id"]]
        assert runs.get().state == SystemRunState.DONE


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("the race is tested on PostgreSQL")
def test_rescores_requested_at_once_queue_each_run_once(racer, live_server, factcheck_project, users, monkeypatch):
    """Parallel "Score every system again" (two researchers, a double click): every scored run
    is queued exactly once and ends scored."""
    from django.test import Client

    from annotation import tasks

    import_jsonl(
        factcheck_project,
        jsonl([bench_line(i) for i in range(ITEMS)]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    runs = [make_run(factcheck_project, system_lines(wrong_every=k), system=f"s{k}", resamples=0) for k in (2, 3, 4)]
    queued: list[int] = []
    lock = threading.Lock()

    def counting_delay(
        run_id,
    ):  # the worker is not run here: the runs stay queued until the round ends
        with lock:
            queued.append(run_id)

    monkeypatch.setattr(tasks.score_system_run, "delay", counting_delay)
    browser = Client()
    browser.force_login(users["admin"])
    token = "a" * 32  # any well-formed CSRF secret, sent as cookie and header alike
    headers = {
        "Cookie": f"sessionid={browser.cookies['sessionid'].value}; csrftoken={token}",
        "X-CSRFToken": token,
    }
    path = f"/projects/{factcheck_project.id}/leaderboard/rescore/"
    clients = 4
    for round_ in range(3):
        queued.clear()
        statuses = [status for status, _ in racer.race_raw([("POST", path, b"", headers)] * clients)]
        assert statuses == [302] * clients, statuses
        assert sorted(queued) == sorted(run.id for run in runs), (round_, queued)
        for run_id in queued:  # the worker's part
            prediction_services.run_system_run(run_id)
        assert set(SystemRun.objects.filter(pk__in=[r.id for r in runs]).values_list("state", flat=True)) == {"done"}
