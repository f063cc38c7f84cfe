"""Factcheck-Bench step 1 in a real browser (Debian's chromium through Playwright).

One scenario, end to end: a plain (prompt, response) item is imported and pre-annotated by
the offline pipeline; alice and bob decompose it blind, starting from the machine
suggestions, mostly with the keyboard (sentence importance and checkworthiness for every
sentence, claim category and importance for every claim, one claim edited; bob adds a claim so the
decompositions differ); carol consolidates on the page, taking fields from A or B, and saves
the gold record, which opens step 2 of the item.

Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory).
"""

import os
import re
from pathlib import Path

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import (
    Annotation,
    Assignment,
    Consolidation,
    GoldRecord,
    ItemStage,
    StageStatus,
)
from tests.helpers.browser import open_consolidation_as, open_first_assignment
from tests.helpers.builders import PASSWORD, jsonl

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))

PROMPT = "Who was Marie Curie?"
SENTENCES = [
    "Marie Curie was born in Warsaw in 1867.",
    "She won two Nobel Prizes, and she discovered polonium.",
    "I think she was the greatest scientist.",
]
# What the offline pipeline suggests for them (decontextualised sentence 2, split into two claims).
DECONTEXT_2 = "Marie Curie won two Nobel Prizes, and she discovered polonium."
NOBEL = "Marie Curie won two Nobel Prizes."
POLONIUM = "Marie Curie discovered polonium."
ALICE_POLONIUM = "Marie Curie discovered the element polonium."
PHYSICIST = "Marie Curie was a physicist."
CAROL_POLONIUM = "Marie Curie discovered the chemical element polonium."


def claim(text, category, importance):
    return {"text": text, "category": category, "importance": importance}


def gold_sentence(decontext, importance, checkworthy, claims):
    return {
        "decontext": decontext,
        "importance": importance,
        "checkworthy": checkworthy,
        "claims": claims,
    }


def sentence_node(page, index):
    return page.locator("#sentences > li.fc-sentence").nth(index)


def claim_node(page, index):
    return page.locator("#editor .fc-claim").nth(index)


def press(page, *keys):
    for key in keys:
        page.keyboard.press(key)


def pressed(group):
    """The pressed button of a choice group."""
    return group.locator("button[aria-pressed=true]")


def expect_claim_texts(page, texts):
    from playwright.sync_api import expect

    fields = page.locator("#editor .fc-claim-text")
    expect(fields).to_have_count(len(texts))
    for index, text in enumerate(texts):
        expect(fields.nth(index)).to_have_value(text)


def expect_current(page, index):
    from playwright.sync_api import expect

    expect(sentence_node(page, index)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator("#editor .fc-original")).to_have_text(SENTENCES[index])


def expect_saved(page):
    from playwright.sync_api import expect

    # plain words: no version number for the annotator (the tests check what was stored)
    expect(page.locator("#save-status")).to_have_text("Saved")
    expect(page.locator("#save-status")).to_have_attribute("data-state", "saved")


def check_suggestions_shown_not_selected(page):
    """The page starts from the machine suggestion: texts pre-filled, judgements left open."""
    from playwright.sync_api import expect

    expect(page.locator("#sentences > li.fc-sentence")).to_have_count(3)
    expect(page.locator("#sentences .fc-sentence-text")).to_have_text(SENTENCES)
    expect(page.locator("#sentences .fc-state")).to_have_text(["todo", "todo", "todo"])
    expect(page.locator("#completeness")).to_have_text("0/3 sentences done")
    expect(page.locator("#submit")).to_have_attribute("aria-disabled", "true")
    expect(page.locator("#editor .fc-provenance")).to_contain_text("backend offline")
    expect(page.locator(".keys dt")).to_contain_text(["1 / 2 / 3", "y / n"])
    expect(pressed(page.locator("#editor .fc-importance"))).to_have_count(0)
    expect(pressed(page.locator("#editor .fc-checkworthy"))).to_have_count(0)
    expect(page.locator("#editor .fc-importance").locator("xpath=..").locator(".fc-suggested")).to_have_text(
        "suggested: Yes"
    )
    assert page.locator(".fc-compare").count() == 0  # blind: nobody else's work on the page
    page.locator("#sentences .fc-sentence-pick").nth(1).click()
    expect_current(page, 1)
    expect(page.locator("#editor .fc-decontext")).to_have_value(DECONTEXT_2)
    expect_claim_texts(page, [NOBEL, POLONIUM])
    expect(page.locator("#editor .fc-category button[aria-pressed=true]")).to_have_count(0)
    expect(page.locator("#editor .fc-category").locator("xpath=..").locator(".fc-suggested")).to_have_text(
        ["suggested: Factual"] * 2
    )
    expect(page.locator("#editor .fc-claim-importance button[aria-pressed=true]")).to_have_count(0)
    page.keyboard.press("k")
    expect_current(page, 0)


