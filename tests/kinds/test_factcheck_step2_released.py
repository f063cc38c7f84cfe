"""Factcheck-Bench step 2's released fields in and out (import, export, bad lines, the released
file), and the released evidence standing in for retrieval."""

import json
from collections import Counter

import pytest

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds.factcheck import step2_content
from annotation.kinds.factcheck.benchmark import STEP2_FIELDS, benchmark_record, evidence_lines
from annotation.models import GoldRecord, ItemStage, StageStatus
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from tests.helpers.builders import jsonl
from tests.helpers.factcheck import CLAIM, CS, HUMAN, IR, PS, RE, answer, manual, passage, released_line
from tests.helpers.paths import shared_data_path

# -- the released shape: import and export -----------------------------------------------------


@pytest.mark.django_db
def test_released_step2_imports_as_content_and_gold_and_exports_unchanged(
    factcheck_project, django_capture_on_commit_callbacks
):
    line = released_line()
    with django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    assert result.gold_records == 2
    stage = ItemStage.objects.get(item__project=factcheck_project, stage=2)
    assert stage.status == StageStatus.DONE
    (checked,) = stage.content["claims"]  # the opinion claim is not verified
    assert (checked["sentence"], checked["claim"], checked["text"]) == (0, 0, CLAIM)
    assert [(p["text"], p["url"], p["rank"], p.get("nul_offsets")) for p in checked["evidence"]] == [
        ("Built 1887\u20131889.", "https://a.example/1", 1, None),
        ("TourEiffel", "https://a.example/2", 2, [4]),
    ]
    gold = stage.gold.payload
    assert gold["claims"] == [
        {
            "stances": [CS, RE],
            "reliable": [None, None],
            "decided": "no",
            "manual_evidence": [
                {
                    "text": HUMAN,
                    "url": "https://h.example/eiffel",
                    "query": "",
                    "reliable": None,
                    "sufficient": None,
                }
            ],
            "factuality": "false",
            "needs_edit": "yes",
            "correction": "The Eiffel Tower was completed in March 1889.",
            "used_evidence": [0, "manual:0"],
        }
    ]
    # only what the payload cannot say is kept as released
    assert gold["released"]["claims"]["0/0"] == {"usedEvidence_index_in_revision": "1, self-retrieved"}
    assert gold["released"]["claims"]["0/1"]["claim"] == "It is lovely."
    assert gold["released"]["sentences"] == {"1": {"revised_claims": ["The Eiffel Tower is nice to some."]}}
    step3 = ItemStage.objects.get(item__project=factcheck_project, stage=3)  # revision opens, pre-filled offline
    assert step3.status == StageStatus.ANNOTATING and step3.suggestion["response"]

    (exported,) = [json.loads(text) for text in export_jsonl(factcheck_project, "factcheck-bench")]
    for key, sentence in line["sentences"].items():
        for field in STEP2_FIELDS:
            assert exported["sentences"][key][field] == sentence[field], (key, field)
    # what the released shape has no field for is in its own export, per verified claim
    (evidence,) = [json.loads(text) for text in export_jsonl(factcheck_project, "factcheck-evidence")]
    assert evidence == {
        "item": exported["id"],
        "sentence": "sentence1",
        "claim": 0,
        "auto_evidence_reliable": [None, None],
        "human_evidence_metadata": gold["claims"][0]["manual_evidence"],
    }


@pytest.mark.django_db
def test_a_gold_record_without_released_values_exports_the_canonical_rendering(factcheck_project):
    import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="gold")
    record = GoldRecord.objects.get(item_stage__stage=2)
    record.payload = {"claims": record.payload["claims"]}  # e.g. consolidated again in the app
    record.save()
    (exported,) = [json.loads(text) for text in export_jsonl(factcheck_project, "factcheck-bench")]
    first = exported["sentences"]["sentence1"]
    assert first["usedEvidence_index_in_revision"] == ["1,self-retrieved", "NA"]
    assert first["auto_evidence"] == [
        ["Built 1887\u20131889.", "Tour\x00Eiffel"],
        [],
    ]  # the opinion claim's evidence is gone
    assert exported["sentences"]["sentence2"]["revised_claims"] == []


