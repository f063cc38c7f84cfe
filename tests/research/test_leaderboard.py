"""The leaderboard: rows per system version and baseline, the reference and the differences to
it, agreed-only scores, stale rows after the gold changed, CSV/JSON downloads, the page with
its plot, and who may see and use it."""

import csv
import io
import json

import pytest
from django.test import TestCase

from annotation.imports.items import import_jsonl
from annotation.models import SystemRun
from annotation.research import predictions as prediction_services
from annotation.research import scoring
from annotation.research.leaderboard import leaderboard, negated, run_difference
from tests.helpers.builders import jsonl
from tests.helpers.research import ITEMS, bench_line, make_run, system_lines, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(gold):
    """Three runs of two systems: "a" 1 and 2 (better), then "b"."""
    return {
        "a1": make_run(gold, system_lines(wrong_every=2), system="a", version="1", resamples=100),
        "a2": make_run(gold, system_lines(wrong_every=4), system="a", version="2", resamples=100),
        "b": make_run(gold, system_lines(wrong_every=3), system="b", resamples=100),
    }


def f1(run, task="checkworthiness"):
    return run.scores[task]["macro"]["f1"]["value"]


def test_systems_by_their_latest_version_then_the_baselines(gold, runs):
    board = leaderboard(gold, "checkworthiness")
    assert [t["name"] for t in board["tasks"]] == [
        "checkworthiness",
        "claim_category",
        "stance4",
        "stance3",
        "factuality",
        "factuality_without_nee",
    ]
    assert f1(runs["a2"]) > f1(runs["b"]) > f1(runs["a1"])
    rows = board["rows"]
    assert [(r["kind"], r["label"]) for r in rows] == [
        ("system", "a 2"),
        ("system", "a 1"),
        ("system", "b"),
        ("baseline", "always yes"),
        ("baseline", "random (gold label frequencies)"),
    ]
    # subtask 1's headline: accuracy and macro P/R/F1 (the paper's Table 3), the rest a click away
    assert [m["name"] for m in board["metrics"]] == [
        "accuracy",
        "macro_precision",
        "macro_recall",
        "macro_f1",
    ]
    assert [m["name"] for m in board["other_metrics"]] == ["balanced_accuracy"]
    assert rows[0]["metrics"]["macro_f1"] == runs["a2"].scores["checkworthiness"]["macro"]["f1"]
    assert rows[0]["metrics"]["balanced_accuracy"] == runs["a2"].scores["checkworthiness"]["balanced_accuracy"]
    assert rows[2]["per_label"] == runs["b"].scores["checkworthiness"]["per_label"]
    assert not any(r["stale"] for r in rows)


def test_the_reference_is_the_best_system_and_every_other_row_has_its_paired_difference(gold, runs):
    board = leaderboard(gold, "checkworthiness")
    assert board["reference"] == runs["a2"].id
    by_label = {r["label"]: r for r in board["rows"]}
    assert by_label["a 2"]["reference"] and by_label["a 2"]["difference"] is None
    # b was scored after a2: its run holds b − a2; a1 was scored before: a2's run holds a2 − a1, negated
    b_minus_a2 = runs["b"].scores["checkworthiness"]["differences"][f"run:{runs['a2'].id}"]
    assert by_label["b"]["difference"] == {
        "macro_f1": b_minus_a2["macro_f1"],
        "accuracy": b_minus_a2["accuracy"],
    }
    a2_minus_a1 = runs["a2"].scores["checkworthiness"]["differences"][f"run:{runs['a1'].id}"]
    a1 = by_label["a 1"]["difference"]["macro_f1"]
    assert a1["value"] == pytest.approx(-a2_minus_a1["macro_f1"]["value"])
    assert (a1["low"], a1["high"]) == pytest.approx((-a2_minus_a1["macro_f1"]["high"], -a2_minus_a1["macro_f1"]["low"]))
    assert a1["value"] == pytest.approx(f1(runs["a1"]) - f1(runs["a2"]))
    majority = by_label["always yes"]["difference"]["accuracy"]
    ref = runs["a2"].scores["checkworthiness"]
    assert majority["value"] == pytest.approx(
        ref["baselines"]["majority"]["scores"]["accuracy"]["value"] - ref["accuracy"]["value"]
    )
    # another reference: the differences are to it
    other = leaderboard(gold, "checkworthiness", reference=runs["b"].id)
    assert other["reference"] == runs["b"].id
    a2 = next(r for r in other["rows"] if r["label"] == "a 2")["difference"]["macro_f1"]
    assert a2 == negated(b_minus_a2)["macro_f1"]
    assert run_difference(runs["a1"], runs["b"], "checkworthiness", "all") == negated(
        runs["b"].scores["checkworthiness"]["differences"][f"run:{runs['a1'].id}"]
    )


