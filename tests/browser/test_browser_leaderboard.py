"""Scoring a fact-checker in a real browser: the admin uploads predictions on the leaderboard
page, sees the upload end, the table with the system and the baselines, and the plot; a run a
worker scores later is followed by polling until the page shows it."""

import re

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import SystemRun
from annotation.research.predictions import create_system_run, run_system_run
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD, jsonl
from tests.helpers.research import ITEMS, bench_line, system_lines, upload

pytestmark = pytest.mark.browser


def test_an_admin_scores_a_system_and_sees_the_leaderboard(browser, live_server, users, factcheck_project, problems):
    from playwright.sync_api import expect

    project = factcheck_project
    import_jsonl(
        project,
        jsonl([bench_line(i) for i in range(ITEMS)]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    admin = login(browser, live_server.url, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{project.id}/")
    admin.locator(".projectnav").get_by_role("link", name="Leaderboard").click()
    admin.wait_for_url(f"**/projects/{project.id}/leaderboard/")
    expect(admin.locator("#leaderboard-empty")).to_be_visible()

    # -- upload on the page: the run ends (here within the request: no broker) ------------------
    admin.locator("#id_file").set_input_files(
        {
            "name": "checker.jsonl",
            "mimeType": "application/jsonl",
            "buffer": upload(system_lines()).getvalue(),
        }
    )
    admin.locator("#id_system").fill("checker")
    admin.locator("#id_version").fill("1")
    admin.locator("#id_resamples").fill("200")
    admin.get_by_role("button", name="Upload and score").click()
    expect(admin.locator(".messages li.success")).to_have_text("checker 1 is scored.")
    run_row = admin.locator(".system-run").first
    expect(run_row.locator("[data-role=state]")).to_have_text("Done")
    expect(run_row.locator("[data-role=progress]")).to_be_hidden()
    run = SystemRun.objects.get()
    expect(run_row.locator("[data-role=units]")).to_have_text(f"{run.units_total} of {run.units_total} steps")

    # -- the table: the system and the baselines, with intervals ------------------------------------
    table = admin.locator("#leaderboard table.leaderboard")
    expect(table.locator("tbody tr.system")).to_have_count(1)
    expect(table.locator("tbody tr.system").first).to_contain_text("checker 1")
    expect(table.locator("tbody tr.baseline")).to_have_count(2)
    expect(table.locator("tbody tr.baseline").first).to_contain_text("always yes")
    # subtask 1 leads with accuracy, as the paper's Table 3
    accuracy = run.scores["checkworthiness"]["accuracy"]
    expect(table.locator("tbody tr.system td.metric").first).to_contain_text(
        f"{accuracy['value']:.3f} [{accuracy['low']:.3f}, {accuracy['high']:.3f}]"
    )

    # -- the plot: one bar per row, each with its interval ----------------------------------------------
    plot = admin.locator("#leaderboard figure.plot-bars svg")
    expect(plot).to_be_visible()
    bars = plot.locator("g.plot-bar")
    expect(bars).to_have_count(3)
    expect(bars.first.locator("rect")).to_have_count(1)
    expect(bars.first.locator("title")).to_contain_text("checker 1")
    expect(plot.locator("path.plot-whisker")).to_have_count(3)

    # -- the per-label scores behind their toggle ---------------------------------------------------------
    details = admin.locator("details.per-label")
    expect(details.locator("table")).to_be_hidden()
    details.locator("summary").click()
    expect(details.locator("table")).to_be_visible()
    expect(details.locator("tbody tr")).to_have_count(6)  # yes/no for the system and both baselines

    # -- another task --------------------------------------------------------------------------------------
    admin.locator("#leaderboard-options select[name=task]").select_option("stance3")
    admin.get_by_role("button", name="Show").click()
    admin.wait_for_url(re.compile(r"task=stance3"))
    expect(admin.locator("#leaderboard h2")).to_have_text("Subtask 3: stance (three labels)")

    # -- a run scored by a worker later: the page follows it and shows it when it ends ----------------
    queued = create_system_run(
        project=project,
        user=users["admin"],
        upload=upload(system_lines(wrong_every=2)),
        system="later",
        resamples=50,
        queue=False,
    )
    admin.goto(f"/projects/{project.id}/leaderboard/")
    row = admin.locator(".system-run", has_text="later")
    expect(row.locator("[data-role=state]")).to_have_text("Queued")
    expect(row.locator("[data-role=progress]")).to_be_visible()
    run_system_run(queued.id)  # as the worker would
    expect(admin.locator("#leaderboard tbody tr.system")).to_have_count(2, timeout=15_000)
    expect(admin.locator(".system-run", has_text="later").locator("[data-role=state]")).to_have_text("Done")
    expect(admin.locator("#leaderboard figure.plot-bars g.plot-bar")).to_have_count(4)