def test_benchmark_record_writes_the_released_vocabularies():
    evidence = [passage(0), {**passage(1), "text": "ab", "nul_offsets": [1]}]
    row = {
        "prompt": "p",
        "response": "r",
        "content": {"sentences": ["S."]},
        "gold": {
            "sentences": [
                {
                    "decontext": "S.",
                    "importance": "yes",
                    "checkworthy": "yes",
                    "claims": [
                        {"text": "A.", "category": "factual", "importance": "yes"},
                        {"text": "B.", "category": "opinion", "importance": "no"},
                    ],
                }
            ]
        },
        "stages": {
            2: {
                "content": {"claims": [{"sentence": 0, "claim": 0, "text": "A.", "evidence": evidence}]},
                "gold": {
                    "claims": [
                        answer(
                            [PS, IR],
                            [True, False],
                            "yes",
                            [manual("Quote.", query="q")],
                            "true",
                            "no",
                            "A.",
                            [1, "manual:0"],
                        )
                    ]
                },
            }
        },
    }
    sentence = benchmark_record(row)["sentences"]["sentence1"]
    assert {field: sentence[field] for field in STEP2_FIELDS} == {
        "auto_evidence": [["Passage 0.", "a\x00b"], []],
        "auto_evidence_url": [["https://e.example/0", "https://e.example/1"], []],
        "stance_claim_autoEvid": [[PS, IR], []],
        "if_automatic_evidence_enough_to_verify": ["yes", "NA"],
        "human_evidence": ["https://m.example/a\nQuote.", "NA"],
        "claims_factuality_label": [True, "unknown"],
        "if_claim_needs_edit": ["no", "NA"],
        "revised_claims": ["A.", "B."],
        "usedEvidence_index_in_revision": ["2,self-retrieved", "NA"],
    }
    assert "auto_evidence_reliable" not in sentence and "human_evidence_metadata" not in sentence
    assert evidence_lines({**row, "item_id": 7, "external_id": ""}) == [
        {
            "item": "7",
            "sentence": "sentence1",
            "claim": 0,
            "auto_evidence_reliable": [True, False],
            "human_evidence_metadata": [manual("Quote.", query="q")],
        }
    ]
    without = benchmark_record({**row, "stages": {}})["sentences"]["sentence1"]
    assert all(without[field] == [] for field in STEP2_FIELDS)
    assert evidence_lines({**row, "stages": {}}) == []


@pytest.mark.parametrize(
    "change, field, message",
    [
        (
            lambda s: s["stance_claim_autoEvid"][0].__setitem__(1, "supports"),
            "sentences.sentence1.stance_claim_autoEvid[0][1]",
            "must be one of completely-support, partially-support, refute, irrelevant, not 'supports'",
        ),
        (
            lambda s: s["stance_claim_autoEvid"].__setitem__(0, [CS]),
            "sentences.sentence1.stance_claim_autoEvid[0]",
            "must be empty or have one stance per passage (2)",
        ),
        (
            lambda s: s["auto_evidence_url"][0].pop(),
            "sentences.sentence1.auto_evidence_url[0]",
            "must have one URL per passage (2)",
        ),
        (
            lambda s: s["auto_evidence"].__setitem__(0, "text"),
            "sentences.sentence1.auto_evidence[0]",
            "must be a list of strings",
        ),
        (
            lambda s: s["if_claim_needs_edit"].__setitem__(0, "maybe"),
            "sentences.sentence1.if_claim_needs_edit[0]",
            "must be one of yes, no, not_enough_evidence, NA, not 'maybe'",
        ),
        (
            lambda s: s["if_automatic_evidence_enough_to_verify"].__setitem__(0, True),
            "sentences.sentence1.if_automatic_evidence_enough_to_verify[0]",
            "must be one of yes, no, NA, not True",
        ),
        (
            lambda s: s["claims_factuality_label"].__setitem__(0, "False"),
            "sentences.sentence1.claims_factuality_label[0]",
            'must be true, false, "unknown" or "NA", not \'False\'',
        ),
        (
            lambda s: s["claims_factuality_label"].__setitem__(0, 0),
            "sentences.sentence1.claims_factuality_label[0]",
            'must be true, false, "unknown" or "NA", not 0',
        ),
        (
            lambda s: s["human_evidence"].pop(),
            "sentences.sentence1.human_evidence",
            "must have one entry per claim (2), not 1",
        ),
        (
            lambda s: s.update(revised_claims="x"),
            "sentences.sentence1.revised_claims",
            "must be a list with one entry per claim",
        ),
        (
            lambda s: s["usedEvidence_index_in_revision"].__setitem__(0, 1),
            "sentences.sentence1.usedEvidence_index_in_revision[0]",
            "must be a string",
        ),
    ],
)
@pytest.mark.django_db
def test_bad_released_step2_fields_name_line_and_field(factcheck_project, change, field, message):
    bad = released_line()
    change(bad["sentences"]["sentence1"])
    with pytest.raises(ImportFailed) as error:
        import_jsonl(
            factcheck_project,
            jsonl([released_line(), bad]),
            fmt="factcheck-bench",
            labels_as="gold",
        )
    assert error.value.errors[0] == {"line": 2, "field": field, "message": message}
    assert not factcheck_project.items.exists()


