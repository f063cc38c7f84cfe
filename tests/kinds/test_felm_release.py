"""The released FELM domain files import as they are (issue 10): their vocabulary
(``irrelevant_with_qst``, renamed in work already stored), their spellings of "no type" (``[]``,
``""``), their extra fields and missing domain come back unchanged on export."""

import json

import pytest

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds import PayloadError, get_kind, page_rules
from annotation.kinds.felm import ERROR_TYPES
from annotation.models import GoldRecord, Item, ItemStage
from tests.helpers.builders import jsonl, segment
from tests.helpers.felm_release import (
    GOOD,
    exported,
    lines_of,
    math_line,
    released_file,
    wk_line,
)

pytestmark = pytest.mark.django_db


# -- shapes and round trip ---------------------------------------------------------------------------


def test_the_released_shapes_are_accepted_and_exported_back_exactly(felm_project):
    records = [make() for make in GOOD]
    result = import_jsonl(felm_project, lines_of(released_file(*records)), fmt="felm", labels_as="gold")
    assert (result.items, result.gold_records, result.skipped_lines, result.skipped) == (
        4,
        4,
        0,
        [],
    )
    back = exported(felm_project)
    assert back == records  # every field of every line, no domain added, unknown fields kept
    assert [list(r) for r in back] == [list(r) for r in records]  # and in the same order


def test_no_type_spellings_mean_no_type_in_the_gold_record(felm_project):
    import_jsonl(
        felm_project,
        lines_of(released_file(*(make() for make in GOOD))),
        fmt="felm",
        labels_as="gold",
    )
    gold = {
        g.item_stage.item.external_id: g.payload["segments"]
        for g in GoldRecord.objects.select_related("item_stage__item")
    }
    assert [s["error_type"] for s in gold["12"]] == [None, "irrelevant_with_qst"]
    assert [(s["label"], s["error_type"]) for s in gold["3"]] == [(False, None), (False, None)]
    assert [s["error_type"] for s in gold["7"]] == [None, "knowledge_error", None]
    item = Item.objects.get(external_id="12")
    assert item.domain == "" and item.metadata["ref_contents"] == wk_line()["ref_contents"]


