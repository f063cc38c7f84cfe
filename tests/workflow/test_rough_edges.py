"""Issue 21's rough edges that need no browser: the item page shows stored records as JSON
(point 11); the factcheck-bench export carries the item id, which a re-import keeps (point 15)."""

import html
import json
import re

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import GoldRecord, ItemStage
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.research import ITEMS, bench_line

pytestmark = pytest.mark.django_db


def pre_blocks(page: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r'<pre class="json">(.*?)</pre>', page, flags=re.S)]


def test_the_item_page_shows_the_gold_record_and_the_suggestion_as_json(felm_project, logged_in):
    record = felm_line(0, ["The sky is <b>green</b>.", "Water is wet."])
    record["labels"] = [False, True]
    record["comment"] = ['It is "blue" — ça va.', ""]
    import_jsonl(felm_project, jsonl([record]), fmt="felm", labels_as="gold")
    item = felm_project.items.get()
    stage = ItemStage.objects.get(item=item)
    stage.suggestion = {"segments": [{"label": None, "error_type": "knowledge_error"}, {"label": True}]}
    stage.provenance = {"suggestion": "test", "ok": True}
    stage.save()
    page = logged_in("admin").get(f"/projects/{felm_project.id}/items/{item.id}/").content.decode()
    assert "<b>green</b>" not in page  # escaped as any text
    blocks = pre_blocks(page)
    parsed = [json.loads(text) for text in blocks]  # every block is JSON (Python's dict text is not)
    gold = GoldRecord.objects.get(item_stage=stage).payload
    assert gold in parsed and stage.suggestion in parsed and stage.content in parsed
    assert '"label": null' in "".join(blocks) and "None" not in "".join(blocks) and "True" not in "".join(blocks)
    assert "ça va" in "".join(blocks)  # not \\u escapes
    summary = re.search(r"Machine suggestion — (.*?)</summary>", page).group(1)  # the provenance, one line of JSON
    assert json.loads(html.unescape(summary)) == {"suggestion": "test", "ok": True}


def test_factcheck_bench_lines_carry_the_item_id_and_a_reimport_keeps_it(factcheck_project, users):
    from annotation.exports.formats import export_jsonl
    from annotation.services.projects import create_project

    lines = [bench_line(i) for i in range(ITEMS)]
    del lines[0]["id"]  # the released file has no id: the workbench's is written
    import_jsonl(factcheck_project, jsonl(lines), fmt="factcheck-bench", labels_as="gold")
    exported = [json.loads(line) for line in export_jsonl(factcheck_project, "factcheck-bench")]
    items = list(factcheck_project.items.order_by("id"))
    assert [line["id"] for line in exported] == [item.external_id or str(item.id) for item in items]
    assert exported[0]["id"] == str(items[0].id) and exported[1]["id"] == "q1"
    # (the released file's round trip, exact but for the id: tests/kinds/test_factcheck.py)
    assert [(line["prompt"], line["response"]) for line in exported] == [
        (line["prompt"], line["response"]) for line in lines
    ]

    again = create_project(name="Re-import", kind="factcheck", created_by=users["admin"])
    import_jsonl(again, jsonl(exported), fmt="factcheck-bench", labels_as="gold")
    assert [i.external_id for i in again.items.order_by("id")] == [line["id"] for line in exported]
    assert all("id" not in i.metadata for i in again.items.all())
    assert [json.loads(line) for line in export_jsonl(again, "factcheck-bench")] == exported  # exact round trip
