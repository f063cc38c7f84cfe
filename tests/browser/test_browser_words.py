"""Step 2's `c` key: the pre-filled correction is selected, so typing replaces it (the legend says so)."""

import pytest

from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD

pytestmark = pytest.mark.browser


def test_c_selects_the_prefilled_correction_so_typing_replaces_it(
    browser, live_server, problems, factcheck_project, factcheck_pages
):
    from playwright.sync_api import expect

    page = login(browser, live_server.url, "alice", PASSWORD, problems)
    page.goto(f"/assignments/{factcheck_pages[2].id}/")
    claim = factcheck_pages[2].item_stage.content["claims"][0]["text"]
    page.keyboard.press("Shift+Y")  # needs an edit: the correction opens, pre-filled with the claim
    page.keyboard.press("c")
    field = page.locator("#fc2-correction")
    expect(field).to_be_focused()
    expect(field).to_have_value(claim)
    assert field.evaluate("node => [node.selectionStart, node.selectionEnd]") == [0, len(claim)]
    page.keyboard.type("Marie Curie won the Nobel Prize in Physics in 1903.")
    expect(field).to_have_value("Marie Curie won the Nobel Prize in Physics in 1903.")
    # An edited correction is not selected again: the cursor goes to its end.
    page.keyboard.press("Escape")
    page.keyboard.press("c")
    assert field.evaluate("node => [node.selectionStart, node.selectionEnd]") == [len(field.input_value())] * 2
    expect(page.locator(".keys, details").filter(has_text="type to replace it").first).to_be_attached()
