"""The FELM annotation page in a real browser: compact segment cards (the note and the
references folded until asked for with r / l or filled), the current segment highlighted in
the response on the left, and a refused submit that lists every incomplete segment."""

import re

import pytest

from annotation.models import Annotation
from tests.helpers.browser import NINE, card, open_item

pytestmark = pytest.mark.browser


def test_a_900px_screen_shows_most_of_a_nine_segment_item(browser, live_server, users, felm_project, problems):
    page, _ = open_item(browser, live_server, problems, felm_project, users, NINE)
    cards = page.locator("#segments > li.segment")
    bar_top = page.locator(".savebar").bounding_box()["y"]
    in_view = [box for box in (cards.nth(k).bounding_box() for k in range(9)) if box["y"] + box["height"] <= bar_top]
    # Before the cards were folded, two and a half segments showed at 1280 × 900.
    assert len(in_view) >= 5, f"only {len(in_view)} of 9 segments are in view above the save bar"


def test_note_and_links_unfold_on_r_and_l_and_stay_open_when_filled(
    browser, live_server, users, felm_project, problems
):
    from playwright.sync_api import expect

    page, assignment = open_item(browser, live_server, problems, felm_project, users, NINE[:3])
    expect(page.locator("#segments textarea.comment")).to_have_count(0)
    expect(page.locator("#segments .ref-input")).to_have_count(0)
    expect(card(page, 0).locator("button.unfold")).to_have_text(["Add a note r", "Add a link l"])

    page.keyboard.press("c")
    page.keyboard.press("r")
    note = card(page, 0).locator("textarea.comment")
    expect(note).to_be_focused()
    page.keyboard.type("Checked against NASA's page.")
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.press("l")
    link = card(page, 1).locator(".ref-input")
    expect(link).to_be_focused()
    page.keyboard.type("https://science.nasa.gov/black-holes/")
    page.keyboard.press("Enter")
    expect(card(page, 1).locator(".ref-list a")).to_have_text(["https://science.nasa.gov/black-holes/"])
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.keyboard.press("x")  # an error needs its reason: it unfolds without asking
    expect(card(page, 2).locator("label.note")).to_contain_text("Reason")
    expect(card(page, 2).locator(".ref-input")).to_have_count(0)
    expect(page.locator("#save-status")).to_have_text("Saved")
    stored = Annotation.objects.get(assignment=assignment).payload["segments"]
    assert (stored[0]["comment"], stored[1]["refs"]) == (
        "Checked against NASA's page.",
        ["https://science.nasa.gov/black-holes/"],
    )

    # Reopened: what holds text is open, the rest folded.
    page.reload()
    expect(card(page, 0).locator("textarea.comment")).to_have_value("Checked against NASA's page.")
    expect(card(page, 0).locator(".ref-input")).to_have_count(0)
    expect(card(page, 1).locator(".ref-list a")).to_have_count(1)
    expect(card(page, 1).locator("textarea.comment")).to_have_count(0)
    # The folded control works with the mouse too.
    card(page, 1).get_by_role("button", name="Add a note").click()
    expect(card(page, 1).locator("textarea.comment")).to_be_focused()


