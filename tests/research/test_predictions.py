"""Scoring automatic fact-checkers from uploaded predictions: a run stored and scored (its scores
equal to annotation.research.scoring's), refused uploads, baselines, paired differences,
agreed-only scores, versions and rescoring."""

import json

import pytest
from django.test import TestCase

from annotation.imports.items import import_jsonl
from annotation.models import SystemRun, SystemRunSource, SystemRunState
from annotation.research import predictions as prediction_services
from annotation.research import scoring
from annotation.research.predictions import agreed_units, create_system_run, run_system_run, task_difference
from pipeline.scoring import Scored, difference
from tests.helpers.builders import jsonl
from tests.helpers.research import ITEMS, bench_line, make_run, post_run, read, system_lines, upload

pytestmark = pytest.mark.django_db


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
