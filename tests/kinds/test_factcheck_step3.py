"""Factcheck-Bench step 3: content from the step-1/2 gold records, payload rules, consolidation,
revision agreement, derived labels (the paper's rule on the released data), and the whole
workflow from a consolidated step 2 to the exported revision."""

import json
from collections import Counter

import pytest

from annotation.exports.formats import export_jsonl
from annotation.kinds import PayloadError, get_kind
from annotation.kinds.base import AgreementItem
from annotation.kinds.factcheck import step3
from annotation.models import ItemStage, StageStatus
from annotation.research.selectors import project_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from tests.helpers.factcheck import (
    FIXED,
    S1,
    S2,
    STEP1_CONTENT,
    STEP1_GOLD,
    STEP2_CONTENT,
    STEP2_GOLD,
    verdict,
)
from tests.helpers.paths import shared_data_path

KIND = get_kind("factcheck")


def test_content_shows_each_claim_as_step_2_left_it():
    content = step3.build_content(STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD)
    first, second = content["sentences"]
    assert (first["text"], first["decontext"], first["checkworthy"]) == (S1, S1, True)
    assert first["claims"] == [
        {"text": S1, "verdict": "false", "corrected": FIXED},
        {
            "text": "Marie Curie won a Nobel Prize.",
            "verdict": "true",
            "corrected": "Marie Curie won a Nobel Prize.",
        },
    ]
    assert second["checkworthy"] is False and second["claims"][0]["verdict"] == "unverified"
    deleted = step3.build_content(
        STEP1_CONTENT,
        STEP1_GOLD,
        STEP2_CONTENT,
        {"claims": [verdict("yes", "  "), verdict("not_enough_evidence")]},
    )
    assert [c["verdict"] for c in deleted["sentences"][0]["claims"]] == ["deleted", "unknown"]


def test_offline_suggestion_and_the_empty_payload_start_from_it():
    content = step3.build_content(STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD)
    result = KIND.precompute(
        3,
        "Who?",
        f"{S1} {S2}",
        {},
        {},
        earlier={
            1: {"content": STEP1_CONTENT, "gold": STEP1_GOLD},
            2: {"content": STEP2_CONTENT, "gold": STEP2_GOLD},
        },
    )
    assert result["content"] == content
    # the changed sentence says what its claims say; the opinion is carried over (decontextualised)
    assert result["suggestion"]["sentences"] == [
        {"revised": f"{FIXED} Marie Curie won a Nobel Prize."},
        {"revised": "I admire Marie Curie."},
    ]
    assert result["suggestion"]["response"] == f"{FIXED} Marie Curie won a Nobel Prize. I admire Marie Curie."
    assert result["provenance"]["revision"]["backends"] == ["offline"]
    assert KIND.empty_payload(3, content, result["suggestion"]) == {
        "sentences": result["suggestion"]["sentences"],
        "response": result["suggestion"]["response"],
    }


@pytest.mark.parametrize(
    "payload, field, message",
    [
        ({"sentences": [{"revised": "x"}], "response": "x"}, "sentences", "has 1 entries"),
        (
            {"sentences": [{"revised": 3}, {"revised": ""}], "response": "x"},
            "sentences[0].revised",
            "must be a string",
        ),
        (
            {"sentences": [{"revised": "a"}, {"revised": None}], "response": "x"},
            "sentences[1].revised",
            "is required",
        ),
        (
            {"sentences": [{"revised": "a"}, {"revised": ""}], "response": "  "},
            "response",
            "must not be empty",
        ),
        ({"sentences": "no"}, "sentences", "must be a list"),
    ],
)
def test_submitted_revisions_are_checked(payload, field, message):
    content = step3.build_content(STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD)
    with pytest.raises(PayloadError) as error:
        KIND.validate_payload(3, content, payload, complete=True)
    assert any(e["field"] == field and message in e["message"] for e in error.value.errors), error.value.errors
    # a removed sentence is a revision: empty is allowed
    KIND.validate_payload(
        3,
        content,
        {"sentences": [{"revised": "a"}, {"revised": ""}], "response": "a"},
        complete=True,
    )


def test_merge_keeps_agreed_revisions_and_leaves_the_others_undecided():
    content = step3.build_content(STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD)
    a = {"sentences": [{"revised": FIXED}, {"revised": ""}], "response": FIXED}
    b = {
        "sentences": [{"revised": f" {FIXED}  "}, {"revised": "I admire her."}],
        "response": f"{FIXED} I admire her.",
    }
    merged = KIND.merge(3, content, [a, b])
    assert merged.draft == {"sentences": [{"revised": FIXED}, {"revised": None}], "response": None}
    assert merged.disagreed == ["sentences[1].revised", "response"]


