"""Passage corpora for step-2 evidence retrieval: upload, import as passages, embed.

An admin uploads JSONL documents ``{"title", "url", "text"}``. The upload is stored under
``DATA_DIR/corpora`` and a Celery task reads it twice: once to check every line (a bad line
fails the corpus and names its line and field, nothing is written), once to cut each document
into sentence windows and write them in batches. On PostgreSQL the passages' text-search
vectors are filled when the import ends, so the corpus is lexically searchable at once; the
embeddings follow in batches, each batch its own task, and retrieval uses whatever is embedded.
A task redelivered after its worker died starts its part again: the import deletes what an
earlier run wrote, an embedding batch only takes passages that still have no vector. After the
embedding backend or model changed, ``clear_embeddings`` (``manage.py reembed_corpus``) makes a
corpus's vectors again.
"""

import logging
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation import dispatch
from annotation.evidence import vector_index
from annotation.evidence.corpus_search import forget_vectors
from annotation.exceptions import DomainError, ImportFailed
from annotation.imports.reading import check_upload_size, read_json_line
from annotation.imports.uploads import store_upload, stored_path, upload_name
from annotation.json_values import MAX_JSON_DEPTH, bad_value, too_deep
from annotation.kinds.base import is_valid_url
from annotation.models import Corpus, CorpusState, Passage, Project
from annotation.services import jobs

logger = logging.getLogger(__name__)

UPLOAD_DIR = "corpora"
INSERT_BATCH = 1000
EMBED_BATCH = 256
MAX_REPORTED_ERRORS = 20
MAX_PASSAGE_SENTENCES = 50
# A lexeme in more than 1 % of a corpus's passages (and more than this many) is "frequent".
FREQUENT_TERM_MIN_PASSAGES = 50
_TEXT_LIMITS = {
    "title": Passage._meta.get_field("title").max_length,
    "url": Passage._meta.get_field("url").max_length,
}