def test_unknown_tasks_and_references_are_refused(gold, runs, users):
    with pytest.raises(ValueError) as caught:
        leaderboard(gold, "nonsense")
    assert "task" in caught.value.args[0]
    with pytest.raises(ValueError) as caught:
        leaderboard(gold, "checkworthiness", reference=10**9)
    assert caught.value.args[0] == {"reference": "must be the id of a run scored on this task"}
    empty = leaderboard(scoring_project(users))
    assert empty["tasks"] == [] and empty["rows"] == [] and empty["task"] is None


def scoring_project(users):
    from annotation.services.projects import create_project

    return create_project(name="Nothing scored", kind="felm", created_by=users["admin"])


def test_agreed_only_rows_use_the_agreed_scores(felm_gold):  # noqa: F811
    lines = [
        {"item": str(i), "segment": k, "label": "error" if (i + k) % 4 == 0 else "correct"}
        for i in range(6)
        for k in range(3)
    ]
    run = make_run(felm_gold, lines, resamples=20)
    board = leaderboard(felm_gold, "segment", agreed=True)
    assert board["agreed"] and board["agreed_available"]
    assert board["rows"][0]["metrics"]["accuracy"] == run.scores["segment"]["agreed"]["accuracy"]
    assert board["rows"][0]["units"] == run.scores["segment"]["agreed"]["units"] == 15
    everything = leaderboard(felm_gold, "segment")
    assert everything["rows"][0]["units"] == 18


def test_the_projects_machine_pre_annotation_is_a_baseline(felm_gold):  # noqa: F811
    from annotation.models import ItemStage

    ItemStage.objects.filter(item__project=felm_gold).update(
        suggestion={"segments": [{"label": True}, {"label": False}, {"label": True}]}
    )
    lines = [{"item": str(i), "segment": k, "label": "correct"} for i in range(6) for k in range(3)]
    run = make_run(felm_gold, lines, resamples=20)
    task = scoring.project_tasks(felm_gold)["segment"]
    machine = scoring.machine_predictions(felm_gold)["segment"]
    assert run.scores["segment"]["baselines"]["machine"] == json.loads(
        json.dumps(scoring.baselines(task, resamples=20, machine=machine)["machine"])
    )
    board = leaderboard(felm_gold, "segment")
    assert [r["label"] for r in board["rows"] if r["kind"] == "baseline"] == [
        "always correct",
        "random (gold label frequencies)",
        "the project's machine pre-annotation",
    ]
    machine_row = board["rows"][-1]
    assert machine_row["metrics"]["accuracy"]["value"] == pytest.approx(
        14 / 18
    )  # it calls segment 1 an error: wrong in items 1, 2, 4, 5
    assert machine_row["difference"]["accuracy"]["value"] == pytest.approx(
        14 / 18 - board["rows"][0]["metrics"]["accuracy"]["value"]
    )


