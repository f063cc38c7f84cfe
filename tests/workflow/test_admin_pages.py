"""Admin control in the pages: member roles, accounts, guidelines templates and their rendering,
gold and export counts, plain "Step N" wording (issue 10)."""

import re

import pytest
from django.contrib.auth import get_user_model

from annotation import guidelines
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.kinds.factcheck import step1, step2
from annotation.models import Assignment, AssignmentStatus, Membership, Project, Role
from annotation.services.consolidation import discard_item_stage
from annotation.services.projects import add_member
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD, felm_line, jsonl

pytestmark = pytest.mark.django_db
User = get_user_model()
XSS = '<script>alert("x")</script>'


def roles_of(project, user) -> set[str]:
    return set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))


def membership(project, user, role) -> Membership:
    return Membership.objects.get(project=project, user=user, role=role)


def change_role(client, project, member: Membership, role: str):
    return client.post(f"/projects/{project.id}/members/", {"change": member.id, "role": role}, follow=True)


# -- member roles -------------------------------------------------------------------------------


def test_an_admin_moves_an_annotator_to_consolidator_and_their_open_work_goes_to_the_pool(
    felm_project, felm_items, users, logged_in
):
    add_member(project=felm_project, user=users["mallory"], role=Role.ANNOTATOR)  # free to take alice's items
    assert Assignment.objects.filter(user=users["alice"]).count() == 3
    response = change_role(
        logged_in("admin"),
        felm_project,
        membership(felm_project, users["alice"], Role.ANNOTATOR),
        Role.CONSOLIDATOR,
    )
    assert "alice is now consolidator, no longer annotator" in response.content.decode()
    assert roles_of(felm_project, users["alice"]) == {Role.CONSOLIDATOR}
    assert not Assignment.objects.filter(user=users["alice"]).exists()
    assert Assignment.objects.filter(user=users["mallory"], status=AssignmentStatus.ASSIGNED).count() == 3


def test_submitted_work_stays_when_an_annotator_changes_role(felm_project, open_consolidation, users, logged_in):
    change_role(
        logged_in("admin"),
        felm_project,
        membership(felm_project, users["alice"], Role.ANNOTATOR),
        Role.ADMIN,
    )
    assert roles_of(felm_project, users["alice"]) == {Role.ADMIN}
    assert Assignment.objects.filter(user=users["alice"], status=AssignmentStatus.SUBMITTED).count() == 1


@pytest.mark.parametrize("who, status", [("alice", 403), ("carol", 403), ("mallory", 404)])
def test_only_project_admins_change_roles(felm_project, users, logged_in, who, status):
    member = membership(felm_project, users["bob"], Role.ANNOTATOR)
    response = logged_in(who).post(f"/projects/{felm_project.id}/members/", {"change": member.id, "role": Role.ADMIN})
    assert response.status_code == status
    assert roles_of(felm_project, users["bob"]) == {Role.ANNOTATOR}


def test_the_last_admin_keeps_the_admin_role(felm_project, users, logged_in):
    client = logged_in("admin")
    response = change_role(client, felm_project, membership(felm_project, users["admin"], Role.ADMIN), Role.ANNOTATOR)
    assert "Role not changed: a project needs an admin" in response.content.decode()
    assert roles_of(felm_project, users["admin"]) == {Role.ADMIN}
    # with a second admin the first may step down
    add_member(project=felm_project, user=users["carol"], role=Role.ADMIN)
    change_role(client, felm_project, membership(felm_project, users["admin"], Role.ADMIN), Role.ANNOTATOR)
    assert roles_of(felm_project, users["admin"]) == {Role.ANNOTATOR}


def test_a_role_the_member_already_holds_just_drops_the_old_one(felm_project, users, logged_in):
    add_member(project=felm_project, user=users["carol"], role=Role.ANNOTATOR)
    change_role(
        logged_in("admin"),
        felm_project,
        membership(felm_project, users["carol"], Role.ANNOTATOR),
        Role.CONSOLIDATOR,
    )
    assert roles_of(felm_project, users["carol"]) == {Role.CONSOLIDATOR}


