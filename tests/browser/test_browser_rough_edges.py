"""Issue 21's rough edges, in a real browser (Debian's chromium through Playwright): typed
links never dropped, every step of the agreement page one click away, waiting consolidations
visible, progress that names what is still required, keys for every required field, step-3
consolidation starting from the revisions, the leaderboard's Δ, one rater-name convention.

Screenshots go to /tmp (``BROWSER_SCREENSHOTS`` overrides the directory)."""

import os
import re
from pathlib import Path

import pytest

from annotation.models import Annotation
from tests.helpers.browser import (
    NINE,
    card,
    login,
    open_consolidation_as,
    open_first_assignment,
    open_item,
)
from tests.helpers.builders import PASSWORD
from tests.helpers.evidence import DOCUMENTS, upload
from tests.helpers.factcheck import (
    CS,
    IR,
    RE,
    S1,
    S2,
    STEP1_CONTENT,
    STEP1_GOLD,
    STEP2_CONTENT,
    STEP2_GOLD,
    step2_item,
    submit_all,
)
from tests.helpers.factcheck import rated_answer as answer
from tests.helpers.research import RESAMPLES, lines_with_an_extra_label, make_run

pytestmark = pytest.mark.browser

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))
LINK = "https://science.nasa.gov/black-holes/"


def shoot(page, name):
    """A screenshot of the page (or of one element) to look at."""
    options = {"full_page": True} if hasattr(page, "goto") else {}
    page.screenshot(path=str(SCREENSHOTS / f"rough-{name}.png"), **options)


def stored_refs(assignment):
    return [s["refs"] for s in Annotation.objects.get(assignment=assignment).payload["segments"]]


def test_a_typed_felm_link_is_added_on_esc_and_ctrl_enter_submits_it(
    browser, live_server, users, felm_project, problems
):
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
    browser, live_server, users, felm_project, problems
):
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


# -- Factcheck-Bench step 3: an item whose steps 1 and 2 are consolidated, revised by alice and bob


def step3_item(project, users, revisions):
    """An item at step 3 with alice's and bob's submitted revisions ([(sentence revisions, response)]),
    and its consolidation."""
    from django.test import TestCase

    from annotation.models import Consolidation, GoldRecord, ItemStage, StageStatus
    from annotation.services.annotations import save_annotation
    from annotation.services.consolidation import save_consolidation

    item = project.items.create(prompt="Who won which Nobel Prize?", response=f"{S1} {S2}", external_id="curie")
    stage1 = ItemStage.objects.create(item=item, stage=1, status=StageStatus.DONE, content=STEP1_CONTENT)
    GoldRecord.objects.create(item_stage=stage1, payload=STEP1_GOLD)
    stage2 = ItemStage.objects.create(item=item, stage=2, status=StageStatus.CONSOLIDATING, content=STEP2_CONTENT)
    consolidation = Consolidation.objects.create(item_stage=stage2, draft=STEP2_GOLD)
    with TestCase.captureOnCommitCallbacks(execute=True):
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=STEP2_GOLD,
            version=0,
            submit=True,
        )
    stage3 = ItemStage.objects.get(item=item, stage=3)
    for name, (sentences, response) in zip(("alice", "bob"), revisions):
        assignment = stage3.assignments.get(user=users[name])
        save_annotation(
            assignment=assignment,
            payload={"sentences": [{"revised": s} for s in sentences], "response": response},
            version=0,
            submit=True,
        )
    return Consolidation.objects.get(item_stage=stage3)


FIXED_A = "Marie Curie won the Nobel Prize in Physics in 1903."
FIXED_B = "Marie Curie won a Nobel Prize in Physics in 1903."


