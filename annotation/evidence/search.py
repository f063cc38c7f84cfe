"""Searches annotators start from the step-2 page; a Celery task answers them.

Ranking a query needs the embedding model and may fetch web pages (seconds), so the request
only stores the query and the page polls the search until it is done.
"""

import logging

from annotation import dispatch
from annotation.evidence.corpus_search import corpus_search
from annotation.exceptions import DomainError
from annotation.models import EvidenceSearch, Project
from annotation.services import jobs

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 500


def start_search(*, project: Project, user, query: str, claim: str = "") -> EvidenceSearch:
    query = " ".join((query or "").split())
    if not query:
        raise DomainError("query: type what to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise DomainError(f"query: at most {MAX_QUERY_CHARS} characters, not {len(query)}")
    search = EvidenceSearch.objects.create(project=project, user=user, query=query, claim=(claim or "")[:5000])
    dispatch.queue("run_evidence_search", search.id)
    return search


def run_search(search_id: int) -> EvidenceSearch | None:
    """Answer a queued search (the task's body). Only the run that moves it from queued to
    running answers it, so a duplicate delivery does not search twice; a search left running
    by a worker that died is taken again once it is stalled (services.jobs)."""
    if not jobs.claim(EvidenceSearch, search_id):
        return None
    search = EvidenceSearch.objects.select_related("project").get(pk=search_id)
    # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.evidence_search import (
        search_passages,  # loads NLTK and scikit-learn: kept out of web start-up
    )

    # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.retrieval import embed

    # loads the openai client: only where an LLM or search API is called
    from pipeline.websearch import WebSearchConfig

    settings = search.project.pipeline_settings or {}
    passages = settings.get("passages") or {}
    try:
        found = search_passages(
            search.query,
            search=corpus_search(search.project),
            web=WebSearchConfig.from_env(settings.get("web_search")),
            embed=embed if settings.get("embeddings", True) else None,
            passage_size=passages.get("sentences"),
            passage_stride=passages.get("stride"),
        )
    except Exception as exc:  # shown on the page; the annotator can search again
        logger.exception("evidence search %s failed", search_id)
        fail_search(search_id, f"{type(exc).__name__}: {exc}")
    else:
        jobs.finish(EvidenceSearch, search_id, results=found["evidence"], problems=found["problems"])
    return EvidenceSearch.objects.get(pk=search_id)


def fail_search(search_id: int, message: str) -> None:
    """End a search that cannot be answered (an unexpected error, the database unreachable)."""
    jobs.fail(
        EvidenceSearch,
        search_id,
        [{"line": 0, "field": "(server)", "message": message[:1000]}],
        problems=[message[:1000]],
    )


def requeue_search(search_id: int) -> None:
    """Before the task retries after a database error: the retry may take the search again."""
    jobs.requeue(EvidenceSearch, search_id)
