"""Factcheck-Bench step 2 in a real browser (Debian's chromium through Playwright).

One scenario, end to end, on a project that gives every step-2 item a third rater: an item
whose step 1 is imported as gold gets its evidence from a corpus; alice judges every passage
with the keyboard, finds the evidence that decides a false claim with the in-page search, adds
it and corrects the claim (live word diff); bob judges with the keyboard only and disagrees on
the correction; dave, the third rater, answers blind; carol consolidates with the three answers
on the page and saves the gold record.

Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory).
"""

import os
import re
from pathlib import Path

import pytest

from annotation.evidence.corpora import create_corpus
from annotation.imports.items import import_jsonl
from annotation.models import (
    Annotation,
    Assignment,
    AssignmentRole,
    Consolidation,
    ConsolidationStatus,
    GoldRecord,
    ItemStage,
    Role,
    StageStatus,
    ThirdRater,
)
from annotation.services.annotations import save_annotation
from annotation.services.projects import add_member
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
TRUE_CLAIM = "Marie Curie won the Nobel Prize in Physics in 1903."
FALSE_CLAIM = "Marie Curie won the Nobel Prize in Chemistry in 1905."
ALICE_CORRECTION = "Marie Curie won the Nobel Prize in Chemistry in 1911."
BOB_CORRECTION = "Marie Curie won a Nobel Prize in Chemistry in 1911."
QUERY = "Nobel Prize in Chemistry 1911"


def released_line():
    """One response whose step 1 is done: a sentence with the two claims, and an opinion."""
    sentence = f"{TRUE_CLAIM[:-1]}, and {FALSE_CLAIM[0].lower()}{FALSE_CLAIM[1:]}"
    return {
        "id": "curie",
        "prompt": "Who was Marie Curie?",
        "response": f"{sentence} She was admirable.",
        "sentences": {
            "sentence1": {
                "text": sentence,
                "decontext": sentence,
                "most_importance_sentence": "yes",
                "sentence_checkworthiness": "yes",
                "claims": [TRUE_CLAIM, FALSE_CLAIM],
                "claim_checkworthiness": ["factual", "factual"],
                "if_most_important_claim": ["yes", "yes"],
            },
            "sentence2": {
                "text": "She was admirable.",
                "decontext": "Marie Curie was admirable.",
                "most_importance_sentence": "no",
                "sentence_checkworthiness": "opinion",
                "claims": [],
                "claim_checkworthiness": [],
                "if_most_important_claim": [],
            },
        },
    }


def pressed(group):
    return group.locator("button[aria-pressed=true]")


def expect_saved(page):
    from playwright.sync_api import expect

    # plain words: no version number for the annotator (the tests check what was stored)
    expect(page.locator("#save-status")).to_have_text("Saved")


def alice_annotates(page, passages: list[int]):
    from playwright.sync_api import expect

    keyboard = page.keyboard
    # the sentence list: both claims of sentence 1 to check, the opinion sentence greyed
    expect(page.locator("#claims .fc2-claim-pick")).to_have_text(
        [re.compile(re.escape(TRUE_CLAIM)), re.compile(re.escape(FALSE_CLAIM))]
    )
    expect(page.locator("#claims .fc2-sentence.greyed")).to_contain_text("not checkworthy (opinion)")
    expect(page.locator("#completeness")).to_have_text("0/2 claims done")
    expect(page.locator("#editor .fc2-claim")).to_have_text(TRUE_CLAIM)
    expect(pressed(page.locator("#editor .fc2-stance"))).to_have_count(0)  # nothing pre-selected
    expect(page.locator("#editor .fc2-passage").first.locator(".fc2-title")).to_have_attribute(
        "href", re.compile(r"^https://")
    )
    expect(page.locator("#editor .fc2-passage").first.locator(".fc2-query")).to_contain_text("found by")

    # claim 1: the first passage supports it completely, the others are irrelevant
    judge_passages(page, ["1"] + ["4"] * (passages[0] - 1))
    keyboard.press("d")
    keyboard.press("t")
    expect(pressed(page.locator("#editor .fc2-needs_edit"))).to_have_attribute("data-value", "no")  # follows factuality
    expect(page.locator("#claims .fc-state").first).to_have_text("done")

    # claim 2: the retrieved passages do not decide it; search, add the passage found, correct
    keyboard.press("]")
    expect(page.locator("#editor .fc2-claim")).to_have_text(FALSE_CLAIM)
    judge_passages(page, ["4"] * passages[1])
    keyboard.press("Shift+D")
    keyboard.press("s")
    expect(page.locator("#editor .fc2-search-query")).to_be_focused()
    page.locator("#editor .fc2-search-query").fill(QUERY)
    page.keyboard.press("Enter")
    result = page.locator("#editor .fc2-result").filter(has_text="Nobel Prize in Chemistry in 1911")
    expect(result).to_have_count(1, timeout=30_000)
    result.get_by_role("button", name="Add as evidence").click()
    expect(result.get_by_role("button", name="Added")).to_be_disabled()
    # (a full-page screenshot shifts the layout for a moment: taken after the clicks it would miss)
    page.screenshot(path=str(SCREENSHOTS / "step2-search.png"), full_page=True)
    manual = page.locator("#editor .fc2-manual")
    expect(manual).to_have_count(1)
    expect(manual.locator(".fc2-manual-text")).to_have_value(re.compile("Nobel Prize in Chemistry in 1911"))
    expect(manual.locator(".fc2-manual-query")).to_have_value(QUERY)
    manual.locator(".fc2-manual-reliable button[data-value=true]").click()
    manual.locator(".fc2-manual-sufficient button[data-value=true]").click()
    keyboard.press("f")
    expect(pressed(page.locator("#editor .fc2-needs_edit"))).to_have_attribute("data-value", "yes")
    expect(page.locator("#editor .fc-missing")).to_contain_text("the evidence the correction uses")
    manual.locator(".fc2-used input").check()
    keyboard.press("c")
    expect(page.locator("#editor .fc2-correction")).to_be_focused()
    page.locator("#editor .fc2-correction").fill(ALICE_CORRECTION)
    expect(page.locator("#editor .fc2-diff del")).to_have_text("1905.")
    expect(page.locator("#editor .fc2-diff ins")).to_have_text("1911.")
    expect(page.locator("#editor .fc-missing")).to_have_text("This claim is done.")
    expect(page.locator("#completeness")).to_have_text("2/2 claims done")
    expect_saved(page)


