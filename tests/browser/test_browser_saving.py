"""The annotation pages in a real browser, beyond the campaigns: no lost work (the autosave
survives a dropped connection or a lost answer, slow saves queue instead of conflicting, one
submit at a time), submitted work is read-only, keys meant for a form stay in that form, and a
narrow screen keeps the editor in view.

The network trouble is made inside the page by wrapping ``window.fetch``: the page's own
retry and queue code runs unchanged against the live server.
"""

import re

import pytest

from annotation.models import Annotation, Assignment, Consolidation, ConsolidationStatus, GoldRecord
from annotation.services.annotations import save_annotation
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD

pytestmark = pytest.mark.browser


def first_save_fails(*, stored: bool) -> str:
    """A fetch wrapper whose first PUT fails as a dropped connection does (fetch rejects):
    before reaching the server, or (``stored``) after the server stored it, on the way back."""
    send = (
        'realFetch(url, options).then(() => { throw new TypeError("Failed to fetch"); })'
        if stored
        else 'Promise.reject(new TypeError("Failed to fetch"))'
    )
    return (
        """() => {
  const realFetch = window.fetch;
  window.failedSaves = 0;
  window.fetch = (url, options) => {
    if (options && options.method === "PUT" && window.failedSaves === 0) {
      window.failedSaves += 1;
      return %s;
    }
    return realFetch(url, options);
  };
}"""
        % send
    )


# Every PUT waits a second before it is sent, so the next autosave comes while one is in flight.
SLOW_SAVES = """() => {
  const realFetch = window.fetch;
  window.sentVersions = [];
  window.fetch = (url, options) => {
    if (!options || options.method !== "PUT") return realFetch(url, options);
    window.sentVersions.push(JSON.parse(options.body).version);
    return new Promise((resolve) => setTimeout(resolve, 1000)).then(() => realFetch(url, options));
  };
}"""


def open_first_assignment(browser, live_server, problems, username, users):
    assignment = Assignment.objects.filter(user=users[username]).order_by("id").first()
    page = login(browser, live_server.url, username, PASSWORD, problems)
    page.goto(f"/assignments/{assignment.id}/")
    return page, assignment


def label_while_the_first_save_fails(browser, live_server, problems, users, *, stored: bool):
    """alice labels segment 1 correct; its autosave fails (see first_save_fails)."""
    from playwright.sync_api import expect

    page, assignment = open_first_assignment(browser, live_server, problems, "alice", users)
    page.evaluate(first_save_fails(stored=stored))
    page.keyboard.press("c")
    status = page.locator("#save-status")
    expect(status).to_contain_text("Not saved: no connection to the server")
    return page, assignment, status


