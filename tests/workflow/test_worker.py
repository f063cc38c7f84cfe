"""Real Celery worker processes on the Redis broker run an import's pre-annotation, and a
task whose worker is killed mid-way is finished by another worker without half-written items."""

import subprocess
import time

import pytest

from annotation.imports.items import import_jsonl
from annotation.models import ItemStage, StageStatus
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.evidence import DOCUMENTS
from tests.helpers.fake_llm import FakeLLMServer, well_behaved_responder

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_import_segmentation_finishes_through_a_worker_process(worker, felm_project):
    records = [
        {"prompt": f"q{i}", "response": f"Claim {i} is one sentence. Claim {i} has a second one."} for i in range(5)
    ]
    result = import_jsonl(felm_project, jsonl(records), fmt="plain")
    assert result.precomputing == 5

    deadline = time.monotonic() + 90
    stages = ItemStage.objects.filter(item__project=felm_project)
    while time.monotonic() < deadline and stages.filter(status=StageStatus.ANNOTATING).count() < 5:
        assert worker.poll() is None, worker.stdout.read()
        time.sleep(0.25)
    statuses = list(stages.values_list("status", flat=True))
    assert statuses == [StageStatus.ANNOTATING] * 5, statuses
    assert stages.first().content["segments"] == [
        "Claim 0 is one sentence.",
        "Claim 0 has a second one.",
    ]
    assert stages.first().assignments.count() == 2


def wait_for(condition, seconds: float, *workers: subprocess.Popen) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        for process in workers:
            assert process.poll() is None, process.stdout.read()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_task_whose_worker_dies_is_finished_by_another_worker(start_worker, factcheck_project):
    items = 6
    # Each LLM call takes 0.3 s and calls run one at a time: the one task (all items are one
    # chunk) runs for several seconds, long enough to kill its worker in the middle.
    with FakeLLMServer(well_behaved_responder, delay=0.3) as llm:
        factcheck_project.pipeline_settings = {
            "llm": {"base_url": llm.base_url, "model": "fake-model", "concurrency": 1}
        }
        factcheck_project.save(update_fields=["pipeline_settings"])
        stages = ItemStage.objects.filter(item__project=factcheck_project, stage=1)
        fast_recovery = {"CELERY_VISIBILITY_TIMEOUT": "3"}
        first = start_worker("first", **fast_recovery)
        records = [{"prompt": f"q{i}", "response": f"Item {i} is about one thing."} for i in range(items)]
        assert import_jsonl(factcheck_project, jsonl(records), fmt="plain").precomputing == items

        wait_for(lambda: stages.exclude(status=StageStatus.PRECOMPUTING).exists(), 60, first)
        first.kill()  # SIGKILL: no chance to acknowledge, requeue or clean up
        first.wait(timeout=10)
        finished_by_first = stages.exclude(status=StageStatus.PRECOMPUTING).count()
        assert 0 < finished_by_first < items
        # Nothing half written: a stage is either fully pre-annotated or untouched.
        for stage in stages.all():
            if stage.status == StageStatus.PRECOMPUTING:
                assert stage.suggestion is None and stage.provenance == {} and not stage.assignments.exists()
            else:
                assert stage.provenance["backend"] == "llm" and stage.suggestion["sentences"]

        second = start_worker("second", **fast_recovery)
        # the task assigns its stages after writing the last one: wait for that, not only the writes
        wait_for(lambda: not stages.exclude(status=StageStatus.ANNOTATING).exists(), 90, second)

    assert list(stages.values_list("status", flat=True)) == [StageStatus.ANNOTATING] * items
    for stage in stages.all():
        assert stage.assignments.count() == 2  # assigned once, not again by the second run
        assert stage.content["sentences"] == [f"Item {stage.item.prompt[1:]} is about one thing."]
        assert stage.provenance["backend"] == "llm"


