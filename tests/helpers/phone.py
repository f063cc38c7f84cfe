"""Pages on a phone (390 × 844) for the browser tests: the layout check run in the page, and the
FELM and Factcheck-Bench assignments whose pages are measured."""

import os
from pathlib import Path

from annotation.imports.items import import_jsonl
from annotation.kinds.factcheck import step3
from annotation.models import Assignment, Consolidation, GoldRecord, ItemStage, StageStatus
from annotation.services.annotations import save_annotation
from annotation.services.assignments import assign_open_stages

from .builders import felm_line, jsonl, segment
from .factcheck import STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD, passage

SCREENSHOTS = Path(os.environ.get("BROWSER_SCREENSHOTS", "/tmp"))
PHONE = {"width": 390, "height": 844}
LONG_URL = "https://example.org/" + "very-long-path-segment/" * 6 + "page.html"

# Runs in the page; returns what is wrong, as sentences. Folded <details> are opened first so
# what they hold is measured too.
LAYOUT_PROBLEMS = r"""() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const problems = [];
  const viewport = window.innerWidth;
  const name = (node) => `${node.tagName.toLowerCase()}${node.id ? "#" + node.id : ""}${
    node.className && typeof node.className === "string" ? "." + node.className.trim().split(/\s+/).join(".") : ""} "${
    (node.textContent || "").trim().slice(0, 40)}"`;
  const visible = (node) => { const r = node.getBoundingClientRect(); return r.width > 0 && r.height > 0; };

  const pageWidth = document.documentElement.scrollWidth;
  if (pageWidth > viewport) problems.push(`the page is ${pageWidth}px wide on a ${viewport}px screen`);

  for (const table of document.querySelectorAll("table")) {
    if (!visible(table) || table.getBoundingClientRect().right <= viewport + 0.5) continue;
    let box = table.parentElement;
    while (box && !["auto", "scroll"].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    if (!box || box === document.documentElement || box === document.body || box.getBoundingClientRect().right > viewport + 0.5) {
      problems.push(`${name(table)} is wider than the screen and not in a box that scrolls sideways`);
    }
  }

  // Words of the interface: each must sit on one line (a break after a hyphen or a slash is fine).
  const ui = "label, button, summary, th, dt, h1, h2, h3, .button, .save-status, #completeness, .fc-field-label, .topbar a";
  for (const node of document.querySelectorAll(ui)) {
    if (!visible(node)) continue;
    const style = getComputedStyle(node);
    if (style.wordBreak === "break-all" || ["anywhere", "break-word"].includes(style.overflowWrap)) {
      problems.push(`${name(node)} may break words (word-break: ${style.wordBreak}, overflow-wrap: ${style.overflowWrap})`);
    }
    for (const inner of node.querySelectorAll("*")) {
      if (getComputedStyle(inner).wordBreak === "break-all") problems.push(`${name(inner)} in ${name(node)} has word-break: break-all`);
    }
    if (node.clientWidth && node.scrollWidth > node.clientWidth + 1 && getComputedStyle(node).overflowX === "visible") {
      problems.push(`${name(node)} is too narrow for its words (${node.scrollWidth}px in ${node.clientWidth}px)`);
    }
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      if (text.parentElement.closest("select, option, textarea")) continue;
      const pattern = /[^\s\-‐–—\/]+/g;
      for (let match = pattern.exec(text.data); match; match = pattern.exec(text.data)) {
        if (match[0].length > 30) continue;  // a token no phone line holds (a link) may wrap
        const range = document.createRange();
        range.setStart(text, match.index);
        range.setEnd(text, match.index + match[0].length);
        const lines = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) problems.push(`"${match[0]}" is broken across lines in ${name(node)}`);
      }
    }
  }
  return problems;
}"""


