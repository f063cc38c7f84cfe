"""axe-core finds no accessibility violation on any kind of page, at 1280 px and on a phone (390 px).

Pages: home (admin, annotator, consolidator), the project page of every kind, new project,
settings, guidelines, item page, consolidation list, annotation pages of FELM, Factcheck-Bench
steps 1, 2 and 3 and D-FActScore, their consolidation pages, the agreement pages (every step)
and the leaderboard. axe-core's script comes from a pinned PyPI package (see ``axe_violations``).
"""

import pytest

from annotation.models import Assignment
from annotation.services.annotations import save_annotation
from tests.helpers.browser import axe_violations, login
from tests.helpers.builders import PASSWORD
from tests.helpers.dfactscore import answer as dfactscore_answer
from tests.helpers.factcheck import CS, IR, RE
from tests.helpers.factcheck import answer as step2_answer
from tests.helpers.research import make_run, system_lines

pytestmark = pytest.mark.browser

WIDTHS = ({"width": 1280, "height": 900}, {"width": 390, "height": 844})


def check(browser, base_url, problems, pages: dict[str, list[str]]):
    """Each user's pages at both widths; every violation of every page is listed at once."""
    from playwright.sync_api import expect

    found = []
    for username, urls in pages.items():
        for viewport in WIDTHS:
            page = login(browser, base_url, username, PASSWORD, problems, viewport=viewport)
            for url in urls:
                page.goto(url)
                expect(page.locator("main")).to_be_visible()
                page.wait_for_load_state("networkidle")
                found += axe_violations(page)
            page.context.close()
    assert found == [], "axe-core violations:\n" + "\n".join(found)


def submit_both(assignments, payload):
    for assignment in assignments:
        save_annotation(assignment=assignment, payload=payload, version=0, submit=True)


def test_felm_and_factcheck_pages_have_no_accessibility_violation(
    browser,
    live_server,
    problems,
    users,
    felm_project,
    felm_pages,
    factcheck_project,
    factcheck_pages,
):
    # Consolidations of Factcheck-Bench steps 1, 2 and 3: alice and bob submit the same answers.
    consolidations = {}
    for step, alice_assignment in factcheck_pages.items():
        stage = alice_assignment.item_stage
        both = Assignment.objects.filter(item_stage=stage, user__username__in=["alice", "bob"])
        if step == 1:
            payload = {
                "sentences": [
                    {
                        "decontext": text,
                        "importance": "yes",
                        "checkworthy": "yes",
                        "claims": [{"text": text, "category": "factual", "importance": "yes"}],
                    }
                    for text in stage.content["sentences"]
                ]
            }
        elif step == 2:
            payload = {
                "claims": [
                    step2_answer([CS, IR, RE], reliable=[True, None, False], correction=claim["text"])
                    for claim in stage.content["claims"]
                ]
            }
        else:
            from annotation.kinds import get_kind

            payload = get_kind("factcheck").empty_payload(3, stage.content, stage.suggestion)
        submit_both(both, payload)
        stage.refresh_from_db()
        consolidations[step] = stage.consolidation.id
    felm = felm_project.id
    factcheck = factcheck_project.id
    item = felm_project.items.order_by("id").first()
    check(
        browser,
        live_server.url,
        problems,
        {
            "admin": [
                "/",
                f"/projects/{felm}/",
                f"/projects/{factcheck}/",
                "/projects/new/",
                f"/projects/{felm}/settings/",
                f"/projects/{felm}/items/{item.id}/",
                f"/projects/{felm}/agreement/",
                *(f"/projects/{factcheck}/agreement/?stage={step}" for step in (1, 2, 3)),
                f"/projects/{felm}/leaderboard/",
            ],
            "alice": [
                "/",
                f"/projects/{felm}/guidelines/",
                f"/assignments/{felm_pages['assignment'].id}/",
                *(f"/assignments/{assignment.id}/" for assignment in factcheck_pages.values()),
            ],
            "carol": [
                "/",
                f"/projects/{felm}/consolidations/",
                f"/consolidations/{felm_pages['consolidation'].id}/",
                *(f"/consolidations/{consolidation}/" for consolidation in consolidations.values()),
            ],
        },
    )


def test_dfactscore_pages_have_no_accessibility_violation(browser, live_server, problems, users, dfactscore_project):
    stage = dfactscore_project.items.get().stages.get()
    alice = Assignment.objects.get(item_stage=stage, user=users["alice"])
    check(browser, live_server.url, problems, {"alice": [f"/assignments/{alice.id}/"]})
    submit_both(Assignment.objects.filter(item_stage=stage), dfactscore_answer(0, "supported"))
    stage.refresh_from_db()
    project = dfactscore_project.id
    check(
        browser,
        live_server.url,
        problems,
        {
            "admin": [f"/projects/{project}/", f"/projects/{project}/agreement/"],
            "carol": [f"/consolidations/{stage.consolidation.id}/"],
        },
    )


def test_research_pages_have_no_accessibility_violation(browser, live_server, problems, gold):  # noqa: F811
    for name, wrong_every in (("checker", 2), ("better checker", 4)):
        make_run(gold, system_lines(wrong_every=wrong_every), system=name, resamples=50)
    check(
        browser,
        live_server.url,
        problems,
        {
            "admin": [
                f"/projects/{gold.id}/leaderboard/",
                f"/projects/{gold.id}/leaderboard/?task=stance3",
                f"/projects/{gold.id}/llm-rater/",
                f"/projects/{gold.id}/",
            ]
        },
    )
