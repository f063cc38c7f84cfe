"""The set-based assignment of new stages (a rotation once the loads are level, one INSERT ...
SELECT on PostgreSQL) gives the same (stage, annotator) pairs, in the same order, and the same
balance as the per-stage plan it replaces (``_plan``: each stage to the least-loaded annotators)."""

import random
from collections import Counter

import pytest

from annotation.models import Assignment, Item, ItemStage, Role, StageStatus
from annotation.services.assignments import _plan, assign_new_stages, rotation_offset, rotation_plan
from annotation.services.projects import add_member


def _planned(stage_ids, annotators, load, per_stage):
    return _plan([(stage_id, set(), per_stage) for stage_id in stage_ids], annotators, load)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
@pytest.mark.parametrize("per_stage", [1, 2, 3, 7])
def test_the_rotation_is_the_plan_from_every_level_state(count, per_stage):
    annotators = [10 + 3 * n for n in range(count)]
    for offset in range(count):
        load = Counter({u: 4 + (position < offset) for position, u in enumerate(annotators)})
        assert rotation_offset(annotators, load) == offset
        stage_ids = list(range(100, 137))
        expected_load = load.copy()
        expected = _planned(stage_ids, annotators, expected_load, per_stage)
        assert rotation_plan(stage_ids, annotators, offset, per_stage) == expected
        # and the plan ends level again, as the rotation assumes for the next batch
        assert rotation_offset(annotators, expected_load) is not None


def test_loads_that_are_not_level_have_no_rotation():
    annotators = [1, 2, 3]
    assert rotation_offset(annotators, Counter({1: 0, 2: 1, 3: 0})) is None  # the one ahead is not first
    assert rotation_offset(annotators, Counter({1: 2, 2: 0, 3: 0})) is None  # two ahead
    assert rotation_offset(annotators, Counter({1: 5, 2: 5, 3: 5})) == 0


def _stages(project, count):
    items = Item.objects.bulk_create(
        [Item(project=project, external_id=str(n), response=f"R{n}.") for n in range(count)]
    )
    stages = ItemStage.objects.bulk_create(
        [ItemStage(item=item, stage=1, status=StageStatus.ANNOTATING) for item in items]
    )
    return [stage.id for stage in stages]


@pytest.mark.parametrize("per_item", [2, 3])
def test_new_stages_get_the_planned_annotators_whatever_the_loads(felm_project, users, per_item):
    """Unequal loads (an annotator who joined late) are levelled stage by stage, then rotated."""
    project = felm_project
    add_member(project=project, user=users["mallory"], role=Role.ANNOTATOR)
    project.annotators_per_item = per_item
    project.save(update_fields=["annotators_per_item"])
    annotators = sorted([users["alice"].id, users["bob"].id, users["mallory"].id])
    old = _stages(project, 7)
    rng = random.Random(5)
    Assignment.objects.bulk_create(
        [Assignment(item_stage_id=stage_id, user=users[name]) for stage_id in old for name in ("alice", "bob")]
        + [Assignment(item_stage_id=old[0], user=users["mallory"])]
    )
    load = Counter({users["alice"].id: 7, users["bob"].id: 7, users["mallory"].id: 1})
    new = _stages(project, 40 + rng.randrange(5))
    expected_load = load.copy()
    expected = _planned(new, annotators, expected_load, per_item)

    assert assign_new_stages(project, new, annotators, load) == len(expected)

    written = list(
        Assignment.objects.filter(item_stage_id__in=new).order_by("id").values_list("item_stage_id", "user_id")
    )
    assert written == expected
    assert load == expected_load
    counts = Counter(user for _, user in written)
    assert counts == Counter(user for _, user in expected)
    assert Assignment.objects.filter(item_stage_id__in=new, role="annotator", status="assigned").count() == len(
        expected
    )


def test_batches_continue_the_rotation_where_the_last_one_stopped(felm_project, users):
    """An import writes in batches; the load carried between them keeps the balance exact."""
    project = felm_project
    add_member(project=project, user=users["mallory"], role=Role.ANNOTATOR)
    annotators = sorted([users["alice"].id, users["bob"].id, users["mallory"].id])
    stage_ids = _stages(project, 31)
    load = Counter({u: 0 for u in annotators})
    for start in range(0, len(stage_ids), 4):
        assign_new_stages(project, stage_ids[start : start + 4], annotators, load)
    expected = _planned(stage_ids, annotators, Counter({u: 0 for u in annotators}), 2)
    written = list(
        Assignment.objects.filter(item_stage_id__in=stage_ids).order_by("id").values_list("item_stage_id", "user_id")
    )
    assert written == expected
    assert sorted(Counter(user for _, user in written).values()) == [20, 21, 21]