def test_revision_agreement_between_annotators_and_against_the_suggestion():
    same = {"sentences": [{"revised": "a b c"}], "response": "a b c"}
    other = {"sentences": [{"revised": "a b d"}], "response": "a b c"}
    result = KIND.extra_agreement(
        3,
        [AgreementItem({"x": same, "y": other}, {"sentences": [{"revised": "a b c"}], "response": "a b c"})],
    )
    between = result["revisions"]["between_annotators"]
    assert between["sentences"]["pairs"] == 1 and between["sentences"]["identical_share"] == 0
    # the paper's word overlap: "a", "b" of the 3 tokens; edit distance 1 of 5 characters
    assert between["sentences"]["mean_word_overlap"] == pytest.approx(2 / 3)
    assert round(between["sentences"]["mean_normalised_edit_distance"], 3) == 0.2
    assert between["responses"]["identical_share"] == 1
    assert result["revisions"]["against_suggestion"]["x"]["sentences"]["mean_normalised_edit_distance"] == 0


def test_derived_labels_follow_the_papers_rule_on_the_released_data():
    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    released = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    from annotation.kinds.factcheck.benchmark import parse_benchmark_line

    responses, sentences_agree, sentences = Counter(), 0, 0
    for number, line in enumerate(released, start=1):
        item = parse_benchmark_line(line, number)
        labels = step3.derived_labels(item.labels[1], item.content[2], item.labels[2])
        responses[str(labels["response"])] += 1
        for label, sentence in zip(labels["sentences"], line["sentences"].values()):
            sentences += 1
            sentences_agree += label == sentence["sentence_factuality_label"]
    assert responses == Counter({"False": 61, "True": 31, "NA": 2})  # the paper's 61 false responses
    assert sentences_agree / sentences > 0.95  # 300 of 311 released sentence labels


@pytest.mark.django_db
def test_step_3_opens_after_step_2_and_its_gold_is_exported(
    factcheck_project, users, django_capture_on_commit_callbacks
):
    item = factcheck_project.items.create(prompt="Who?", response=f"{S1} {S2}", external_id="curie")
    stage1 = ItemStage.objects.create(item=item, stage=1, status=StageStatus.DONE, content=STEP1_CONTENT)
    from annotation.models import GoldRecord

    GoldRecord.objects.create(item_stage=stage1, payload=STEP1_GOLD)
    stage2 = ItemStage.objects.create(item=item, stage=2, status=StageStatus.CONSOLIDATING, content=STEP2_CONTENT)
    from annotation.models import Consolidation

    consolidation = Consolidation.objects.create(item_stage=stage2, draft=STEP2_GOLD)
    with django_capture_on_commit_callbacks(execute=True):
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=STEP2_GOLD,
            version=0,
            submit=True,
        )
    stage3 = ItemStage.objects.get(item=item, stage=3)
    assert stage3.status == StageStatus.ANNOTATING and stage3.assignments.count() == 2
    revised = {"sentences": [{"revised": FIXED}, {"revised": ""}], "response": FIXED}
    for assignment in stage3.assignments.order_by("id"):
        save_annotation(assignment=assignment, payload=revised, version=0, submit=True)
    consolidation3 = Consolidation.objects.get(item_stage=stage3)
    assert consolidation3.disagreed == [] and consolidation3.draft == revised
    save_consolidation(consolidation=consolidation3, user=users["carol"], payload=revised, version=0, submit=True)
    agreement = project_agreement(factcheck_project, stage=3)
    assert agreement["revisions"]["between_annotators"]["responses"]["identical_share"] == 1

    (exported,) = [json.loads(line) for line in export_jsonl(factcheck_project, "factcheck-bench")]
    assert exported["revised_response"] == FIXED and exported["response_factuality"] is False
    first, second = exported["sentences"].values()
    assert (first["revised_decontext"], first["sentence_factuality_label"]) == (FIXED, False)
    assert (second["revised_decontext"], second["sentence_factuality_label"]) == ("", "NA")


