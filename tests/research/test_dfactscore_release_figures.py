"""D-FActScore's figures of an imported released run on the app's own pages (issue 29): the project
page renders without a machine pre-annotation, and the leaderboard's human FActScore and
D-FActScore are the release's init_score / init_global_score, each over its own list."""

import json

import pytest

from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.models import ItemStage
from annotation.research.scoring import machine_predictions
from annotation.templatetags.scores import decimal, percent
from tests.helpers.builders import jsonl
from tests.helpers.dfactscore_results import (
    CLUB,
    SPLIT_DECISIONS,
    SPLIT_GLOBAL_DECISIONS,
    dfactscore_project,
    release_as_predictions,
    released_run,
    released_run_lines,
)
from tests.helpers.paths import shared_data_path
from tests.helpers.research import make_run


def example_run() -> dict:
    return {"model": "example", **json.loads(shared_data_path("dfactscore", "example-result.json").read_text())}


@pytest.fixture
def runs():
    return [released_run("split", SPLIT_DECISIONS, SPLIT_GLOBAL_DECISIONS), example_run()]


@pytest.fixture
def imported(users, runs):
    """Both runs imported as gold, no machine pre-annotation (its tasks never ran)."""
    project = dfactscore_project(users)
    lines = released_run_lines(runs[0], "s") + released_run_lines(runs[1], "e")
    import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="gold")
    return project, lines


def test_the_split_run_scores_each_list_over_its_own_facts(runs):
    # by hand: plain 4/5 and 1/2, grouped 2/4 and 1/2 (the club fact is unsupported)
    assert runs[0]["init_score"] == pytest.approx((4 / 5 + 1 / 2) / 2)
    assert runs[0]["init_global_score"] == pytest.approx((2 / 4 + 1 / 2) / 2)


def test_score_filters_show_a_dash_for_undefined_values():
    for undefined in (None, "", "n/a", True, float("nan")):
        assert percent(undefined) == "–" and decimal(undefined) == "–"
    assert percent(0.75) == "75.0" and percent(0) == "0.0" and decimal(2.128) == "2.13"


def test_the_project_page_shows_an_imported_release_without_machine_scores(imported, runs, logged_in):
    project, _ = imported
    response = logged_in("admin").get(f"/projects/{project.id}/")
    assert response.status_code == 200
    page = response.content.decode()
    table = page[page.index('class="grid dfs-scores') : page.index("</table>", page.index('class="grid dfs-scores'))]
    for run in runs:
        row = table[table.index(f"<td>{run['model']}</td>") :].split("</tr>")[0]
        assert f'data-score="factscore">{run["init_score"] * 100:.1f}<' in row
        assert f'data-score="dfactscore">{run["init_global_score"] * 100:.1f}<' in row
        # no machine pre-annotation: its two scores and the difference are undefined
        assert row.count("<td>–</td>") + row.count('">–</td>') >= 3


def test_the_leaderboard_human_figures_are_the_releases(imported, runs, logged_in):
    """The release's own decisions uploaded as a system: the human figures per model are the
    release's init_score / init_global_score, and the system is 0 away from them on both."""
    project, lines = imported
    run = make_run(project, release_as_predictions(lines), resamples=0)
    assert run.state == "done", run.error
    releases = {r["model"]: r for r in runs}
    for task, key in (("support", "init_score"), ("global_support", "init_global_score")):
        scores = run.scores[task]["paragraph_scores"]
        assert scores["mean_difference"]["value"] == 0
        models = {m["model"]: m for m in scores["models"]}
        assert set(models) == set(releases)
        for model, release in releases.items():
            assert models[model]["human"][key] == release[key], (task, model)
            assert models[model]["system"][key] == release[key] and models[model]["difference"][key] == 0
    page = logged_in("admin").get(f"/projects/{project.id}/leaderboard/?task=support").content.decode()
    assert f"<td>{releases['split']['init_score']:.3f}</td>" in page


def test_the_machine_predicts_the_release_entries_of_its_facts(imported):
    """Against a kept release, each fact's machine decision is keyed by the entry with its atom:
    the grouped list's club fact is not in the plain list, so it predicts no FActScore unit."""
    project, lines = imported
    stage = ItemStage.objects.select_related("gold").get(item__project=project, item__external_id="s0")
    stage.suggestion = get_kind("dfactscore").suggestion_from_labels(1, stage.gold.payload)
    stage.save()
    facts = [fact["text"] for fact in stage.content["facts"]]
    assert facts[3] == CLUB
    machine = machine_predictions(project)
    assert sorted(key for item, key in machine["support"] if item == "s0") == [0, 1, 2]
    assert sorted(key for item, key in machine["global_support"] if item == "s0") == [0, 1, 2, 3]
    plain = [entry["atom"] for entry in lines[0]["decisions"]]
    assert all(plain[key] == facts[key] for item, key in machine["support"] if item == "s0")
