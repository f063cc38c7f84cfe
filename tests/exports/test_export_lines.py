"""Stored export lines (ExportLine): the large JSONL export serves each item's stored line, and
never one that is stale — whatever wrote the item's rows, and whenever."""

import json
import threading

import pytest
from django.db import connection

from annotation.exports import lines as export_lines
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.models import ExportLine, GoldRecord, Item, ItemStage, StageStatus
from tests.helpers.builders import jsonl
from tests.helpers.exports import edit_source

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres_only("lines are stored on PostgreSQL only (elsewhere every export renders every line)"),
]
FMT = "factcheck-bench"


def released_line(index: int) -> dict:
    """An item in the released Factcheck-Bench shape with all three steps."""
    sentences = {}
    for s in (1, 2):
        text = f"Item {index} sentence {s} is a claim."
        sentences[f"sentence{s}"] = {
            "text": text,
            "decontext": text,
            "sentence_factuality_label": True,
            "revised_decontext": text,
            "sentence_checkworthiness": "yes",
            "most_importance_sentence": "yes",
            "claims": [text],
            "claim_checkworthiness": ["factual"],
            "if_automatic_evidence_enough_to_verify": ["yes"],
            "human_evidence": ["NA"],
            "auto_evidence": [[f"Passage {index}.{s}.{p}." for p in range(2)]],
            "auto_evidence_url": [[f"https://e.example/{index}/{s}/{p}" for p in range(2)]],
            "stance_claim_autoEvid": [["completely-support", "irrelevant"]],
            "if_claim_needs_edit": ["no"],
            "claims_factuality_label": [True],
            "revised_claims": [text],
            "usedEvidence_index_in_revision": ["-1"],
            "if_most_important_claim": ["yes"],
        }
    response = " ".join(s["text"] for s in sentences.values())
    return {
        "prompt": f"Question {index}?",
        "response": response,
        "revised_response": response,
        "response_factuality": True,
        "sentences": sentences,
    }


@pytest.fixture
def imported(factcheck_project):
    import_jsonl(factcheck_project, jsonl([released_line(i) for i in range(6)]), fmt=FMT, labels_as="gold")
    return factcheck_project


def exported(project) -> list[dict]:
    return [json.loads(line) for line in export_jsonl(project, FMT)]


def test_an_import_of_gold_records_stores_the_lines_and_the_export_serves_them(imported):
    assert ExportLine.objects.filter(item__project=imported, format=FMT).count() == 6
    assert [r["prompt"] for r in exported(imported)] == [f"Question {i}?" for i in range(6)]
    # served, not rebuilt: a stored line with a current stamp is what the export writes
    first = Item.objects.filter(project=imported).order_by("id").first()
    ExportLine.objects.filter(item=first).update(line='{"served": "stored"}\n')
    assert exported(imported)[0] == {"served": "stored"}


def test_stored_and_rendered_lines_are_the_same(imported):
    stored = exported(imported)
    ExportLine.objects.all().delete()
    assert exported(imported) == stored


@pytest.mark.parametrize("write", ["gold payload", "item row", "step status"])
def test_a_line_is_stale_after_any_write_to_its_rows_even_one_that_bypasses_the_services(imported, write):
    first = Item.objects.filter(project=imported).order_by("id").first()
    ExportLine.objects.filter(item=first).update(line='{"served": "stale"}\n')
    if write == "gold payload":
        gold = GoldRecord.objects.get(item_stage__item=first, item_stage__stage=3)
        GoldRecord.objects.filter(pk=gold.pk).update(payload={**gold.payload, "response": "Rewritten."})
    elif write == "item row":
        Item.objects.filter(pk=first.pk).update(prompt="Another question?")
    else:
        ItemStage.objects.filter(item=first, stage=1).update(status=StageStatus.DISCARDED)
    records = exported(imported)
    assert {"served": "stale"} not in records
    if write == "gold payload":
        assert records[0]["revised_response"] == "Rewritten."
    elif write == "item row":
        assert records[0]["prompt"] == "Another question?"
    else:
        assert len(records) == 5 and records[0]["prompt"] == "Question 1?"


