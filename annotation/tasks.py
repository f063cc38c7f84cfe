"""Celery tasks: load item-stages, run the pipeline on them, store the results.

Tasks are idempotent (a stage that is no longer ``precomputing`` is skipped) and write each
stage in its own transaction, so a worker that dies mid-task leaves no stage half written.
"""
import logging
import time
from functools import partial

from celery import shared_task
from django.db import OperationalError, transaction

from annotation.corpus_search import corpus_search
from annotation.kinds import get_kind
from annotation.models import GoldRecord, ItemStage, Project, StageStatus

logger = logging.getLogger(__name__)
CHUNK_SIZE = 200
EMBED_TASK_SECONDS = 30


def enqueue_precompute(stage_ids: list[int]) -> None:
    for start in range(0, len(stage_ids), CHUNK_SIZE):
        precompute_stages.delay(stage_ids[start : start + CHUNK_SIZE])


@shared_task(bind=True, autoretry_for=(OperationalError, ConnectionError, TimeoutError), retry_backoff=True, max_retries=5)
def precompute_stages(self, stage_ids: list[int]) -> dict:
    """Compute the content and suggestions of item-stages, then hand them to annotators."""
    done, failed = 0, 0
    stages = ItemStage.objects.filter(id__in=stage_ids, status=StageStatus.PRECOMPUTING).select_related("item__project")
    for stage in stages:
        project = stage.item.project
        kind = get_kind(project.kind)
        earlier = {}
        if stage.stage > kind.stages[0]:
            earlier = {
                number: {"content": content, "gold": gold}
                for number, content, gold in ItemStage.objects.filter(item_id=stage.item_id, stage__lt=stage.stage)
                .values_list("stage", "content", "gold__payload")
            }
        previous_gold = (earlier.get(stage.stage - 1) or {}).get("gold")
        try:
            result = kind.precompute(stage.stage, stage.item.prompt, stage.item.response, stage.content,
                                     project.pipeline_settings, previous_gold=previous_gold,
                                     evidence_search=partial(corpus_search, project), item_metadata=stage.item.metadata,
                                     earlier=earlier)
        except (OperationalError, ConnectionError, TimeoutError):
            raise
        except Exception as exc:  # a bad item must not stop the others; its error is shown in the UI
            logger.exception("pre-annotation of %s failed", stage)
            ItemStage.objects.filter(pk=stage.pk, status=StageStatus.PRECOMPUTING).update(
                status=StageStatus.FAILED, precompute_error=f"{type(exc).__name__}: {exc}"
            )
            failed += 1
            continue
        with transaction.atomic():
            updated = ItemStage.objects.filter(pk=stage.pk, status=StageStatus.PRECOMPUTING).update(
                status=StageStatus.READY,
                content=result["content"],
                suggestion=result.get("suggestion"),
                provenance=result.get("provenance", {}),
                precompute_error="",
            )
        done += updated
    from annotation.services.assignments import assign_open_stages

    # Also the stages an earlier run of this task wrote before its worker died: they are ready
    # but may not be assigned yet.
    for project in Project.objects.filter(items__stages__id__in=stage_ids).distinct():
        assign_open_stages(project)
    return {"done": done, "failed": failed}


@shared_task(bind=True, max_retries=5)
def run_import(self, job_id: int) -> dict:
    """Import an uploaded file (an ImportJob); see services.imports.run_import_job.

    Redelivery after a worker died (acks_late) is safe: an ended job is skipped, and a half-run
    one left nothing behind. A database that stays unreachable fails the job after the retries.
    """
    from annotation.services.imports import fail_import_job, run_import_job

    job, failed = run_retrying_on_database_errors(self, run_import_job, fail_import_job, job_id, "imported")
    return {"job": job_id, "state": "failed" if failed else job.state if job else None}


