"""Celery tasks: thin entry points that call the services.

Services queue these by name through ``annotation.dispatch`` and never import this module, so
the dependency runs one way: tasks → services. Each task is safe to redeliver (see the service
it calls); the retry policy of each is set here.
"""

import logging
import time

from celery import shared_task
from django.db import OperationalError

from annotation import dispatch
from annotation.evidence import corpora, vector_index
from annotation.evidence import retrieval as evidence
from annotation.evidence import search as evidence_search
from annotation.exports import lines as export_lines
from annotation.imports import jobs as import_jobs
from annotation.models import Project
from annotation.research import agreement_cache, llm_rater_run, predictions
from annotation.services import jobs, stages

EMBED_TASK_SECONDS = 30
logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
)
def precompute_stages(self, stage_ids: list[int]) -> dict:
    """Compute the content and suggestions of item-stages, then hand them to annotators
    (services.stages.precompute_stages)."""
    return stages.precompute_stages(stage_ids)


@shared_task(bind=True, max_retries=5)
def run_import(self, job_id: int) -> dict:
    """Import an uploaded file (an ImportJob); see annotation.imports.jobs.run_import_job.

    Redelivery after a worker died (acks_late) is safe: an ended job is skipped, and a half-run
    one left nothing behind. A database that stays unreachable fails the job after the retries.
    """
    job, failed = run_retrying_on_database_errors(
        self, import_jobs.run_import_job, import_jobs.fail_import_job, job_id, "imported"
    )
    return {"job": job_id, "state": "failed" if failed else job.state if job else None}


def run_retrying_on_database_errors(task, run, fail, object_id: int, nothing_was: str, before_retry=None):
    """(``run(object_id)``, False), retried with backoff while the database is unreachable; after
    the task's last retry, or on any other exception, ``fail(object_id, message)`` ends the job:
    (None, True). The one catch-all of every job (services.jobs.run_job)."""
    return jobs.run_job(task, run, fail, object_id, nothing_was, before_retry=before_retry, label=task.name)


@shared_task(bind=True, max_retries=5)
def import_corpus(self, corpus_id: int) -> dict:
    """Cut an uploaded corpus into passages (evidence.corpora.run_corpus_import)."""
    corpus, failed = run_retrying_on_database_errors(
        self,
        corpora.run_corpus_import,
        corpora.fail_corpus,
        corpus_id,
        "imported",
        before_retry=corpora.requeue_corpus,
    )
    return {"corpus": corpus_id, "state": "failed" if failed else corpus.state if corpus else None}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def embed_corpus(corpus_id: int) -> dict:
    """Embed a corpus's passages in batches for up to EMBED_TASK_SECONDS, then queue the rest.

    Short tasks keep a redelivery cheap (it repeats seconds of work, not an hour) and let other
    work, such as retrieval for annotators, run in between. The task's queue is
    ``EMBEDDING_QUEUE``, so GPU workers can serve embedding alone.
    """
    deadline, embedded = time.monotonic() + EMBED_TASK_SECONDS, 0
    try:
        while batch := corpora.embed_next_batch(corpus_id):
            embedded += batch
            if time.monotonic() > deadline:
                dispatch.send("embed_corpus", corpus_id)
                break
    except OperationalError:
        raise  # retried
    except Exception as exc:  # the corpus must not say "embedding" forever
        logger.exception("embedding corpus %s stopped", corpus_id)
        corpora.stop_embedding(corpus_id, exc)
    return {"corpus": corpus_id, "embedded": embedded}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def build_vector_index(corpus_id: int) -> dict:
    """Rebuild a corpus's vector index from the stored vectors (queued by a search that found it
    missing or corrupt; annotation.evidence.vector_index)."""
    meta = vector_index.sync(corpus_id, rebuild=True)
    vector_index.forget(corpus_id)
    return {"corpus": corpus_id, "rows": meta["rows"]}


@shared_task(bind=True, max_retries=3)
def run_evidence_search(self, search_id: int) -> str | None:
    """Answer a search an annotator typed on the step-2 page (evidence.search)."""
    search, failed = run_retrying_on_database_errors(
        self,
        evidence_search.run_search,
        evidence_search.fail_search,
        search_id,
        "found",
        before_retry=evidence_search.requeue_search,
    )
    return "failed" if failed else search.state if search else None


@shared_task(
    autoretry_for=(OperationalError, ConnectionError, TimeoutError),
    retry_backoff=True,
    max_retries=5,
)
def retrieve_unit_again(stage_id: int, index: int) -> bool:
    """Retrieve one unit's evidence again (evidence.retrieval); idempotent, so a redelivery after
    a dead worker only repeats the retrieval."""
    return evidence.retrieve_again(stage_id, index)


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def store_export_lines(project_id: int, item_ids: list[int] | None = None) -> int:
    """Render and store the export lines of a project's consolidated items (see ExportLine)."""
    project = Project.objects.filter(pk=project_id).first()
    return export_lines.store_export_lines(project, item_ids) if project else 0


@shared_task(bind=True, max_retries=5)
def score_system_run(self, run_id: int) -> dict:
    """Check, store and score a system's predictions (a SystemRun); see
    research.predictions.run_system_run. Safe to redeliver; a database that stays unreachable
    fails the run after the retries."""
    run, failed = run_retrying_on_database_errors(
        self, predictions.run_system_run, predictions.fail_system_run, run_id, "stored"
    )
    return {"run": run_id, "state": "failed" if failed else run.state if run else None}


@shared_task(bind=True, max_retries=3)
def run_llm_rater(self, run_id: int) -> dict:
    """Rate a project's items with an LLM, then score the answers (research.llm_rater_run.execute).
    A redelivery while the run is under way elsewhere does nothing; a database that stays
    unreachable fails the run after the retries."""
    run, failed = run_retrying_on_database_errors(
        self,
        llm_rater_run.execute,
        llm_rater_run.fail_run,
        run_id,
        "stored",
        before_retry=llm_rater_run.requeue_run,
    )
    return {"run": run_id, "state": "failed" if failed else run.state if run else None}


@shared_task(autoretry_for=(OperationalError,), retry_backoff=True, max_retries=3)
def compute_agreement(project_id: int, stage: int, resamples: int, seed: int, token: str) -> dict:
    """Agreement of a step with its bootstrap intervals, stored in the cache the agreement page
    and API read (research.agreement_cache). Safe to redeliver: a stored result is not computed
    again."""
    return agreement_cache.fill(project_id, stage, resamples, seed, token)