def check_passage_settings(sentences: int, stride: int) -> None:
    for name, value in (("passage_sentences", sentences), ("passage_stride", stride)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PASSAGE_SENTENCES:
            raise DomainError(f"{name} must be a whole number from 1 to {MAX_PASSAGE_SENTENCES}")
    if stride > sentences:
        raise DomainError("passage_stride must not exceed passage_sentences, or sentences between windows are lost")


def upload_path(corpus: Corpus) -> Path:
    return stored_path(corpus.file_path)


def create_corpus(
    *,
    name: str,
    user,
    upload,
    projects: list[Project],
    passage_sentences: int = 5,
    passage_stride: int = 2,
) -> Corpus:
    """Store the upload and queue its import; the task starts once this transaction commits."""
    if not (name or "").strip():
        raise DomainError("a corpus needs a name")
    check_passage_settings(passage_sentences, passage_stride)
    check_upload_size(getattr(upload, "size", None))
    relative, size = store_upload(upload, UPLOAD_DIR)
    try:
        with transaction.atomic():
            corpus = Corpus.objects.create(
                name=name.strip()[:200],
                created_by=user if getattr(user, "is_authenticated", False) else None,
                passage_sentences=passage_sentences,
                passage_stride=passage_stride,
                file_path=relative,
                file_size=size,
                file_name=upload_name(upload),
            )
            corpus.projects.set(projects)
            dispatch.queue("import_corpus", corpus.id)
    except BaseException:
        stored_path(relative).unlink(missing_ok=True)
        raise
    return corpus


def share_corpus(corpus: Corpus, projects: list[Project]) -> Corpus:
    """Set the projects whose step-2 retrieval searches ``corpus``."""
    corpus.projects.set(projects)
    return corpus


def _document(raw: bytes, number: int) -> tuple[dict | None, dict | None]:
    """(document, None) or (None, error naming the line and field)."""

    def error(field: str, message: str):
        return None, {"line": number, "field": field, "message": message}

    data, problem, text = read_json_line(raw, number)  # the items' reader: line, column, excerpt
    if problem is not None:
        return None, problem
    if not text.strip():
        return None, None
    if not isinstance(data, dict):
        return error("(line)", "must be a JSON object with title, url and text")
    if too_deep(data):
        return error("(json)", f"is nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    document = {}
    for key in ("title", "url", "text"):
        value = data.get(key, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            return error(key, "must be a string")
        if found := bad_value(value, key):
            return error(*found)
        if key in _TEXT_LIMITS and len(value) > _TEXT_LIMITS[key]:
            return error(key, f"is longer than {_TEXT_LIMITS[key]} characters")
        if key == "text" and len(value) > settings.CORPUS_MAX_DOCUMENT_CHARS:
            return error(
                key,
                f"is {len(value):,} characters long: a document may have at most "
                f"{settings.CORPUS_MAX_DOCUMENT_CHARS:,} (CORPUS_MAX_DOCUMENT_CHARS); split it into "
                "several lines",
            )
        document[key] = value.strip()
    if not document["text"]:
        return error("text", "is missing or empty")
    if document["url"] and not is_valid_url(document["url"]):
        return error("url", "must be an http(s) URL")
    return document, None


def _documents(path: Path):
    """(line number, document or None, error or None) for each line of the stored upload."""
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            document, error = _document(raw, number)
            if document is not None or error is not None:
                yield number, document, error


def _check_file(path: Path) -> int:
    errors, documents = [], 0
    for number, document, error in _documents(path):
        if error:
            errors.append(error)
            if len(errors) >= MAX_REPORTED_ERRORS:
                break
        else:
            documents += 1
    if not errors and not documents:
        errors.append({"line": 0, "field": "(file)", "message": "contains no documents"})
    if errors:
        raise ImportFailed(errors)
    return documents


def tidy_passages() -> None:
    """After a corpus's rows were all rewritten (search vectors filled, embeddings written or
    cleared): VACUUM ANALYZE the passages. Every rewritten row leaves a dead copy behind and a
    new entry in the GIN index's pending list, which each full-text search reads through until
    (auto)vacuum runs, so every query scans much more of the index and the table
    (benchmarks/README.md, `evidence_scale.py`). Without fresh statistics the planner takes the
    many new rows for a few and filters every passage of the corpus instead of using the GIN index. VACUUM cannot run
    inside a transaction (a caller's atomic block, a test): there only the pending list is
    merged and the statistics refreshed."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        if connection.in_atomic_block:
            cursor.execute("SELECT gin_clean_pending_list(to_regclass('passage_search_gin'))")
            cursor.execute("ANALYZE annotation_passage")
        else:
            cursor.execute("VACUUM (ANALYZE) annotation_passage")


def _fill_search_vectors(corpus_id: int) -> None:
    """PostgreSQL's text-search vectors of the new passages, then a tidy table (``tidy_passages``:
    without fresh statistics every query filters the whole corpus), then the corpus's frequent
    terms, which candidate queries leave out (corpus_search)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE annotation_passage SET search = to_tsvector('english', title || ' ' || text) WHERE corpus_id = %s",
            [corpus_id],
        )
    tidy_passages()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT word FROM ts_stat(%s) WHERE ndoc > %s ORDER BY ndoc DESC",
            [
                f"SELECT search FROM annotation_passage WHERE corpus_id = {int(corpus_id)}",
                max(
                    FREQUENT_TERM_MIN_PASSAGES,
                    Passage.objects.filter(corpus_id=corpus_id).count() // 100,
                ),
            ],
        )
        Corpus.objects.filter(pk=corpus_id).update(frequent_terms=[word for (word,) in cursor.fetchall()])


CANCELLED_MESSAGE = "the import was cancelled"