@pytest.mark.django_db
def test_the_step_3_pages_render_the_revision_editor(factcheck_project, users, client):
    content = step3.build_content(STEP1_CONTENT, STEP1_GOLD, STEP2_CONTENT, STEP2_GOLD)
    item = factcheck_project.items.create(prompt="<b>Who?</b>", response=f"{S1} {S2}")
    ItemStage.objects.create(
        item=item,
        stage=3,
        status=StageStatus.READY,
        content=content,
        suggestion={"sentences": [{"revised": FIXED}, {"revised": S2}], "response": FIXED},
    )
    from annotation.services.assignments import assign_open_stages

    assign_open_stages(factcheck_project)
    assignment = users["alice"].assignments.get()
    client.force_login(users["alice"])
    page = client.get(f"/assignments/{assignment.id}/").content.decode()
    assert "factcheck_step3.js" in page and "diff.js" in page and "Minimal edits" in page
    assert "<b>Who?</b>" not in page and "&lt;b&gt;Who?&lt;/b&gt;" in page


@pytest.mark.django_db
def test_the_subtask_files_come_from_the_released_file_imported_as_gold(
    factcheck_project, clients, django_capture_on_commit_callbacks
):
    import io
    import zipfile

    from annotation.imports.items import import_jsonl

    path = shared_data_path("factcheck-bench", "factcheck-GPT-benchmark.jsonl")
    released = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with open(path, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, handle, fmt="factcheck-bench", labels_as="gold")
    response = clients["admin"].get(f"/api/projects/{factcheck_project.id}/export/?format=factcheck-subtasks")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].endswith('-factcheck-subtasks.zip"')
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == [
        "subtask1_sentence_checkworthiness.jsonl",
        "subtask2_claim_checkworthiness.jsonl",
        "subtask3_claim_evidence_stance.jsonl",
        "subtask4_claim_factuality.jsonl",
        "subtask5_revision.jsonl",
    ]
    files = {
        name: [json.loads(line) for line in archive.read(name).decode().splitlines()] for name in archive.namelist()
    }

    sentences = [s for item in released for s in item["sentences"].values()]
    assert files["subtask1_sentence_checkworthiness.jsonl"] == [
        {"sentence": s["decontext"], "checkworthy": s["sentence_checkworthiness"]} for s in sentences
    ]
    claims = files["subtask2_claim_checkworthiness.jsonl"]
    assert len(claims) == 678 and Counter(c["checkworthy"] for c in claims) == {
        "factual": 661,
        "opinion": 16,
        "not_a_claim": 1,
    }
    verified = [
        (s, k)
        for s in sentences
        if s["sentence_checkworthiness"] == "yes"
        for k, category in enumerate(s["claim_checkworthiness"])
        if category == "factual" and s["if_claim_needs_edit"][k] != "NA"
    ]
    stances = files["subtask3_claim_evidence_stance.jsonl"]
    assert stances == [
        {"claim": s["claims"][k], "evidence": e, "stance": st}
        for s, k in verified
        for e, st in zip(s["auto_evidence"][k], s["stance_claim_autoEvid"][k])
    ]
    assert set(Counter(x["stance"] for x in stances)) <= {
        "completely-support",
        "partially-support",
        "refute",
        "irrelevant",
    }
    factuality = files["subtask4_claim_factuality.jsonl"]
    assert len(factuality) == len(verified) and {x["label"] for x in factuality} <= {
        "true",
        "false",
        "not_enough_evidence",
    }
    assert factuality[0] == {
        "claim": verified[0][0]["claims"][verified[0][1]],
        "label": "false",
        "revised_claim": verified[0][0]["revised_claims"][verified[0][1]],
    }
    revisions = files["subtask5_revision.jsonl"]
    # the release's subtask-5 file leaves out the responses whose factuality is NA (issue 19)
    assert len(revisions) == 92 and Counter(r["factual state"] for r in revisions) == {
        "false": 68,
        "true": 24,
    }
    assert revisions[0]["revised_response"] == released[0]["revised_response"]
    assert set(revisions[0]) == {
        "factual state",
        "claim list",
        "prompt",
        "response",
        "revised_response",
    }


@pytest.mark.django_db
def test_the_revision_prompt_setting_is_a_project_setting(clients, factcheck_project):
    url = f"/api/projects/{factcheck_project.id}/"
    ok = clients["admin"].patch(url, {"pipeline_settings": {"revision": {"with_question": True}}}, format="json")
    assert ok.status_code == 200 and ok.json()["pipeline_settings"]["revision"] == {"with_question": True}
    for bad in ({"with_question": "yes"}, {"question": True}, ["with_question"]):
        response = clients["admin"].patch(url, {"pipeline_settings": {"revision": bad}}, format="json")
        assert response.status_code == 400 and "revision" in json.dumps(response.json())