def alice_annotates(page):
    from playwright.sync_api import expect

    keyboard = page.keyboard
    check_suggestions_shown_not_selected(page)
    # sentence 1: importance yes, checkworthy, its one claim factual and most important
    keyboard.press("1")
    keyboard.press("y")
    keyboard.press("f")
    keyboard.press("q")
    expect(pressed(page.locator("#editor .fc-importance"))).to_have_attribute("data-value", "yes")
    expect(pressed(page.locator("#editor .fc-checkworthy"))).to_have_attribute("data-value", "yes")
    expect(pressed(claim_node(page, 0).locator(".fc-claim-importance"))).to_have_attribute("data-value", "yes")
    expect(sentence_node(page, 0).locator(".fc-state")).to_have_text("done")
    # d edits the decontextualised sentence (the d is not typed), Esc leaves it
    keyboard.press("d")
    expect(page.locator("#editor .fc-decontext")).to_be_focused()
    keyboard.press("Escape")
    expect(page.locator("#editor .fc-decontext")).not_to_be_focused()
    expect(page.locator("#editor .fc-decontext")).to_have_value(SENTENCES[0])

    keyboard.press("j")
    expect_current(page, 1)
    press(page, "2", "y", "f", "q", "]")
    expect(claim_node(page, 1)).to_have_class(re.compile(r"\bcurrent\b"))
    press(page, "f", "w")
    expect(pressed(claim_node(page, 1).locator(".fc-claim-importance"))).to_have_attribute("data-value", "intermediate")
    expect(pressed(claim_node(page, 0).locator(".fc-claim-importance"))).to_have_attribute("data-value", "yes")
    # Enter edits the selected claim's text
    keyboard.press("Enter")
    text = claim_node(page, 1).locator(".fc-claim-text")
    expect(text).to_be_focused()
    keyboard.press("Control+a")
    keyboard.type(ALICE_POLONIUM)
    keyboard.press("Escape")
    expect(text).not_to_be_focused()
    expect(text).to_have_value(ALICE_POLONIUM)
    expect(sentence_node(page, 1).locator(".fc-state")).to_have_text("done")
    page.screenshot(path=str(SCREENSHOTS / "factcheck_annotate.png"))

    # Ctrl+Enter with a sentence left to do jumps to it and says what is missing.
    keyboard.press("Control+Enter")
    expect_current(page, 2)
    expect(page.locator("#errors")).to_contain_text(
        "Sentence 3: still to do: importance; checkworthiness; claim 1: category, importance"
    )
    expect(page.locator("#editor .fc-missing")).to_contain_text("Still to do: importance")
    keyboard.press("3")
    keyboard.press("n")
    expect(pressed(page.locator("#editor .fc-checkworthy"))).to_have_attribute("data-value", "no")
    # a adds a claim and puts the cursor in it; Delete removes the selected claim
    keyboard.press("a")
    expect(page.locator("#editor .fc-claim")).to_have_count(2)
    expect(claim_node(page, 1).locator(".fc-claim-text")).to_be_focused()
    keyboard.type("Curie was great.")
    keyboard.press("Escape")
    expect(claim_node(page, 1).locator(".fc-claim-text")).to_have_value("Curie was great.")
    keyboard.press("Delete")
    expect(page.locator("#editor .fc-claim")).to_have_count(1)
    expect_claim_texts(page, [SENTENCES[2]])
    expect(claim_node(page, 0).locator(".fc-suggested").first).to_have_text("suggested: Opinion")
    keyboard.press("o")
    keyboard.press("e")
    expect(page.locator("#completeness")).to_have_text("3/3 sentences done")
    expect(page.locator("#submit")).to_have_attribute("aria-disabled", "false")
    expect_saved(page)


