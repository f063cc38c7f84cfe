"""The revision leaderboard on the paper's subset (issue 29.4): the released file imported as
gold, its gold revisions scored as a system, give Wang et al.'s figures on the page, in the API
and the downloads by default (the 61 false responses), all 94 responses a click away."""

import csv
import io
import json
import re

import pytest
from django.test import TestCase

from annotation.imports.items import import_jsonl
from annotation.models import SystemRun
from annotation.research.predictions import rescore_system_runs
from tests.helpers.paths import shared_data_path
from tests.helpers.research import make_run

pytestmark = pytest.mark.django_db

OVERLAP, DISTANCE = "against_original.word_overlap", "against_original.normalised_edit_distance"


@pytest.fixture
def released_gold(factcheck_project, django_capture_on_commit_callbacks):
    """The released file imported as gold and its gold revisions uploaded as a system's."""
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, handle, fmt="factcheck-bench", labels_as="gold")
    released = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    items = list(factcheck_project.items.order_by("id"))
    lines = [
        {"item": item.external_id or str(item.id), "revised_response": record["revised_response"]}
        for item, record in zip(items, released, strict=True)
    ]
    # and one sentence's checkworthiness: a task scored on every unit only
    lines.append({"item": lines[0]["item"], "sentence": "sentence1", "checkworthy": "yes"})
    make_run(factcheck_project, lines, system="gold revision", resamples=0)
    return factcheck_project


def system_row(board):
    (row,) = [row for row in board["rows"] if row["kind"] == "system"]
    return row


def figures(row):
    return round(row["metrics"][DISTANCE]["value"], 3), round(row["metrics"][OVERLAP]["value"], 3)


def test_the_page_shows_the_papers_figures_by_default_and_all_responses_a_click_away(logged_in, released_gold):
    client = logged_in("admin")
    response = client.get(f"/projects/{released_gold.id}/leaderboard/?task=revision")
    assert response.status_code == 200
    board = response.context["board"]
    assert board["subset"] == "paper" and system_row(board)["units"] == 61
    assert figures(system_row(board)) == (0.354, 0.715)
    # the unchanged response against the gold revision: the same two numbers (both measures are symmetric)
    (unchanged,) = [row for row in board["rows"] if row["kind"] == "baseline"]
    assert round(unchanged["metrics"]["against_gold.word_overlap"]["value"], 3) == 0.715
    page = response.content.decode()
    row = re.search(r'<tr class="system.*?</tr>', page, re.S).group(0)
    assert "0.354" in row and "0.715" in row
    said = re.search(r'<p class="hint" id="leaderboard-subset".*?</p>', page, re.S).group(0)
    assert "Figures over the 61 responses the paper counts as false" in said and "(the paper&#x27;s subset)" in said
    link = re.search(r'<a href="([^"]+)" data-subset="all">all 94 ', said).group(1)

    everything = client.get(f"/projects/{released_gold.id}/leaderboard/{link.replace('&amp;', '&')}")
    board = everything.context["board"]
    assert board["subset"] == "all" and system_row(board)["units"] == 94
    assert figures(system_row(board)) != (0.354, 0.715)
    assert (
        'data-subset="paper">the paper\'s subset: 61 responses the paper counts as false' in everything.content.decode()
    )


def test_the_api_takes_the_subset_and_says_which_the_figures_are_over(clients, released_gold):
    url = f"/api/projects/{released_gold.id}/leaderboard/?task=revision"
    board = clients["admin"].get(url).json()
    assert board["subset"] == "paper" and board["subset_title"].startswith("the 61 responses the paper counts as false")
    assert [(s["name"], s["units"]) for s in board["subsets"]] == [("paper", 61), ("all", 94)]
    assert figures(system_row(board)) == (0.354, 0.715)
    everything = clients["admin"].get(f"{url}&subset=all").json()
    assert everything["subset"] == "all" and system_row(everything)["units"] == 94
    assert everything["subset_title"] == "the 94 units with a gold record"
    for query in ("task=revision&subset=some", "task=checkworthiness&subset=paper"):
        answer = clients["admin"].get(f"/api/projects/{released_gold.id}/leaderboard/?{query}")
        assert answer.status_code == 400 and "subset" in answer.json()


def test_the_downloads_are_of_the_subset_shown(logged_in, released_gold):
    client = logged_in("admin")
    response = client.get(f"/projects/{released_gold.id}/leaderboard/?task=revision&download=csv")
    assert 'leaderboard-revision-paper.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    (system,) = [row for row in rows if row["kind"] == "system"]
    assert (system["subset"], system["units"], round(float(system[OVERLAP]), 3)) == ("paper", "61", 0.715)
    body = json.loads(
        client.get(f"/projects/{released_gold.id}/leaderboard/?task=revision&subset=all&download=json").content
    )
    assert body["subset"] == "all" and system_row(body)["units"] == 94


def test_a_task_without_a_papers_subset_falls_back_to_all_on_the_page(logged_in, released_gold):
    """The page's form keeps the subset when the task changes: a task scored on every unit only
    shows all of them and says so (the API refuses it: above)."""
    response = logged_in("admin").get(f"/projects/{released_gold.id}/leaderboard/?task=checkworthiness&subset=paper")
    assert response.status_code == 200 and response.context["board"]["subset"] == "all"
    assert "This task is scored on every unit only" in response.content.decode()
    assert [s["name"] for s in response.context["board"]["subsets"]] == ["all"]


def test_runs_scored_before_the_subset_existed_show_all_and_are_offered_a_rescore(logged_in, released_gold):
    run = SystemRun.objects.get(project=released_gold)
    del run.scores["revision"]["paper"]
    run.save()
    response = logged_in("admin").get(f"/projects/{released_gold.id}/leaderboard/?task=revision")
    assert response.context["board"]["subset"] == "all"
    assert "No run is scored on the paper's subset yet" in response.content.decode()
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert rescore_system_runs(released_gold) == 1
    board = logged_in("admin").get(f"/projects/{released_gold.id}/leaderboard/?task=revision").context["board"]
    assert board["subset"] == "paper" and figures(system_row(board)) == (0.354, 0.715)
