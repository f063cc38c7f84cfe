"""FELM suggestions in a real browser: shown beside the choices with where they came from,
never selected (issue 10)."""

import pytest

from annotation.imports.items import import_jsonl
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD, felm_line, jsonl

pytestmark = pytest.mark.browser


def test_felm_suggestions_are_hints_not_answers(browser, live_server, users, felm_project, problems):
    from playwright.sync_api import expect

    line = felm_line(
        1,
        ["Paris is in France.", "Berlin is in Spain."],
        labels=[True, False],
        comment=["", "Berlin is in Germany."],
        type=[None, "knowledge_error"],
    )
    import_jsonl(felm_project, jsonl([line]), fmt="felm", labels_as="suggestion")
    page = login(browser, live_server.url, "alice", PASSWORD, problems)
    page.goto(f"/projects/{felm_project.id}/")
    page.get_by_role("link", name="Annotate", exact=True).click()
    hints = page.locator(".felm-hint")
    expect(hints).to_have_count(2)
    expect(hints.nth(0)).to_contain_text("suggested: Correct")
    expect(hints.nth(1)).to_contain_text("suggested: Contains an error (Knowledge error)")
    expect(hints.nth(1)).to_contain_text("reason: Berlin is in Germany.")
    expect(hints.nth(1).locator(".fc-suggested")).to_have_attribute(
        "title", "suggested by the imported labels: not selected for you"
    )
    expect(page.locator(".segment button[aria-pressed=true]")).to_have_count(0)
    expect(page.locator("#completeness")).to_have_text("0/2 segments complete")
    page.keyboard.press("c")
    expect(page.locator(".segment").first.locator(".label-correct")).to_have_attribute("aria-pressed", "true")
    assert not problems.errors, problems.errors
