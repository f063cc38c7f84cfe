"""Helpers of the browser tests: Debian's chromium driven by Playwright's sync API, logging in,
and reaching the pages the tests work on.

No browser is ever downloaded: the tests use /usr/bin/chromium (``apt-get install chromium``).
Without it, or without Playwright, the browser tests are skipped with a reason, except in CI
(``CI=true``), where a missing browser is a failure.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import Assignment

from .builders import PASSWORD, felm_line, jsonl

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DEFAULT_TIMEOUT_MS = 10_000


def skip_or_fail(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run in CI)")
    pytest.skip(reason)


def require_browser():
    """Playwright's ``sync_playwright`` if Playwright and chromium are installed; else skip (fail in CI)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed (pip install -r requirements-dev.txt)")
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        skip_or_fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    return sync_playwright


@dataclass
class PageProblems:
    """JavaScript errors and failed static/API requests seen by a page: none are expected."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page):
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: uncaught {exc}"))
        # Failed requests are judged by the response listener (a missing /favicon.ico is fine).
        page.on(
            "console",
            lambda msg: self.errors.append(f"{page.url}: console.{msg.type}: {msg.text}")
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None,
        )
        page.on(
            "response",
            lambda r: self.errors.append(f"{r.request.method} {r.url} -> {r.status}")
            if r.status >= 400 and re.search(r"/(static|api)/", r.url)
            else None,
        )
        return page


def login(
    browser,
    base_url: str,
    username: str,
    password: str,
    problems: PageProblems,
    viewport: dict | None = None,
):
    """A fresh browser context (own cookies) logged in as ``username``; returns its page."""
    context = browser.new_context(
        base_url=base_url,
        accept_downloads=True,
        viewport=viewport or {"width": 1280, "height": 900},
    )
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = problems.watch(context.new_page())
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))
    assert page.locator(".topbar .who").inner_text() == username
    return page


def open_consolidation_as(
    browser,
    base_url: str,
    username: str,
    password: str,
    problems: PageProblems,
    project,
    consolidation,
):
    """Log in and reach a consolidation the way a consolidator does: project page, the
    Consolidation link, then the item in the list."""
    page = login(browser, base_url, username, password, problems)
    page.goto(f"/projects/{project.id}/")
    page.get_by_role("link", name="Consolidation", exact=True).click()
    page.wait_for_url(f"**/projects/{project.id}/consolidations/")
    page.locator(f"a[href='/consolidations/{consolidation.id}/']").click()
    page.wait_for_url(f"**/consolidations/{consolidation.id}/")
    return page


def axe_violations(page) -> list[str]:
    """axe-core's violations on the page as it is now, one readable line per rule and element.

    axe-core's script comes from the pinned PyPI package axe-playwright-python (its axe.min.js),
    so nothing is fetched at test time and no copy of the script lives in this repository."""
    from axe_playwright_python.base import AXE_SCRIPT

    page.evaluate(AXE_SCRIPT)
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{page.url} at {page.viewport_size['width']} px: {v['id']} ({v['impact']}) {' '.join(node['target'])}: "
        f"{v['help']}"
        for v in result["violations"]
        for node in v["nodes"]
    ]


def open_first_assignment(browser, base, project, username, problems):
    """Log in and open the first assignment of ``project`` from its page, as an annotator does."""
    page = login(browser, base, username, PASSWORD, problems)
    page.goto(f"/projects/{project.id}/")
    page.get_by_role("link", name="Annotate", exact=True).click()
    page.wait_for_url(re.compile(r"/assignments/\d+/$"))
    return page


def judge_passages(page, stances: list[str]):
    """Stance (and reliability of the relevant ones) for each passage of the current claim, by keys."""
    from playwright.sync_api import (
        expect,  # Playwright is optional: the browser tests skip without it
    )

    passages = page.locator("#editor .fc2-passage")
    for k, key in enumerate(stances):
        expect(passages.nth(k)).to_have_class(re.compile(r"\bcurrent\b"))
        page.keyboard.press(key)
        if key != "4":
            page.keyboard.press("r")
        page.keyboard.press("j")


# A released-like item: nine segments of ordinary length, as FELM's world-knowledge responses have.
NINE = [
    f"Segment {k} says that the supermassive black holes of galaxy {k} merge into a single, larger black hole "
    f"and release gravitational waves."
    for k in range(1, 10)
]


def open_item(browser, live_server, problems, felm_project, users, segments, response=None):
    """A FELM item of ``segments`` imported and opened on alice's annotation page."""
    record = felm_line(0, segments)
    if response is not None:
        record["response"] = response
    import_jsonl(felm_project, jsonl([record]), fmt="felm")
    assignment = Assignment.objects.get(user=users["alice"], item_stage__item__project=felm_project)
    page = login(browser, live_server.url, "alice", PASSWORD, problems)
    page.goto(f"/assignments/{assignment.id}/")
    return page, assignment


def card(page, index):
    return page.locator("#segments > li.segment").nth(index)
