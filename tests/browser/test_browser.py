"""The FELM campaign in a real browser (Debian's chromium through Playwright).

One scenario, end to end, as the users do it: the admin imports items on the project page;
alice and bob label the same item blind, with the keyboard only; carol consolidates their
disagreement into a gold record; the admin downloads the FELM JSONL export.

Screenshots of the annotation and consolidation pages go to /tmp (``BROWSER_SCREENSHOTS``
overrides the directory), never into the repository.
"""

import json
import os
import re
from pathlib import Path

import pytest

from annotation.models import Annotation, Assignment, Consolidation, GoldRecord, StageStatus
from tests.helpers.browser import login, open_consolidation_as
from tests.helpers.builders import PASSWORD, felm_line, jsonl

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))

ITEM_SEGMENTS = [
    "The Eiffel Tower stands in Paris.",
    "It was completed in 1899.",
    "Therefore it is older than the Statue of Liberty.",
]
REASON_DATE = "Completed in 1889, not 1899."
REASON_ALICE = "The Statue of Liberty was dedicated in 1886, earlier."
REASON_CAROL = "The Statue of Liberty (1886) predates the tower (1889): wrong conclusion."


def segment_node(page, index):
    return page.locator("#segments > li.segment").nth(index)


def expect_saved(page):
    from playwright.sync_api import expect

    # plain words: no version number for the annotator (the tests check what was stored)
    expect(page.locator("#save-status")).to_have_text("Saved")
    expect(page.locator("#save-status")).to_have_attribute("data-state", "saved")


def assert_clear_of_save_bar(page, node):
    """The current segment, as the keyboard left it, is not hidden under the sticky save bar."""
    node_box, bar_box = node.bounding_box(), page.locator(".savebar").bounding_box()
    assert node_box["y"] >= 0, "the current segment starts above the viewport"
    assert node_box["y"] + node_box["height"] <= bar_box["y"] + 1, (
        f"the current segment (bottom {node_box['y'] + node_box['height']:.0f}px) is hidden under the "
        f"save bar (top {bar_box['y']:.0f}px)"
    )


def label_with_keyboard(page, labels):
    """Label every segment with keys only: c / x, 1–4, r + typing + Esc, j / ArrowDown."""
    from playwright.sync_api import expect

    keyboard = page.keyboard
    for index, (label, error_type, reason) in enumerate(labels):
        node = segment_node(page, index)
        expect(node).to_have_class(re.compile(r"\bcurrent\b"))
        if label:
            keyboard.press("c")
            expect(node.locator(".label-correct")).to_have_attribute("aria-pressed", "true")
            expect(node.locator("select.error-type")).to_have_count(0)
        else:
            keyboard.press("x")
            expect(node.locator(".label-error")).to_have_attribute("aria-pressed", "true")
            keyboard.press(str(error_type))
            expect(node.locator("select.error-type")).to_have_value(
                ["knowledge_error", "reasoning_error", "irrelevant_with_qst", "fooled"][error_type - 1]
            )
            keyboard.press("r")
            expect(node.locator("textarea.comment")).to_be_focused()
            keyboard.type(reason)
            # The "r" that focused the field was not typed into it.
            expect(node.locator("textarea.comment")).to_have_value(reason)
            keyboard.press("Escape")
            expect(node.locator("textarea.comment")).not_to_be_focused()
        assert_clear_of_save_bar(page, node)
        if index < len(labels) - 1:
            keyboard.press("j" if index % 2 == 0 else "ArrowDown")
    # k / ArrowUp go back, j forward again: the last segment stays current.
    last = len(labels) - 1
    keyboard.press("k")
    expect(segment_node(page, last - 1)).to_have_class(re.compile(r"\bcurrent\b"))
    keyboard.press("j")
    expect(segment_node(page, last)).to_have_class(re.compile(r"\bcurrent\b"))


