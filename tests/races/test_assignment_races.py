"""Pre-annotation tasks of one project that end at the same moment each assign the project's open
stages (tasks.precompute_stages): under real parallel threads, each with its own PostgreSQL
connection, none fails, no (stage, user) pair is written twice, and no stage gets fewer or more
annotators than it needs."""

import threading
from collections import Counter

import pytest
from django.db import connections

from annotation.models import Assignment, AssignmentRole, Item, ItemStage, StageStatus
from annotation.services.assignments import assign_open_stages

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("row-lock races are tested on PostgreSQL"),
]

THREADS = 4
STAGES_PER_ROUND = 60
ROUNDS = 4


def ready_stages(project, count: int, start: int) -> list[int]:
    """Stages pre-annotation has just finished (ready, nobody assigned yet)."""
    items = Item.objects.bulk_create([Item(project=project, response=f"Response {start + i}.") for i in range(count)])
    stages = ItemStage.objects.bulk_create(
        [ItemStage(item=item, stage=1, status=StageStatus.READY, content={"segments": ["A."]}) for item in items]
    )
    return [stage.id for stage in stages]


def in_parallel(function, count: int) -> list:
    """``function()`` in ``count`` threads released by one barrier; each thread's result or exception."""
    barrier, results = threading.Barrier(count), [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = function()
        except Exception as exc:  # reported, so that the assertion shows it
            results[index] = exc
        finally:
            connections.close_all()  # this thread's own connection

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_parallel_assigners_of_one_project_neither_fail_nor_duplicate_nor_leave_a_stage_short(
    felm_project, users, make_user
):
    for name in ("dave", "erin"):  # four annotators: a stage's two can differ between planners
        from annotation.models import Role
        from annotation.services.projects import add_member

        add_member(project=felm_project, user=make_user(name), role=Role.ANNOTATOR)
    total = 0
    for round_number in range(ROUNDS):
        stage_ids = ready_stages(felm_project, STAGES_PER_ROUND, round_number * STAGES_PER_ROUND)
        results = in_parallel(lambda: assign_open_stages(felm_project), THREADS)
        failures = [result for result in results if isinstance(result, Exception)]
        assert not failures, failures
        # every open stage was assigned exactly once overall, whichever thread did it
        assert sum(results) == STAGES_PER_ROUND * felm_project.annotators_per_item, results
        per_stage = Counter(
            Assignment.objects.filter(item_stage_id__in=stage_ids, role=AssignmentRole.ANNOTATOR).values_list(
                "item_stage_id", flat=True
            )
        )
        assert set(per_stage) == set(stage_ids)
        assert set(per_stage.values()) == {felm_project.annotators_per_item}
        total += len(stage_ids)
    pairs = Assignment.objects.values_list("item_stage_id", "user_id")
    assert len(pairs) == len(set(pairs)) == total * felm_project.annotators_per_item
    loads = Counter(Assignment.objects.values_list("user_id", flat=True))
    assert max(loads.values()) - min(loads.values()) <= 1  # still balanced