def test_a_bad_role_or_another_projects_member_changes_nothing(felm_project, factcheck_project, users, logged_in):
    client = logged_in("admin")
    member = membership(felm_project, users["bob"], Role.ANNOTATOR)
    response = change_role(client, felm_project, member, "owner")
    assert response.status_code == 200 and "Role not changed: role:" in response.content.decode()
    other = membership(factcheck_project, users["bob"], Role.ANNOTATOR)
    assert (
        client.post(f"/projects/{felm_project.id}/members/", {"change": other.id, "role": Role.ADMIN}).status_code
        == 404
    )
    assert roles_of(felm_project, users["bob"]) == roles_of(factcheck_project, users["bob"]) == {Role.ANNOTATOR}


def test_the_project_page_offers_a_role_change_per_member(felm_project, logged_in):
    page = logged_in("admin").get(f"/projects/{felm_project.id}/").content.decode()
    assert page.count('name="change"') == Membership.objects.filter(project=felm_project).count()
    assert "Change role" in page


def test_the_api_changes_and_removes_roles_for_project_admins_only(felm_project, felm_items, users, clients):
    add_member(project=felm_project, user=users["mallory"], role=Role.ANNOTATOR)
    member = membership(felm_project, users["alice"], Role.ANNOTATOR)
    url = f"/api/projects/{felm_project.id}/members/{member.id}/"
    assert clients["bob"].patch(url, {"role": Role.ADMIN}, format="json").status_code == 403
    assert clients["carol"].delete(url).status_code == 403
    assert clients["admin"].patch(url, {"role": "owner"}, format="json").status_code == 400
    response = clients["admin"].patch(url, {"role": Role.CONSOLIDATOR}, format="json")
    assert response.status_code == 200 and response.json()["role"] == Role.CONSOLIDATOR
    assert roles_of(felm_project, users["alice"]) == {Role.CONSOLIDATOR}
    assert Assignment.objects.filter(user=users["mallory"]).count() == 3  # alice's open work moved on
    last_admin = membership(felm_project, users["admin"], Role.ADMIN)
    response = clients["admin"].delete(f"/api/projects/{felm_project.id}/members/{last_admin.id}/")
    assert response.status_code == 400 and "needs an admin" in response.json()["detail"]
    consolidator = membership(felm_project, users["alice"], Role.CONSOLIDATOR)
    assert clients["admin"].delete(f"/api/projects/{felm_project.id}/members/{consolidator.id}/").status_code == 204
    assert roles_of(felm_project, users["alice"]) == set()
    assert clients["admin"].delete(f"/api/projects/{felm_project.id}/members/{consolidator.id}/").status_code == 404


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres_only("row-lock races are tested on PostgreSQL")
def test_two_admins_stepping_down_at_once_leave_one_admin(racer, felm_project, users):
    for _ in range(5):
        add_member(project=felm_project, user=users["carol"], role=Role.ADMIN)
        mine, theirs = (membership(felm_project, users[name], Role.ADMIN) for name in ("admin", "carol"))
        answers = racer.race(
            [
                (
                    users["admin"],
                    "DELETE",
                    f"/api/projects/{felm_project.id}/members/{mine.id}/",
                    None,
                ),
                (
                    users["carol"],
                    "DELETE",
                    f"/api/projects/{felm_project.id}/members/{theirs.id}/",
                    None,
                ),
            ]
        )
        assert sorted(status for status, _ in answers) == [204, 400], answers
        admins = Membership.objects.filter(project=felm_project, role=Role.ADMIN)
        assert admins.count() == 1
        if admins.get().user == users["carol"]:  # the next round starts with admin as an admin again
            add_member(project=felm_project, user=users["admin"], role=Role.ADMIN)
            Membership.objects.filter(project=felm_project, user=users["carol"], role=Role.ADMIN).delete()


# -- accounts -------------------------------------------------------------------------------------


