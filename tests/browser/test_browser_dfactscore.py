"""A D-FActScore paragraph in a real browser: alice and bob group its facts into individuals
(keys and drag), link each individual to a candidate page and label the facts; carol settles
their one disagreement; the project page's score table then shows FActScore and D-FActScore.

The paragraph merges two invented men who share a name: the birth year belongs to the composer,
but the paragraph gives it to the footballer. So the fact is supported by some page (FActScore)
but not by its individual's page (D-FActScore): 4/4 against 3/4.

Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory).
"""

import os
import re
from pathlib import Path

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import Consolidation, GoldRecord
from tests.helpers.browser import login, open_consolidation_as, open_first_assignment
from tests.helpers.builders import PASSWORD, jsonl
from tests.helpers.dfactscore import answer, paragraph_line
from tests.helpers.phone import PHONE, check_phone_layout

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))


def annotate(page, *, birth_year_individual: str, drag: bool):
    """Two individuals; facts 1–2 in the first (the composer's page), 3–4 in the second (the
    footballer's); the birth year goes where ``birth_year_individual`` says."""
    from playwright.sync_api import expect

    keyboard = page.keyboard
    expect(page.locator("#dfs-facts > li")).to_have_count(4)
    # The legend names the keys the page binds (keys.js, the one list of them).
    expect(page.locator(".keys dt[data-keys]")).to_have_text(["s / n / i", "a / ⇧A"])
    # Suggestions are shown, never selected.
    expect(page.locator("#completeness")).to_have_text(
        re.compile(r"^0/4 facts done · 0/0 individuals linked · still required: ")
    )
    keyboard.press("+")
    keyboard.press("+")
    expect(page.locator(".dfs-count-value")).to_have_text("2")
    keyboard.press("1")
    keyboard.press("s")
    keyboard.press("a")
    keyboard.press("g")
    keyboard.press("1")
    keyboard.press("j")
    keyboard.press("1")
    keyboard.press("s")
    keyboard.press("a")
    keyboard.press("j")
    keyboard.press(birth_year_individual)
    keyboard.press("n" if birth_year_individual == "2" else "s")
    keyboard.press("a")
    keyboard.press("j")
    if drag:
        # Drag the fourth fact's chip from "Not in an individual yet" into individual 2.
        page.locator(".dfs-loose .dfs-chip[data-fact='3']").drag_to(page.locator(".dfs-individual[data-group='1']"))
    else:
        keyboard.press("2")
    expect(page.locator(".dfs-individual[data-group='1'] .dfs-chip[data-fact='3']")).to_be_visible()
    keyboard.press("s")
    # A submit before every individual is linked is refused, naming what is missing.
    keyboard.press("Control+Enter")
    expect(page.locator("#errors")).to_contain_text("Individual 2, page link")
    expect(page.locator("#errors")).to_contain_text("Fact 4, any page: supported by any page? missing")
    expect(page.locator("#errors li")).to_have_count(3)  # the summary and the two fields
    page.locator(".dfs-individual[data-group='1'] select").select_option(label="2. Tobias Wrenfield (footballer)")
    page.locator("#dfs-facts > li").nth(3).click()  # the select keeps focus: the keys go to the page again
    keyboard.press("a")
    expect(page.locator("#errors")).to_be_empty()
    expect(page.locator("#completeness")).to_have_text("4/4 facts done · 2/2 individuals linked")
    # Step B shows the linked page beside: the footballer's page for the fourth fact.
    expect(page.locator(".dfs-page.linked h3")).to_have_text("2. Tobias Wrenfield (footballer)")
    keyboard.press("Control+Enter")