def cancel_corpus_import(corpus_id: int) -> Corpus:
    """Stop a queued or running import: the corpus fails with a "cancelled" error, and the
    import task, which looks at the corpus's state after each batch, deletes what it wrote and
    the upload. A corpus whose import is over is not touched (DomainError)."""
    with transaction.atomic():
        corpus = Corpus.objects.select_for_update().filter(pk=corpus_id).first()
        if corpus is None:
            raise DomainError(f"no corpus with id {corpus_id}")
        if corpus.state not in (CorpusState.QUEUED, CorpusState.IMPORTING):
            raise DomainError(
                f"corpus {corpus.id} ({corpus.name}) is {corpus.get_state_display().lower()}: "
                "only a queued or running import can be cancelled"
            )
        # A running import's task deletes what it wrote and the upload it reads (_cancelled);
        # no task will look at a queued one again.
        jobs.fail(
            Corpus,
            corpus_id,
            [{"line": 0, "field": "(import)", "message": CANCELLED_MESSAGE}],
            remove_upload=corpus.state == CorpusState.QUEUED,
        )
    return Corpus.objects.get(pk=corpus_id)


def _cancelled(corpus_id: int, path: Path) -> bool:
    if Corpus.objects.filter(pk=corpus_id, state=CorpusState.IMPORTING).exists():
        return False
    Passage.objects.filter(corpus_id=corpus_id).delete()
    path.unlink(missing_ok=True)
    logger.info("corpus %s: import cancelled, its passages deleted", corpus_id)
    return True


def run_corpus_import(corpus_id: int) -> Corpus | None:
    """The import task's body: check, write passages, make them searchable; safe to run again.

    It streams the upload (bounded memory whatever its size) and records after each batch, in the
    batch's transaction, the last line written: a task redelivered after its worker died resumes
    after that line instead of starting over. ``cancel_corpus_import`` stops it between batches."""
    # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.retrieval import (
        split_passages,  # loads NLTK and scikit-learn: kept out of web start-up
    )

    corpus = Corpus.objects.filter(pk=corpus_id).first()
    if corpus is None:
        return None
    # Queued, or importing with no progress for JOB_STALLED_AFTER_SECONDS (its worker died): a
    # run beside a live one would write the same passages. A stalled one resumes after its last batch.
    resume_after = corpus.lines_read if corpus.state == CorpusState.IMPORTING else 0
    if resume_after:
        claimed = Corpus.objects.filter(
            jobs.claimable(jobs.KINDS["corpus"]), pk=corpus_id, state=CorpusState.IMPORTING
        ).update(errors=[], progress_at=timezone.now())
    else:
        claimed = jobs.claim(Corpus, corpus_id, errors=[], lines_read=0, documents=0, passages=0)
    corpus = Corpus.objects.filter(pk=corpus_id).first()
    if not claimed or corpus is None:
        return corpus
    path = upload_path(corpus)
    try:
        if not resume_after:  # a run that wrote a batch had checked the whole file
            _check_file(path)
    except ImportFailed as exc:
        jobs.fail(Corpus, corpus_id, exc.errors)
        return Corpus.objects.get(pk=corpus_id)
    except FileNotFoundError:
        jobs.fail(
            Corpus,
            corpus_id,
            [
                {
                    "line": 0,
                    "field": "(file)",
                    "message": jobs.UPLOAD_GONE,
                }
            ],
        )
        return Corpus.objects.get(pk=corpus_id)

    # What a dead worker's run wrote past its last recorded batch (all of it when starting over).
    Passage.objects.filter(corpus_id=corpus_id, document__gt=resume_after).delete()
    if resume_after:
        logger.info("corpus %s: import resumed after line %s", corpus_id, resume_after)
    batch, documents, passages = (
        [],
        corpus.documents if resume_after else 0,
        corpus.passages if resume_after else 0,
    )

    def flush() -> bool:
        """Write the batch and the progress together; False when the import was cancelled."""
        with transaction.atomic():
            Passage.objects.bulk_create(batch)
            batch.clear()
            return jobs.progress(Corpus, corpus_id, lines_read=number, documents=documents, passages=passages)

    number = resume_after
    try:
        for number, document, _ in _documents(path):
            if number <= resume_after:
                continue
            documents += 1
            windows = split_passages(document["text"], size=corpus.passage_sentences, stride=corpus.passage_stride)
            for position, text in enumerate(windows):
                batch.append(
                    Passage(
                        corpus_id=corpus_id,
                        document=number,
                        position=position,
                        title=document["title"],
                        url=document["url"],
                        text=text,
                    )
                )
            passages += len(windows)
            if len(batch) >= INSERT_BATCH and not flush() and _cancelled(corpus_id, path):
                return Corpus.objects.get(pk=corpus_id)
        if not flush() and _cancelled(corpus_id, path):
            return Corpus.objects.get(pk=corpus_id)
    except FileNotFoundError:  # cancelled while queued, then picked up: the upload is gone
        if _cancelled(corpus_id, path):
            return Corpus.objects.get(pk=corpus_id)
        raise
    _fill_search_vectors(corpus_id)
    if not jobs.finish(Corpus, corpus_id, only_from=(CorpusState.IMPORTING,), imported_at=timezone.now()):
        _cancelled(corpus_id, path)  # cancelled while the search vectors were made
        return Corpus.objects.get(pk=corpus_id)
    if not dispatch.runs_in_process():
        # With no worker (the embedded default) a whole corpus is not embedded inside a web
        # request: retrieval embeds the candidates it ranks and keeps their vectors instead.
        dispatch.queue("embed_corpus", corpus_id)
    return Corpus.objects.get(pk=corpus_id)