def check_phone_layout(page, url, shot):
    """Open ``url`` (None: measure the page as it is) and find nothing wrong with its layout."""
    from playwright.sync_api import (
        expect,  # Playwright is optional: the browser tests skip without it
    )

    if url:
        page.goto(url)
    expect(page.locator("main")).to_be_visible()
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(SCREENSHOTS / f"narrow_{shot}.png"), full_page=True)
    assert page.evaluate(LAYOUT_PROBLEMS) == [], f"{url} at {PHONE['width']} px"


def felm_pages(felm_project, users):
    """A FELM item with a long link in its response, two others, and the first in consolidation
    (alice and bob disagree on the error type, so the agreement page has an error-type matrix)."""
    segments = [
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        f"Its designer's notes are online at {LONG_URL} for anyone.",
        "Gustave Eiffel's company, Compagnie des Établissements Eiffel, built it in two years.",
    ]
    import_jsonl(
        felm_project,
        jsonl(
            [
                felm_line(0, segments),
                felm_line(1, ["One.", "Two."]),
                felm_line(2, ["Three.", "Four."]),
            ]
        ),
        fmt="felm",
    )
    item = felm_project.items.order_by("id").first()
    for name, error_type in (("alice", "knowledge_error"), ("bob", "irrelevant_with_qst")):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=item)
        save_annotation(
            assignment=assignment,
            payload={
                "segments": [
                    segment(False, error_type, f"{name} thinks the year is wrong.", [LONG_URL]),
                    segment(True),
                    segment(True),
                ]
            },
            version=0,
            submit=True,
        )
    return {
        "assignment": Assignment.objects.filter(user=users["alice"], item_stage__item__project=felm_project)
        .exclude(item_stage__item=item)
        .order_by("id")
        .first(),
        "consolidation": Consolidation.objects.get(item_stage__item=item),
    }


def factcheck_pages(factcheck_project, users, capture_on_commit):
    """alice's assignments of step 1 (pre-annotated offline), step 2 (evidence with a long
    link) and step 3 of three Factcheck-Bench items."""
    project = factcheck_project
    with capture_on_commit(execute=True):
        import_jsonl(
            project,
            jsonl(
                [
                    {
                        "prompt": "Who was Marie Curie?",
                        "id": "curie",
                        "response": "Marie Curie was a physicist and chemist born in Warsaw in 1867. "
                        "She won two Nobel Prizes, and she discovered polonium and radium.",
                    }
                ]
            ),
            fmt="plain",
        )
    step1_item = project.items.get()
    assert step1_item.stages.get().status == StageStatus.ANNOTATING, "the offline pre-annotation did not run"

    def later_step_item(external_id):
        item = project.items.create(
            prompt="Who won which Nobel Prize?",
            response=" ".join(STEP1_CONTENT["sentences"]),
            external_id=external_id,
        )
        stage1 = ItemStage.objects.create(item=item, stage=1, status=StageStatus.DONE, content=STEP1_CONTENT)
        GoldRecord.objects.create(item_stage=stage1, payload=STEP1_GOLD)
        return item

    evidence = [
        passage(k) | {"url": LONG_URL, "title": "Nobel Prize in Physics 1903 — the official page"} for k in range(3)
    ]
    step2_item = later_step_item("step-2")
    ItemStage.objects.create(
        item=step2_item,
        stage=2,
        status=StageStatus.READY,
        content={"claims": [dict(claim, evidence=evidence) for claim in STEP2_CONTENT["claims"]]},
    )
    step3_item = later_step_item("step-3")
    stage2 = ItemStage.objects.create(item=step3_item, stage=2, status=StageStatus.DONE, content=STEP2_CONTENT)
    GoldRecord.objects.create(item_stage=stage2, payload=STEP2_GOLD)
    ItemStage.objects.create(
        item=step3_item,
        stage=3,
        status=StageStatus.READY,
        content=step3.build_content(STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD),
    )
    assign_open_stages(project)
    mine = Assignment.objects.filter(user=users["alice"], item_stage__item__project=project)
    return {
        step: mine.get(item_stage__item=item, item_stage__stage=step)
        for step, item in ((1, step1_item), (2, step2_item), (3, step3_item))
    }