def test_a_dropped_connection_is_retried_and_the_edit_saved(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    page, assignment, status = label_while_the_first_save_fails(browser, live_server, problems, users, stored=False)
    expect(status).to_contain_text("retrying in 2 s")
    assert not Annotation.objects.filter(assignment=assignment).exists()
    # Leaving now would lose the edit: the page asks first.
    leaving = "() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; }"
    assert page.evaluate(leaving) is True

    expect(status).to_have_text("Saved", timeout=6000)
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.version == 1 and annotation.payload["segments"][0]["label"] is True
    assert page.evaluate("() => window.failedSaves") == 1


def test_a_save_whose_answer_was_lost_is_not_taken_for_a_conflict(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    page, assignment, status = label_while_the_first_save_fails(browser, live_server, problems, users, stored=True)
    assert Annotation.objects.get(assignment=assignment).version == 1  # it was stored all the same
    page.keyboard.press("j")
    page.keyboard.press("x")
    # The retry meets a 409, finds its own earlier save stored, and carries on from there.
    expect(status).to_have_text("Saved", timeout=8000)
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.version == 2
    assert [s["label"] for s in annotation.payload["segments"]][:2] == [True, False]
    problems.errors[:] = [e for e in problems.errors if "-> 409" not in e]  # the one expected 409


def test_a_second_ctrl_enter_during_submit_is_ignored(browser, live_server, users, felm_items, problems):
    page, assignment = open_first_assignment(browser, live_server, problems, "alice", users)
    page.evaluate(SLOW_SAVES)
    submits = []
    page.on(
        "request",
        lambda request: submits.append(request)
        if request.method == "PUT" and '"submit":true' in (request.post_data or "").replace(" ", "")
        else None,
    )
    for _ in range(3):
        page.keyboard.press("c")
        page.keyboard.press("j")
    page.keyboard.press("Control+Enter")
    page.keyboard.press("Control+Enter")  # before the first has answered
    page.wait_for_url(lambda url: not url.endswith(f"/assignments/{assignment.id}/"), timeout=8000)
    assert Annotation.objects.get(assignment=assignment).submitted
    # one submit reached the server; a second would answer 400 ("submitted and read-only"),
    # which the problems fixture reports
    assert len(submits) == 1


def test_overlapping_autosaves_queue_instead_of_conflicting(browser, live_server, users, felm_items, problems):
    page, assignment = open_first_assignment(browser, live_server, problems, "alice", users)
    page.evaluate(SLOW_SAVES)
    page.keyboard.press("c")  # autosave 1 leaves after 600 ms and takes 1 s
    page.wait_for_timeout(700)
    page.keyboard.press("j")
    page.keyboard.press("c")  # autosave 2 is due while 1 is still in flight
    page.wait_for_timeout(700)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.press("Control+Enter")  # and so is the submit: both wait for autosave 1

    page.wait_for_url(lambda url: not url.endswith(f"/assignments/{assignment.id}/"), timeout=8000)
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.submitted
    assert [s["label"] for s in annotation.payload["segments"]] == [True, True, True]
    assert annotation.version >= 2


def test_overlapping_saves_send_each_version_once(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    page, assignment = open_first_assignment(browser, live_server, problems, "alice", users)
    page.evaluate(SLOW_SAVES)
    page.keyboard.press("c")
    page.wait_for_timeout(800)
    page.keyboard.press("j")
    page.keyboard.press("x")
    expect(page.locator("#save-status")).to_have_text("Saved", timeout=6000)
    # Each save carried the version the one before it returned: no 409 from its own tab.
    assert page.evaluate("() => window.sentVersions") == [0, 1]
    assert Annotation.objects.get(assignment=assignment).version == 2


def test_a_submitted_annotation_opens_read_only(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    assignment = Assignment.objects.filter(user=users["alice"]).order_by("id").first()
    save_annotation(
        assignment=assignment,
        payload={"segments": [{"label": True, "error_type": None, "comment": "", "refs": []}] * 3},
        version=0,
        submit=True,
    )
    page = login(browser, live_server.url, "alice", PASSWORD, problems)
    page.goto(f"/assignments/{assignment.id}/")
    expect(page.locator("#save-status")).to_have_text("Submitted — read-only")
    expect(page.locator("#submit")).to_be_disabled()
    expect(page.locator(".label-error").first).to_be_disabled()
    page.keyboard.press("x")
    expect(page.locator(".label-error").first).to_have_attribute("aria-pressed", "false")


def test_ctrl_enter_in_the_discard_reason_does_not_save_gold(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    stage = felm_items[0].stages.get()
    labels = {"alice": True, "bob": False}
    for assignment in stage.assignments.select_related("user"):
        segment = {
            "label": labels[assignment.user.username],
            "error_type": None,
            "comment": "",
            "refs": [],
        }
        if segment["label"] is False:
            segment.update(error_type="knowledge_error", comment="wrong")
        save_annotation(assignment=assignment, payload={"segments": [segment] * 3}, version=0, submit=True)
    consolidation = Consolidation.objects.get(item_stage=stage)

    page = login(browser, live_server.url, "carol", PASSWORD, problems)
    page.goto(f"/consolidations/{consolidation.id}/")
    page.keyboard.press("Shift+A")
    reason = page.locator("form.discard textarea")
    reason.click()
    reason.type("cannot agree on the date")
    page.keyboard.press("Control+Enter")
    page.wait_for_timeout(700)
    consolidation.refresh_from_db()
    assert consolidation.status == ConsolidationStatus.OPEN
    assert not GoldRecord.objects.filter(item_stage=stage).exists()
    expect(reason).to_have_value(re.compile("cannot agree on the date"))


def test_on_a_narrow_screen_the_key_legend_starts_folded(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    page, _ = open_first_assignment(browser, live_server, problems, "alice", users)
    expect(page.locator("details.keys")).to_have_attribute("open", "")
    page.set_viewport_size({"width": 800, "height": 900})
    page.reload()
    expect(page.locator("details.keys")).not_to_have_attribute("open", "")
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def test_back_online_the_page_saves_at_once_instead_of_waiting_out_the_backoff(
    browser, live_server, users, felm_items, problems
):
    from playwright.sync_api import expect

    page, assignment = open_first_assignment(browser, live_server, problems, "alice", users)
    page.context.set_offline(True)
    page.keyboard.press("c")
    status = page.locator("#save-status")
    expect(status).to_contain_text("retrying in 4 s", timeout=6000)  # the 2 s retry failed too
    page.context.set_offline(False)
    expect(status).to_have_text("Saved", timeout=1500)
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.version == 1 and annotation.payload["segments"][0]["label"] is True


def test_a_discarded_consolidation_says_so_in_the_save_bar(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    from annotation.services.consolidation import discard_item_stage

    for assignment in felm_items[0].stages.get().assignments.all():
        save_annotation(
            assignment=assignment,
            payload={"segments": [{"label": True, "error_type": None, "comment": "", "refs": []}] * 3},
            version=0,
            submit=True,
        )
    consolidation = Consolidation.objects.get(item_stage__item=felm_items[0])
    discard_item_stage(consolidation=consolidation, user=users["carol"], reason="unclear question")
    page = login(browser, live_server.url, "carol", PASSWORD, problems)
    page.goto(f"/consolidations/{consolidation.id}/")
    expect(page.locator("#save-status")).to_have_text("Discarded — read-only")
    expect(page.locator("#submit")).to_be_disabled()


def test_a_stale_tab_says_in_plain_words_that_newer_work_was_saved(browser, live_server, users, felm_items, problems):
    from playwright.sync_api import expect

    first, assignment = open_first_assignment(browser, live_server, problems, "alice", users)
    second = first.context.new_page()
    problems.watch(second)
    second.goto(f"/assignments/{assignment.id}/")
    first.keyboard.press("c")
    expect(first.locator("#save-status")).to_have_text("Saved")
    second.keyboard.press("x")  # still at the version it opened with
    status = second.locator("#save-status")
    expect(status).to_have_attribute("data-state", "conflict")
    expect(status).to_have_text(
        "Newer work on this item was saved in another tab or window. This tab's latest edits "
        "are not saved: reload the page to continue from the saved work."
    )
    annotation = Annotation.objects.get(assignment=assignment)
    assert annotation.version == 1 and annotation.payload["segments"][0]["label"] is True
    problems.errors[:] = [e for e in problems.errors if "-> 409" not in e]  # the one expected 409