def test_an_uploaded_import_is_run_by_a_worker_process_with_visible_progress(
    start_worker, felm_project, clients, data_dir
):
    """The live path: the API stores the upload and answers 202 at once; a real worker imports
    it, committing progress that the job endpoint shows while the import's transaction is open."""
    worker = start_worker(DJANGO_DATA_DIR=str(data_dir))
    lines = 30_000
    upload = jsonl([felm_line(i, [f"Segment {i}.", "Another one."]) for i in range(lines)])
    response = clients["admin"].post(
        f"/api/projects/{felm_project.id}/import/",
        {"file": upload, "format": "felm"},
        format="multipart",
    )
    assert response.status_code == 202 and response.json()["state"] == "queued", response.content
    url = response.json()["url"]
    seen = []

    def finished() -> bool:
        job = clients["admin"].get(url).json()
        seen.append((job["state"], job["lines_read"]))
        return job["state"] in ("done", "failed")

    wait_for(finished, 120, worker)
    job = clients["admin"].get(url).json()
    assert job["state"] == "done", job
    assert job["result"]["items"] == lines and job["result"]["assignments"] == 2 * lines
    assert job["lines_read"] == lines and job["bytes_read"] == job["file_size"]
    assert any(state == "running" and 0 < read < lines for state, read in seen), seen[:: max(1, len(seen) // 20)]
    # the job is marked done inside the import's transaction; the worker deletes the upload just after
    wait_for(lambda: not list((data_dir / "imports").iterdir()), 10, worker)


def test_a_corpus_is_imported_and_embedded_by_a_worker_and_step_2_retrieves_from_it(
    start_worker, factcheck_project, clients, data_dir
):
    """Corpus upload → passages → background embedding, then a consolidated step 1 opens step 2,
    whose pre-annotation in the worker ranks the corpus's passages for the checkworthy claim."""
    import io
    import json

    from annotation.models import Corpus, CorpusState

    worker = start_worker(DJANGO_DATA_DIR=str(data_dir))
    upload = io.BytesIO("".join(json.dumps(d) + "\n" for d in DOCUMENTS).encode())
    upload.name = "docs.jsonl"
    response = clients["admin"].post(
        "/api/corpora/",
        {
            "name": "Docs",
            "file": upload,
            "projects": [factcheck_project.id],
            "passage_sentences": 3,
        },
        format="multipart",
    )
    assert response.status_code == 202 and response.json()["state"] == "queued", response.content
    corpus = Corpus.objects.get(pk=response.json()["id"])
    wait_for(lambda: Corpus.objects.get(pk=corpus.pk).state == CorpusState.READY, 120, worker)
    corpus.refresh_from_db()
    assert corpus.embedded == corpus.passages == 5 and corpus.embedded_through > 0

    claim = "The Eiffel Tower was completed in 1889."
    line = {
        "prompt": "When was the Eiffel Tower built?",
        "response": claim,
        "sentences": {
            "sentence1": {
                "text": claim,
                "decontext": claim,
                "most_importance_sentence": "yes",
                "sentence_checkworthiness": "yes",
                "claims": [claim],
                "claim_checkworthiness": ["factual"],
                "if_most_important_claim": ["yes"],
            }
        },
    }
    import_jsonl(factcheck_project, jsonl([line]), fmt="factcheck-bench", labels_as="gold")
    step2 = ItemStage.objects.get(item__project=factcheck_project, stage=2)
    wait_for(lambda: ItemStage.objects.get(pk=step2.pk).status != StageStatus.PRECOMPUTING, 120, worker)
    step2.refresh_from_db()
    assert step2.status != StageStatus.FAILED, step2.precompute_error
    (checked,) = step2.content["claims"]
    assert checked["text"] == claim and checked["problems"] == []
    best = checked["evidence"][0]
    assert "completed in March 1889" in best["text"] and best["url"] == "https://w.example/eiffel"
    assert best["embedding_score"] is not None and best["rank"] == 1
    assert step2.provenance["evidence"]["sources"] == ["corpus"]
