"""Issue 21's rough edges that need no browser: the item page shows stored records as JSON
(point 11); the factcheck-bench export carries the item id, which a re-import keeps (point 15)."""
import html
import json
import re

import pytest

from annotation.models import GoldRecord, ItemStage
from annotation.services.imports import import_jsonl

from .conftest import felm_line, jsonl

pytestmark = pytest.mark.django_db


def pre_blocks(page: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r'<pre class="json">(.*?)</pre>', page, flags=re.S)]


def test_the_item_page_shows_the_gold_record_and_the_suggestion_as_json(felm_project, logged_in):
    record = felm_line(0, ["The sky is <b>green</b>.", "Water is wet."])
    record["labels"] = [False, True]
    record["comment"] = ["It is \"blue\" — ça va.", ""]
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
    assert html.escape('{"suggestion": "test", "ok": true}') in page  # the provenance summary
