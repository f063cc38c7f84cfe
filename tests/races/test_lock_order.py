"""The lock order of annotation/services/locks.py under real parallel requests, on PostgreSQL.

A sentence-split correction locked its stage together with the item and the project
(``FOR UPDATE`` through a join) after the stage's assignments, while adding an annotator, taking
one away or asking for more annotators per item took the project first and the stages after:
PostgreSQL found the cycle and aborted one of them (a 500). And deleting a project while its
items were pre-annotated failed the delete's foreign-key check at commit (assignments added
under stages it was deleting: a 500).
"""

import threading
from collections import Counter

import pytest
from django.db import connections

from annotation import tasks
from annotation.imports.items import import_jsonl
from annotation.models import Assignment, Item, ItemStage, Project, Role, StageStatus
from annotation.services.projects import add_member
from tests.helpers.builders import felm_line, jsonl, project_with_team

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("row-lock order is tested on PostgreSQL"),
]

ITEMS = 12


def felm_records(n: int, offset: int = 0) -> list[dict]:
    return [felm_line(offset + i, [f"Sentence {offset + i}.{k} is a claim." for k in range(3)]) for i in range(n)]


def split(admin, item, round_: int):
    return (
        admin,
        "POST",
        f"/api/projects/{item.project_id}/items/{item.id}/stages/1/split/",
        {"units": [f"Round {round_} first sentence.", f"Round {round_} second sentence."]},
    )


@pytest.fixture
def three_annotator_project(users, make_user):
    """Two annotators where three are wanted: every stage waits for the next annotator, so
    adding one hands out an assignment in every stage, at the moment the splits run."""
    project = project_with_team(users, "Lock order", "felm")
    project.annotators_per_item = 3
    project.save()
    import_jsonl(project, jsonl(felm_records(ITEMS)), fmt="felm")
    make_user("dave")
    return project


def no_server_error(answers):
    assert all(status is not None and status < 500 for status, _ in answers), answers


def test_splits_and_adding_or_removing_an_annotator_at_once_never_deadlock(racer, three_annotator_project, users):
    project = three_annotator_project
    items = list(project.items.order_by("id"))
    dave = users["admin"].__class__.objects.get(username="dave")
    outcomes = Counter()
    for round_ in range(8):
        if round_ % 2 == 0:
            member = (
                users["admin"],
                "POST",
                f"/api/projects/{project.id}/members/",
                {"username": "dave", "role": "annotator"},
            )
        else:
            membership = project.memberships.get(user=dave, role=Role.ANNOTATOR)
            member = (
                users["admin"],
                "DELETE",
                f"/api/projects/{project.id}/members/{membership.id}/",
                None,
            )
        answers = racer.race([member] + [split(users["admin"], item, round_) for item in items])
        no_server_error(answers)
        outcomes.update(status for status, _ in answers)
        assert answers[0][0] in (201, 204), answers[0]
    # every split either went through or was refused for the item's state, never a deadlock
    assert outcomes[200] > 0, outcomes
    for stage in ItemStage.objects.filter(item__project=project):
        assert stage.status in (StageStatus.READY, StageStatus.ANNOTATING), stage.status
        assert len(set(stage.assignments.values_list("user_id", flat=True))) == stage.assignments.count()


def test_splits_and_more_annotators_per_item_at_once_never_deadlock(racer, three_annotator_project, users):
    project = three_annotator_project
    items = list(project.items.order_by("id"))
    add_member(
        project=project,
        user=users["admin"].__class__.objects.get(username="dave"),
        role=Role.ANNOTATOR,
    )
    for round_ in range(6):
        wanted = 3 + round_ % 2  # 4 hands out a fourth assignment everywhere; 3 takes nothing back
        settings = (
            users["admin"],
            "PATCH",
            f"/api/projects/{project.id}/",
            {"annotators_per_item": wanted},
        )
        answers = racer.race([settings] + [split(users["admin"], item, round_) for item in items])
        no_server_error(answers)
        assert answers[0][0] == 200, answers[0]


def test_splits_and_reassignments_at_once_never_deadlock(racer, three_annotator_project, users):
    project = three_annotator_project
    add_member(
        project=project,
        user=users["admin"].__class__.objects.get(username="dave"),
        role=Role.ANNOTATOR,
    )
    items = list(project.items.order_by("id"))
    for round_ in range(4):
        requests = []
        for item in items:
            assignment = Assignment.objects.filter(item_stage__item=item).order_by("id").first()
            requests.append(
                (
                    users["admin"],
                    "POST",
                    f"/api/projects/{project.id}/assignments/{assignment.id}/reassign/",
                    None,
                )
            )
            requests.append(split(users["admin"], item, round_))
        no_server_error(racer.race(requests))


def test_deleting_a_project_while_its_items_are_pre_annotated_wins_cleanly(racer, users, monkeypatch):
    """Pre-annotation tasks run in threads of their own (each with its own connection) on the
    project's stages while the DELETE arrives: the delete answers 204, every task ends without
    an error, and nothing of the project is left."""
    monkeypatch.setattr(
        "annotation.imports.items.enqueue_precompute", lambda stage_ids: None
    )  # run by the threads below
    for round_ in range(4):
        project = project_with_team(users, f"Deleted {round_}", "felm")
        # plain lines are segmented by the pre-annotation: their stages wait in precomputing
        import_jsonl(
            project,
            jsonl(
                [
                    {
                        "prompt": f"Question {round_}.{i}?",
                        "response": f"Answer {i} is here. It has two sentences.",
                    }
                    for i in range(120)
                ]
            ),
            fmt="plain",
        )
        stage_ids = list(
            ItemStage.objects.filter(item__project=project, status=StageStatus.PRECOMPUTING)
            .order_by("id")
            .values_list("id", flat=True)
        )
        assert len(stage_ids) == 120
        errors: list = []
        barrier = threading.Barrier(4)

        def pre_annotate(chunk):
            try:
                barrier.wait(timeout=30)
                for start in range(0, len(chunk), 5):
                    tasks.precompute_stages(chunk[start : start + 5])
            except Exception as exc:  # the test's assertion shows it
                errors.append(repr(exc))
            finally:
                connections.close_all()

        workers = [threading.Thread(target=pre_annotate, args=(stage_ids[k::3],)) for k in range(3)]
        for worker in workers:
            worker.start()
        barrier.wait(timeout=30)
        [(status, answer)] = racer.race([(users["admin"], "DELETE", f"/api/projects/{project.id}/", None)])
        for worker in workers:
            worker.join(timeout=120)
        assert status == 204, answer
        assert errors == []
        assert not Project.objects.filter(pk=project.pk).exists()
        assert not Item.objects.filter(project_id=project.pk).exists()
        assert not Assignment.objects.filter(item_stage_id__in=stage_ids).exists()