def test_the_current_segment_is_highlighted_in_the_response(browser, live_server, users, felm_project, problems):
    from playwright.sync_api import expect

    segments = [
        "The tower is 330 m tall.",
        "It was built by <b>Eiffel</b>'s company.",
        "The merger of the firms came later.",
    ]
    # As in the released data, a segment may have lost words the response has ("It's worth noting that").
    response = (
        "The tower is 330 m\ntall. It was built by <b>Eiffel</b>'s company.\n\n"
        "It's worth noting that the merger of the firms came later."
    )
    page, _ = open_item(browser, live_server, problems, felm_project, users, segments, response)
    marked = page.locator(".source .response .response-segment")
    expect(marked).to_have_text(
        [
            "The tower is 330 m\ntall.",
            "It was built by <b>Eiffel</b>'s company.",
            "the merger of the firms came later.",
        ]
    )
    # The response reads as before (its text, line breaks kept; the markup is shown as text).
    assert page.locator(".source .response").evaluate("(box) => box.textContent") == response
    assert page.locator(".source .response b").count() == 0

    expect(marked.nth(0)).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("j")
    expect(marked.nth(1)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(marked.nth(0)).not_to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("x")
    expect(marked.nth(1)).to_have_class(re.compile(r"\bhas-error\b"))
    # A click on the response goes to that segment; focus in a card makes it the current one.
    marked.nth(2).click()
    expect(card(page, 2)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(marked.nth(2)).to_have_class(re.compile(r"\bcurrent\b"))
    card(page, 0).locator(".label-correct").focus()
    expect(card(page, 0)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(marked.nth(0)).to_have_class(re.compile(r"\bcurrent\b"))


def test_a_refused_submit_lists_every_incomplete_segment(browser, live_server, users, felm_project, problems):
    from playwright.sync_api import expect

    page, assignment = open_item(browser, live_server, problems, felm_project, users, NINE[:4])
    page.keyboard.press("c")
    page.keyboard.press("j")
    page.keyboard.press("x")  # segment 2: an error with neither type nor reason
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("c")  # segment 4 done; segment 3 untouched
    page.keyboard.press("Control+Enter")
    errors = page.locator("#errors li:not(.summary)")
    expect(errors).to_have_text(["Segment 2: error type and reason are missing", "Segment 3: label is missing"])
    expect(page.locator("#errors li.summary")).to_have_text("Not submitted: 2 segments are not done.")
    expect(card(page, 1)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(card(page, 1)).to_have_class(re.compile(r"\binvalid\b"))
    expect(card(page, 2)).to_have_class(re.compile(r"\binvalid\b"))

    # Each entry leads to its segment, focused on what it lacks; the list shrinks as they get done.
    errors.nth(1).get_by_role("button", name="Segment 3").click()
    expect(card(page, 2)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(card(page, 2).locator(".label-correct")).to_be_focused()
    page.keyboard.press("c")
    expect(errors).to_have_text(["Segment 2: error type and reason are missing"])
    expect(page.locator("#errors li.summary")).to_have_text("Not submitted: 1 segment is not done.")
    errors.nth(0).get_by_role("button", name="Segment 2").click()
    expect(card(page, 1).locator("select.error-type")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    expect(errors).to_have_text(["Segment 2: reason is missing"])
    page.keyboard.press("r")
    page.keyboard.type("The paper says otherwise.")
    expect(page.locator("#errors li")).to_have_count(0)
    expect(page.locator("#save-status")).to_have_text("Saved")
    assert not Annotation.objects.get(assignment=assignment).submitted

    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: f"/assignments/{assignment.id}/" not in url)
    assert Annotation.objects.get(assignment=assignment).submitted


def test_an_empty_segment_shows_nothing_to_decide_and_does_not_block_the_submit(
    browser, live_server, users, felm_project, problems
):
    """Released FELM lines have empty strings as segments (issue 19): shown as such, no label asked."""
    from playwright.sync_api import expect

    page, assignment = open_item(
        browser,
        live_server,
        problems,
        felm_project,
        users,
        ["Mars is a planet.", "", "Venus is a planet."],
    )
    expect(card(page, 1)).to_have_text("(empty segment: nothing to decide)")
    expect(card(page, 1).locator("button")).to_have_count(0)
    expect(page.locator("#completeness")).to_contain_text("1/3 segments complete")
    page.keyboard.press("c")
    page.keyboard.press("j")
    page.keyboard.press("c")  # on the empty segment: nothing to label
    page.keyboard.press("j")
    page.keyboard.press("c")
    expect(page.locator("#completeness")).to_contain_text("3/3 segments complete")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: f"/assignments/{assignment.id}/" not in url)
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.submitted and [s["label"] for s in annotation.payload["segments"]] == [
        True,
        None,
        True,
    ]