def consolidate_step1(project, users, claims):
    step1 = {
        "sentences": [
            {
                "decontext": CLAIM,
                "importance": "yes",
                "checkworthy": "yes",
                "claims": [{"text": text, "category": "factual", "importance": "yes"} for text in claims],
            },
            {
                "decontext": "It is nice.",
                "importance": "no",
                "checkworthy": "opinion",
                "claims": [],
            },
        ]
    }
    for name in ("alice", "bob"):
        save_annotation(assignment=users[name].assignments.get(), payload=step1, version=0, submit=True)
    consolidation = project.items.get().stages.get(stage=1).consolidation
    save_consolidation(consolidation=consolidation, user=users["carol"], payload=step1, version=0, submit=True)
    return ItemStage.objects.get(item__project=project, stage=2)


@pytest.mark.django_db
def test_opening_step2_uses_the_released_evidence_instead_of_retrieving(
    factcheck_project, users, monkeypatch, django_capture_on_commit_callbacks
):
    def no_retrieval(*args, **kwargs):
        raise AssertionError("the released evidence must replace retrieval")

    monkeypatch.setattr(step2_content, "retrieve_evidence", no_retrieval)
    with django_capture_on_commit_callbacks(execute=True):  # step 1 is pre-annotated offline
        import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="ignore")
    item = factcheck_project.items.get()
    assert item.metadata[step2_content.RELEASED_EVIDENCE_KEY]["sentences"][0]["claims"][0]["text"] == CLAIM
    with django_capture_on_commit_callbacks(execute=True):
        stage = consolidate_step1(factcheck_project, users, [f" {CLAIM}  "])  # the same claim, up to whitespace
    stage.refresh_from_db()
    assert stage.status == StageStatus.ANNOTATING, stage.precompute_error
    assert [p["text"] for p in stage.content["claims"][0]["evidence"]] == [
        "Built 1887\u20131889.",
        "TourEiffel",
    ]
    assert stage.provenance == {"evidence": {"sources": ["factcheck-bench"]}}
    assert stage.suggestion is None
    assert sorted(stage.assignments.values_list("user__username", flat=True)) == ["alice", "bob"]


@pytest.mark.django_db
def test_claims_the_released_evidence_does_not_cover_are_retrieved(
    factcheck_project, users, monkeypatch, django_capture_on_commit_callbacks
):
    asked = []

    def fake_retrieval(claims, settings, search):
        asked.extend(c["text"] for c in claims)
        for claim in claims:
            claim.update(queries=[claim["text"]], evidence=[passage(0)], problems=[])
        return {
            "content": {"claims": claims},
            "suggestion": None,
            "provenance": {"evidence": {"sources": ["corpus"]}},
        }

    monkeypatch.setattr(step2_content, "retrieve_evidence", fake_retrieval)
    with django_capture_on_commit_callbacks(execute=True):  # step 1 is pre-annotated offline
        import_jsonl(factcheck_project, jsonl([released_line()]), fmt="factcheck-bench", labels_as="ignore")
    with django_capture_on_commit_callbacks(execute=True):
        stage = consolidate_step1(factcheck_project, users, ["The tower is in Paris.", CLAIM])
    stage.refresh_from_db()
    assert asked == ["The tower is in Paris."]
    assert [len(c["evidence"]) for c in stage.content["claims"]] == [1, 2]
    assert stage.content["claims"][1]["claim"] == 1
    assert stage.provenance == {"evidence": {"sources": ["factcheck-bench", "corpus"]}}


# -- the released file ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_released_file_step2_fields_round_trip_for_every_sentence(
    factcheck_project, django_capture_on_commit_callbacks
):
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    released = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        result = import_jsonl(factcheck_project, handle, fmt="factcheck-bench", labels_as="gold")
    assert result.items == 94 and result.gold_records == 94 * 3
    exported = [json.loads(line) for line in export_jsonl(factcheck_project, "factcheck-bench")]
    compared = Counter()
    for original, ours in zip(released, exported, strict=True):
        for key, sentence in original["sentences"].items():
            for field in STEP2_FIELDS:
                assert ours["sentences"][key][field] == sentence[field], (key, field)
                compared[field] += 1
    assert compared == {field: 311 for field in STEP2_FIELDS}
    # the label counts of data/README.md (47 unknown claims = 30 verified + 17 not verified, "NA")
    golds = [g["claims"] for g in GoldRecord.objects.filter(item_stage__stage=2).values_list("payload", flat=True)]
    claims = [c for g in golds for c in g]
    assert len(claims) == 661
    assert Counter(s for c in claims for s in c["stances"]) == {IR: 2057, CS: 696, PS: 391, RE: 161}
    assert Counter(c["factuality"] for c in claims) == {"true": 472, "false": 159, "unknown": 30}