def test_two_annotators_group_link_and_label_a_paragraph_and_the_scores_show(
    browser, live_server, users, dfactscore_project, problems
):
    from playwright.sync_api import expect

    project = dfactscore_project
    base = live_server.url
    for name, individual, drag in (("alice", "2", True), ("bob", "1", False)):
        page = open_first_assignment(browser, base, project, name, problems)
        # The facts are marked in the paragraph; a click selects the first of the stretch's facts,
        # the next click the next one.
        sentence = page.locator(".dfs-fact-span").filter(has_text="Norwich City")
        sentence.click()
        expect(page.locator("#dfs-facts > li.current")).to_contain_text("3. Tobias Wrenfield was born in 1958.")
        sentence.click()
        expect(page.locator("#dfs-facts > li.current")).to_contain_text("4. Tobias Wrenfield played for Norwich City.")
        expect(sentence).to_have_class(re.compile(r"\bcurrent\b"))
        page.keyboard.press("k")
        page.keyboard.press("k")
        page.keyboard.press("k")
        # The pages are searchable: a filter shows the pages that match, the matches marked.
        page.locator("#dfs-search").fill("1961")
        expect(page.locator(".dfs-page:not([hidden])")).to_have_count(1)
        expect(page.locator(".dfs-page:not([hidden]) mark")).to_have_text("1961")
        page.locator("#dfs-search").fill("")
        page.locator("#dfs-search").press("Escape")
        annotate(page, birth_year_individual=individual, drag=drag)
        page.wait_for_url(f"**/projects/{project.id}/")
        page.context.close()

    consolidation = Consolidation.objects.get(item_stage__item__project=project)
    page = open_consolidation_as(browser, base, "carol", PASSWORD, problems, project, consolidation)
    third = page.locator("#dfs-facts > li").nth(2)
    # The consolidator starts at the disagreement, outlined, with both answers under it.
    expect(third).to_have_class(re.compile(r"\bcurrent\b"))
    expect(third.locator(".dfs-label.disagree")).to_be_visible()
    expect(third.locator(".fc-their")).to_have_count(6)  # A and B under individual, label and any page
    page.screenshot(path=str(SCREENSHOTS / "dfactscore-consolidation.png"), full_page=True)
    page.keyboard.press("t")
    page.keyboard.press("a")
    expect(third.locator(".dfs-label button[aria-pressed=true]")).to_have_text(re.compile("^Not supported"))
    page.get_by_role("button", name="Save gold record").click()
    page.wait_for_url(f"**/projects/{project.id}/consolidations/")
    gold = GoldRecord.objects.get(item_stage=consolidation.item_stage).payload
    assert [f["group"] for f in gold["facts"]] == [0, 0, 1, 1]
    assert [f["label"] for f in gold["facts"]] == [
        "supported",
        "supported",
        "not_supported",
        "supported",
    ]
    assert gold["groups"] == [{"link": 0}, {"link": 1}]
    page.context.close()

    admin = login(browser, base, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{project.id}/")
    table = admin.locator("table.dfs-scores")
    expect(table.locator("thead")).to_contain_text("FActScore")
    expect(table.locator("thead")).to_contain_text("D-FActScore")
    row = table.locator("tbody tr", has_text="demo-model")
    expect(row.locator("td[data-score=factscore]")).to_have_text("100.0")
    expect(row.locator("td[data-score=dfactscore]")).to_have_text("75.0")
    admin.screenshot(path=str(SCREENSHOTS / "dfactscore-project.png"), full_page=True)
    assert not problems.errors, problems.errors


def test_the_dfactscore_pages_fit_a_phone(browser, live_server, users, dfactscore_project, problems):
    """Annotation (with individuals, so the chips and the link selects are there) and consolidation at 390 px."""
    from playwright.sync_api import expect

    from annotation.models import Assignment
    from annotation.services.annotations import save_annotation

    project = dfactscore_project
    # A second paragraph for alice to annotate on the phone; the first goes to consolidation.
    import_jsonl(project, jsonl([paragraph_line() | {"id": "second"}]), fmt="dfactscore")
    first = project.items.get(external_id="wrenfield")
    for name, group, label in (("alice", 1, "not_supported"), ("bob", 0, "supported")):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=first)
        save_annotation(assignment=assignment, payload=answer(group, label), version=0, submit=True)
    consolidation = Consolidation.objects.get(item_stage__item=first)

    alice = login(browser, live_server.url, "alice", PASSWORD, problems, viewport=PHONE)
    mine = Assignment.objects.get(user=users["alice"], item_stage__item__external_id="second")
    check_phone_layout(alice, f"/assignments/{mine.id}/", "dfactscore_annotate")
    alice.keyboard.press("+")
    alice.keyboard.press("+")
    alice.keyboard.press("1")
    expect(alice.locator(".dfs-individual[data-group='0'] .dfs-chip")).to_have_count(1)
    expect(alice.locator("#save-status")).to_have_text("Saved")
    check_phone_layout(alice, None, "dfactscore_annotate_grouped")
    carol = login(browser, live_server.url, "carol", PASSWORD, problems, viewport=PHONE)
    check_phone_layout(carol, f"/consolidations/{consolidation.id}/", "dfactscore_consolidate")
