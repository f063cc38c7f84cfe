"""Factcheck-Bench step 1: import shapes, pre-annotation, annotation schema, consolidation,
agreement and the released export shape."""

import json

import pytest
from django.db import connection
from sklearn.metrics import cohen_kappa_score

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.models import Assignment, ExportLine, ItemStage, StageStatus
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from tests.helpers.builders import jsonl
from tests.helpers.fake_llm import FakeLLMServer, well_behaved_responder
from tests.helpers.paths import shared_data_path

pytestmark = pytest.mark.django_db

STEP1_FIELDS = (
    "text",
    "decontext",
    "sentence_checkworthiness",
    "most_importance_sentence",
    "claims",
    "claim_checkworthiness",
    "if_most_important_claim",
)


@pytest.fixture
def project(factcheck_project):
    return factcheck_project


def released_records():
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    return path, [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def sentence(decontext="S.", importance="yes", checkworthy="yes", claims=(("S.", "factual", "yes"),)):
    return {
        "decontext": decontext,
        "importance": importance,
        "checkworthy": checkworthy,
        "claims": [{"text": t, "category": c, "importance": i} for t, c, i in claims],
    }


def test_released_benchmark_gold_round_trip_gives_back_every_field_of_every_item(
    project, django_capture_on_commit_callbacks
):
    """Import the whole released file as gold, export it: every line, parsed, is the released
    line, but for the item's id (the one documented field added); no sentence carries a field
    the release does not have (issue 29: step 2's evidence flags are in factcheck-evidence)."""
    path, released = released_records()
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(project, handle, fmt="factcheck-bench", labels_as="gold")
    # all three steps of every item come as gold records
    assert result.items == 94 and result.gold_records == 94 * 3
    # the export serves the lines stored after the import (tests/exports/test_export_lines.py: never stale ones),
    # on PostgreSQL: elsewhere every export renders every line
    stored = ExportLine.objects.filter(item__project=project, format="factcheck-bench").count()
    assert stored == (94 if connection.vendor == "postgresql" else 0)
    exported = [json.loads(line) for line in export_jsonl(project, "factcheck-bench")]
    assert len(exported) == 94
    compared = 0
    for original, ours in zip(released, exported, strict=True):
        assert set(ours) == set(original) | {"id"}  # the item's id, the one field added
        assert {k: v for k, v in ours.items() if k not in ("sentences", "id")} == {
            k: v for k, v in original.items() if k != "sentences"
        }
        assert list(ours["sentences"]) == list(original["sentences"])
        for key, released_sentence in original["sentences"].items():
            sentence = ours["sentences"][key]
            assert sentence == released_sentence, key
            compared += len(released_sentence)
        assert {k: v for k, v in ours.items() if k != "id"} == original
    assert compared == sum(len(s) for r in released for s in r["sentences"].values())
    # every step is done; nothing is left for annotators
    for number in (1, 2, 3):
        stages = ItemStage.objects.filter(item__project=project, stage=number)
        assert stages.count() == 94 and set(stages.values_list("status", flat=True)) == {StageStatus.DONE}
    first = ItemStage.objects.filter(item__project=project, stage=2).order_by("item_id").first()
    assert first.content["claims"][0]["text"] == released[0]["sentences"]["sentence1"]["claims"][0]


def test_released_benchmark_imports_with_machine_suggestions(project, django_capture_on_commit_callbacks):
    path, released = released_records()
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(project, handle, fmt="factcheck-bench")
    assert result.items == 94 and result.precomputing == 94
    stages = list(ItemStage.objects.filter(item__project=project).order_by("item_id"))
    assert {s.status for s in stages} == {StageStatus.ANNOTATING}
    first = stages[0]
    assert first.content["sentences"] == [s["text"] for s in released[0]["sentences"].values()]
    assert len(first.suggestion["sentences"]) == len(first.content["sentences"])
    assert first.provenance["backend"] == "offline"
    assert Assignment.objects.filter(item_stage__item__project=project).count() == 188


def test_plain_import_is_split_and_decomposed_offline(project, django_capture_on_commit_callbacks):
    response = "Marie Curie was born in Warsaw. She won two Nobel Prizes, and she discovered polonium."
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(project, jsonl([{"prompt": "Who was Marie Curie?", "response": response}]), fmt="plain")
    stage = ItemStage.objects.get(item__project=project)
    assert stage.content["sentences"] == [
        "Marie Curie was born in Warsaw.",
        "She won two Nobel Prizes, and she discovered polonium.",
    ]
    claims = [c["text"] for c in stage.suggestion["sentences"][1]["claims"]]
    assert claims == ["Marie Curie won two Nobel Prizes.", "Marie Curie discovered polonium."]


def test_llm_backend_is_used_when_the_project_configures_one(project, django_capture_on_commit_callbacks):
    with FakeLLMServer(well_behaved_responder) as server:
        project.pipeline_settings = {"llm": {"base_url": server.base_url, "model": "fake-model", "max_retries": 0}}
        project.save()
        with django_capture_on_commit_callbacks(execute=True):
            import_jsonl(
                project,
                jsonl([{"prompt": "q", "response": "Paris is in France. It is big."}]),
                fmt="plain",
            )
    stage = ItemStage.objects.get(item__project=project)
    assert stage.provenance["backend"] == "llm" and stage.provenance["model"] == "fake-model"
    assert server.requests, "the pipeline never called the loopback LLM"
    assert stage.suggestion["sentences"][0]["claims"][0]["text"] == "Paris is in France."


def test_original_tool_screen1_input_imports_with_its_claims(project, clients, users):
    path = shared_data_path("factcheck-bench", "annotation-tool-examples", "0_screen1.json")
    source = json.loads(path.read_text())
    with open(path, "rb") as handle:
        result = import_jsonl(project, handle, fmt="factcheck-tool")
    assert result.items == 1 and result.precomputing == 0
    stage = ItemStage.objects.get(item__project=project)
    assert stage.status == StageStatus.ANNOTATING and stage.content["sentences"] == source["sentences"]
    assignment = users["alice"].assignments.get()
    payload = clients["alice"].get(f"/api/assignments/{assignment.id}/annotation/").json()["payload"]
    assert [[c["text"] for c in s["claims"]] for s in payload["sentences"]] == source["atomic claims"]


def test_labels_as_suggestion_prefills_claims_but_not_judgements(project, clients, users):
    _, released = released_records()
    import_jsonl(project, jsonl(released[:1]), fmt="factcheck-bench", labels_as="suggestion")
    assignment = users["alice"].assignments.get()
    payload = clients["alice"].get(f"/api/assignments/{assignment.id}/annotation/").json()["payload"]
    first = payload["sentences"][0]
    assert first["decontext"] == released[0]["sentences"]["sentence1"]["decontext"]
    assert [c["text"] for c in first["claims"]] == released[0]["sentences"]["sentence1"]["claims"]
    assert first["importance"] is None and first["checkworthy"] is None
    # Labels are hints, never pre-selected: the category stays in the suggestion the page shows.
    assert first["claims"][0]["category"] is None and first["claims"][0]["importance"] is None
    assert assignment.item_stage.suggestion["sentences"][0]["claims"][0]["category"] == "factual"


@pytest.mark.parametrize(
    "mutate, field, message",
    [
        (lambda r: r.pop("sentences"), "sentences", "must be an object of sentence1, sentence2, …"),
        (
            lambda r: r["sentences"].update(first={}),
            "sentences.first",
            "keys must be sentence1, sentence2, …",
        ),
        (
            lambda r: r["sentences"]["sentence1"].pop("text"),
            "sentences.sentence1.text",
            "is missing",
        ),
        (
            lambda r: r["sentences"]["sentence1"].update(most_importance_sentence="very"),
            "sentences.sentence1.most_importance_sentence",
            "must be one of yes, intermediate, no, not 'very'",
        ),
        (
            lambda r: r["sentences"]["sentence1"].update(claim_checkworthiness=[]),
            "sentences.sentence1.claim_checkworthiness",
            "must be a list with one entry per claim (1)",
        ),
        (
            lambda r: r["sentences"]["sentence1"].update(if_most_important_claim=["maybe"]),
            "sentences.sentence1.if_most_important_claim[0]",
            "must be one of yes, intermediate, no, not 'maybe'",
        ),
    ],
)
def test_bad_benchmark_line_names_line_and_field(project, mutate, field, message):
    _, released = released_records()
    bad = json.loads(json.dumps(released[0]))
    mutate(bad)
    with pytest.raises(ImportFailed) as error:
        import_jsonl(project, jsonl([released[1], bad]), fmt="factcheck-bench")
    assert error.value.errors[0] == {"line": 2, "field": field, "message": message}
    assert not project.items.exists()


def test_tool_format_reports_bad_documents(project):
    with pytest.raises(ImportFailed, match="line 1, field 'sentences'"):
        import_jsonl(project, [b'{"response": "x", "sentences": []}'], fmt="factcheck-tool")
    with pytest.raises(ImportFailed, match="line 2, field '\\(json\\)'"):
        import_jsonl(project, [b'{"response": "x",\n "sentences": [}'], fmt="factcheck-tool")


def imported_item(project, sentences=("A is B.", "C is D.")):
    import_jsonl(
        project,
        jsonl(
            [
                {
                    "prompt": "p",
                    "response": " ".join(sentences),
                    "sentences": {
                        f"sentence{i}": {
                            "text": s,
                            "decontext": s,
                            "most_importance_sentence": "yes",
                            "sentence_checkworthiness": "yes",
                            "claims": [s],
                            "claim_checkworthiness": ["factual"],
                            "if_most_important_claim": ["yes"],
                        }
                        for i, s in enumerate(sentences, start=1)
                    },
                }
            ]
        ),
        fmt="factcheck-bench",
        labels_as="suggestion",
    )
    return project.items.get()


def test_submit_demands_every_field_and_names_it(project, users):
    imported_item(project)
    assignment = users["alice"].assignments.get()
    payload = {"sentences": [sentence(), sentence(importance=None, claims=(("", "factual", None),))]}
    from annotation.kinds import PayloadError

    with pytest.raises(PayloadError) as error:
        save_annotation(assignment=assignment, payload=payload, version=0, submit=True)
    assert error.value.errors == [
        {"field": "sentences[1].importance", "message": "is required: choose the importance"},
        {
            "field": "sentences[1].claims[0].text",
            "message": "is required: write the claim or remove it",
        },
        {
            "field": "sentences[1].claims[0].importance",
            "message": "is required: choose the claim importance",
        },
    ]
    saved = save_annotation(assignment=assignment, payload=payload, version=0, submit=False)
    assert saved.version == 1
    with pytest.raises(PayloadError, match="must be one of factual, opinion, not_a_claim, other"):
        save_annotation(
            assignment=assignment,
            payload={"sentences": [sentence(claims=(("x", "fact", "yes"),)), sentence()]},
            version=1,
            submit=False,
        )


def submit_pair(project, users, alice_payload, bob_payload):
    for name, payload in (("alice", alice_payload), ("bob", bob_payload)):
        save_annotation(assignment=users[name].assignments.get(), payload=payload, version=0, submit=True)
    return project.items.get().stages.get(stage=1).consolidation


def test_consolidation_aligns_claims_and_prefills_agreement(
    project, users, clients, django_capture_on_commit_callbacks
):
    imported_item(project)
    alice = {
        "sentences": [
            sentence(
                "A is B.",
                claims=(("A is B.", "factual", "yes"), ("A was founded in 1900.", "factual", "no")),
            ),
            sentence("C is D.", "no", "no", claims=()),
        ]
    }
    bob = {
        "sentences": [
            sentence(
                "A is B.",
                claims=(
                    ("A was founded in the year 1900.", "factual", "intermediate"),
                    ("A is B.", "factual", "yes"),
                ),
            ),
            sentence("C is D.", "no", "opinion", claims=(("C is D.", "opinion", "no"),)),
        ]
    }
    consolidation = submit_pair(project, users, alice, bob)
    assert consolidation.alignment == [[[0, 1], [1, 0]], [[None, 0]]]
    draft = consolidation.draft["sentences"]
    assert draft[0]["claims"][0] == {"text": "A is B.", "category": "factual", "importance": "yes"}
    assert draft[0]["claims"][1] == {"text": "", "category": "factual", "importance": None}
    assert draft[1]["checkworthy"] is None and draft[1]["importance"] == "no"
    assert consolidation.disagreed == [
        "sentences[0].claims[1].text",
        "sentences[0].claims[1].importance",
        "sentences[1].checkworthy",
        "sentences[1].claims",
        "sentences[1].claims[0].text",
        "sentences[1].claims[0].category",
        "sentences[1].claims[0].importance",
    ]
    detail = clients["carol"].get(f"/api/consolidations/{consolidation.id}/").json()
    assert detail["alignment"] == consolidation.alignment and len(detail["annotations"]) == 2

    gold = {"sentences": [alice["sentences"][0], alice["sentences"][1]]}
    with django_capture_on_commit_callbacks(execute=True):
        save_consolidation(consolidation=consolidation, user=users["carol"], payload=gold, version=0, submit=True)
    stage2 = ItemStage.objects.get(item__project=project, stage=2)
    assert stage2.status == StageStatus.ANNOTATING
    assert [c["text"] for c in stage2.content["claims"]] == ["A is B.", "A was founded in 1900."]
    assert stage2.assignments.count() == 2


def test_consolidation_remembers_which_row_each_gold_claim_came_from(project, users, clients):
    imported_item(project)
    alice = {
        "sentences": [
            sentence("A is B.", claims=(("A is B.", "factual", "yes"), ("A is old.", "factual", "no"))),
            sentence("C is D."),
        ]
    }
    bob = {
        "sentences": [
            sentence("A is B.", claims=(("A is old.", "factual", "no"), ("A is B.", "factual", "yes"))),
            sentence("C is D."),
        ]
    }
    consolidation = submit_pair(project, users, alice, bob)
    assert consolidation.alignment[0] == [[0, 1], [1, 0]]
    url = f"/api/consolidations/{consolidation.id}/"
    # the consolidator rewrote the second claim and moved it first: its text no longer tells its row
    gold = {
        "sentences": [
            sentence(
                "A is B.",
                claims=(("A is very old.", "factual", "no"), ("A is B.", "factual", "yes")),
            ),
            sentence("C is D."),
        ]
    }
    saved = clients["carol"].put(url, {"payload": gold, "version": 0, "draft_rows": [[1, 0], [0]]}, format="json")
    assert saved.status_code == 200 and saved.json()["draft_rows"] == [[1, 0], [0]]
    for rows, message in [
        ([[1, 0]], "one list per aligned part (2)"),
        ([[2, 0], [0]], "draft_rows[0][0] must be null or an alignment row number below 2"),
        ([[True, 0], [0]], "draft_rows[0][0]"),
        ([[0, 1], "x"], "draft_rows[1] must be a list"),
    ]:
        refused = clients["carol"].put(url, {"payload": gold, "version": 1, "draft_rows": rows}, format="json")
        assert refused.status_code == 400 and message in refused.json()["detail"]
    # a save without rows keeps the stored ones; the page gets them back
    assert clients["carol"].put(url, {"payload": gold, "version": 1}, format="json").status_code == 200
    clients["carol"].force_login(users["carol"])
    page = clients["carol"].get(f"/consolidations/{consolidation.id}/")
    assert page.context["state"]["draft_rows"] == [[1, 0], [0]]


def test_agreement_has_claim_fields_and_decomposition_numbers(project, users, clients):
    imported_item(project, sentences=("A is B.", "C is D.", "E is F."))
    alice = {
        "sentences": [
            sentence("A is B.", claims=(("A is B.", "factual", "yes"), ("A is old.", "factual", "no"))),
            sentence("C is D.", claims=(("C is D.", "factual", "yes"),)),
            sentence("E is F.", "no", "no", claims=(("E is F.", "opinion", "no"),)),
        ]
    }
    bob = {
        "sentences": [
            sentence(
                "A is B.",
                claims=(
                    ("A is B.", "opinion", "yes"),
                    ("A is very old.", "factual", "intermediate"),
                ),
            ),
            sentence(
                "C is D.",
                "intermediate",
                claims=(("C is D.", "factual", "yes"), ("D exists.", "factual", "no")),
            ),
            sentence("E is F.", "no", "no", claims=(("E is F.", "opinion", "no"),)),
        ]
    }
    submit_pair(project, users, alice, bob)
    body = clients["admin"].get(f"/api/projects/{project.id}/agreement/").json()
    category = body["fields"]["claim_category"]
    # aligned claims: (A is B / A is B), (A is old / A is very old), (C is D / C is D), (E is F / E is F)
    assert category["units"] == 4
    alice_categories, bob_categories = (
        ["factual", "factual", "factual", "opinion"],
        ["opinion", "factual", "factual", "opinion"],
    )
    assert category["cohen_kappa"] == pytest.approx(cohen_kappa_score(alice_categories, bob_categories))
    assert body["fields"]["sentence_importance"]["observed_agreement"] == pytest.approx(2 / 3)
    decomposition = body["decomposition"]["between_annotators"]
    assert decomposition["sentences"] == 3 and decomposition["same_claim_count"] == 2
    assert decomposition["same_claim_count_share"] == pytest.approx(2 / 3)
    assert decomposition["paired_claims"] == 3
    # suggestions were one claim per sentence (the imported labels): alice kept 2 of 3 counts
    vs_machine = body["decomposition"]["annotator_vs_machine"]
    assert vs_machine["alice"]["same_claim_count"] == 2 and vs_machine["bob"]["same_claim_count"] == 1
    assert vs_machine["alice"]["mean_normalised_edit_distance"] == 0.0


def test_agreement_page_shows_decomposition(project, users, client):
    imported_item(project, sentences=("A is B.",))
    payload = {"sentences": [sentence("A is B.", claims=(("A is B.", "factual", "yes"),))]}
    submit_pair(project, users, payload, payload)
    client.force_login(users["carol"])
    page = client.get(f"/projects/{project.id}/agreement/").content.decode()
    assert "Decomposition into claims" in page and "alice vs machine suggestion" in page
    assert "Claim category (aligned claims)" in page


def test_factcheck_pages_escape_user_text(project, users, client, django_capture_on_commit_callbacks):
    xss = '<script>alert("x")</script>'
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(
            project,
            jsonl([{"prompt": xss, "response": f"Paris is in France. {xss} is text."}]),
            fmt="plain",
        )
    client.force_login(users["alice"])
    page = client.get(f"/assignments/{users['alice'].assignments.get().id}/").content.decode()
    assert xss not in page and "\\u003Cscript\\u003E" in page
    payload = {"sentences": [sentence(s) for s in ItemStage.objects.get(item__project=project).content["sentences"]]}
    consolidation = submit_pair(project, users, payload, payload)
    client.force_login(users["carol"])
    page = client.get(f"/consolidations/{consolidation.id}/").content.decode()
    assert xss not in page