def bob_annotates(page):
    from playwright.sync_api import expect

    keyboard = page.keyboard
    expect(page.locator("#sentences > li.fc-sentence")).to_have_count(3)
    assert page.locator(".fc-compare").count() == 0
    # nothing of alice's is on bob's page: the edited claim shows the suggestion
    page.locator("#sentences .fc-sentence-pick").nth(1).click()
    expect_claim_texts(page, [NOBEL, POLONIUM])
    expect(pressed(page.locator("#editor .fc-importance"))).to_have_count(0)
    keyboard.press("ArrowUp")
    expect_current(page, 0)

    keyboard.press("2")  # alice said "yes"
    keyboard.press("y")
    keyboard.press("f")
    keyboard.press("q")
    # "Reset to suggestion" clears the judgements of the sentence; "Undo reset" brings them back
    page.get_by_role("button", name="Reset to suggestion").click()
    expect(pressed(page.locator("#editor .fc-importance"))).to_have_count(0)
    expect(pressed(claim_node(page, 0).locator(".fc-claim-importance"))).to_have_count(0)
    expect(sentence_node(page, 0).locator(".fc-state")).to_have_text("todo")
    page.get_by_role("button", name="Undo reset").click()
    expect(pressed(page.locator("#editor .fc-importance"))).to_have_attribute("data-value", "intermediate")
    expect(pressed(claim_node(page, 0).locator(".fc-claim-importance"))).to_have_attribute("data-value", "yes")
    keyboard.press("ArrowDown")
    expect_current(page, 1)
    press(page, "2", "y", "f", "q", "]", "f", "w")
    # a adds a claim after the selected one; typed, categorised, rated, moved up with Alt+↑
    keyboard.press("a")
    expect(claim_node(page, 2).locator(".fc-claim-text")).to_be_focused()
    keyboard.type(PHYSICIST)
    keyboard.press("Escape")
    keyboard.press("f")
    keyboard.press("e")
    keyboard.press("Alt+ArrowUp")
    expect_claim_texts(page, [NOBEL, PHYSICIST, POLONIUM])
    expect(claim_node(page, 1)).to_have_class(re.compile(r"\bcurrent\b"))
    expect(pressed(claim_node(page, 1).locator(".fc-category"))).to_have_attribute("data-value", "factual")
    expect(pressed(claim_node(page, 1).locator(".fc-claim-importance"))).to_have_attribute("data-value", "no")
    # [ goes back to the first claim
    keyboard.press("[")
    expect(claim_node(page, 0)).to_have_class(re.compile(r"\bcurrent\b"))
    keyboard.press("j")
    keyboard.press("3")
    keyboard.press("n")
    keyboard.press("o")
    keyboard.press("e")
    expect(page.locator("#completeness")).to_have_text("3/3 sentences done")
    expect_saved(page)