def test_the_released_spelling_gives_way_where_annotators_found_a_type(felm_project, users, clients):
    """``type: []`` comes back only while the gold record has no type; annotated types are exported."""
    line = math_line()
    import_jsonl(felm_project, jsonl([line]), fmt="felm", labels_as="suggestion")
    stage = ItemStage.objects.get()
    payload = {"segments": [segment(False, "reasoning_error", "8, not 12."), segment(True)]}
    for name in ("alice", "bob"):
        assignment = stage.assignments.get(user=users[name])
        answer = clients[name].put(
            f"/api/assignments/{assignment.id}/annotation/",
            {"payload": payload, "version": 0, "submit": True},
            format="json",
        )
        assert answer.status_code == 200, answer.content
    [consolidation] = clients["carol"].get(f"/api/projects/{felm_project.id}/consolidations/").json()["results"]
    answer = clients["carol"].put(
        f"/api/consolidations/{consolidation['id']}/",
        {"payload": payload, "version": 0, "submit": True},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    [record] = exported(felm_project)
    assert record["type"] == ["reasoning_error", None]
    assert record["labels"] == [False, True] and record["comment"] == ["8, not 12.", ""]


def typed_correct_line() -> dict:
    """A segment labelled correct (true) whose type is "reasoning_error": the release has such lines."""
    return {
        "index": "21",
        "source": "MATH",
        "prompt": "What is 3 * 4?",
        "response": "3 * 4 = 12. So it is 12.",
        "segmented_response": ["3 * 4 = 12.", "So it is 12."],
        "labels": [True, True],
        "comment": ["", ""],
        "type": ["reasoning_error", None],
        "ref": [],
    }


def empty_segment_line() -> dict:
    """An empty string as a segment (four such lines in the release)."""
    return {
        "index": "22",
        "source": "quora",
        "prompt": "Name a planet.",
        "response": "Mars. ",
        "segmented_response": ["Mars.", ""],
        "labels": [True, True],
        "comment": ["", ""],
        "type": [None, None],
        "ref": [],
    }


def test_a_typed_correct_segment_and_an_empty_segment_come_back_as_they_came(felm_project):
    records = [typed_correct_line(), empty_segment_line()]
    result = import_jsonl(felm_project, lines_of(released_file(*records)), fmt="felm", labels_as="gold")
    assert (result.items, result.skipped_lines) == (2, 0)
    back = [line for line in export_jsonl(felm_project, "felm")]
    assert [json.loads(line) for line in back] == records
    assert [list(json.loads(line)) for line in back] == [list(r) for r in records]
    empty = ItemStage.objects.get(item__external_id="22")
    assert empty.content["segments"] == ["Mars.", ""]


def test_the_contradiction_is_shown_on_the_item_page_and_to_the_consolidator(felm_project, logged_in, users):
    from annotation.services.consolidation import reopen_stage

    import_jsonl(felm_project, jsonl([typed_correct_line(), wk_line()]), fmt="felm", labels_as="gold")
    item = Item.objects.get(external_id="21")
    page = logged_in("admin").get(f"/projects/{felm_project.id}/items/{item.id}/").content.decode()
    assert (
        "Segment 1 is labelled correct in the imported file but has the error type &#x27;reasoning_error&#x27;" in page
    )
    clean = Item.objects.get(external_id="12")
    assert (
        "item-warning" not in logged_in("admin").get(f"/projects/{felm_project.id}/items/{clean.id}/").content.decode()
    )
    stage = ItemStage.objects.get(item=item)
    consolidation = reopen_stage(stage=stage, user=users["admin"], reason="check the type")
    page = logged_in("admin").get(f"/consolidations/{consolidation.id}/").content.decode()
    assert "item-warning" in page and "reasoning_error" in page


def test_the_released_type_gives_way_when_the_gold_says_wrong(felm_project):
    import_jsonl(felm_project, jsonl([typed_correct_line()]), fmt="felm", labels_as="gold")
    gold = GoldRecord.objects.get()
    gold.payload["segments"][0] = segment(False, "knowledge_error", "12 is right, but say why.")
    gold.save()
    item = Item.objects.get()
    assert get_kind("felm").item_warnings(1, {}, item.metadata, gold.payload) == []
    [record] = exported(felm_project)
    assert record["labels"] == [False, True] and record["type"] == ["knowledge_error", None]


def test_an_empty_segment_has_nothing_to_decide_and_is_not_required():
    kind = get_kind("felm")
    content = {"segments": ["Mars.", "  "]}
    payload = {"segments": [segment(True), segment(None)]}
    assert kind.validate_payload(1, content, payload, complete=True)["segments"][1]["label"] is None
    with pytest.raises(PayloadError) as caught:
        kind.validate_payload(1, {"segments": ["Mars.", "Venus."]}, payload, complete=True)
    assert caught.value.errors[0]["field"] == "segments[1].label"


def test_an_unlabelled_empty_segment_does_not_hold_back_the_response_unit(felm_project):
    from annotation.research.scoring import project_tasks

    import_jsonl(felm_project, jsonl([empty_segment_line()]), fmt="felm", labels_as="gold")
    gold = GoldRecord.objects.get()
    gold.payload["segments"][1] = segment(None)
    gold.save()
    tasks = project_tasks(felm_project)
    assert [u.gold for u in tasks["response"].units] == ["correct"]
    assert len(tasks["segment"].units) == 1
    [record] = exported(felm_project)
    assert record["labels"] == [True, True]


def test_irrelevant_with_qst_is_the_stored_api_and_agreement_name(felm_project):
    kind = get_kind("felm")
    content = {"segments": ["A."]}
    assert "irrelevant_with_qst" in ERROR_TYPES and "irrelevant" not in ERROR_TYPES
    valid = kind.validate_payload(
        1,
        content,
        {"segments": [segment(False, "irrelevant_with_qst", "off topic")]},
        complete=True,
    )
    assert valid["segments"][0]["error_type"] == "irrelevant_with_qst"
    with pytest.raises(PayloadError, match="irrelevant_with_qst"):
        kind.validate_payload(1, content, {"segments": [segment(False, "irrelevant", "off topic")]}, complete=True)
    units = kind.agreement_units(
        1,
        {
            "a": {"segments": [segment(False, "irrelevant_with_qst", "x")]},
            "b": {"segments": [segment(False, "irrelevant_with_qst", "y")]},
        },
    )
    assert units["error_type"] == {0: {"a": "irrelevant_with_qst", "b": "irrelevant_with_qst"}}


def test_the_old_name_irrelevant_is_refused_on_import_naming_the_segment(felm_project):
    line = wk_line()
    line["type"] = [None, "irrelevant"]
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl([line]), fmt="felm")
    assert failed.value.errors == [
        {
            "line": 1,
            "field": "type[1]",
            "message": 'must be null, "" or one of knowledge_error, reasoning_error, irrelevant_with_qst, '
            "fooled, not 'irrelevant'",
        }
    ]