def test_runs_scored_on_other_gold_are_stale_until_scored_again(gold, runs):
    import_jsonl(gold, jsonl([bench_line(ITEMS)]), fmt="factcheck-bench", labels_as="gold")
    newer = make_run(gold, system_lines(wrong_every=5), system="c", resamples=0)
    board = leaderboard(gold, "checkworthiness")
    stale = {r["label"]: r["stale"] for r in board["rows"] if r["kind"] == "system"}
    assert stale == {"a 2": True, "a 1": True, "b": True, "c": False}
    assert board["reference"] == newer.id  # the best among the runs on the current gold
    assert all(r["difference"] is None for r in board["rows"] if r["kind"] == "system" and r["stale"])
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert prediction_services.rescore_system_runs(gold) == 4
    board = leaderboard(gold, "checkworthiness")
    assert not any(r["stale"] for r in board["rows"])
    assert all(r["difference"] is not None for r in board["rows"] if not r["reference"])


def test_a_revision_task_ranks_by_the_overlap_with_the_gold_revision(gold):
    task = scoring.Task(
        "revision",
        "Subtask 5: revised response",
        ("item",),
        field="revised_response",
        measure="revision",
        units=[scoring.GoldUnit((f"r{i}",), "the dog sat here", "the cat sat here") for i in range(6)],
    )
    tasks = {"revision": task}
    close = {u.key: "the dog sat here" for u in task.units}
    far = {u.key: "a cat" for u in task.units}
    for name, predictions in (("far", far), ("close", close)):
        run = SystemRun.objects.create(project=gold, system=name, state="done", predictions={}, options={})
        others = [prediction_services._Other(r.id, {"revision": far}) for r in SystemRun.objects.exclude(pk=run.id)]
        run.scores = prediction_services.score_predictions(
            gold, tasks, {"revision": predictions}, resamples=20, seed=0, others=others, machine={}
        )
        run.save()
    board = leaderboard(gold, "revision")
    assert board["measure"] == "revision" and board["metrics"][0]["name"] == "against_gold.word_overlap"
    assert [r["label"] for r in board["rows"]] == [
        "close",
        "far",
        "unchanged response (the original)",
    ]
    assert board["rows"][1]["difference"]["word_overlap"]["value"] < 0
    assert board["rows"][0]["metrics"]["against_gold.normalised_edit_distance"]["value"] == 0.0


# -- the page ---------------------------------------------------------------------------------------------


def test_the_page_shows_the_table_the_plot_and_the_uploads(logged_in, gold, runs):
    response = logged_in("admin").get(f"/projects/{gold.id}/leaderboard/")
    assert response.status_code == 200
    page = response.content.decode()
    board = response.context["board"]
    assert page.count('<tr class="system') == 3 and page.count('<tr class="baseline') == 2
    assert page.count('<g class="plot-bar') == len(board["rows"]) == 5
    assert "Accuracy, 95 % CI" in page and "Ranked by Accuracy" in page
    assert "Other figures" in page and "Balanced accuracy" in page
    assert 'class="badge open">reference' in page and "Per-label precision, recall and F1" in page
    assert page.count('class="system-run"') == 3 and 'id="predictions-form"' in page
    assert f'data-run-url="/api/projects/{gold.id}/system-runs/{runs["b"].id}/"' in page
    assert "js/system_runs.js" in page
    agreed = logged_in("admin").get(f"/projects/{gold.id}/leaderboard/?task=stance3&agreed=1").content.decode()
    assert (
        "No system is scored on the agreed units of this task." in agreed and "no unit of this task" in agreed.lower()
    )


