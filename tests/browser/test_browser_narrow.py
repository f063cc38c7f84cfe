"""The annotator's pages on a phone (390 × 844, an iPhone 12–15 in portrait), in a real browser.

For each page: it does not scroll sideways, every table fits or scrolls inside its own box, and
no word of the interface (labels, buttons, headings, the save bar) is broken across lines.
Pages: FELM annotation and consolidation, Factcheck-Bench steps 1, 2 and 3, the agreement
page, the consolidation list and the home page. Screenshots go to /tmp (``BROWSER_SCREENSHOTS``
overrides the directory).
"""

import pytest

from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD
from tests.helpers.phone import PHONE, check_phone_layout
from tests.helpers.research import make_run, system_lines

pytestmark = pytest.mark.browser


@pytest.fixture
def phone(browser, live_server, problems):
    """``phone(username)``: a fresh 390 px wide page logged in as ``username``."""

    def open_as(username):
        return login(browser, live_server.url, username, PASSWORD, problems, viewport=PHONE)

    return open_as


def test_felm_pages_fit_a_phone(phone, felm_project, felm_pages):
    from playwright.sync_api import expect

    alice = phone("alice")
    check_phone_layout(alice, f"/assignments/{felm_pages['assignment'].id}/", "felm_annotate")
    alice.keyboard.press("x")  # an error: the error type and the reason unfold
    alice.keyboard.press("l")  # and the references
    expect(alice.locator(".segment.current .ref-input")).to_be_focused()
    expect(alice.locator(".segment.current select.error-type")).to_be_visible()
    check_phone_layout(alice, None, "felm_annotate_error")
    expect(alice.locator("#save-status")).to_have_text("Saved")
    carol = phone("carol")
    check_phone_layout(carol, f"/consolidations/{felm_pages['consolidation'].id}/", "felm_consolidate")
    check_phone_layout(carol, f"/projects/{felm_project.id}/consolidations/", "consolidation_list")
    check_phone_layout(carol, "/", "home")


def test_the_agreement_page_fits_a_phone_and_names_labels_as_people_read_them(phone, felm_project, felm_pages):
    from playwright.sync_api import expect

    admin = phone("admin")
    check_phone_layout(admin, f"/projects/{felm_project.id}/agreement/", "agreement")
    matrix = admin.locator("section[data-field=error_type] table.matrix")
    expect(matrix.locator("thead th")).to_have_text(["A \\ B", "Irrelevant to the question", "Knowledge error"])
    expect(matrix.locator("tbody th")).to_have_text(["Irrelevant to the question", "Knowledge error"])
    expect(admin.locator("section[data-field=label] table.matrix thead th")).to_have_text(
        ["A \\ B", "Correct", "Error"]
    )
    assert "knowledge_error" not in admin.locator("main").inner_text()
    # A FELM project has one step: no "step 1" in its title.
    expect(admin.locator("h1")).to_have_text(f"Agreement {felm_project.name}")


def test_factcheck_steps_fit_a_phone(phone, factcheck_project, factcheck_pages):
    from playwright.sync_api import expect

    alice = phone("alice")
    for step, assignment in factcheck_pages.items():
        check_phone_layout(alice, f"/assignments/{assignment.id}/", f"factcheck_step{step}")
        expect(alice.locator(".source .meta")).to_contain_text(f"step {step}")
    admin = phone("admin")
    check_phone_layout(admin, f"/projects/{factcheck_project.id}/agreement/", "agreement_factcheck")
    expect(admin.locator("h1")).to_contain_text("step 1")


def test_the_project_and_item_pages_fit_a_phone(phone, felm_project, felm_pages):
    """The admin's pages too: their tables (progress, items, members, history) scroll in their box."""
    admin = phone("admin")
    check_phone_layout(admin, f"/projects/{felm_project.id}/", "project")
    item = felm_project.items.order_by("id").first()
    check_phone_layout(admin, f"/projects/{felm_project.id}/items/{item.id}/", "item")
    check_phone_layout(admin, f"/projects/{felm_project.id}/settings/", "settings")


def test_the_research_pages_fit_a_phone(phone, gold):  # noqa: F811 (the fixture imported above)
    """A researcher reads the leaderboard (table, differences, plot, upload form) and the LLM
    rater's page on a phone too."""
    for name, wrong_every in (("checker", 2), ("better checker", 4)):
        make_run(gold, system_lines(wrong_every=wrong_every), system=name, resamples=50)
    admin = phone("admin")
    check_phone_layout(admin, f"/projects/{gold.id}/leaderboard/", "leaderboard")
    assert admin.locator(".plot svg").count() >= 1
    check_phone_layout(admin, f"/projects/{gold.id}/leaderboard/?task=stance3", "leaderboard_stance")
    check_phone_layout(admin, f"/projects/{gold.id}/llm-rater/", "llm_rater")
