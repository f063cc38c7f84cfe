"""The Factcheck-Bench project in step 2 of ``campaign_load.py`` (``--step2-items``): its corpus,
its items and what the locust users of ``campaign_locust.py`` need to work on it.

Set-up, before the clock, in the driver's process (tasks run in-process, no broker):

1. the embedding model is loaded (``pipeline.retrieval.embedding_model``): on the first use on a
   machine that exports and quantises all-MiniLM-L6-v2 to ONNX int8 in ``EMBEDDING_CACHE_DIR``
   (minutes), afterwards it reads the files; the seconds are reported either way;
2. a generated corpus of about ``passages`` passages (documents of 13 sentences over a
   Zipf-weighted pseudo-word vocabulary, ``evidence_data.write_corpus``) is uploaded to the
   project through ``evidence.corpora.create_corpus`` and embedded whole (as the worker does
   with ``embed_corpus``);
3. ``items`` items in the released shape with step-1 fields only (2 sentences of 2 claims,
   each claim a sentence of the corpus, so retrieval finds something) are imported with their
   step-1 labels as gold: step 2 opens and its content is pre-computed by retrieval over the
   corpus (offline queries, no LLM, no web search), then assigned to the step-2 annotators.

During the run the worker retrieves meanwhile: the evidence user's searches, "retrieve again"
on claims of items nobody has opened (the last ``RESERVED`` items), and one import of
``LATE_ITEMS`` more items whose step 2 the worker pre-computes.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from evidence_data import sentence as corpus_sentence

RESERVED = 20  # the last items: only "retrieve again" touches them (annotators stop long before)
LATE_ITEMS = 20  # imported during the run: the worker pre-computes their step 2


def write_corpus(path: Path, passages: int, rng: random.Random) -> list[str]:
    """A JSONL corpus of about ``passages`` passages (documents of 13 sentences: 5 passages of 5
    sentences every 2); returns its sentences, from which the claims are drawn."""
    sentences = []
    with path.open("w", encoding="utf-8") as out:
        for number in range(max(1, passages // 5)):
            document = [corpus_sentence(rng) for _ in range(13)]
            sentences += document
            out.write(
                json.dumps(
                    {
                        "title": f"Document {number}",
                        "url": f"https://corpus.example/{number}",
                        "text": " ".join(document),
                    }
                )
                + "\n"
            )
    return sentences


def step1_line(index: int, rng: random.Random, sentences: list[str]) -> dict:
    """An item in the released shape with its step-1 fields only (no step-2 field: the import
    opens step 2 and retrieves its evidence)."""
    fields = {}
    for s in range(1, 3):
        claims = [rng.choice(sentences) for _ in range(2)]
        text = " ".join(claims)
        fields[f"sentence{s}"] = {
            "text": text,
            "decontext": text,
            "sentence_checkworthiness": "yes",
            "most_importance_sentence": "yes" if s == 1 else "no",
            "claims": claims,
            "claim_checkworthiness": ["factual", "factual"],
            "if_most_important_claim": ["yes", "no"],
        }
    return {
        "id": f"step2-{index}",
        "prompt": f"Tell me about subject {index}.",
        "response": " ".join(f["text"] for f in fields.values()),
        "sentences": fields,
    }


def write_items(path: Path, first: int, count: int, rng: random.Random, sentences: list[str]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for index in range(first, first + count):
            out.write(json.dumps(step1_line(index, rng, sentences)) + "\n")


def set_up_step2(tmp: Path, items: int, passages: int, admin, annotators: list, retriever) -> dict:
    """The step-2 project (see the module's docstring); returns the part of the locust config
    about it, and the set-up's timings."""
    from annotation.evidence.corpora import create_corpus, embed_next_batch
    from annotation.imports.items import import_jsonl
    from annotation.models import ItemStage, Role, StageStatus
    from annotation.services.projects import add_member, create_project
    from pipeline import retrieval

    timings = {}
    started, cpu = time.perf_counter(), time.process_time()
    retrieval.embedding_model()
    timings["model load (export on first use)"] = (time.perf_counter() - started, time.process_time() - cpu)

    project = create_project(name="campaign Factcheck-Bench step 2", kind="factcheck", created_by=admin)
    for user in annotators:
        add_member(project=project, user=user, role=Role.ANNOTATOR)
    add_member(project=project, user=retriever, role=Role.ADMIN)
    rng = random.Random(5)
    corpus_file = tmp / "corpus.jsonl"
    sentences = write_corpus(corpus_file, passages, rng)
    started, cpu = time.perf_counter(), time.process_time()
    with corpus_file.open("rb") as upload:  # no broker: the import runs as the corpus is created
        corpus = create_corpus(name="campaign corpus", user=admin, upload=upload, projects=[project])
    timings["corpus import"] = (time.perf_counter() - started, time.process_time() - cpu)
    started, cpu = time.perf_counter(), time.process_time()
    while embed_next_batch(corpus.id):
        pass
    corpus.refresh_from_db()
    timings[f"corpus embedding ({corpus.embedded} passages)"] = (
        time.perf_counter() - started,
        time.process_time() - cpu,
    )

    items_file = tmp / "step2-items.jsonl"
    write_items(items_file, 0, items, rng, sentences)
    started, cpu = time.perf_counter(), time.process_time()
    with items_file.open("rb") as handle:  # step 1 as gold: step 2 opens, retrieved in-process
        import_jsonl(project, handle, fmt="factcheck-bench", labels_as="gold")
    stages = list(
        ItemStage.objects.filter(item__project=project, stage=2)
        .order_by("item_id")
        .values_list("item_id", "status", "content")
    )
    claims = sum(len((content or {}).get("claims") or []) for _, _, content in stages)
    timings[f"import + step-2 retrieval of {items} items ({claims} claims)"] = (
        time.perf_counter() - started,
        time.process_time() - cpu,
    )
    annotating = [s for s in stages if s[1] == StageStatus.ANNOTATING]
    if len(annotating) != items:
        raise RuntimeError(f"{len(annotating)} of {items} items are in step 2 after the import")
    late_file = tmp / "step2-late.jsonl"
    write_items(late_file, items, LATE_ITEMS, rng, sentences)
    return {
        "config": {
            "step2_project": project.id,
            "step2_reserved": [
                [item_id, len(content["claims"])] for item_id, _, content in annotating[-RESERVED:] if content["claims"]
            ],
            "step2_queries": [rng.choice(sentences) for _ in range(200)],
            "step2_late_file": str(late_file),
            "step2_late_items": LATE_ITEMS,
        },
        "timings": timings,
        "corpus_passages": corpus.passages,
    }


def after_run(config: dict, since) -> dict:
    """What the worker did for the step-2 project during the run, read from the database: the
    searches by state, the reserved items whose evidence was retrieved again, the late items'
    step 2 by status (annotating: retrieved and assigned)."""
    from django.db.models import Count

    from annotation.models import EvidenceSearch, ItemStage

    project = config["step2_project"]
    searches = dict(
        EvidenceSearch.objects.filter(project_id=project).values_list("state").annotate(n=Count("id")).order_by()
    )
    reserved = [item_id for item_id, _ in config["step2_reserved"]]
    retrieved = ItemStage.objects.filter(item_id__in=reserved, stage=2, updated_at__gte=since).count()
    late = dict(
        ItemStage.objects.filter(item__project_id=project, stage=2, item__created_at__gte=since)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {"searches": searches, "reserved items retrieved again": retrieved, "late items' step 2": late}