def test_the_page_escapes_what_users_named(logged_in, gold):
    make_run(gold, system_lines(), system="<script>alert(1)</script>", version="<b>v</b>", resamples=0)
    page = logged_in("admin").get(f"/projects/{gold.id}/leaderboard/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>v</b>" not in page


@pytest.mark.parametrize("query", ["task=nonsense", "reference=abc", "agreed=perhaps", "download=xml"])
def test_bad_parameters_are_a_400(logged_in, gold, runs, query):
    assert logged_in("admin").get(f"/projects/{gold.id}/leaderboard/?{query}").status_code == 400


def test_a_reference_of_another_task_falls_back_to_the_best_system(logged_in, gold, runs):
    only_checkworthiness = make_run(
        gold,
        [{"item": "q0", "sentence": "sentence1", "checkworthy": "yes"}],
        system="tiny",
        resamples=0,
    )
    response = logged_in("admin").get(
        f"/projects/{gold.id}/leaderboard/?task=stance4&reference={only_checkworthiness.id}"
    )
    assert response.status_code == 200 and response.context["board"]["reference"] == runs["a2"].id
    assert "is not scored on these units" in response.content.decode()


def test_csv_and_json_downloads_of_the_table(logged_in, gold, runs):
    client = logged_in("carol")
    response = client.get(f"/projects/{gold.id}/leaderboard/?task=factuality&download=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="Factcheck-test-leaderboard-factuality.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    board = leaderboard(gold, "factuality")
    assert [(r["kind"], r["system"], r["version"], r["baseline"]) for r in rows] == [
        (row["kind"], row["system"] or "", row["version"], row["baseline"] or "") for row in board["rows"]
    ]
    first = board["rows"][0]
    assert float(rows[0]["macro_f1"]) == pytest.approx(first["metrics"]["macro_f1"]["value"], abs=1e-5)
    assert float(rows[0]["macro_f1_low"]) == pytest.approx(first["metrics"]["macro_f1"]["low"], abs=1e-5)
    assert rows[0]["reference"] == "1" and rows[0]["difference_macro_f1"] == ""
    assert float(rows[1]["difference_accuracy"]) == pytest.approx(
        board["rows"][1]["difference"]["accuracy"]["value"], abs=1e-5
    )
    response = client.get(f"/projects/{gold.id}/leaderboard/?task=factuality&download=json")
    assert 'filename="Factcheck-test-leaderboard-factuality.json"' in response["Content-Disposition"]
    body = json.loads(response.content)
    assert body["project"] == gold.name and body["rows"] == json.loads(json.dumps(board["rows"]))


def test_the_csv_keeps_spreadsheet_formulas_as_text(logged_in, gold):
    make_run(gold, system_lines(), system='=HYPERLINK("x")', version="@1", resamples=0)
    text = b"".join(logged_in("admin").get(f"/projects/{gold.id}/leaderboard/?download=csv").streaming_content).decode()
    row = next(r for r in csv.DictReader(io.StringIO(text)) if r["kind"] == "system")
    assert row["system"] == '\'=HYPERLINK("x")' and row["version"] == "'@1"


def test_the_api_leaderboard_is_the_pages_table(clients, gold, runs):
    body = (
        clients["admin"]
        .get(f"/api/projects/{gold.id}/leaderboard/?task=claim_category&reference={runs['b'].id}")
        .json()
    )
    assert body == json.loads(json.dumps(leaderboard(gold, "claim_category", reference=runs["b"].id)))
    for query, field in (
        ("task=x", "task"),
        ("reference=1x", "reference"),
        ("agreed=perhaps", "agreed"),
        (f"reference={10**9}", "reference"),
    ):
        response = clients["admin"].get(f"/api/projects/{gold.id}/leaderboard/?{query}")
        assert response.status_code == 400 and field in response.json(), query


# -- the page's uploads -------------------------------------------------------------------------------------


def post_page_upload(client, project, lines, **fields) -> str:
    """POST the page's form; the scoring runs when the test's transaction would commit, after
    the answer (in a real request, before it): the page shown next says how it went."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(
            f"/projects/{project.id}/leaderboard/upload/",
            {
                "file": upload(lines),
                "system": "paged",
                "version": "",
                "resamples": "0",
                "seed": "0",
                **fields,
            },
        )
    assert response.status_code == 302 and response["Location"] == f"/projects/{project.id}/leaderboard/"
    return client.get(response["Location"]).content.decode()


def test_an_upload_on_the_page_is_scored_and_listed(logged_in, gold):
    page = post_page_upload(logged_in("carol"), gold, system_lines())
    assert "paged is being checked and scored: its progress is shown under Uploads." in page
    run = SystemRun.objects.get()
    assert run.created_by.username == "carol" and run.state == "done"
    page = logged_in("carol").get(f"/projects/{gold.id}/leaderboard/").content.decode()
    assert '<tr class="system reference"' in page and '<span class="badge done" data-role="state">Done</span>' in page
    again = post_page_upload(logged_in("carol"), gold, system_lines())
    assert (
        "Predictions refused: line 0, field version: system &#x27;paged&#x27; (no version) was uploaded already"
        in again
    )
    post_page_upload(
        logged_in("admin"),
        gold,
        [{"item": "q0", "sentence": "sentence1", "checkworthy": "maybe"}],
        system="broken",
    )
    page = logged_in("admin").get(f"/projects/{gold.id}/leaderboard/").content.decode()
    assert "Nothing was stored: line 1, field checkworthy: &quot;maybe&quot; is not a label of checkworthy" in page
    missing = post_page_upload(logged_in("admin"), gold, system_lines(), system="")
    assert "Predictions refused: system: This field is required." in missing


@pytest.mark.parametrize("who, status", [("admin", 200), ("carol", 200), ("alice", 403), ("mallory", 404)])
def test_who_may_open_the_leaderboard(logged_in, gold, runs, who, status):
    assert logged_in(who).get(f"/projects/{gold.id}/leaderboard/").status_code == status
    assert logged_in(who).get(f"/projects/{gold.id}/leaderboard/?download=csv").status_code == status


def test_anonymous_visitors_are_sent_to_log_in(client, gold):
    for url in (
        f"/projects/{gold.id}/leaderboard/",
        f"/projects/{gold.id}/leaderboard/?download=json",
    ):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    response = client.post(f"/projects/{gold.id}/leaderboard/upload/", {"system": "x"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("who, status", [("admin", 302), ("carol", 302), ("alice", 403), ("mallory", 404)])
def test_who_may_upload_delete_and_rescore_on_the_page(logged_in, gold, runs, who, status):
    client = logged_in(who)
    with TestCase.captureOnCommitCallbacks(execute=True):
        upload_answer = client.post(
            f"/projects/{gold.id}/leaderboard/upload/",
            {"file": upload(system_lines()), "system": f"by {who}"},
        )
        rescore = client.post(f"/projects/{gold.id}/leaderboard/rescore/")
    delete = client.post(f"/projects/{gold.id}/system-runs/{runs['b'].id}/delete/")
    assert (upload_answer.status_code, rescore.status_code, delete.status_code) == (
        status,
        status,
        status,
    )
    assert SystemRun.objects.filter(system=f"by {who}").exists() == (status == 302)
    assert SystemRun.objects.filter(pk=runs["b"].id).exists() == (status != 302)


def test_the_leaderboard_pages_forms_need_a_csrf_token(gold, users):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    assert client.post(f"/projects/{gold.id}/leaderboard/upload/", {"system": "x"}).status_code == 403
    assert client.post(f"/projects/{gold.id}/leaderboard/rescore/").status_code == 403


def test_the_project_nav_links_the_leaderboard_for_admins_and_consolidators_only(logged_in, gold):
    link = f'href="/projects/{gold.id}/leaderboard/"'
    assert link in logged_in("admin").get(f"/projects/{gold.id}/").content.decode()
    assert link in logged_in("carol").get(f"/projects/{gold.id}/").content.decode()
    assert link not in logged_in("alice").get(f"/projects/{gold.id}/").content.decode()