def test_factcheck_step1_in_the_browser(
    browser, live_server, users, factcheck_project, problems, django_capture_on_commit_callbacks
):
    from playwright.sync_api import expect

    project = factcheck_project
    base = live_server.url
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(
            project,
            jsonl([{"prompt": PROMPT, "response": " ".join(SENTENCES), "id": "curie"}]),
            fmt="plain",
        )
    stage = ItemStage.objects.get(item__project=project, stage=1)
    assert stage.status == StageStatus.ANNOTATING, "the offline pre-annotation did not run"
    assert stage.content["sentences"] == SENTENCES
    assert stage.provenance["backend"] == "offline"

    # -- alice ------------------------------------------------------------------------------
    alice = open_first_assignment(browser, base, project, "alice", problems)
    alice_assignment = Assignment.objects.get(user=users["alice"], item_stage=stage)
    assert alice.url.endswith(f"/assignments/{alice_assignment.id}/")
    alice_annotates(alice)
    assert not Annotation.objects.get(assignment=alice_assignment).submitted
    alice.keyboard.press("Control+Enter")
    alice.wait_for_url(f"**/projects/{project.id}/")
    expect(alice.locator(".messages")).to_contain_text("Nothing left to annotate")
    annotation = Annotation.objects.get(assignment=alice_assignment)
    assert annotation.submitted
    assert annotation.payload["sentences"] == [
        gold_sentence(SENTENCES[0], "yes", "yes", [claim(SENTENCES[0], "factual", "yes")]),
        gold_sentence(
            DECONTEXT_2,
            "intermediate",
            "yes",
            [claim(NOBEL, "factual", "yes"), claim(ALICE_POLONIUM, "factual", "intermediate")],
        ),
        gold_sentence(SENTENCES[2], "no", "no", [claim(SENTENCES[2], "opinion", "no")]),
    ]

    # -- bob ----------------------------------------------------------------------------------
    bob = open_first_assignment(browser, base, project, "bob", problems)
    bob_assignment = Assignment.objects.get(user=users["bob"], item_stage=stage)
    assert bob.url.endswith(f"/assignments/{bob_assignment.id}/")
    bob_annotates(bob)
    bob.get_by_role("button", name="Submit").click()
    bob.wait_for_url(f"**/projects/{project.id}/")
    assert Annotation.objects.get(assignment=bob_assignment).submitted
    stage.refresh_from_db()
    assert stage.status == StageStatus.CONSOLIDATING
    consolidation = Consolidation.objects.get(item_stage=stage)
    assert consolidation.alignment[1] == [[0, 0], [None, 1], [1, 2]]

    # alice's submitted work is read-only, and nothing of bob's is on it
    alice.goto(f"/assignments/{alice_assignment.id}/")
    expect(alice.locator("#save-status")).to_have_text("Submitted — read-only")
    expect(alice.locator("#submit")).to_be_disabled()
    expect(alice.locator("#editor .fc-decontext")).to_be_disabled()
    alice.keyboard.press("3")  # no effect in read-only mode
    expect(pressed(alice.locator("#editor .fc-importance"))).to_have_attribute("data-value", "yes")
    assert "bob" not in alice.locator("main").inner_text()

    # -- carol consolidates -------------------------------------------------------------------
    carol = open_consolidation_as(browser, base, "carol", PASSWORD, problems, project, consolidation)
    expect(carol.get_by_role("button", name="Save gold record")).to_be_visible()
    expect(carol.locator("#sentences .fc-disputes")).to_have_text(["1 disagreement", "5 disagreements"])
    # starts at the first sentence with a disagreement: the importance of sentence 1
    expect_current(carol, 0)
    importance_field = carol.locator("#editor .fc-field.disagree")
    expect(importance_field).to_have_count(1)
    expect(importance_field.locator(".fc-importance")).to_have_count(1)
    expect(pressed(importance_field.locator(".fc-importance"))).to_have_count(0)
    expect(importance_field.locator(".fc-their[data-slot=A]")).to_contain_text("A (alice)")
    expect(importance_field.locator(".fc-their[data-slot=A] .fc-their-value")).to_have_text("Yes")
    expect(importance_field.locator(".fc-their[data-slot=B] .fc-their-value")).to_have_text("Intermediate")
    # agreed fields are pre-filled
    expect(carol.locator("#editor .fc-decontext")).to_have_value(SENTENCES[0])
    expect(pressed(carol.locator("#editor .fc-checkworthy").first)).to_have_attribute("data-value", "yes")
    expect(carol.locator("#completeness")).to_have_text("1/3 sentences done")
    expect(carol.locator("#submit")).to_have_attribute("aria-disabled", "true")
    importance_field.get_by_role("button", name="Use B").click()
    expect(pressed(carol.locator("#editor .fc-importance"))).to_have_attribute("data-value", "intermediate")
    expect(sentence_node(carol, 0).locator(".fc-state")).to_have_text("done")

    # sentence 2: different decompositions, aligned row by row
    carol.keyboard.press("j")
    expect_current(carol, 1)
    expect(carol.locator("#editor .fc-claims")).to_have_class(re.compile(r"\bdisagree\b"))
    rows = carol.locator("#editor .fc-claim")
    expect(rows).to_have_count(3)
    expect_claim_texts(carol, [NOBEL, "", ""])
    expect(rows.nth(0).locator(".disagree")).to_have_count(0)
    expect(rows.nth(1).locator(".fc-their[data-slot=A]")).to_contain_text("no claim in this row")
    expect(rows.nth(1).locator(".fc-their[data-slot=B] .fc-their-text")).to_have_text(PHYSICIST)
    expect(
        rows.nth(1).locator(".fc-claim-text.disagree, .fc-category.disagree, .fc-claim-importance.disagree")
    ).to_have_count(3)
    expect(rows.nth(2).locator(".fc-claim-text")).to_have_class(re.compile(r"\bdisagree\b"))
    expect(rows.nth(2).locator(".fc-their[data-slot=A] .fc-their-text")).to_have_text(ALICE_POLONIUM)
    expect(rows.nth(2).locator(".fc-their[data-slot=B] .fc-their-text")).to_have_text(POLONIUM)
    # category and importance of the polonium row were agreed: pre-filled
    expect(pressed(rows.nth(2).locator(".fc-category"))).to_have_attribute("data-value", "factual")
    expect(pressed(rows.nth(2).locator(".fc-claim-importance"))).to_have_attribute("data-value", "intermediate")
    carol.screenshot(path=str(SCREENSHOTS / "factcheck_consolidate.png"))

    # A's whole sentence: A's two claims; B's extra claim is listed as a row left out
    carol.keyboard.press("Shift+A")  # same as the "Use A's whole sentence" button
    expect_claim_texts(carol, [NOBEL, ALICE_POLONIUM])
    left_out = carol.locator("#editor .fc-left-out-row")
    expect(left_out).to_have_count(1)
    expect(left_out.locator(".fc-their[data-slot=B] .fc-their-text")).to_have_text(PHYSICIST)
    left_out.get_by_role("button", name="Add B's").click()
    expect_claim_texts(carol, [NOBEL, PHYSICIST, ALICE_POLONIUM])
    expect(left_out).to_have_count(0)
    # ... and removed again; B's wording for the polonium claim
    rows.nth(1).get_by_role("button", name="Remove").click()
    expect_claim_texts(carol, [NOBEL, ALICE_POLONIUM])
    expect(left_out).to_have_count(1)
    rows.nth(1).get_by_role("button", name="Use B").click()
    expect_claim_texts(carol, [NOBEL, POLONIUM])
    carol.locator("#editor").scroll_into_view_if_needed()
    carol.screenshot(path=str(SCREENSHOTS / "factcheck_consolidate_resolved.png"))
    expect(carol.locator("#completeness")).to_have_text("3/3 sentences done")
    expect(carol.locator("#submit")).to_have_attribute("aria-disabled", "false")
    expect_saved(carol)
    # carol rewrites the claim in words of her own: no annotator's text matches it any more
    rows.nth(1).locator(".fc-claim-text").fill(CAROL_POLONIUM)
    expect_saved(carol)
    # the saved draft reopens as left: claims still follow their rows
    carol.reload()
    expect_current(carol, 0)
    expect(pressed(carol.locator("#editor .fc-importance"))).to_have_attribute("data-value", "intermediate")
    carol.keyboard.press("j")
    expect_claim_texts(carol, [NOBEL, CAROL_POLONIUM])
    expect(rows.nth(1).locator(".fc-their[data-slot=A] .fc-their-text")).to_have_text(ALICE_POLONIUM)
    expect(left_out.locator(".fc-their[data-slot=B] .fc-their-text")).to_have_text(PHYSICIST)
    rows.nth(1).get_by_role("button", name="Use B").click()
    expect_claim_texts(carol, [NOBEL, POLONIUM])
    carol.get_by_role("button", name="Save gold record").click()
    carol.wait_for_url(f"**/projects/{project.id}/consolidations/")
    expect(carol.locator(".messages")).to_contain_text("No open consolidations left")

    gold = GoldRecord.objects.get(item_stage__item__project=project, item_stage__stage=1)
    assert gold.consolidated_by == users["carol"]
    assert gold.payload["sentences"] == [
        gold_sentence(SENTENCES[0], "intermediate", "yes", [claim(SENTENCES[0], "factual", "yes")]),
        gold_sentence(
            DECONTEXT_2,
            "intermediate",
            "yes",
            [claim(NOBEL, "factual", "yes"), claim(POLONIUM, "factual", "intermediate")],
        ),
        gold_sentence(SENTENCES[2], "no", "no", [claim(SENTENCES[2], "opinion", "no")]),
    ]
    assert {"sentences[0].importance", "sentences[1].claims", "sentences[1].claims[2].text"} <= set(
        gold.disagreed_fields
    )
    stage.refresh_from_db()
    assert stage.status == StageStatus.DONE
    # the gold record opened step 2, pre-computed after the commit
    stage2 = ItemStage.objects.get(item=stage.item, stage=2)
    assert stage2.status == StageStatus.ANNOTATING  # and given to alice and bob
    assert [c["text"] for c in stage2.content["claims"]] == [SENTENCES[0], NOBEL, POLONIUM]

    for page in (alice, bob, carol):
        page.context.close()