def test_felm_campaign_in_the_browser(browser, live_server, users, felm_project, problems):
    from playwright.sync_api import expect

    project = felm_project
    base = live_server.url

    # -- admin imports two items on the project page -----------------------------------------
    admin = login(browser, base, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{project.id}/")
    records = [
        felm_line(1, ITEM_SEGMENTS, domain="wk"),
        felm_line(
            2,
            ["Water boils at 100 °C at sea level.", "Ice is lighter than water."],
            domain="science",
        ),
    ]
    admin.locator("#id_file").set_input_files(
        {
            "name": "items.jsonl",
            "mimeType": "application/jsonl",
            "buffer": jsonl(records).getvalue(),
        }
    )
    admin.locator("#id_format").select_option("felm")
    admin.locator("#id_labels_as").select_option("ignore")
    admin.get_by_role("button", name="Import", exact=True).click()
    expect(admin.locator(".messages li.success")).to_contain_text("Imported 2 items")
    item = project.items.get(external_id="1")
    stage = item.stages.get()
    assert stage.status == StageStatus.ANNOTATING
    assert set(stage.assignments.values_list("user__username", flat=True)) == {"alice", "bob"}

    # -- alice labels item 1 with the keyboard only ------------------------------------------
    alice = login(browser, base, "alice", PASSWORD, problems)
    alice.goto(f"/projects/{project.id}/")
    alice.get_by_role("link", name="Annotate", exact=True).click()
    alice.wait_for_url(re.compile(r"/assignments/\d+/$"))
    alice_assignment = Assignment.objects.get(user=users["alice"], item_stage=stage)
    assert alice.url.endswith(f"/assignments/{alice_assignment.id}/")
    expect(alice.locator("#segments > li.segment")).to_have_count(3)
    expect(alice.locator("#segments .segment-text")).to_have_text(ITEM_SEGMENTS)
    expect(alice.locator("#completeness")).to_have_text("0/3 segments complete")
    # The legend names the keys the page binds (keys.js, the one list of them).
    expect(alice.locator(".keys dt[data-keys]")).to_have_text(["c / x", "1 / 2 / 3 / 4"])
    assert alice.locator(".comparison").count() == 0  # blind: nobody else's work on the page

    alice_labels = [(True, None, ""), (False, 1, REASON_DATE), (False, 2, REASON_ALICE)]
    label_with_keyboard(alice, alice_labels)
    expect(alice.locator("#completeness")).to_have_text("3/3 segments complete")
    expect_saved(alice)
    draft = Annotation.objects.get(assignment=alice_assignment)
    assert not draft.submitted
    assert [s["label"] for s in draft.payload["segments"]] == [True, False, False]
    # What the annotator sees (viewport, not full page: the save bar is sticky).
    alice.screenshot(path=str(SCREENSHOTS / "felm_annotate.png"))

    alice.keyboard.press("Control+Enter")
    # Submitting moves on to alice's next item.
    alice.wait_for_url(
        lambda url: re.search(r"/assignments/\d+/$", url) and f"/assignments/{alice_assignment.id}/" not in url
    )
    annotation = Annotation.objects.get(assignment=alice_assignment)
    alice_assignment.refresh_from_db()
    assert annotation.submitted and alice_assignment.status == "submitted"
    assert annotation.payload["segments"] == [
        {"label": True, "error_type": None, "comment": "", "refs": []},
        {"label": False, "error_type": "knowledge_error", "comment": REASON_DATE, "refs": []},
        {"label": False, "error_type": "reasoning_error", "comment": REASON_ALICE, "refs": []},
    ]

    # -- bob labels the same item, disagreeing on the last segment --------------------------
    bob = login(browser, base, "bob", PASSWORD, problems)
    bob.goto(f"/projects/{project.id}/")
    bob.get_by_role("link", name="Annotate", exact=True).click()
    bob_assignment = Assignment.objects.get(user=users["bob"], item_stage=stage)
    bob.wait_for_url(f"**/assignments/{bob_assignment.id}/")
    expect(bob.locator("#segments > li.segment")).to_have_count(3)
    assert bob.locator(".comparison").count() == 0
    # bob's page starts empty: alice's labels are not there.
    expect(bob.locator(".label-error[aria-pressed=true], .label-correct[aria-pressed=true]")).to_have_count(0)
    label_with_keyboard(bob, [(True, None, ""), (False, 1, REASON_DATE), (True, None, "")])
    expect_saved(bob)
    bob.get_by_role("button", name="Submit").click()
    bob.wait_for_url(lambda url: f"/assignments/{bob_assignment.id}/" not in url)
    assert Annotation.objects.get(assignment=bob_assignment).submitted
    stage.refresh_from_db()
    assert stage.status == StageStatus.CONSOLIDATING
    consolidation = Consolidation.objects.get(item_stage=stage)

    # Blind annotation holds after both submitted: alice sees her own work, read-only, and
    # nothing of bob's, neither on the page nor through the API.
    alice.goto(f"/assignments/{alice_assignment.id}/")
    expect(alice.locator("#save-status")).to_have_text("Submitted — read-only")
    assert alice.locator(".comparison").count() == 0
    expect(segment_node(alice, 2).locator(".label-error")).to_have_attribute("aria-pressed", "true")
    assert "bob" not in alice.locator("main").inner_text()
    assert alice.request.get(f"/api/assignments/{bob_assignment.id}/annotation/").status == 404
    assert alice.request.get(f"/consolidations/{consolidation.id}/").status in (403, 404)

    # -- carol consolidates -----------------------------------------------------------------
    carol = open_consolidation_as(browser, base, "carol", PASSWORD, problems, project, consolidation)
    expect(carol.locator("#segments > li.segment")).to_have_count(3)
    expect(carol.get_by_role("button", name="Save gold record")).to_be_visible()

    # Disagreement highlighted on segment 3 only; agreed fields pre-filled.
    agreed_0, agreed_1, disputed = (segment_node(carol, i) for i in range(3))
    expect(disputed.locator(".choice")).to_have_class(re.compile(r"\bdisagree\b"))
    # the label and the reason differ on the last segment, and nowhere else
    expect(carol.locator("#segments .disagree")).to_have_count(2)
    expect(disputed.locator("label.disagree textarea.comment")).to_have_count(1)
    expect(agreed_0.locator(".label-correct")).to_have_attribute("aria-pressed", "true")
    expect(agreed_1.locator(".label-error")).to_have_attribute("aria-pressed", "true")
    expect(agreed_1.locator("select.error-type")).to_have_value("knowledge_error")
    expect(agreed_1.locator("textarea.comment")).to_have_value(REASON_DATE)
    expect(disputed.locator("button[aria-pressed=true]")).to_have_count(0)
    expect(disputed.locator(".their[data-slot=A]")).to_contain_text("alice")
    expect(disputed.locator(".their[data-slot=A] .their-label")).to_have_text("error")
    expect(disputed.locator(".their[data-slot=B]")).to_contain_text("bob")
    expect(disputed.locator(".their[data-slot=B] .their-label")).to_have_text("correct")
    expect(carol.locator("#completeness")).to_have_text("2/3 segments complete")
    carol.screenshot(path=str(SCREENSHOTS / "felm_consolidate.png"))

    carol.keyboard.press("Shift+A")  # the page opened on the disputed segment: take A's answer
    expect(disputed.locator(".label-error")).to_have_attribute("aria-pressed", "true")
    expect(disputed.locator("select.error-type")).to_have_value("reasoning_error")
    expect(disputed.locator("textarea.comment")).to_have_value(REASON_ALICE)
    disputed.scroll_into_view_if_needed()
    carol.screenshot(path=str(SCREENSHOTS / "felm_consolidate_resolved.png"))
    disputed.locator("textarea.comment").fill(REASON_CAROL)
    expect(carol.locator("#completeness")).to_have_text("3/3 segments complete")
    expect_saved(carol)
    carol.get_by_role("button", name="Save gold record").click()
    carol.wait_for_url(f"**/projects/{project.id}/consolidations/")
    expect(carol.locator(".messages")).to_contain_text("No open consolidations left")

    gold = GoldRecord.objects.get(item_stage=stage)
    assert gold.consolidated_by == users["carol"]
    assert gold.payload["segments"] == [
        {"label": True, "error_type": None, "comment": "", "refs": []},
        {"label": False, "error_type": "knowledge_error", "comment": REASON_DATE, "refs": []},
        {"label": False, "error_type": "reasoning_error", "comment": REASON_CAROL, "refs": []},
    ]
    assert "segments[2].label" in gold.disagreed_fields
    stage.refresh_from_db()
    assert stage.status == StageStatus.DONE

    # -- admin downloads the FELM export ------------------------------------------------------
    admin.goto(f"/projects/{project.id}/")
    with admin.expect_download() as download_info:
        admin.get_by_role("link", name="Download felm JSONL").click()
    download = download_info.value
    assert download.suggested_filename == "FELM-test-felm.jsonl"
    lines = Path(download.path()).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1  # only the consolidated item
    record = json.loads(lines[0])
    assert list(record) == [
        "index",
        "source",
        "prompt",
        "response",
        "segmented_response",
        "labels",
        "comment",
        "type",
        "ref",
        "domain",
    ]
    assert record == {
        "index": "1",
        "source": "test",
        "prompt": "Question 1?",
        "response": " ".join(ITEM_SEGMENTS),
        "segmented_response": ITEM_SEGMENTS,
        "labels": [True, False, False],
        "comment": ["", REASON_DATE, REASON_CAROL],
        "type": [None, "knowledge_error", "reasoning_error"],
        "ref": [],
        "domain": "wk",
    }

    for page in (admin, alice, bob, carol):
        page.context.close()