def test_the_annotation_page_names_every_error_type_readably():
    """felm.js's menu has one readable entry per stored name (the page shows the label the kind
    hands it in state.rules, and stores the name)."""
    menu = dict(page_rules("felm", 1)["choices"]["error_type"])
    assert list(menu) == list(ERROR_TYPES)
    assert menu["irrelevant_with_qst"] == "Irrelevant to the question"
    assert get_kind("felm").value_name("irrelevant_with_qst") == "Irrelevant to the question"  # other pages


# -- irrelevant_with_qst in agreement and in work already stored ------------------------------------


def test_agreement_reports_irrelevant_with_qst(felm_project, users, clients):
    import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm")
    stage = ItemStage.objects.get()
    for name, error_type in (("alice", "irrelevant_with_qst"), ("bob", "fooled")):
        payload = {"segments": [segment(True), segment(False, error_type, "why")]}
        assignment = stage.assignments.get(user=users[name])
        answer = clients[name].put(
            f"/api/assignments/{assignment.id}/annotation/",
            {"payload": payload, "version": 0, "submit": True},
            format="json",
        )
        assert answer.status_code == 200, answer.content
    fields = clients["admin"].get(f"/api/projects/{felm_project.id}/agreement/").json()["fields"]
    assert fields["error_type"]["units"] == 1
    assert "irrelevant_with_qst" in fields["error_type"]["confusion_matrix"]["labels"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_renames_irrelevant_in_work_already_stored():
    """Work stored under the old name is renamed, FELM's only (a step-2 stance "irrelevant" stays)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate([("annotation", "0008_export_lines")])
    apps = executor.loader.project_state([("annotation", "0008_export_lines")]).apps
    Project, Item = apps.get_model("annotation", "Project"), apps.get_model("annotation", "Item")
    ItemStage, GoldRecord = (
        apps.get_model("annotation", "ItemStage"),
        apps.get_model("annotation", "GoldRecord"),
    )
    old = {
        "segments": [
            {"label": False, "error_type": "irrelevant", "comment": "off topic", "refs": []},
            {"label": True, "error_type": None, "comment": "", "refs": []},
        ]
    }
    stances = {"segments": [{"label": False, "error_type": "irrelevant"}]}
    felm = ItemStage.objects.create(
        item=Item.objects.create(project=Project.objects.create(name="f", kind="felm"), response="r"),
        stage=1,
        suggestion=old,
    )
    other = ItemStage.objects.create(
        item=Item.objects.create(project=Project.objects.create(name="c", kind="factcheck"), response="r"),
        stage=1,
        suggestion=stances,
    )
    GoldRecord.objects.create(item_stage=felm, payload=old)
    executor = MigrationExecutor(connection)
    executor.migrate([("annotation", "0009_felm_irrelevant_with_qst")])
    felm.refresh_from_db(), other.refresh_from_db()
    assert [s["error_type"] for s in felm.suggestion["segments"]] == ["irrelevant_with_qst", None]
    assert GoldRecord.objects.get(item_stage_id=felm.pk).payload["segments"][0] == {
        "label": False,
        "error_type": "irrelevant_with_qst",
        "comment": "off topic",
        "refs": [],
    }
    assert other.suggestion == stances
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