def test_every_step_of_the_agreement_page_is_one_click_away_with_the_revision_figures(
    browser, live_server, users, factcheck_project, problems
):
    from playwright.sync_api import expect

    step3_item(factcheck_project, users, [([FIXED_A, ""], FIXED_A), ([FIXED_B, ""], FIXED_B)])
    admin = login(browser, live_server.url, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{factcheck_project.id}/")
    admin.get_by_role("link", name="Agreement", exact=True).click()
    expect(admin.locator("h1")).to_contain_text("step 1")
    shoot(admin, "agreement-step1-1280")
    steps = admin.get_by_role("navigation", name="Step")
    expect(steps.get_by_role("link")).to_have_text(["Step 1", "Step 2", "Step 3"])
    steps.get_by_role("link", name="Step 2").click()
    expect(admin.locator("h1")).to_contain_text("step 2")
    admin.get_by_role("navigation", name="Step").get_by_role("link", name="Step 3").click()
    expect(admin.locator("h1")).to_contain_text("step 3")
    expect(admin.locator("[aria-current=page]")).to_have_text("Step 3")
    revisions = admin.locator("#revisions")
    shoot(admin, "agreement-step3-1280")
    # computed here from the two revisions, independently of the page
    from annotation.kinds.claims import normalised_edit_distance, word_overlap

    row = revisions.locator("tr", has_text="Annotator A vs B").filter(has_text="sentences")
    expect(row.locator(".edit-distance")).to_have_text(f"{(normalised_edit_distance(FIXED_A, FIXED_B) + 0) / 2:.3f}")
    expect(row.locator(".word-overlap")).to_have_text(f"{(word_overlap(FIXED_A, FIXED_B) + 1) / 2:.3f}")
    with admin.expect_download() as download:
        revisions.locator("a[data-table=revisions]", has_text="CSV").click()
    assert "annotator A vs B,responses,1," in Path(download.value.path()).read_text(encoding="utf-8")
    admin.set_viewport_size({"width": 390, "height": 844})
    shoot(admin, "agreement-step3-390")


def test_a_consolidation_waiting_for_its_third_rater_shows_the_disagreements_and_is_listed_as_waiting(
    browser, live_server, users, factcheck_project, make_user, problems
):
    from playwright.sync_api import expect

    from annotation.models import Consolidation, ConsolidationStatus, Role, ThirdRater
    from annotation.services.projects import add_member

    factcheck_project.third_rater = ThirdRater.ALWAYS
    factcheck_project.save()
    add_member(project=factcheck_project, user=make_user("dave"), role=Role.ANNOTATOR)
    stage = step2_item(factcheck_project)
    submit_all(stage, [{"claims": [answer([CS, IR])]}, {"claims": [answer([CS, RE])]}])
    consolidation = Consolidation.objects.get(item_stage=stage)
    assert consolidation.status == ConsolidationStatus.WAITING

    carol = login(browser, live_server.url, "carol", PASSWORD, problems)
    row = carol.locator("tr", has_text=factcheck_project.name)
    expect(row).to_contain_text("0 waiting for consolidation · 1 waiting for a third rater")
    shoot(carol, "home-waiting-1280")
    row.get_by_role("link", name="Consolidate").click()
    listed = carol.locator("tbody tr", has_text="item")
    expect(listed).to_contain_text("Waiting for the third rater")
    expect(listed).to_contain_text("1 claim (")  # the passages the two disagree on, not "none"
    shoot(carol, "consolidations-waiting-1280")
    listed.get_by_role("link").click()
    expect(carol.locator(".warning")).to_contain_text("Waiting for the third rater")
    expect(carol.locator("#editor .disagree").first).to_be_visible()
    shoot(carol, "consolidation-waiting-1280")
    carol.set_viewport_size({"width": 390, "height": 844})
    shoot(carol, "consolidation-waiting-390")


def test_without_a_worker_the_corpus_card_says_what_happens_instead_of_embedding_forever(
    browser, live_server, users, factcheck_project, problems, django_capture_on_commit_callbacks
):
    from playwright.sync_api import expect

    from annotation.evidence.corpora import create_corpus

    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(
            name="Encyclopedia",
            user=users["admin"],
            upload=upload(DOCUMENTS),
            projects=[factcheck_project],
            passage_sentences=2,
            passage_stride=1,
        )
    corpus.refresh_from_db()
    assert corpus.state == "embedding" and corpus.embedded == 0  # the embedded default: no worker
    admin = login(browser, live_server.url, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{factcheck_project.id}/")
    row = admin.locator(".corpus-row")
    expect(row.locator("[data-role=state]")).to_have_text("Searchable")
    expect(row.locator(".no-worker")).to_be_visible()
    expect(row.locator(".no-worker")).to_contain_text(f"of {corpus.passages}: no worker runs")
    expect(admin.locator(".corpora")).not_to_contain_text("embedding")
    shoot(admin.locator(".corpora"), "corpus-no-worker-1280")
    admin.set_viewport_size({"width": 390, "height": 844})
    shoot(admin.locator(".corpora"), "corpus-no-worker-390")


def test_dfactscore_progress_names_what_is_still_required_before_submit(
    browser, live_server, users, problems, dfactscore_project
):
    from playwright.sync_api import expect

    page = open_first_assignment(browser, live_server.url, dfactscore_project, "alice", problems)
    progress = page.locator("#completeness")
    expect(progress).to_have_text(
        "0/4 facts done · 0/0 individuals linked · still required: 1 × how many individuals? (+), "
        "4 × individual (1–9), 4 × label (s / n / i), 4 × supported by any page? (a / ⇧A)"
    )
    keys = page.keyboard
    keys.press("+")
    for k in range(4):  # every fact grouped, the individual linked, every fact labelled: no "any page" answer
        keys.press("1")
        keys.press("s")
        if k == 0:
            keys.press("g")
            keys.press("1")
        keys.press("j")
    expect(progress).to_have_text(
        "0/4 facts done · 1/1 individuals linked · still required: 4 × supported by any page? (a / ⇧A)"
    )
    expect(page.locator("#dfs-facts > li.current .dfs-still")).to_have_text(
        "Still required for this fact: supported by any page? (a / ⇧A)"
    )
    shoot(page, "dfactscore-still-required-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    shoot(page, "dfactscore-still-required-390")
    page.set_viewport_size({"width": 1280, "height": 900})
    for k in range(4):
        if k:
            keys.press("k")
        keys.press("a")
    expect(progress).to_have_text("4/4 facts done · 1/1 individuals linked")


def test_step3_consolidation_starts_from_the_revisions_with_keys_to_take_each_raters(
    browser, live_server, users, factcheck_project, problems
):
    from playwright.sync_api import expect

    from annotation.models import GoldRecord

    consolidation = step3_item(factcheck_project, users, [([FIXED_A, ""], FIXED_A), ([FIXED_B, ""], FIXED_B)])
    assert consolidation.draft["sentences"][0]["revised"] is None  # the merge leaves it undecided
    page = open_consolidation_as(
        browser, live_server.url, "carol", PASSWORD, problems, factcheck_project, consolidation
    )
    revised = page.locator(".fc3-revised")
    # started from A's revision where they differ (marked), the agreed removal kept; the response joined
    expect(revised.nth(0)).to_have_value(FIXED_A)
    expect(page.locator(".fc3-sentence").nth(0).locator(".fc3-from-a")).to_contain_text("Started from A's revision")
    expect(revised.nth(1)).to_have_value("")
    expect(page.locator(".fc3-response")).to_have_value(FIXED_A)
    expect(page.locator(".fc3-figures")).not_to_contain_text("edit distance 1.00")
    expect(page.locator("#completeness")).to_have_text("ready to submit")
    # one rater-name convention: the letters, who they are
    expect(page.locator(".raters")).to_contain_text("Raters: A = alice · B = bob.")
    expect(page.locator("#keys")).to_contain_text("⇧A / ⇧B")
    shoot(page, "step3-consolidation-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    shoot(page, "step3-consolidation-390")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.keyboard.press("Shift+B")  # B's revision of the selected (first) sentence
    expect(revised.nth(0)).to_have_value(FIXED_B)
    expect(page.locator(".fc3-from-a")).to_have_count(0)
    expect(page.locator(".fc3-response")).to_have_value(FIXED_B)
    page.keyboard.press("j")
    page.keyboard.press("o")  # the second sentence back to the original: the join takes it
    page.locator(".fc3-join").click()
    expect(page.locator(".fc3-join-note")).to_have_text("Joined all 2 revised sentences.")
    page.keyboard.press("Shift+A")  # A removed it: the join says it left it out
    page.locator(".fc3-join").click()
    expect(page.locator(".fc3-join-note")).to_have_text("Joined; left out: sentence 2 (removed).")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/projects/{factcheck_project.id}/consolidations/")
    gold = GoldRecord.objects.get(item_stage=consolidation.item_stage).payload
    assert gold == {"sentences": [{"revised": FIXED_B}, {"revised": ""}], "response": FIXED_B}


def test_step3_join_names_an_undecided_sentence(browser, live_server, users, factcheck_project, problems):
    """An annotator's draft with an undecided sentence (the API allows drafts with null)."""
    from playwright.sync_api import expect

    from annotation.models import Annotation

    consolidation = step3_item(factcheck_project, users, [([FIXED_A, ""], FIXED_A), ([FIXED_B, ""], FIXED_B)])
    # a consolidation draft left with the second sentence undecided and A's revision gone
    consolidation.draft = {"sentences": [{"revised": FIXED_A}, {"revised": None}], "response": None}
    consolidation.save()
    Annotation.objects.filter(assignment__item_stage=consolidation.item_stage, assignment__user=users["alice"]).update(
        payload={"sentences": [{"revised": FIXED_A}, {"revised": None}], "response": FIXED_A}
    )

    page = open_consolidation_as(
        browser, live_server.url, "carol", PASSWORD, problems, factcheck_project, consolidation
    )
    page.locator(".fc3-join").click()
    expect(page.locator(".fc3-join-note")).to_have_text(
        "Joined; left out: sentence 2 (undecided: no revision yet — decide it, then join again)."
    )
    expect(page.locator("#completeness")).to_contain_text("still to do: sentence 2")


def test_step2_own_evidence_is_judged_with_keys_and_the_consolidation_names_the_third_rater(
    browser, live_server, users, factcheck_project, make_user, problems
):
    from playwright.sync_api import expect

    from annotation.models import Annotation, AssignmentRole, Consolidation, Role, ThirdRater
    from annotation.services.annotations import save_annotation
    from annotation.services.projects import add_member

    factcheck_project.third_rater = ThirdRater.ALWAYS
    factcheck_project.save()
    stage = step2_item(factcheck_project)  # alice and bob
    add_member(project=factcheck_project, user=make_user("dave"), role=Role.ANNOTATOR)
    alice_assignment = stage.assignments.get(user=users["alice"])
    page = login(browser, live_server.url, "alice", PASSWORD, problems)
    page.goto(f"/assignments/{alice_assignment.id}/")
    keys = page.keyboard
    expect(page.locator("#keys")).to_contain_text("your evidence is sufficient alone: yes / no")
    for key in ("1", "r", "j", "4"):  # both retrieved passages judged
        keys.press(key)
    keys.press("m")  # own evidence: the text field has the focus
    page.keyboard.type("Curie won the 1903 Nobel Prize in Physics.")
    page.locator(".fc2-manual-url").fill("https://www.nobelprize.org/prizes/physics/1903/")
    page.locator(".fc2-manual-url").press("Escape")
    keys.press("r")  # reliable, on the entry under the cursor (the new one)
    keys.press("Shift+A")  # not sufficient alone
    entry = page.locator(".fc2-manual").first
    expect(entry).to_have_class(re.compile(r"\bcurrent\b"))
    expect(entry.locator(".fc2-manual-reliable button[aria-pressed=true]")).to_have_text("Yes r")
    expect(entry.locator(".fc2-manual-sufficient button[aria-pressed=true]")).to_have_text("No ⇧A")
    keys.press("a")
    expect(entry.locator(".fc2-manual-sufficient button[aria-pressed=true]")).to_have_text("Yes a")
    keys.press("k")  # back on the second passage: r there is the passage's reliability again
    expect(page.locator(".fc2-passage").nth(1)).to_have_class(re.compile(r"\bcurrent\b"))
    shoot(page, "step2-own-evidence-keys-1280")
    keys.press("d")
    keys.press("t")
    expect(page.locator("#save-status")).to_have_text("Saved")
    manual = Annotation.objects.get(assignment=alice_assignment).payload["claims"][0]["manual_evidence"]
    assert [(m["reliable"], m["sufficient"]) for m in manual] == [(True, True)]
    # typed, then Esc: kept as typed (these fields are bound as they are typed: no "add" step to miss)
    assert [(m["text"], m["url"]) for m in manual] == [
        (
            "Curie won the 1903 Nobel Prize in Physics.",
            "https://www.nobelprize.org/prizes/physics/1903/",
        )
    ]
    page.context.close()

    # alice, bob and dave (the third rater) submit; carol sees who A, B and C are
    save_annotation(
        assignment=alice_assignment,
        payload={"claims": [answer([CS, IR])]},
        version=Annotation.objects.get(assignment=alice_assignment).version,
        submit=True,
    )
    save_annotation(
        assignment=stage.assignments.get(user=users["bob"]),
        payload={"claims": [answer([CS, RE])]},
        version=0,
        submit=True,
    )
    third = stage.assignments.get(role=AssignmentRole.THIRD_RATER)
    save_annotation(assignment=third, payload={"claims": [answer([CS, IR])]}, version=0, submit=True)
    consolidation = Consolidation.objects.get(item_stage=stage)
    carol = open_consolidation_as(
        browser, live_server.url, "carol", PASSWORD, problems, factcheck_project, consolidation
    )
    expect(carol.locator(".raters")).to_contain_text(
        f"Raters: A = alice · B = bob · C = {third.user.username} (the third rater)."
    )
    expect(carol.locator(".raters")).to_contain_text("C is the third rater, who answered blind")
    shoot(carol, "step2-consolidation-raters-1280")
    carol.set_viewport_size({"width": 390, "height": 844})
    shoot(carol, "step2-consolidation-raters-390")


def test_the_leaderboards_delta_is_the_difference_of_the_values_beside_it(browser, live_server, users, gold, problems):  # noqa: F811
    from playwright.sync_api import expect

    make_run(gold, lines_with_an_extra_label(), system="checker", resamples=RESAMPLES)
    admin = login(browser, live_server.url, "admin", PASSWORD, problems)
    admin.goto(f"/projects/{gold.id}/leaderboard/?task=stance4")
    table = admin.locator("#leaderboard table.leaderboard")
    expect(table).to_be_visible()
    headers = table.locator("thead th").all_inner_texts()
    shoot(admin, "leaderboard-1280")
    admin.set_viewport_size({"width": 390, "height": 844})
    shoot(admin, "leaderboard-390")
    for metric, delta in (("Macro F1", "Δ macro F1"), ("Accuracy", "Δ accuracy")):
        value_at, delta_at = headers.index(metric), headers.index(delta)
        cells = [row.locator("td").all_inner_texts() for row in table.locator("tbody tr").all()]
        first = lambda text: float(text.split()[0].replace("−", "-"))  # noqa: E731 ("0.444 [0.3, 0.6]")
        reference = next(c for c in cells if c[delta_at].strip() == "–")
        for c in cells:
            if c[delta_at].strip() in ("–", "") or "not comparable" in c[delta_at]:
                continue
            shown = first(c[value_at]) - first(reference[value_at])
            assert abs(first(c[delta_at]) - shown) <= 0.0015, (c[0], metric, c[delta_at], shown)
