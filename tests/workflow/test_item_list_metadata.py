"""The items list API leaves out metadata that only an export needs (issue 22: about 35 KB of
released Factcheck-Bench evidence per item), and the export still has it."""

import json

import pytest

from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds.factcheck import step2_content
from tests.helpers.builders import api_client, jsonl
from tests.helpers.factcheck import released_line


@pytest.mark.django_db
def test_item_list_omits_the_released_evidence_and_the_export_keeps_it(
    factcheck_project, users, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="gold")
    item = factcheck_project.items.get()
    assert step2_content.RELEASED_EVIDENCE_KEY in item.metadata
    kept = {key: value for key, value in item.metadata.items() if key != step2_content.RELEASED_EVIDENCE_KEY}

    response = api_client(users["admin"]).get(f"/api/projects/{factcheck_project.id}/items/")
    assert response.status_code == 200
    listed = response.json()["results"][0]
    assert listed["metadata"] == kept
    assert step2_content.RELEASED_EVIDENCE_KEY not in json.dumps(response.json())

    response = api_client(users["admin"]).get(f"/api/projects/{factcheck_project.id}/items/?status=done")
    assert response.json()["results"][0]["metadata"] == kept

    exported = "".join(export_jsonl(factcheck_project, "factcheck-bench"))
    assert "Built 1887" in exported


@pytest.mark.django_db
def test_item_list_keeps_other_metadata(felm_project, users):
    line = {
        "index": 7,
        "source": "wk",
        "prompt": "Q?",
        "response": "A. B.",
        "segmented_response": ["A.", "B."],
        "labels": [True, True],
        "comment": ["", ""],
        "type": ["", ""],
        "ref": ["https://r.example/"],
        "domain": "wk",
    }
    import_jsonl(felm_project, jsonl([line]), fmt="felm")
    item = felm_project.items.get()
    response = api_client(users["admin"]).get(f"/api/projects/{felm_project.id}/items/")
    assert response.json()["results"][0]["metadata"] == item.metadata
    assert item.metadata  # the FELM fields an export gives back
