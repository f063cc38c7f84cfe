"""Issue 21's rough edges, in a real browser (Debian's chromium through Playwright): typed
links never dropped, every step of the agreement page one click away, waiting consolidations
visible, progress that names what is still required, keys for every required field, step-3
consolidation starting from the revisions, the leaderboard's Δ, one rater-name convention.

Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory)."""
import os
from pathlib import Path

import pytest

from annotation.models import Annotation, Assignment

from .browser_support import login
from .conftest import PASSWORD
from .test_browser_felm_cards import card, open_item, NINE

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))
LINK = "https://science.nasa.gov/black-holes/"


def shoot(page, name):
    page.screenshot(path=str(SCREENSHOTS / f"rough-{name}.png"), full_page=True)


def stored_refs(assignment):
    return [s["refs"] for s in Annotation.objects.get(assignment=assignment).payload["segments"]]


def test_a_typed_felm_link_is_added_on_esc_and_ctrl_enter_submits_it(browser, live_server, users, felm_project, problems):
    from playwright.sync_api import expect

    page, assignment = open_item(browser, live_server, problems, felm_project, users, NINE[:2])
    page.keyboard.press("x")
    page.keyboard.press("1")
    page.keyboard.press("r")
    page.keyboard.type("Wrong galaxy.")
    page.keyboard.press("Escape")
    page.keyboard.press("l")
    page.keyboard.type(LINK)
    page.keyboard.press("Escape")  # the key list says Esc leaves a text field: the link is kept
    expect(card(page, 0).locator(".ref-list a")).to_have_text([LINK])
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.press("l")
    page.keyboard.type(LINK + "two")
    page.keyboard.press("Control+Enter")  # straight from the box: added before the submit
    page.wait_for_url(lambda url: f"/assignments/{assignment.id}/" not in url)
    assert Annotation.objects.get(assignment=assignment).submitted
    assert stored_refs(assignment) == [[LINK], [LINK + "two"]]


def test_a_typed_felm_link_is_added_on_blur_and_a_bad_one_refuses_the_submit(
        browser, live_server, users, felm_project, problems):
    from playwright.sync_api import expect

    page, assignment = open_item(browser, live_server, problems, felm_project, users, NINE[:2])
    page.keyboard.press("c")
    page.keyboard.press("l")
    page.keyboard.type(LINK)
    card(page, 1).locator(".label-correct").click()  # a click elsewhere: the link is added and the click lands
    expect(card(page, 0).locator(".ref-list a")).to_have_text([LINK])
    expect(card(page, 1).locator(".label-correct")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#save-status")).to_have_text("Saved")
    assert stored_refs(assignment) == [[LINK], []]

    card(page, 1).locator("button.unfold[data-part=refs]").click()
    card(page, 1).locator(".ref-input").fill("not a link")
    page.locator("#submit").click()
    expect(page.locator("#errors")).to_contain_text("“not a link” is not an http(s) link")
    expect(page.locator("#completeness")).to_have_text("1/2 segments complete")
    shoot(page, "felm-bad-link-1280")
    assert not Annotation.objects.get(assignment=assignment).submitted
    card(page, 1).locator(".ref-input").fill("")
    page.locator("#submit").click()
    page.wait_for_url(lambda url: f"/assignments/{assignment.id}/" not in url)
    assert stored_refs(assignment) == [[LINK], []]
