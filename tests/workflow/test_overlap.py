"""The overlap share (Project.overlap_share): only a share of the items get annotators_per_item
annotators, drawn at random but reproducibly; the others get one, whose submission is their gold
record; agreement is measured on the shared items only."""

import json

import pytest

from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.models import (
    Assignment,
    Consolidation,
    GoldRecord,
    GoldSource,
    Project,
    StageStatus,
)
from annotation.research.selectors import project_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from annotation.services.projects import update_project
from tests.helpers.builders import felm_line, jsonl, segment

pytestmark = pytest.mark.django_db
ITEMS = 400


def test_the_draw_is_reproducible_and_takes_the_share():
    project = Project(pk=7, annotators_per_item=2, overlap_share=0.1)
    drawn = [project.is_overlap_item(item_id) for item_id in range(1, 10_001)]
    assert drawn == [project.is_overlap_item(item_id) for item_id in range(1, 10_001)]
    assert 0.09 < sum(drawn) / len(drawn) < 0.11
    assert [project.annotators_for(i) for i in range(1, 6)] == [2 if d else 1 for d in drawn[:5]]
    # another project draws other items
    assert drawn != [
        Project(pk=8, annotators_per_item=2, overlap_share=0.1).is_overlap_item(i) for i in range(1, 10_001)
    ]
    assert all(Project(pk=7, annotators_per_item=2, overlap_share=1).is_overlap_item(i) for i in range(1, 1000))


@pytest.fixture
def sparse(felm_project):
    """A FELM project double-annotating 10 % of its items."""
    felm_project.overlap_share = 0.1
    felm_project.save(update_fields=["overlap_share"])
    import_jsonl(felm_project, jsonl([felm_line(i, [f"Sentence {i}."]) for i in range(ITEMS)]), fmt="felm")
    return felm_project


def assignments_per_item(project) -> dict[int, int]:
    counts: dict[int, int] = {}
    for item_id in Assignment.objects.filter(item_stage__item__project=project).values_list(
        "item_stage__item_id", flat=True
    ):
        counts[item_id] = counts.get(item_id, 0) + 1
    return counts


def test_only_the_drawn_items_get_two_annotators_and_work_stays_balanced(sparse, users):
    counts = assignments_per_item(sparse)
    assert len(counts) == ITEMS
    assert {item_id for item_id, n in counts.items() if n == 2} == {i for i in counts if sparse.is_overlap_item(i)}
    assert set(counts.values()) == {1, 2}
    assert 0.05 < sum(n == 2 for n in counts.values()) / ITEMS < 0.16
    per_annotator = [
        Assignment.objects.filter(user=users[name], item_stage__item__project=sparse).count()
        for name in ("alice", "bob")
    ]
    assert abs(per_annotator[0] - per_annotator[1]) <= 1


def test_a_single_annotated_item_takes_its_submission_as_gold_without_consolidation(sparse, users):
    single = next(
        a
        for a in Assignment.objects.filter(item_stage__item__project=sparse)
        if not sparse.is_overlap_item(a.item_stage.item_id)
    )
    payload = {"segments": [segment(False, "knowledge_error", "The year is wrong.")]}
    save_annotation(assignment=single, payload=payload, version=0, submit=True)
    stage = single.item_stage
    stage.refresh_from_db()
    assert stage.status == StageStatus.DONE
    assert not Consolidation.objects.filter(item_stage=stage).exists()
    gold = GoldRecord.objects.get(item_stage=stage)
    assert gold.source == GoldSource.SINGLE and gold.payload["segments"][0]["comment"] == "The year is wrong."
    (record,) = [json.loads(line) for line in export_jsonl(sparse, "felm")]
    assert record["index"] == stage.item.external_id and record["labels"] == [False]
    (raw,) = [json.loads(line) for line in export_jsonl(sparse, "annotations")]
    assert raw["double_annotated"] is False


def test_a_double_annotated_item_is_consolidated_and_agreement_counts_only_those(sparse, users):
    double_item = next(i for i in sparse.items.order_by("id") if sparse.is_overlap_item(i.id))
    singles = [
        a
        for a in Assignment.objects.filter(item_stage__item__project=sparse).order_by("id")
        if not sparse.is_overlap_item(a.item_stage.item_id)
    ][:3]
    for assignment in singles:
        save_annotation(assignment=assignment, payload={"segments": [segment(True)]}, version=0, submit=True)
    for name, label in (("alice", True), ("bob", False)):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=double_item)
        seg = segment(True) if label else segment(False, "knowledge_error", "wrong")
        save_annotation(assignment=assignment, payload={"segments": [seg]}, version=0, submit=True)
    consolidation = Consolidation.objects.get(item_stage__item=double_item)
    assert consolidation.item_stage.status == StageStatus.CONSOLIDATING
    save_consolidation(
        consolidation=consolidation,
        user=users["carol"],
        payload={"segments": [segment(True)]},
        version=consolidation.version,
        submit=True,
    )
    result = project_agreement(sparse)
    label = result["fields"]["label"]
    # one shared unit (the double item); the three single items neither pair up nor count against gold
    assert label["units"] == 1
    compared = {rater: v["units"] for rater, v in label["agreement_with_gold"].items()}
    assert compared == {"alice": 1, "bob": 1}


def test_raising_the_share_gives_waiting_items_their_second_annotator(sparse, users):
    before = sum(assignments_per_item(sparse).values())
    update_project(project=sparse, changed_by=users["admin"], overlap_share=1.0)
    counts = assignments_per_item(sparse)
    assert set(counts.values()) == {2} and sum(counts.values()) == 2 * ITEMS > before


def test_the_share_is_set_on_the_page_and_the_api(clients, users, logged_in):
    created = clients["admin"].post(
        "/api/projects/", {"name": "Sparse", "kind": "felm", "overlap_share": 0.1}, format="json"
    )
    assert created.status_code == 201 and created.json()["overlap_share"] == 0.1
    bad = clients["admin"].post("/api/projects/", {"name": "Bad", "kind": "felm", "overlap_share": 1.5}, format="json")
    assert bad.status_code == 400 and "overlap_share" in bad.json()
    project = Project.objects.get(name="Sparse")
    page = logged_in("admin").get(f"/projects/{project.id}/").content.decode()
    assert "2 annotators on 10 % of the items, one on the others" in page
    response = logged_in("admin").post(
        f"/projects/{project.id}/settings/",
        {
            "name": "Sparse",
            "annotators_per_item": 2,
            "overlap_share": 0.5,
            "third_rater": "escalation",
            "guidelines": project.guidelines,
            "pipeline_settings": "{}",
        },
    )
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.overlap_share == 0.5