def bob_annotates(page, passages: list[int]):
    from playwright.sync_api import expect

    keyboard = page.keyboard
    assert page.locator(".fc2-theirs, .fc-compare").count() == 0  # blind: nobody else's answer here
    judge_passages(page, ["1"] + ["4"] * (passages[0] - 1))
    keyboard.press("d")
    keyboard.press("t")
    keyboard.press("]")
    # bob finds the first passage refutes the claim and corrects it from there
    judge_passages(page, ["3"] + ["4"] * (passages[1] - 1))
    keyboard.press("d")
    for _ in range(passages[1]):
        keyboard.press("k")
    keyboard.press("g")  # the correction uses passage 1
    keyboard.press("Shift+Y")
    expect(pressed(page.locator("#editor .fc2-factuality"))).to_have_attribute("data-value", "false")
    page.locator("#editor .fc2-correction").fill(BOB_CORRECTION)
    page.locator("#editor .fc2-correction").press("Escape")
    expect(page.locator("#completeness")).to_have_text("2/2 claims done")
    expect_saved(page)


def test_factcheck_step2_in_the_browser(
    browser,
    live_server,
    users,
    factcheck_project,
    problems,
    make_user,
    data_dir,
    django_capture_on_commit_callbacks,
):
    from playwright.sync_api import expect

    project = factcheck_project
    project.third_rater = ThirdRater.ALWAYS
    project.save()
    dave = make_user("dave")
    add_member(project=project, user=dave, role=Role.ANNOTATOR)
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
        import_jsonl(project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="gold")
    stage = ItemStage.objects.get(item__project=project, stage=2)
    assert stage.status == StageStatus.ANNOTATING, stage.precompute_error
    passages = [len(claim["evidence"]) for claim in stage.content["claims"]]
    assert all(passages), stage.content
    # alice and bob were given the item (least loaded first): make sure of it for the scenario
    assert sorted(stage.assignments.values_list("user__username", flat=True)) == ["alice", "bob"]

    base = live_server.url
    alice = open_first_assignment(browser, base, project, "alice", problems)
    alice_annotates(alice, passages)
    alice.keyboard.press("Control+Enter")
    alice.wait_for_url(f"**/projects/{project.id}/")
    stored = Annotation.objects.get(assignment__user=users["alice"], assignment__item_stage=stage)
    assert stored.submitted
    first, second = stored.payload["claims"]
    assert first["stances"] == ["completely-support"] + ["irrelevant"] * (passages[0] - 1)
    assert first["reliable"][0] is True and (
        first["decided"],
        first["factuality"],
        first["needs_edit"],
    ) == ("yes", "true", "no")
    assert (second["decided"], second["factuality"], second["needs_edit"]) == ("no", "false", "yes")
    assert second["correction"] == ALICE_CORRECTION and second["used_evidence"] == ["manual:0"]
    (found,) = second["manual_evidence"]
    assert found["query"] == QUERY and found["url"] == "https://w.example/curie" and "1911" in found["text"]
    assert (found["reliable"], found["sufficient"]) == (True, True)

    bob = open_first_assignment(browser, base, project, "bob", problems)
    bob_annotates(bob, passages)
    bob.get_by_role("button", name="Submit").click()
    bob.wait_for_url(f"**/projects/{project.id}/")

    # every item gets a third rater: the consolidation waits for dave, who answers blind
    consolidation = Consolidation.objects.get(item_stage=stage)
    assert consolidation.status == ConsolidationStatus.WAITING
    third = Assignment.objects.get(item_stage=stage, role=AssignmentRole.THIRD_RATER)
    assert third.user == dave
    dave_page = open_first_assignment(browser, base, project, "dave", problems)
    expect(dave_page.locator(".fc-legend")).to_contain_text("You are the third rater")
    bob_payload = Annotation.objects.get(assignment__user=users["bob"], assignment__item_stage=stage).payload
    save_annotation(assignment=third, payload=bob_payload, version=0, submit=True)
    consolidation.refresh_from_db()
    assert consolidation.status == ConsolidationStatus.OPEN

    carol = open_consolidation_as(browser, base, "carol", PASSWORD, problems, project, consolidation)
    # starts at claim 2, the first with a disagreement; three answers under each field
    expect(carol.locator("#editor .fc2-claim")).to_have_text(FALSE_CLAIM)
    expect(carol.locator("#claims .fc-disputes").first).to_be_visible()
    decided = carol.locator("#editor .fc-field").filter(has=carol.locator(".fc2-decided"))
    expect(decided).to_have_class(re.compile(r"\bdisagree\b"))
    expect(decided.locator(".fc2-theirs .fc-use")).to_have_text(["A: No", "B: Yes", "C: Yes"])
    expect(pressed(decided.locator(".fc2-decided"))).to_have_count(0)
    expect(carol.locator("#editor .fc-their[data-slot=C] .fc-who")).to_have_text("C (dave, third rater)")
    # alice's evidence is offered, with who gave it
    manual = carol.locator("#editor .fc2-manual")
    expect(manual).to_have_count(1)
    expect(manual.locator(".fc2-from")).to_have_text("given by A")
    # take alice's decision, stances and correction (the evidence she found decides the claim)
    decided.get_by_role("button", name="A: No").click()
    for k in range(passages[1]):
        passage = carol.locator("#editor .fc2-passage").nth(k)
        passage.locator(".fc2-theirs").first.locator("[data-slot=A]").click()
    carol.locator("#editor .fc-their[data-slot=A]").get_by_role("button", name="Use A").click()
    expect(carol.locator("#editor .fc2-correction")).to_have_value(ALICE_CORRECTION)
    used = carol.locator("#editor .fc2-used-summary")
    used.locator("[data-slot=A]").click()
    expect(used).to_contain_text("your evidence 1")
    expect(carol.locator("#editor .fc-missing")).to_have_text("This claim is done.")
    carol.keyboard.press("[")
    expect(carol.locator("#editor .fc-missing")).to_have_text("This claim is done.")  # agreed: pre-filled
    carol.screenshot(path=str(SCREENSHOTS / "step2-consolidation.png"), full_page=True)
    carol.get_by_role("button", name="Save gold record").click()
    carol.wait_for_url(f"**/projects/{project.id}/consolidations/")

    gold = GoldRecord.objects.get(item_stage=stage).payload
    assert gold["claims"][1]["correction"] == ALICE_CORRECTION
    assert gold["claims"][1]["used_evidence"] == ["manual:0"] and gold["claims"][1]["decided"] == "no"
    assert gold["claims"][1]["manual_evidence"][0]["query"] == QUERY
    assert gold["claims"][0]["stances"] == first["stances"]
    stage.refresh_from_db()
    assert stage.status == StageStatus.DONE

    # the admin's project page follows the corpus's background embedding without a reload
    from annotation.models import Corpus

    admin = login(browser, base, "admin", PASSWORD, problems)
    with pytest.MonkeyPatch.context() as patch:  # as with a worker (here the test plays it)
        patch.setattr("annotation.evidence.corpora.embedded_by_worker", lambda: True)
        admin.goto(f"/projects/{project.id}/")
    corpus = Corpus.objects.get()
    row = admin.locator(".corpus-row")
    expect(row.locator("[data-role=state]")).to_have_text("Searchable, embedding")
    expect(row.locator("[data-role=passages]")).to_have_text(str(corpus.passages))
    Corpus.objects.filter(pk=corpus.pk).update(embedded=corpus.passages, state="ready")
    expect(row.locator("[data-role=state]")).to_have_text("Ready", timeout=15_000)
    expect(row.locator("[data-role=embedded]")).to_have_text(str(corpus.passages))
    assert not problems.errors, problems.errors
