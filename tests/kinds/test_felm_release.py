"""The released FELM domain files import as they are (issue 10): their vocabulary
(``irrelevant_with_qst``), their spellings of "no type" (``[]``, ``""``), their extra fields and
missing domain come back unchanged on export; their broken lines are refused or skipped, as the
admin chooses; a ``domain`` option fills the domain; a project short of annotators is warned of.

The lines are written here in the released shapes (the release itself is not in the repository).
"""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports.forms import ImportForm
from annotation.imports.items import import_jsonl
from annotation.kinds import PayloadError, get_kind
from annotation.kinds.felm import ERROR_TYPES
from annotation.kinds.page_rules import page_rules
from annotation.models import GoldRecord, ImportJob, Item, ItemStage
from tests.helpers.builders import jsonl, post_import, segment

pytestmark = pytest.mark.django_db

NAN_RESPONSE = "is NaN or infinite (or too large for a number), which JSON does not allow"


def wk_line() -> dict:
    """world knowledge: an irrelevant segment, reference contents, no domain."""
    return {
        "index": "12",
        "source": "quora",
        "prompt": "Who wrote Hamlet?",
        "response": "Shakespeare wrote Hamlet. I like tea.",
        "segmented_response": ["Shakespeare wrote Hamlet.", "I like tea."],
        "labels": [True, False],
        "comment": ["", "Tea has nothing to do with the question."],
        "type": [None, "irrelevant_with_qst"],
        "ref": ["https://en.wikipedia.org/wiki/Hamlet"],
        "ref_contents": ["Hamlet is a tragedy written by William Shakespeare ..."],
    }


def math_line() -> dict:
    """math: an error found, but types were not annotated (``type: []``)."""
    return {
        "index": "3",
        "source": "MATH",
        "prompt": "What is 2 + 2 * 3?",
        "response": "2 + 2 * 3 = 12. So the answer is 12.",
        "segmented_response": ["2 + 2 * 3 = 12.", "So the answer is 12."],
        "labels": [False, False],
        "comment": ["Multiplication first: 8.", "Follows from the error."],
        "type": [],
        "ref": [],
    }


def writing_line() -> dict:
    """writing_rec: ``""`` for segments without a type, one of them wrong."""
    return {
        "index": "7",
        "source": "chatgpt",
        "prompt": "Recommend a novel.",
        "response": "Read Dune. It was written by Tolkien. It is long.",
        "segmented_response": ["Read Dune.", "It was written by Tolkien.", "It is long."],
        "labels": [True, False, False],
        "comment": ["", "Frank Herbert wrote Dune.", "Not so long."],
        "type": ["", "knowledge_error", ""],
        "ref": [],
        "extra_note": {"kept": [1, None, "x"]},
    }


def reasoning_line() -> dict:
    """reasoning, all correct, ``type: []``, a numeric index and a null source."""
    return {
        "index": 40,
        "source": None,
        "prompt": "If all A are B and x is A, is x B?",
        "response": "Yes, x is B.",
        "segmented_response": ["Yes, x is B."],
        "labels": [True],
        "comment": [""],
        "type": [],
        "ref": [],
    }


def mismatch_line() -> dict:
    """three segments, but labels, comment and type for two (24 such lines in the release)."""
    return {
        "index": "99",
        "source": "quora",
        "prompt": "Q?",
        "response": "A. B. C.",
        "segmented_response": ["A.", "B.", "C."],
        "labels": [True, False],
        "comment": ["", "no"],
        "type": [None, "knowledge_error"],
        "ref": [],
    }


GOOD = [wk_line, math_line, writing_line, reasoning_line]


