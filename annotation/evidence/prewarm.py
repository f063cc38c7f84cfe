"""Readying a searching process before its first evidence search (``VECTOR_INDEX_PREWARM``).

Evidence is searched in Celery workers (``run_evidence_search``, ``retrieve_unit_again``,
``precompute_stages``). A fresh worker process's first search used to pay, on top of the search,
for importing faiss, opening the corpora's vector indexes, faiss's first search (its pages and
the scan thread), the first full-text statement (PostgreSQL's pages of the GIN index and the
table) and loading the query embedding model: most of a second at a million passages
(benchmarks/README.md "First search"). Once a worker process is up (``config/celery.py``), a
thread of its own does all of that once, in this order, so that the first search is an ordinary
one:

1. import faiss;
2. open the vector index of each searchable corpus that has one on disk (the most embedded
   first, at most ``VECTOR_INDEX_PREWARM_CORPORA``), and run one throwaway dense search on each
   (on the scan thread the searches use);
3. on PostgreSQL, run the full-text statement a search of that corpus would run, once, under a
   statement timeout;
4. when there is a corpus to search, import what the search tasks import, load the query
   embedding model and embed one string, and the ranking's word lists.

Nothing here blocks the worker's start or a task: a search that arrives meanwhile waits only for
what it needs and is being made now (an index being opened: ``vector_index.reader``; the model
being loaded: ``pipeline.retrieval.embedding_model``), never for the rest. Each step is timed and
logged at INFO in one line; a failure is logged and the next step runs (the first search then does
that part itself, as without prewarming). Memory: what the first search would load anyway (the
readers are bounded whatever the corpus's size; one model).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connection

from annotation.evidence import corpus_search, vector_index
from annotation.models import Corpus, CorpusState

logger = logging.getLogger(__name__)

# The searchable corpora whose indexes a process opens ahead (the most embedded first).
PREWARM_CORPORA = 8
# The throwaway searches' query (embedded, and searched lexically where no passage text is at hand).
WARM_TEXT = "The Eiffel Tower was completed in March 1889 in Paris."


def wanted(process: str) -> bool:
    """VECTOR_INDEX_PREWARM: "worker" (the default: Celery worker processes, where evidence is
    searched), "all" or "1" (gunicorn web workers too: only when tasks run in the web process),
    "0" or "none" (no prewarm)."""
    value = str(getattr(settings, "VECTOR_INDEX_PREWARM", "worker")).strip().lower()
    if value in ("0", "off", "false", "none", "no", ""):
        return False
    return value in ("1", "all", "true", "yes") or process == "worker"


def in_background(process: str = "worker") -> threading.Thread | None:
    """Where VECTOR_INDEX_PREWARM wants it for this kind of ``process`` ("worker": a Celery worker
    process, "web": a gunicorn worker), ``prewarm`` on a daemon thread of its own; the thread, or
    None."""
    if not wanted(process):
        return None
    thread = threading.Thread(target=_prewarm_and_close, name="search-prewarm", daemon=True)
    thread.start()
    return thread


def _prewarm_and_close() -> None:
    try:
        prewarm()
    finally:
        connection.close()  # the thread's own


def _timed(report: dict, step: str, function, *args):
    """``function(*args)``, its wall seconds added to ``report["seconds"][step]``; None (logged) if it failed."""
    began = time.perf_counter()
    try:
        return function(*args)
    except Exception:  # a worker without a database yet, a failing disk: the first search does it
        logger.warning("search prewarm: %s failed", step, exc_info=True)
        report["failed"].append(step)
        return None
    finally:
        seconds = report["seconds"]
        seconds[step] = seconds.get(step, 0.0) + time.perf_counter() - began


def _corpora() -> list[Corpus]:
    limit = int(getattr(settings, "VECTOR_INDEX_PREWARM_CORPORA", None) or PREWARM_CORPORA)
    searchable = Corpus.objects.filter(state__in=(CorpusState.EMBEDDING, CorpusState.READY), embedded_through__gt=0)
    return list(searchable.order_by("-embedded_through")[:limit])  # as Corpus.searchable


def _embed_one() -> bool:
    # the embedding model (onnxruntime or torch) and the ranking: only where queries are embedded;
    # the search tasks' modules (the web search client): their first run imports them
    import pipeline.evidence_search  # noqa: F401
    import pipeline.factcheck_step2  # noqa: F401
    from pipeline.retrieval import Candidate, embed, rank_candidates

    vector = embed([WARM_TEXT])[0]
    passages = [Candidate(text=WARM_TEXT, url=f"https://warm.example/{n}", title="", source="corpus") for n in (1, 2)]
    rank_candidates(WARM_TEXT, passages, claim_vector=vector)  # its stop words, stemmer and rapidfuzz
    return True


def prewarm() -> dict:
    """Ready this process for its first evidence search (the module's steps); what it did, with the
    wall seconds of each step. Never raises."""
    began = time.perf_counter()
    report: dict = {"corpora": [], "opened": [], "full_text": [], "model": False, "failed": [], "seconds": {}}
    _timed(report, "faiss", vector_index._faiss)
    corpora = _timed(report, "corpora", _corpora) or []
    report["corpora"] = [corpus.id for corpus in corpora]
    for corpus in corpora:
        reader = _timed(report, "open", vector_index.open_for_prewarm, corpus)
        if reader is None:
            continue
        report["opened"].append(corpus.id)
        _timed(report, "dense", corpus_search.warm_dense, reader)
        if connection.vendor == "postgresql":
            if _timed(report, "full text", corpus_search.warm_full_text, corpus, reader) is not None:
                report["full_text"].append(corpus.id)
    if corpora:
        report["model"] = _timed(report, "embedding model", _embed_one) is not None
    report["seconds"]["total"] = time.perf_counter() - began
    logger.info(
        "search prewarm done: %s searchable corpora, indexes opened of %s, full-text statement run on %s, "
        "embedding model %s; %s",
        len(corpora),
        report["opened"] or "none",
        report["full_text"] or "none",
        "loaded" if report["model"] else "not loaded",
        ", ".join(f"{step} {1000 * seconds:.0f} ms" for step, seconds in report["seconds"].items()),
    )
    return report