def embedded_by_worker() -> bool:
    """Whether a worker embeds whole corpora (a broker is set); in the embedded default only
    the passages retrieval ranks get vectors, and the corpus stays partly embedded."""
    return not dispatch.runs_in_process()


def fail_corpus(corpus_id: int, message: str) -> None:
    """End an import that cannot go on (an unexpected error, a database that stayed
    unreachable): failed with the reason, without the passages written so far, upload dropped."""
    if jobs.fail(Corpus, corpus_id, [{"line": 0, "field": "(server)", "message": message[:500]}], passages=0):
        Passage.objects.filter(corpus_id=corpus_id).delete()


def stop_embedding(corpus_id: int, exc: BaseException) -> None:
    """The embedding task failed: the corpus stays searchable (lexically, and by the vectors made
    so far; retrieval embeds the candidates it ranks), with the reason among its errors."""
    Corpus.objects.filter(pk=corpus_id, state=CorpusState.EMBEDDING).update(
        state=CorpusState.READY,
        embedded_at=timezone.now(),
        progress_at=timezone.now(),
        errors=[
            {
                "line": 0,
                "field": "(embedding)",
                "message": f"embedding stopped on an unexpected error ({jobs.reason(exc)}); the corpus is searchable, "
                "passages without a vector are embedded when retrieval ranks them",
            }
        ],
    )


def requeue_corpus(corpus_id: int) -> None:
    """Before the task retries after a database error: the retry may take the import again."""
    jobs.requeue(Corpus, corpus_id)


def embed_next_batch(corpus_id: int, size: int | None = None) -> int:
    """Embed up to ``size`` passages that have no vector yet (default: EMBED_BATCH, or four model
    batches when EMBEDDING_BATCH_SIZE is larger, as on a GPU); returns how many were embedded.
    The corpus is ready when none is left."""
    from pipeline.embedding_backends import batch_size  # with onnxruntime: kept out of web start-up
    from pipeline.retrieval import embed  # loads NLTK and scikit-learn: kept out of web start-up

    size = size or max(EMBED_BATCH, 4 * batch_size())

    rows = list(
        Passage.objects.filter(corpus_id=corpus_id, embedding__isnull=True)
        .order_by("id")
        .values_list("id", "text")[:size]
    )
    if rows:
        vectors = embed([text for _, text in rows])
        Passage.objects.bulk_update(
            [Passage(id=passage_id, embedding=vector.tobytes()) for (passage_id, _), vector in zip(rows, vectors)],
            ["embedding"],
        )
    embedded = Passage.objects.filter(corpus_id=corpus_id, embedding__isnull=False).count()
    left = (
        Passage.objects.filter(corpus_id=corpus_id, embedding__isnull=True).order_by("id").values_list("id", flat=True)
    )
    next_missing = left.first()
    if next_missing is None:
        through = Passage.objects.filter(corpus_id=corpus_id).order_by("-id").values_list("id", flat=True).first() or 0
    else:
        through = next_missing - 1
    changes = {"embedded": embedded, "embedded_through": through, "progress_at": timezone.now()}
    if next_missing is None:
        changes.update(state=CorpusState.READY, embedded_at=timezone.now())
    Corpus.objects.filter(Q(pk=corpus_id), ~Q(state=CorpusState.FAILED)).update(**changes)
    if next_missing is None and rows:
        tidy_passages()  # every row of the corpus was rewritten with its vector
    if rows:
        update_vector_index(corpus_id, through)
    return len(rows)


