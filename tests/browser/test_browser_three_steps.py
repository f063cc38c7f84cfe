"""One Factcheck-Bench item through all three steps in a real browser: in each step alice and
bob annotate (with the keyboard where the page offers it) and carol consolidates; then the admin
downloads the benchmark export and the subtask archive and finds the item's three steps in them.

Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory).
"""

import io
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from annotation.evidence.corpora import create_corpus
from annotation.imports.items import import_jsonl
from annotation.models import Consolidation, GoldRecord, ItemStage, StageStatus
from tests.helpers.browser import (
    judge_passages,
    login,
    open_consolidation_as,
    open_first_assignment,
)
from tests.helpers.builders import PASSWORD, jsonl
from tests.helpers.evidence import DOCUMENTS, upload

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))
RESPONSE = "The Eiffel Tower was completed in 1887."
CORRECTED = "The Eiffel Tower was completed in 1889."


def step1(page):
    """Judge the one sentence and every suggested claim with the keys, then submit."""
    from playwright.sync_api import expect

    keyboard = page.keyboard
    keyboard.press("1")
    keyboard.press("y")
    claims = page.locator("#editor .fc-claim")
    expect(claims.first).to_be_visible()
    for _ in range(claims.count()):
        keyboard.press("f")
        keyboard.press("q")
        keyboard.press("]")
    expect(page.locator("#completeness")).to_have_text("1/1 sentences done")
    keyboard.press("Control+Enter")


def step2(page, passages):
    """The first passage refutes the claim; the correction rests on it."""
    from playwright.sync_api import expect

    keyboard = page.keyboard
    judge_passages(page, ["3"] + ["4"] * (passages - 1))
    for _ in range(passages):
        keyboard.press("k")
    keyboard.press("g")
    keyboard.press("d")
    keyboard.press("f")
    page.locator("#editor .fc2-correction").fill(CORRECTED)
    page.locator("#editor .fc2-correction").press("Escape")
    expect(page.locator("#completeness")).to_have_text("1/1 claims done")
    keyboard.press("Control+Enter")


def step3(page):
    """The revision suggested from the corrected claim is taken as it is."""
    from playwright.sync_api import expect

    expect(page.locator(".fc3-revised").first).to_have_value(CORRECTED)
    expect(page.locator(".fc3-response")).to_have_value(CORRECTED)
    expect(page.locator(".fc3-diff").first.locator("ins")).to_have_text("1889.")
    expect(page.locator("#completeness")).to_have_text("ready to submit")
    page.keyboard.press("Control+Enter")


def annotate(browser, base, project, problems, work, *args):
    for name in ("alice", "bob"):
        page = open_first_assignment(browser, base, project, name, problems)
        work(page, *args)
        page.wait_for_url(f"**/projects/{project.id}/")
        page.context.close()


def consolidate(browser, base, project, problems, number):
    from playwright.sync_api import expect

    consolidation = Consolidation.objects.get(item_stage__item__project=project, item_stage__stage=number)
    page = open_consolidation_as(browser, base, "carol", PASSWORD, problems, project, consolidation)
    expect(page.locator("#completeness")).not_to_have_text(re.compile("still to do"))
    page.screenshot(path=str(SCREENSHOTS / f"three-steps-consolidation-{number}.png"), full_page=True)
    page.get_by_role("button", name="Save gold record").click()
    page.wait_for_url(f"**/projects/{project.id}/consolidations/")
    page.context.close()
    assert GoldRecord.objects.filter(item_stage=consolidation.item_stage).exists()


def test_one_item_through_three_steps_and_both_exports(
    browser, live_server, users, factcheck_project, problems, django_capture_on_commit_callbacks
):
    project = factcheck_project
    base = live_server.url
    with django_capture_on_commit_callbacks(execute=True):
        create_corpus(
            name="Encyclopedia",
            user=users["admin"],
            upload=upload(DOCUMENTS),
            projects=[project],
            passage_sentences=2,
            passage_stride=1,
        )
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(
            project,
            jsonl(
                [
                    {
                        "id": "eiffel",
                        "prompt": "When was the Eiffel Tower completed?",
                        "response": RESPONSE,
                    }
                ]
            ),
            fmt="plain",
        )

    annotate(browser, base, project, problems, step1)
    consolidate(browser, base, project, problems, 1)
    stage2 = ItemStage.objects.get(item__project=project, stage=2)
    assert stage2.status == StageStatus.ANNOTATING, stage2.precompute_error
    assert len(stage2.content["claims"]) == 1
    passages = len(stage2.content["claims"][0]["evidence"])
    assert passages

    annotate(browser, base, project, problems, step2, passages)
    consolidate(browser, base, project, problems, 2)
    stage3 = ItemStage.objects.get(item__project=project, stage=3)
    assert stage3.status == StageStatus.ANNOTATING, stage3.precompute_error

    annotate(browser, base, project, problems, step3)
    consolidate(browser, base, project, problems, 3)

    admin = login(browser, base, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{project.id}/")
    with admin.expect_download() as download_info:
        admin.get_by_role("link", name="Download factcheck-bench JSONL").click()
    (record,) = [json.loads(line) for line in Path(download_info.value.path()).read_text(encoding="utf-8").splitlines()]
    sentence = record["sentences"]["sentence1"]
    assert sentence["if_claim_needs_edit"] == ["yes"] and sentence["revised_claims"] == [CORRECTED]
    assert sentence["revised_decontext"] == CORRECTED and sentence["sentence_factuality_label"] is False
    assert record["revised_response"] == CORRECTED and record["response_factuality"] is False
    with admin.expect_download() as download_info:
        admin.get_by_role("link", name="Download factcheck-subtasks zip").click()
    assert download_info.value.suggested_filename.endswith("-factcheck-subtasks.zip")
    archive = zipfile.ZipFile(io.BytesIO(Path(download_info.value.path()).read_bytes()))
    revision = [json.loads(line) for line in archive.read("subtask5_revision.jsonl").decode().splitlines()]
    assert revision == [
        {
            "factual state": "false",
            "claim list": [CORRECTED],
            "prompt": "When was the Eiffel Tower completed?",
            "response": RESPONSE,
            "revised_response": CORRECTED,
        }
    ]
    stances = [json.loads(line) for line in archive.read("subtask3_claim_evidence_stance.jsonl").decode().splitlines()]
    assert [s["stance"] for s in stances] == ["refute"] + ["irrelevant"] * (passages - 1)
    assert not problems.errors, problems.errors