def released_file(*records) -> bytes:
    """JSONL as the release writes it; the string ``"<NaN>"`` becomes a bare NaN (Python's json does that)."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return text.replace('"<NaN>"', "NaN").encode()


def nan_line() -> dict:
    line = wk_line()
    line["index"], line["response"] = "100", "<NaN>"
    return line


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def exported(project) -> list[dict]:
    return [json.loads(line) for line in export_jsonl(project, "felm")]


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


# -- broken lines: refuse or skip ----------------------------------------------------------------------

BROKEN = released_file(wk_line(), mismatch_line(), math_line(), nan_line(), writing_line())
BROKEN_ERRORS = [
    {
        "line": 2,
        "field": "labels",
        "message": "must be a list with one entry per segment (3), not 2",
    },
    {
        "line": 2,
        "field": "comment",
        "message": "must be a list with one entry per segment (3), not 2",
    },
    {"line": 2, "field": "type", "message": "must be a list with one entry per segment (3), not 2"},
    {"line": 4, "field": "response", "message": NAN_RESPONSE},
]


def test_refuse_is_the_default_lists_every_bad_line_and_field_and_writes_nothing(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines_of(BROKEN), fmt="felm", labels_as="gold")
    assert failed.value.errors == BROKEN_ERRORS
    assert not Item.objects.exists() and not ItemStage.objects.exists() and not GoldRecord.objects.exists()


def test_refuse_lists_more_than_twenty_bad_lines(felm_project):
    data = released_file(*[mismatch_line() for _ in range(30)], wk_line())
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines_of(data), fmt="felm")
    assert sorted({e["line"] for e in failed.value.errors}) == list(range(1, 31))


def test_skip_imports_the_good_lines_and_reports_each_skipped_one(felm_project):
    result = import_jsonl(felm_project, lines_of(BROKEN), fmt="felm", labels_as="gold", on_error="skip")
    assert (result.items, result.gold_records, result.lines) == (3, 3, 5)
    assert result.skipped_lines == 2 and result.skipped == BROKEN_ERRORS
    assert exported(felm_project) == [wk_line(), math_line(), writing_line()]
    assert sorted(Item.objects.values_list("external_id", flat=True)) == ["12", "3", "7"]


def test_skip_with_no_good_line_imports_nothing_and_lists_the_lines(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(
            felm_project,
            lines_of(released_file(mismatch_line(), nan_line())),
            fmt="felm",
            on_error="skip",
        )
    assert failed.value.errors == [{**e, "line": 1 if e["line"] == 2 else 2} for e in BROKEN_ERRORS]
    assert not Item.objects.exists()


def test_skip_does_not_skip_a_problem_of_the_whole_file(felm_project):
    array = (json.dumps([wk_line(), math_line()]) + "\n").encode()
    with pytest.raises(ImportFailed, match="one JSON array, not JSONL"):
        import_jsonl(felm_project, [array], fmt="felm", on_error="skip")
    assert not Item.objects.exists()


def test_unknown_on_error_is_refused_before_reading(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm", on_error="ignore")
    assert failed.value.errors == [{"line": 0, "field": "on_error", "message": "must be one of refuse, skip"}]


# -- the domain option ------------------------------------------------------------------------------


def test_domain_option_fills_the_domain_of_lines_without_one(felm_project):
    with_domain = {**writing_line(), "index": "8", "domain": "writing_rec"}
    result = import_jsonl(felm_project, jsonl([math_line(), with_domain]), fmt="felm", labels_as="gold", domain="math")
    assert result.items == 2
    assert dict(Item.objects.values_list("external_id", "domain")) == {
        "3": "math",
        "8": "writing_rec",
    }
    # the export is FELM's shape: the domain the admin gave is part of it
    assert exported(felm_project) == [{**math_line(), "domain": "math"}, with_domain]


@pytest.mark.parametrize(
    "fmt, domain, message",
    [
        (
            "felm",
            "sports",
            "must be one of wk, science, writing_rec, reasoning, math for FELM files, not 'sports'",
        ),
        ("felm", " math", "must be one line of printable text without spaces around it"),
        ("plain", "d" * 51, "is 51 characters long; at most 50 fit"),
        ("plain", "a\nb", "must be one line of printable text without spaces around it"),
        ("plain", "   ", "must be a non-empty string"),
    ],
)
def test_a_bad_domain_option_is_refused_before_reading(felm_project, fmt, domain, message):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, jsonl([wk_line()]), fmt=fmt, domain=domain)
    assert failed.value.errors == [{"line": 0, "field": "domain", "message": message}]
    assert not Item.objects.exists()


def test_a_plain_file_takes_any_short_domain(felm_project):
    import_jsonl(felm_project, jsonl([{"response": "One. Two."}]), fmt="plain", domain="biographies")
    assert Item.objects.get().domain == "biographies"


# -- the warning about too few annotators -------------------------------------------------------------


def test_import_warns_when_items_need_more_annotators_than_the_project_has(felm_project):
    felm_project.annotators_per_item = 3
    felm_project.save()
    result = import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm")
    assert result.warnings == [
        "Items need 3 annotators each, but the project has 2: the imported items wait in "
        "Annotating until you add annotators (they then get the missing assignments)."
    ]
    assert result.assignments == 2


def test_import_warns_a_project_without_annotators(users):
    from annotation.services.projects import create_project

    project = create_project(name="No team", kind="felm", created_by=users["admin"])
    result = import_jsonl(project, jsonl([wk_line()]), fmt="felm")
    assert result.warnings == [
        "Items need 2 annotators each, but the project has 0: the imported items wait until "
        "you add annotators (they then get the missing assignments)."
    ]
    assert ItemStage.objects.get().status == "ready"


def test_no_warning_with_enough_annotators_or_for_gold_records(felm_project):
    assert import_jsonl(felm_project, jsonl([wk_line()]), fmt="felm").warnings == []
    felm_project.annotators_per_item = 3
    felm_project.save()
    assert import_jsonl(felm_project, jsonl([math_line()]), fmt="felm", labels_as="gold").warnings == []


# -- API, page form, management command ------------------------------------------------------------


def test_the_api_carries_the_options_and_reports_skipped_lines_and_warnings(clients, felm_project):
    felm_project.annotators_per_item = 3
    felm_project.save()
    upload = jsonl([])
    upload.write(BROKEN)
    upload.seek(0)
    response, job = post_import(clients["admin"], felm_project.id, upload, "felm", on_error="skip", domain="wk")
    assert response.status_code == 202, response.content
    assert job["state"] == "done" and job["options"] == {"on_error": "skip", "domain": "wk"}
    assert job["result"]["skipped_lines"] == 2 and job["result"]["skipped"] == BROKEN_ERRORS
    assert job["result"]["warnings"][0].startswith("Items need 3 annotators each, but the project has 2")
    assert set(Item.objects.values_list("domain", flat=True)) == {"wk"}


def test_the_api_refuses_bad_options_with_the_field(clients, felm_project):
    bad_choice = clients["admin"].post(
        f"/api/projects/{felm_project.id}/import/",
        {"file": jsonl([wk_line()]), "format": "felm", "on_error": "maybe"},
        format="multipart",
    )
    assert bad_choice.status_code == 400 and "on_error" in bad_choice.json()
    bad_domain, _ = post_import(clients["admin"], felm_project.id, jsonl([wk_line()]), "felm", domain="sports")
    assert bad_domain.status_code == 400
    assert bad_domain.json()["errors"][0]["field"] == "domain"
    assert not ImportJob.objects.exists() and not Item.objects.exists()


def test_an_older_job_result_without_the_new_counts_still_reads(clients, felm_project):
    _, job = post_import(clients["admin"], felm_project.id, jsonl([wk_line()]), "felm")
    stored = ImportJob.objects.get()
    stored.result = {k: v for k, v in stored.result.items() if k not in ("skipped_lines", "skipped", "warnings")}
    stored.save()
    again = clients["admin"].get(job["url"]).json()
    assert (
        again["result"]["skipped_lines"] == 0 and again["result"]["skipped"] == [] and again["result"]["warnings"] == []
    )


def test_the_page_form_offers_the_options():
    form = ImportForm(formats=("felm", "plain"))
    assert form.fields["on_error"].initial == "refuse"
    assert [value for value, _ in form.fields["on_error"].choices] == ["refuse", "skip"]
    assert "domain" in form.fields and not form.fields["domain"].required


def test_the_page_form_imports_with_skip_and_domain_and_lists_the_skipped_lines(
    logged_in, felm_project, django_capture_on_commit_callbacks
):
    felm_project.annotators_per_item = 3
    felm_project.save()
    client = logged_in("admin")
    hostile = mismatch_line()
    hostile["labels"] = [True, "<b>x</b>"]  # an error message quoting user text is shown escaped
    upload = jsonl([])
    upload.write(released_file(wk_line(), hostile, nan_line()))
    upload.seek(0)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/projects/{felm_project.id}/import/",
            {
                "file": upload,
                "format": "felm",
                "labels_as": "ignore",
                "on_error": "skip",
                "domain": "science",
            },
        )
    page = client.get(f"/projects/{felm_project.id}/").content.decode()  # the recent imports list
    assert "Imported 1 item (2 assignments, 2 bad lines skipped)." in page
    assert "Items need 3 annotators each, but the project has 2" in page
    assert '<details class="skipped-lines" open>' in page
    assert "line 2, field labels: must be a list with one entry per segment (3), not 2" in page
    assert f"line 3, field response: {NAN_RESPONSE}" in page
    assert "bad lines skipped, domain science" in page  # the job's options beside its name
    assert Item.objects.get().domain == "science"
    assert ImportJob.objects.get().options == {"on_error": "skip", "domain": "science"}


def test_the_page_form_refuses_by_default(logged_in, felm_project, django_capture_on_commit_callbacks):
    upload = jsonl([])
    upload.write(BROKEN)
    upload.seek(0)
    client = logged_in("admin")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/projects/{felm_project.id}/import/",
            {"file": upload, "format": "felm", "labels_as": "ignore"},
        )
    page = client.get(f"/projects/{felm_project.id}/").content.decode()
    assert "nothing was imported" in page.lower() and "line 4, field response" in page
    assert not Item.objects.exists()


def test_the_management_command_carries_the_options(felm_project, tmp_path, capsys):
    source = tmp_path / "math.jsonl"
    source.write_bytes(BROKEN)
    with pytest.raises(CommandError, match="line 2, field labels"):
        call_command("import_items", str(felm_project.id), str(source), "--format", "felm")
    call_command(
        "import_items",
        str(felm_project.id),
        str(source),
        "--format",
        "felm",
        "--labels-as",
        "gold",
        "--on-error",
        "skip",
        "--domain",
        "math",
    )
    out = capsys.readouterr().out
    assert "imported 3 items" in out and "skipped line 4, field response" in out
    assert set(Item.objects.values_list("domain", flat=True)) == {"math"}


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
