"""JSONL import: shapes, pre-annotation, labels, and all-or-nothing failure with line and field."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl
from annotation.models import GoldRecord, Item, ItemStage, StageStatus
from tests.helpers.builders import felm_line, jsonl, post_import

pytestmark = pytest.mark.django_db


def test_felm_shape_keeps_its_segments_and_is_ready(felm_project):
    result = import_jsonl(
        felm_project,
        jsonl([felm_line(7, ["One claim.", "Another claim."], extra_field=1)]),
        fmt="felm",
    )
    assert result.items == 1 and result.precomputing == 0 and result.assignments == 2
    item = Item.objects.get(project=felm_project)
    assert item.external_id == "7" and item.domain == "wk" and item.metadata == {"ref": [], "extra_field": 1}
    stage = item.stages.get()
    assert stage.status == StageStatus.ANNOTATING
    assert stage.content == {"segments": ["One claim.", "Another claim."]}


def test_plain_lines_are_segmented_by_a_task(felm_project, django_capture_on_commit_callbacks):
    records = [
        {
            "prompt": "p",
            "response": "Mr. Jones met Dr. Brown in the U.S. office. They talked for an hour.",
        },
        {"prompt": "p", "response": "Part one, still part one. *****Part two."},
    ]
    with django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(felm_project, jsonl(records), fmt="plain")
    assert result.precomputing == 2
    stages = list(ItemStage.objects.filter(item__project=felm_project).order_by("item_id"))
    assert [s.status for s in stages] == [StageStatus.ANNOTATING, StageStatus.ANNOTATING]
    assert stages[0].content["segments"] == [
        "Mr. Jones met Dr. Brown in the U.S. office.",
        "They talked for an hour.",
    ]
    assert stages[1].content["segments"] == ["Part one, still part one.", "Part two."]


def test_project_segmentation_setting_is_used(felm_project, django_capture_on_commit_callbacks):
    felm_project.pipeline_settings = {"segmentation": "separator"}
    felm_project.save()
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain")
    assert ItemStage.objects.get(item__project=felm_project).content["segments"] == ["One. Two."]


def test_failed_segmentation_is_visible_and_can_be_retried(felm_project, django_capture_on_commit_callbacks):
    felm_project.pipeline_settings = {"segmentation": "nonsense"}
    felm_project.save()
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain")
    stage = ItemStage.objects.get(item__project=felm_project)
    assert stage.status == StageStatus.FAILED and "nonsense" in stage.precompute_error

    from annotation.imports.items import retry_failed_precompute

    felm_project.pipeline_settings = {}
    felm_project.save()
    with django_capture_on_commit_callbacks(execute=True):
        assert retry_failed_precompute(felm_project) == 1
    stage.refresh_from_db()
    assert stage.status == StageStatus.ANNOTATING and stage.content["segments"] == ["One.", "Two."]


def test_precompute_task_is_idempotent(felm_project, django_capture_on_commit_callbacks):
    from annotation.tasks import precompute_stages

    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain")
    stage = ItemStage.objects.get(item__project=felm_project)
    assert precompute_stages.apply(args=[[stage.id]]).get() == {"done": 0, "failed": 0}
    assert stage.assignments.count() == 2


def test_a_rerun_assigns_stages_an_earlier_run_wrote_before_its_worker_died(felm_project):
    """The worker wrote the stage, then died before assigning it: the redelivered task assigns it."""
    from annotation.tasks import precompute_stages

    import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain")
    stage = ItemStage.objects.get(item__project=felm_project)
    stage.assignments.all().delete()
    ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.READY)
    assert precompute_stages.apply(args=[[stage.id]]).get() == {"done": 0, "failed": 0}
    stage.refresh_from_db()
    assert stage.status == StageStatus.ANNOTATING and stage.assignments.count() == 2


def test_labels_as_gold_makes_gold_records_without_assignments(felm_project):
    line = felm_line(
        1,
        ["A.", "B."],
        labels=[True, False],
        comment=["", "B is wrong."],
        type=[None, "knowledge_error"],
        ref=["https://example.org"],
    )
    result = import_jsonl(felm_project, jsonl([line]), fmt="felm", labels_as="gold")
    assert result.gold_records == 1 and result.assignments == 0
    gold = GoldRecord.objects.get()
    assert gold.source == "import"
    assert gold.payload["segments"][1] == {
        "label": False,
        "error_type": "knowledge_error",
        "comment": "B is wrong.",
        "refs": [],
    }
    assert gold.item_stage.status == StageStatus.DONE


def test_labels_as_suggestion_are_hints_never_selected(felm_project, clients, users, client):
    """Issue 10: a pre-selected label left untouched would count as the annotator's, and two
    annotators would "agree" with the machine rather than with each other."""
    line = felm_line(1, ["A.", "B."], labels=[True, False], comment=["", "why <b>"], type=[None, "fooled"])
    import_jsonl(felm_project, jsonl([line]), fmt="felm", labels_as="suggestion")
    assignment = users["alice"].assignments.get()
    state = clients["alice"].get(f"/api/assignments/{assignment.id}/annotation/").json()
    assert state["payload"]["segments"] == [{"label": None, "error_type": None, "comment": "", "refs": []}] * 2
    assert assignment.item_stage.suggestion["segments"][1]["error_type"] == "fooled"
    client.force_login(users["alice"])
    page = client.get(f"/assignments/{assignment.id}/").content.decode()
    assert "felm.js" in page and '"suggestion": {"segments"' in page and "why \\u003Cb\\u003E" in page


def test_labels_as_gold_needs_labels(felm_project):
    line = felm_line(1, ["A."])
    del line["labels"]
    with pytest.raises(ImportFailed) as error:
        import_jsonl(felm_project, jsonl([line]), fmt="felm", labels_as="gold")
    assert error.value.errors[0] == {
        "line": 1,
        "field": "labels",
        "message": "is missing, but labels_as=gold",
    }


@pytest.mark.parametrize(
    "bad_line, field, message",
    [
        (
            "{not json",
            "(json)",
            "is not valid JSON: Expecting property name enclosed in double quotes at column 2, near «{⟨here⟩not json»",
        ),
        ("[1, 2]", "(line)", "must be a JSON object"),
        (json.dumps({"prompt": "p"}), "response", "is missing (FELM shape needs it)"),
        (
            json.dumps(felm_line(1, ["A."], segmented_response="A.")),
            "segmented_response",
            "must be a non-empty list of strings",
        ),
        (
            json.dumps(felm_line(1, ["A.", "B."], segmented_response=["A.", 3])),
            "segmented_response[1]",
            "must be a string",
        ),
        (json.dumps(felm_line(1, ["A."], labels=["yes"])), "labels[0]", "must be true or false"),
        (
            json.dumps(felm_line(1, ["A.", "B."], labels=[True])),  # longer lists are cut (FELM's code)
            "labels",
            "must be a list with one entry per segment (2), not 1",
        ),
        (
            json.dumps(felm_line(1, ["A."], type=["typo"])),
            "type[0]",
            "must be null, \"\" or one of knowledge_error, reasoning_error, irrelevant_with_qst, fooled, not 'typo'",
        ),
        (
            json.dumps(felm_line(1, ["A."], domain="sports")),
            "domain",
            "must be one of wk, science, writing_rec, reasoning, math, not 'sports'",
        ),
        (json.dumps(felm_line(1, ["A."], ref="https://x")), "ref", "must be a list of strings"),
    ],
)
def test_a_bad_line_fails_the_whole_file_naming_line_and_field(felm_project, bad_line, field, message):
    good = json.dumps(felm_line(1, ["A."]))
    content = f"{good}\n\n{good}\n{bad_line}\n{good}\n".encode()
    with pytest.raises(ImportFailed) as error:
        import_jsonl(felm_project, [line for line in content.splitlines(keepends=True)], fmt="felm")
    assert {k: v for k, v in error.value.errors[0].items() if k != "column"} == {
        "line": 4,
        "field": field,
        "message": message,
    }
    assert Item.objects.count() == 0 and ItemStage.objects.count() == 0


def test_all_bad_lines_are_reported(felm_project):
    with pytest.raises(ImportFailed) as error:
        import_jsonl(felm_project, [b'{"response": 1}\n', b'{"prompt": "x"}\n'], fmt="plain")
    assert [(e["line"], e["field"]) for e in error.value.errors] == [
        (1, "response"),
        (2, "response"),
    ]


def test_non_utf8_and_empty_files_are_refused(felm_project):
    with pytest.raises(ImportFailed, match="line 1.*not UTF-8"):
        import_jsonl(felm_project, [b'{"response": "\xff"}\n'], fmt="plain")
    with pytest.raises(ImportFailed, match="contains no items"):
        import_jsonl(felm_project, [b"\n"], fmt="plain")


def test_unknown_format_and_labels_as_are_refused(felm_project):
    with pytest.raises(ImportFailed, match="format"):
        import_jsonl(felm_project, jsonl([{"response": "x"}]), fmt="csv")
    with pytest.raises(ImportFailed, match="labels_as"):
        import_jsonl(felm_project, jsonl([{"response": "x"}]), fmt="plain", labels_as="maybe")


def test_api_import_reports_the_bad_line(clients, felm_project):
    upload = jsonl([felm_line(1, ["A."]), {"prompt": "no response"}])
    response, job = post_import(clients["admin"], felm_project.id, upload, "felm")
    assert response.status_code == 202
    assert job["state"] == "failed" and job["result"] is None
    assert job["errors"] == [{"line": 2, "field": "response", "message": "is missing (FELM shape needs it)"}]
    assert Item.objects.count() == 0


def test_management_commands_import_and_export(felm_project, tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(felm_line(3, ["A.", "B."])) + "\n")
    call_command("import_items", str(felm_project.id), str(source), "--format", "felm", "--labels-as", "gold")
    target = tmp_path / "out.jsonl"
    call_command("export_items", felm_project.name, "--format", "felm", "-o", str(target))
    exported = [json.loads(line) for line in target.read_text().splitlines()]
    assert exported == [felm_line(3, ["A.", "B."])]

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": "ok"}\n{"response": 5}\n')
    with pytest.raises(CommandError, match="line 2, field response: must be a string"):
        call_command("import_items", str(felm_project.id), str(bad))
    with pytest.raises(CommandError, match="no project"):
        call_command("import_items", "nope", str(bad))


NUL_REFUSED = "contains a NUL character (\\u0000), which cannot be stored"


def test_a_nul_character_in_stored_text_is_refused_with_its_line_and_field(felm_project):
    lines = [felm_line(1, ["A."]), {"prompt": "q", "response": "Fine.\u0000Not."}]
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl(lines), fmt="plain")
    assert failed.value.errors == [{"line": 2, "field": "response", "message": NUL_REFUSED}]
    assert not Item.objects.exists()


def test_a_nul_character_in_labels_counts_only_when_the_labels_are_kept(felm_project):
    lines = [felm_line(1, ["A."]), felm_line(2, ["B."], comment=["fine\u0000not"])]
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl(lines), fmt="felm", labels_as="gold")
    assert failed.value.errors == [{"line": 2, "field": "labels.segments[0].comment", "message": NUL_REFUSED}]
    assert not Item.objects.exists()
    assert import_jsonl(felm_project, jsonl(lines), fmt="felm", labels_as="ignore").items == 2