def update_vector_index(corpus_id: int, through: int | None = None) -> None:
    """Add the new vectors to the corpus's index on disk (annotation.evidence.vector_index). A failure
    (disk full, say) does not stop the embedding: searches rebuild a missing or broken index."""
    try:
        vector_index.sync(corpus_id, through)
    except Exception:  # noqa: BLE001 - the vectors are safe in the database; the index is rebuilt from them
        logger.exception("vector index of corpus %s not updated", corpus_id)


# Mean cosine between stored vectors and the current backend's for the same passages at or above
# which the stored ones count as made by this backend: float32 ONNX and torch agree at 1.000,
# int8 and float32 at 0.994 on average (0.987 at worst), another model near 0.
SAME_EMBEDDINGS = 0.999
AGREEMENT_SAMPLE = 16


def embedding_agreement(corpus_id: int, sample: int = AGREEMENT_SAMPLE) -> float | None:
    """Mean cosine between the stored vectors of the corpus's first ``sample`` embedded passages
    and what the current embedding backend makes of them; None when nothing is embedded. The
    corpus does not record which model made its vectors, so this compares them instead."""
    import numpy as np  # numpy: web workers start without it

    from pipeline.retrieval import embed  # loads NLTK and scikit-learn: kept out of web start-up

    rows = list(
        Passage.objects.filter(corpus_id=corpus_id, embedding__isnull=False)
        .order_by("id")
        .values_list("text", "embedding")[:sample]
    )
    if not rows:
        return None
    stored = np.stack([np.frombuffer(bytes(vector), dtype=np.float32) for _, vector in rows])
    current = embed([text for text, _ in rows])
    if stored.shape != current.shape:
        return 0.0  # another model's dimensions
    return float(np.mean(np.sum(stored * current, axis=1)))


def clear_embeddings(corpus_id: int, *, enqueue: bool = True) -> Corpus:
    """Forget a corpus's vectors so that they are made again, by the current backend: after the
    embedding backend or model changed, old and new vectors are not comparable. Retrieval goes on
    lexically meanwhile and uses the new vectors as they come; ``enqueue``: queue the embedding
    task once this commits (not without a broker, as after an import: the caller embeds then)."""
    with transaction.atomic():
        corpus = Corpus.objects.select_for_update().get(pk=corpus_id)
        if corpus.state not in (CorpusState.EMBEDDING, CorpusState.READY):
            raise DomainError(
                f"corpus {corpus.id} ({corpus.name}) is {corpus.get_state_display().lower()}: "
                "only an imported corpus has vectors to make again"
            )
        Passage.objects.filter(corpus_id=corpus_id).exclude(embedding=None).update(embedding=None)
        Corpus.objects.filter(pk=corpus_id).update(
            state=CorpusState.EMBEDDING, embedded=0, embedded_through=0, embedded_at=None
        )
        # Other processes notice on their next search (vector_index.reader: the index is gone).
        transaction.on_commit(lambda: (vector_index.remove(corpus_id), forget_vectors(corpus_id)))
        if enqueue and not dispatch.runs_in_process():
            dispatch.queue("embed_corpus", corpus_id)
    return Corpus.objects.get(pk=corpus_id)