def test_staff_create_a_user_and_add_them_to_their_project(felm_project, users, logged_in):
    client = logged_in("admin")
    assert client.get(f"/users/new/?project={felm_project.id}").status_code == 200
    response = client.post(
        "/users/new/",
        {
            "username": "erin",
            "password": "a-long-pass-9",
            "email": "erin@example.org",
            "project": felm_project.id,
            "role": Role.ANNOTATOR,
        },
        follow=True,
    )
    assert "User erin created and added to FELM test as annotator." in response.content.decode()
    erin = User.objects.get(username="erin")
    assert erin.check_password("a-long-pass-9") and erin.email == "erin@example.org" and not erin.is_staff
    assert roles_of(felm_project, erin) == {Role.ANNOTATOR}


def test_staff_create_a_staff_user_without_a_project(users, logged_in):
    response = logged_in("admin").post(
        "/users/new/", {"username": "frank", "password": "a-long-pass-9", "is_staff": "on"}
    )
    assert response.status_code == 302
    frank = User.objects.get(username="frank")
    assert frank.is_staff and not frank.memberships.exists()


def test_non_staff_cannot_create_users_even_as_project_admins(felm_project, users, logged_in):
    add_member(project=felm_project, user=users["alice"], role=Role.ADMIN)
    client = logged_in("alice")
    assert client.get("/users/new/").status_code == 403
    assert client.post("/users/new/", {"username": "eve", "password": "a-long-pass-9"}).status_code == 403
    assert not User.objects.filter(username="eve").exists()
    # nor is the page offered to them
    assert "/users/new/" not in client.get(f"/projects/{felm_project.id}/").content.decode()
    assert "/users/new/" in logged_in("admin").get(f"/projects/{felm_project.id}/").content.decode()


def test_anonymous_visitors_are_sent_to_the_login(client):
    response = client.get("/users/new/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_staff_add_new_users_only_to_projects_they_run(felm_project, make_user, client):
    client.force_login(make_user("ops", staff=True))  # staff, but no admin of the project
    response = client.post(
        "/users/new/",
        {
            "username": "erin",
            "password": "a-long-pass-9",
            "project": felm_project.id,
            "role": Role.ADMIN,
        },
    )
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not User.objects.filter(username="erin").exists()


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"username": "erin", "password": "short"}, "password", "at least 8 characters"),
        (
            {"username": "alice", "password": "a-long-pass-9"},
            "username",
            "a user with this username exists",
        ),
        (
            {"username": "ALICE", "password": "a-long-pass-9"},
            "username",
            "a user with this username exists",
        ),
        (
            {"username": "bad name!", "password": "a-long-pass-9"},
            "username",
            "Enter a valid username",
        ),
        (
            {"username": "erin", "password": "a-long-pass-9", "role": Role.ANNOTATOR},
            "project",
            "choose the project",
        ),
    ],
)
def test_bad_account_input_is_a_clear_form_error(users, logged_in, fields, field, message):
    before = User.objects.count()
    response = logged_in("admin").post("/users/new/", fields)
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert any(message in error for error in errors[field]), errors
    assert User.objects.count() == before


def test_the_api_reports_a_name_taken_in_another_case_under_username(users, clients):
    response = clients["admin"].post("/api/users/", {"username": "Alice", "password": "a-long-pass-9"}, format="json")
    assert response.status_code == 400 and "username" in response.json()
    assert not User.objects.filter(username="Alice").exists()


def test_user_text_in_the_member_list_is_escaped(felm_project, make_user, logged_in):
    add_member(project=felm_project, user=make_user('x"><script>alert(1)</script>'), role=Role.ANNOTATOR)
    page = logged_in("admin").get(f"/projects/{felm_project.id}/").content.decode()
    assert "<script>alert(1)</script>" not in page


# -- guidelines templates -------------------------------------------------------------------------

FELM_CODES = (
    "knowledge_error",
    "reasoning_error",
    "irrelevant_with_qst",
    "fooled",
    "wk",
    "science",
    "writing_rec",
    "reasoning",
    "math",
)


