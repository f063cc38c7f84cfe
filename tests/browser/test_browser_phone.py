"""On a phone (390 px): what a person needs is on the screen without swiping sideways.

The home page's Annotate and Consolidate buttons are within the screen; the project page's and
the leaderboard's tables show each row as a card instead of scrolling sideways; D-FActScore's fact
chips show the whole fact; its sticky footer covers no heading that the page scrolls to.
Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory).
"""

import os
import re
from pathlib import Path

import pytest

from annotation.models import Assignment
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD
from tests.helpers.research import make_run, system_lines

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))
PHONE = {"width": 390, "height": 844}

# Runs in the page: every table, and the page itself, within the screen's width.
WIDER_THAN_SCREEN = r"""() => {
  const problems = [];
  if (document.documentElement.scrollWidth > window.innerWidth) problems.push(`page ${document.documentElement.scrollWidth}px wide`);
  for (const table of document.querySelectorAll("main table")) {
    const box = table.getBoundingClientRect();
    if (box.width && (box.right > window.innerWidth + 0.5 || table.scrollWidth > table.clientWidth + 1)) {
      problems.push(`table "${(table.textContent || "").trim().slice(0, 50)}" reaches ${Math.round(box.right)}px`);
    }
  }
  return problems;
}"""


def phone_page(browser, live_server, problems, username):
    return login(browser, live_server.url, username, PASSWORD, problems, viewport=PHONE)


def within_screen(page, locator):
    box = locator.bounding_box()
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]


def test_home_buttons_and_project_tables_fit_a_phone(browser, live_server, problems, felm_project, felm_pages):
    from playwright.sync_api import expect

    for username, button in (("alice", "Annotate"), ("carol", "Consolidate")):
        page = phone_page(browser, live_server, problems, username)
        link = page.get_by_role("link", name=button, exact=True).first
        expect(link).to_be_visible()
        assert within_screen(page, link), f"{username}'s {button} button is off-screen: {link.bounding_box()}"
        assert page.evaluate(WIDER_THAN_SCREEN) == []
        page.screenshot(path=str(SCREENSHOTS / f"phone_home_{username}.png"), full_page=True)
    admin = phone_page(browser, live_server, problems, "admin")
    admin.goto(f"/projects/{felm_project.id}/")
    admin.wait_for_load_state("networkidle")
    admin.screenshot(path=str(SCREENSHOTS / "phone_project.png"), full_page=True)
    assert admin.evaluate(WIDER_THAN_SCREEN) == []
    # each cell is shown under its column's name
    first_row = admin.locator("table.stack").first.locator("tbody tr").first
    assert first_row.locator("td").first.get_attribute("data-label")


def test_leaderboard_tables_fit_a_phone(browser, live_server, problems, gold):  # noqa: F811
    for name, wrong_every in (("checker", 2), ("a checker with a long name", 4)):
        make_run(gold, system_lines(wrong_every=wrong_every), system=name, resamples=50)
    admin = phone_page(browser, live_server, problems, "admin")
    for task in ("", "?task=stance3"):
        admin.goto(f"/projects/{gold.id}/leaderboard/{task}")
        admin.wait_for_load_state("networkidle")
        admin.screenshot(
            path=str(SCREENSHOTS / f"phone_leaderboard{task.replace('?task=', '_')}.png"),
            full_page=True,
        )
        assert admin.evaluate(WIDER_THAN_SCREEN) == []


def test_dfactscore_chips_show_the_whole_fact_and_the_footer_hides_no_heading(
    browser, live_server, problems, users, dfactscore_project
):
    from playwright.sync_api import expect

    stage = dfactscore_project.items.get().stages.get()
    alice = phone_page(browser, live_server, problems, "alice")
    alice.goto(f"/assignments/{Assignment.objects.get(item_stage=stage, user=users['alice']).id}/")
    chips = alice.locator(".dfs-chip-text")
    expect(chips.first).to_be_visible()
    cut = chips.evaluate_all(
        "nodes => nodes.filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.textContent)"
    )
    facts = [fact["text"] for fact in stage.content["facts"]]
    assert max(map(len, facts)) > 40, "the test needs a fact longer than the old cut"
    assert sorted(chips.all_inner_texts()) == sorted(facts)
    heading = alice.get_by_role("heading", name=re.compile("^Step B"))
    heading.evaluate("node => node.scrollIntoView({block: 'end'})")
    alice.wait_for_timeout(100)
    alice.screenshot(path=str(SCREENSHOTS / "phone_dfactscore_step_b.png"))
    covered = heading.evaluate("""node => {
      const box = node.getBoundingClientRect();
      const foot = document.querySelector(".panel-foot").getBoundingClientRect();
      return box.bottom > foot.top;
    }""")
    assert (cut, covered) == ([], False), (
        f"chips cut on a phone: {cut}; the footer covers the Step B heading: {covered}"
    )