def run_retrying_on_database_errors(task, run, fail, object_id: int, nothing_was: str, before_retry=None):
    """(``run(object_id)``, False), retried with backoff while the database is unreachable;
    after the task's last retry, ``fail(object_id, message)`` ends the job: (None, True)."""
    from django.db import InterfaceError

    try:
        return run(object_id), False
    except (OperationalError, InterfaceError) as exc:
        if task.request.retries >= task.max_retries:
            fail(object_id, f"the database stayed unreachable ({exc}); nothing was {nothing_was}")
            return None, True
        if before_retry is not None:
            before_retry(object_id)
        raise task.retry(exc=exc, countdown=min(60, 2 ** task.request.retries))


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def import_corpus(corpus_id: int) -> dict:
    """Cut an uploaded corpus into passages (services.corpora.run_corpus_import)."""
    from annotation.services.corpora import run_corpus_import

    corpus = run_corpus_import(corpus_id)
    return {"corpus": corpus_id, "state": corpus.state if corpus else None}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def embed_corpus(corpus_id: int) -> dict:
    """Embed a corpus's passages in batches for up to EMBED_TASK_SECONDS, then queue the rest.

    Short tasks keep a redelivery cheap (it repeats seconds of work, not an hour) and let other
    work, such as retrieval for annotators, run in between. The task's queue is
    ``EMBEDDING_QUEUE``, so GPU workers can serve embedding alone.
    """
    from annotation.services.corpora import embed_next_batch

    deadline, embedded = time.monotonic() + EMBED_TASK_SECONDS, 0
    while batch := embed_next_batch(corpus_id):
        embedded += batch
        if time.monotonic() > deadline:
            embed_corpus.delay(corpus_id)
            break
    return {"corpus": corpus_id, "embedded": embedded}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def build_vector_index(corpus_id: int) -> dict:
    """Rebuild a corpus's vector index from the stored vectors (queued by a search that found it
    missing or corrupt; annotation.vector_index)."""
    from annotation import vector_index

    meta = vector_index.sync(corpus_id, rebuild=True)
    vector_index.forget(corpus_id)
    return {"corpus": corpus_id, "rows": meta["rows"]}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def run_evidence_search(search_id: int) -> str | None:
    """Answer a search an annotator typed on the step-2 page (services.evidence_search)."""
    from annotation.services.evidence_search import run_search

    search = run_search(search_id)
    return search.state if search else None


@shared_task(autoretry_for=(OperationalError, ConnectionError, TimeoutError), retry_backoff=True, max_retries=5)
def retrieve_unit_again(stage_id: int, index: int) -> bool:
    """Retrieve one unit's evidence again (services.evidence); idempotent, so a redelivery after
    a dead worker only repeats the retrieval."""
    from annotation.services.evidence import retrieve_again

    return retrieve_again(stage_id, index)


def enqueue_store_export_lines(project_id: int, item_ids: list[int] | None = None) -> None:
    """Store export lines once the transaction that changed the gold records has committed."""
    if get_kind(Project.objects.values_list("kind", flat=True).get(pk=project_id)).stored_export_formats:
        transaction.on_commit(lambda: store_export_lines.delay(project_id, item_ids))


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def store_export_lines(project_id: int, item_ids: list[int] | None = None) -> int:
    """Render and store the export lines of a project's consolidated items (see ExportLine)."""
    from annotation.services.export_lines import store_export_lines as store

    project = Project.objects.filter(pk=project_id).first()
    return store(project, item_ids) if project else 0


@shared_task(bind=True, max_retries=5)
def score_system_run(self, run_id: int) -> dict:
    """Check, store and score a system's predictions (a SystemRun); see
    services.predictions.run_system_run. Safe to redeliver; a database that stays unreachable
    fails the run after the retries."""
    from annotation.services.predictions import fail_system_run, run_system_run

    run, failed = run_retrying_on_database_errors(self, run_system_run, fail_system_run, run_id, "stored")
    return {"run": run_id, "state": "failed" if failed else run.state if run else None}


@shared_task(bind=True, max_retries=3)
def run_llm_rater(self, run_id: int) -> dict:
    """Rate a project's items with an LLM, then score the answers (services.llm_rater.execute).
    A redelivery while the run is under way elsewhere does nothing; a database that stays
    unreachable fails the run after the retries."""
    from annotation.services.llm_rater import execute, fail_run, requeue_run

    run, failed = run_retrying_on_database_errors(self, execute, fail_run, run_id, "stored", before_retry=requeue_run)
    return {"run": run_id, "state": "failed" if failed else run.state if run else None}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def compute_agreement(project_id: int, stage: int, resamples: int, seed: int, token: str) -> dict:
    """Agreement of a step with its bootstrap intervals, stored in the cache the agreement page
    and API read (services.agreement_cache). Safe to redeliver: a stored result is not computed
    again."""
    from annotation.services.agreement_cache import fill

    return fill(project_id, stage, resamples, seed, token)