def test_the_felm_template_defines_the_released_labels():
    template = get_kind("felm").guidelines_template()
    for code in FELM_CODES:
        assert f"`{code}`" in template, code


def test_the_factcheck_template_defines_the_released_labels():
    template = get_kind("factcheck").guidelines_template()
    codes = {*step1.SENTENCE_IMPORTANCE, *step1.CLAIM_CATEGORIES, *step2.STANCES, *step2.FACTUALITY}
    for code in codes:
        assert f"`{code}`" in template, code
    for rule in ("Minimal edits", "No new information", "Remove duplicates", "Keep the order"):
        assert rule in template


@pytest.mark.parametrize("kind", ["felm", "factcheck"])
def test_each_template_renders_with_a_nested_list(kind):
    html = guidelines.render(get_kind(kind).guidelines_template())
    # a list opened inside a list item before that item closes
    assert re.search(r"<li>(?:(?!</li>).)*?<(?:ul|ol)[ >]", html, re.DOTALL), html[:500]


def test_a_new_project_left_without_guidelines_starts_with_its_kinds_template(logged_in):
    client = logged_in("admin")
    client.post(
        "/projects/new/",
        {"name": "F", "kind": "felm", "annotators_per_item": 2, "guidelines": "  "},
    )
    assert Project.objects.get(name="F").guidelines == get_kind("felm").guidelines_template()
    client.post(
        "/projects/new/",
        {"name": "Own", "kind": "felm", "annotators_per_item": 2, "guidelines": "# Ours"},
    )
    assert Project.objects.get(name="Own").guidelines == "# Ours"


def test_a_project_created_through_the_api_starts_with_its_kinds_template(users, clients):
    response = clients["admin"].post("/api/projects/", {"name": "FC", "kind": "factcheck"}, format="json")
    assert response.status_code == 201
    assert response.json()["guidelines"] == get_kind("factcheck").guidelines_template() != ""


def test_the_project_form_is_prefilled_with_the_first_kinds_template_and_carries_the_others(
    logged_in,
):
    response = logged_in("admin").get("/projects/new/")
    form = response.context["form"]
    first_kind = form.fields["kind"].choices[0][0]
    assert form.initial["guidelines"] == get_kind(first_kind).guidelines_template()
    page = response.content.decode()
    assert 'id="guideline-templates"' in page and "completely-support" in page and "irrelevant_with_qst" in page