@pytest.mark.parametrize(
    "module",
    ["annotation.exports.lines", "annotation.gold", "annotation.kinds.factcheck.benchmark", "annotation.kinds.plain"],
)
def test_lines_rendered_by_other_code_are_not_served(imported, monkeypatch, module):
    """A deploy that changes any module on the path that renders the lines (the rendering, the
    rows, the kind and what it imports) serves none of the lines the old code stored."""
    ExportLine.objects.update(line='{"served": "old code"}\n')
    edit_source(monkeypatch, export_lines.source_path(module))
    assert {"served": "old code"} not in exported(imported)
    # the export stored the lines it rendered, under the new version
    assert ExportLine.objects.exclude(line='{"served": "old code"}\n').count() == 6


@pytest.mark.parametrize(
    "module", ["annotation.selectors", "annotation.kinds.dfactscore", "annotation.exports.formats"]
)
def test_lines_are_still_served_after_a_change_to_code_off_their_path(imported, monkeypatch, module):
    ExportLine.objects.update(line='{"served": "stored"}\n')
    edit_source(monkeypatch, export_lines.source_path(module))
    assert exported(imported) == [{"served": "stored"}] * 6


def test_a_line_rendered_while_its_rows_change_is_not_stored(imported, monkeypatch):
    """A write that commits while a line is rendered moves the item's stamp: that line is not
    stored (it may hold the rows before the write)."""
    ExportLine.objects.all().delete()
    first = Item.objects.filter(project=imported).order_by("id").first()
    render = export_lines.render_lines

    def render_while_an_admin_edits(project, fmt, item_ids):
        lines = render(project, fmt, item_ids)
        writer = threading.Thread(
            target=lambda: (
                Item.objects.filter(pk=first.pk).update(prompt="Edited meanwhile?"),
                connection.close(),
            )
        )
        writer.start()
        writer.join()
        return lines

    monkeypatch.setattr(export_lines, "render_lines", render_while_an_admin_edits)
    assert export_lines.store_export_lines(imported) == 5
    assert not ExportLine.objects.filter(item=first).exists()
    monkeypatch.setattr(export_lines, "render_lines", render)
    assert exported(imported)[0]["prompt"] == "Edited meanwhile?"


def test_a_consolidation_stores_the_items_line(factcheck_project, users):
    from annotation.models import Assignment, Consolidation
    from annotation.services.annotations import save_annotation
    from annotation.services.consolidation import save_consolidation

    import_jsonl(factcheck_project, jsonl([{"prompt": "Q?", "response": "Paris is in France."}]), fmt="plain")
    stage = ItemStage.objects.get(item__project=factcheck_project, stage=1)
    payload = {
        "sentences": [
            {
                "decontext": "Paris is in France.",
                "importance": "yes",
                "checkworthy": "yes",
                "claims": [{"text": "Paris is in France.", "category": "factual", "importance": "yes"}],
            }
        ]
    }
    for name in ("alice", "bob"):
        save_annotation(
            assignment=Assignment.objects.get(item_stage=stage, user=users[name]),
            payload=payload,
            version=0,
            submit=True,
        )
    consolidation = Consolidation.objects.get(item_stage=stage)
    assert not ExportLine.objects.exists()
    save_consolidation(
        consolidation=consolidation,
        user=users["carol"],
        payload=payload,
        version=consolidation.version,
        submit=True,
    )
    (line,) = ExportLine.objects.filter(item=stage.item, format=FMT)
    assert json.loads(line.line)["sentences"]["sentence1"]["claims"] == ["Paris is in France."]
    assert exported(factcheck_project) == [json.loads(line.line)]


def _stored_lines(project) -> dict[int, str]:
    return dict(ExportLine.objects.filter(item__project=project, format=FMT).values_list("item_id", "line"))


def test_an_import_of_the_released_file_stores_the_lines_it_renders_from_the_stored_rows(
    factcheck_project, monkeypatch
):
    """The import renders each line from the values it has in hand, in its own transaction: byte
    for byte the line rendered later from what the database stored (key order, numbers), for
    every item of the released file; no task is queued for them."""
    from annotation.imports import items as import_writer
    from tests.helpers.paths import shared_data_path

    queued = []
    monkeypatch.setattr(import_writer, "enqueue_store_export_lines", lambda *args: queued.append(args))
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    with open(path, "rb") as handle:
        result = import_jsonl(factcheck_project, handle, fmt=FMT, labels_as="gold")
    stored = _stored_lines(factcheck_project)
    assert len(stored) == result.items > 90 and queued == []
    assert export_lines.render_lines(factcheck_project, FMT, list(stored)) == stored
    # released fields only: step 2's evidence flags are in the factcheck-evidence export
    records = [json.loads(line) for line in stored.values()]
    assert not any("human_evidence_metadata" in s for r in records for s in r["sentences"].values())