def test_the_project_form_swaps_the_template_with_the_kind_until_the_text_is_edited(
    browser, live_server, users, problems, transactional_db
):
    page = login(browser, live_server.url, "admin", PASSWORD, problems)
    page.goto("/projects/new/")
    text = page.locator("#id_guidelines")
    assert text.input_value() == get_kind("felm").guidelines_template()
    page.locator("#id_kind").select_option("factcheck")
    assert text.input_value() == get_kind("factcheck").guidelines_template()
    text.fill("# Our own rules")
    page.locator("#id_kind").select_option("felm")
    assert text.input_value() == "# Our own rules"
    page.locator("#id_name").fill("From the form")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/projects/*/")
    assert Project.objects.get(name="From the form").guidelines == "# Our own rules"


# -- Markdown rendering ---------------------------------------------------------------------------


@pytest.mark.parametrize("indent", [2, 4])
def test_nested_lists_render_nested(indent):
    pad = " " * indent
    html = guidelines.render(f"- outer\n{pad}- inner\n{pad}{pad}- innermost\n- second\n")
    assert re.sub(r"\s", "", html) == (
        "<ul><li>outer<ul><li>inner<ul><li>innermost</li></ul></li></ul></li><li>second</li></ul>"
    )


def test_guidelines_escape_html_and_drop_script_links_but_keep_tables():
    html = guidelines.render(
        f"{XSS}\n\n[click](javascript:alert(1))\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n3. three\n4. four\n"
    )
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html.split("[click]")[0] and 'href="javascript' not in html
    assert "<table>" in html and "<td>1</td>" in html
    assert '<ol start="3">' in html


def test_the_guidelines_page_renders_nested_lists(felm_project, logged_in):
    felm_project.guidelines = "- a\n  - b\n"
    felm_project.save()
    page = logged_in("alice").get(f"/projects/{felm_project.id}/guidelines/").content.decode()
    assert re.search(r"<li>a\s*<ul>\s*<li>b</li>", page)


# -- gold and export counts -----------------------------------------------------------------------


def test_gold_count_includes_imported_records_and_export_says_what_it_leaves_out(
    felm_project, open_consolidation, users, logged_in
):
    # three items in annotation (felm_items), one of them now discarded; two imported with gold labels
    discard_item_stage(consolidation=open_consolidation, user=users["carol"], reason="no agreement")
    import_jsonl(
        felm_project,
        jsonl([felm_line(10 + i, ["A.", "B."]) for i in range(2)]),
        fmt="felm",
        labels_as="gold",
    )
    client = logged_in("admin")
    page = re.sub(r"\s+", " ", client.get(f"/projects/{felm_project.id}/").content.decode())
    assert "<b>2</b> gold records (2 imported)" in page
    assert "Exports 2 items; left out: 2 not consolidated yet, 1 discarded." in page
    assert "Exports 2 submitted annotations (every annotator's)." in page
    assert "One line per unit (segment, sentence, claim, passage, fact) of the 2 submitted annotations" in page
    # the counts are what the downloads hold
    lines = b"".join(client.get(f"/projects/{felm_project.id}/export/felm/").streaming_content).splitlines()
    raw = b"".join(client.get(f"/projects/{felm_project.id}/export/annotations/").streaming_content).splitlines()
    assert (len(lines), len(raw)) == (2, 2)


def test_consolidators_see_the_gold_count_too(felm_project, logged_in):
    import_jsonl(felm_project, jsonl([felm_line(1, ["A."])]), fmt="felm", labels_as="gold")
    page = re.sub(r"\s+", " ", logged_in("carol").get(f"/projects/{felm_project.id}/").content.decode())
    assert "<b>1</b> gold record (1 imported)" in page


def test_a_three_step_project_counts_gold_per_step(factcheck_project, logged_in):
    page = re.sub(r"\s+", " ", logged_in("admin").get(f"/projects/{factcheck_project.id}/").content.decode())
    assert "step 1: 0 · step 2: 0 · step 3: 0" in page


# -- plain words ----------------------------------------------------------------------------------


def test_project_and_item_pages_say_step_not_stage(felm_project, felm_items, logged_in):
    client = logged_in("admin")
    project_page = client.get(f"/projects/{felm_project.id}/").content.decode()
    assert "Step 1: Annotating" in project_page
    item_page = client.get(f"/projects/{felm_project.id}/items/{felm_items[0].id}/").content.decode()
    settings_page = client.get(f"/projects/{felm_project.id}/settings/").content.decode()
    assert "Step 1" in item_page
    for page in (project_page, item_page, settings_page):
        visible = re.sub(r"<[^>]+>", " ", page)  # words shown, not attribute names such as name="stage"
        assert not re.search(r"\bstage\b", visible, re.IGNORECASE), re.findall(r".{40}\bstage\b.{40}", visible, re.I)


def test_the_project_page_links_the_research_pages_by_role(felm_project, logged_in):
    """Leaderboard for admins and consolidators; the LLM rater (which spends the lab's tokens)
    for admins only; neither for annotators."""
    links = {
        name: logged_in(name).get(f"/projects/{felm_project.id}/").content.decode()
        for name in ("admin", "carol", "alice")
    }
    leaderboard, rater = (
        f"/projects/{felm_project.id}/leaderboard/",
        f"/projects/{felm_project.id}/llm-rater/",
    )
    assert leaderboard in links["admin"] and rater in links["admin"]
    assert leaderboard in links["carol"] and rater not in links["carol"]
    assert leaderboard not in links["alice"] and rater not in links["alice"]