def test_manual_evidence_is_exported_in_its_documented_key_order(imported):
    from annotation.kinds.factcheck.benchmark import MANUAL_KEYS

    gold = GoldRecord.objects.filter(item_stage__item__project=imported, item_stage__stage=2).first()
    entry = {"text": "Seen at https://e.example/x", "url": "https://e.example/x", "query": "", "reliable": True}
    gold.payload["claims"][0]["manual_evidence"] = [{**entry, "sufficient": None}]
    gold.save()
    evidence = [json.loads(line) for line in export_jsonl(imported, "factcheck-evidence")]
    (record,) = [r for r in evidence if r["item"] == str(gold.item_stage.item_id) and r["sentence"] == "sentence1"]
    (metadata,) = record["human_evidence_metadata"]
    assert tuple(metadata) == MANUAL_KEYS


def test_an_item_whose_released_values_jsonb_changes_is_left_to_the_task(factcheck_project, monkeypatch):
    """A sentence without claims keeps its released ``revised_claims`` as they are (any JSON):
    jsonb gives a float such as 1e+19 back as an integer and reorders keys, so that item's line
    is not rendered from the values in hand but by the task, from the stored rows."""
    from annotation.imports import items as import_writer

    queued = []
    monkeypatch.setattr(import_writer, "enqueue_store_export_lines", lambda *args: queued.append(args))
    odd = released_line(1)
    odd["sentences"]["sentence3"] = {
        "text": "Hello.",
        "decontext": "Hello.",
        "sentence_factuality_label": "NA",
        "revised_decontext": "Hello.",
        "sentence_checkworthiness": "no",
        "most_importance_sentence": "no",
        "claims": [],
        "claim_checkworthiness": [],
        "if_most_important_claim": [],
        **{field: [] for field in ("if_automatic_evidence_enough_to_verify", "human_evidence", "auto_evidence")},
        **{field: [] for field in ("auto_evidence_url", "stance_claim_autoEvid", "if_claim_needs_edit")},
        **{field: [] for field in ("claims_factuality_label", "usedEvidence_index_in_revision")},
        "revised_claims": [1e19, {"zz": 1, "a": [0.5]}],
    }
    import_jsonl(factcheck_project, jsonl([released_line(0), odd]), fmt=FMT, labels_as="gold")
    first, second = Item.objects.filter(project=factcheck_project).order_by("id")
    assert list(_stored_lines(factcheck_project)) == [first.id]
    assert queued == [(factcheck_project.id,)]
    assert export_lines.store_export_lines(factcheck_project) == 1
    stored = _stored_lines(factcheck_project)
    assert export_lines.render_lines(factcheck_project, FMT, [second.id]) == {second.id: stored[second.id]}
    assert exported(factcheck_project)[1]["sentences"]["sentence3"]["revised_claims"] == [1e19, {"zz": 1, "a": [0.5]}]


def test_an_import_that_opens_a_step_queues_the_task_for_its_lines(factcheck_project, monkeypatch):
    """Step 2 of an item imported with step-1 gold only is opened and pre-annotated after the
    commit, which moves the item's stamp: the line the import stored goes stale, and the task is
    queued to store it again."""
    from annotation.imports import items as import_writer
    from annotation.kinds.factcheck.benchmark import STEP2_FIELDS

    queued = []
    monkeypatch.setattr(import_writer, "enqueue_store_export_lines", lambda *args: queued.append(args))
    line = released_line(0) | {"revised_response": ""}
    for sentence in line["sentences"].values():
        sentence.update({field: [] for field in STEP2_FIELDS}, revised_decontext="")
    import_jsonl(factcheck_project, jsonl([line]), fmt=FMT, labels_as="gold")
    assert ItemStage.objects.filter(item__project=factcheck_project, stage=2).exists()
    assert queued == [(factcheck_project.id,)]
