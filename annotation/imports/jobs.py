"""Import jobs: an upload stored and queued as an ``ImportJob``, run by a Celery task
(``run_import_job``: the whole import in one transaction, its progress written on the side),
failed with a readable message, and its upload deleted once it ends."""

import logging

from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.models import F
from django.utils import timezone

from annotation import dispatch
from annotation.exceptions import ImportFailed
from annotation.imports.items import (
    UPLOAD_DIR,
    ImportResult,
    check_options,
    import_jsonl,
    upload_path,
)
from annotation.imports.reading import check_upload_size, line_error
from annotation.imports.uploads import store_upload, stored_path, upload_name
from annotation.models import ImportJob, ImportJobState, Project
from annotation.services import jobs

logger = logging.getLogger(__name__)


def create_import_job(
    *,
    project: Project,
    user,
    upload,
    fmt: str,
    labels_as: str = "ignore",
    on_error: str = "refuse",
    domain: str = "",
) -> ImportJob:
    """Store the upload and queue its import; the task starts once this transaction commits.

    Unknown options and files above the size limit are refused here, before anything is stored.
    """
    check_options(project, fmt, labels_as, on_error, domain)
    check_upload_size(getattr(upload, "size", None))
    relative, size = store_upload(upload, UPLOAD_DIR)
    try:
        with transaction.atomic():
            job = ImportJob.objects.create(
                project=project,
                created_by=user if getattr(user, "is_authenticated", False) else None,
                format=fmt,
                labels_as=labels_as,
                options={"on_error": on_error, "domain": domain},
                file_path=relative,
                file_size=size,
                file_name=upload_name(upload),
            )
            dispatch.queue("run_import", job.id)
    except BaseException:
        stored_path(relative).unlink(missing_ok=True)
        raise
    return job


class _JobEnded(Exception):
    """Another run of the same job finished it first: this run's writes are rolled back."""


class _ProgressWriter:
    """Commits lines/bytes read on a connection of its own, so pollers see them while the import's
    transaction is open. Only on PostgreSQL: SQLite's writer lock is held by that transaction
    (there, the counts are written when the job ends)."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.connection = connections.create_connection(DEFAULT_DB_ALIAS) if connection.vendor == "postgresql" else None
        table = connection.ops.quote_name(ImportJob._meta.db_table)
        self.sql = f"UPDATE {table} SET lines_read = %s, bytes_read = %s, progress_at = %s WHERE id = %s AND state = %s"

    def __call__(self, lines: int, size: int) -> None:
        if self.connection is None:
            return
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(self.sql, [lines, size, timezone.now(), self.job_id, ImportJobState.RUNNING])
        except Exception:  # progress is a courtesy: it must never fail the import
            logger.warning("could not record the progress of import job %s", self.job_id, exc_info=True)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


def _end_job(
    job_id: int,
    state: str,
    *,
    errors: list[dict] | None = None,
    result: dict | None = None,
    reading: tuple[int, int] | None = None,
    remove_upload: bool = True,
) -> bool:
    values = {"errors": errors or [], "result": result}
    if reading is not None:
        values["lines_read"], values["bytes_read"] = reading
    return jobs.end(ImportJob, job_id, state, remove_upload=remove_upload, **values)


def fail_import_job(job_id: int, message: str) -> None:
    """End a job that cannot run (e.g. the database stayed unreachable), and drop its upload."""
    _end_job(job_id, ImportJobState.FAILED, errors=[line_error(0, "(server)", message)])


def run_import_job(job_id: int) -> ImportJob | None:
    """Run a queued import job (the Celery task's body); safe to run again.

    A job that ended is not run again. A run whose worker died left nothing (one transaction),
    so a redelivered task simply imports again; the job is marked done inside that transaction,
    so two runs at once cannot both write the items. Database errors propagate for the task to
    retry; the upload is deleted once the job has ended.
    """
    # Any running job is taken: its writes are one transaction, so a second run only repeats them.
    if not jobs.claim(
        ImportJob,
        job_id,
        take_running="any",
        attempts=F("attempts") + 1,
        lines_read=0,
        bytes_read=0,
    ):
        return ImportJob.objects.filter(pk=job_id).first()
    job = ImportJob.objects.select_related("project").get(pk=job_id)
    progress = _ProgressWriter(job_id)
    seen = [0, 0]

    def on_progress(lines: int, size: int) -> None:
        seen[:] = [lines, size]
        progress(lines, size)

    def finish(result: ImportResult) -> None:
        # Inside the import's transaction: the upload goes only once it has committed (below).
        if not _end_job(
            job_id,
            ImportJobState.DONE,
            result=result.as_dict(),
            reading=tuple(seen),
            remove_upload=False,
        ):
            raise _JobEnded()

    try:
        with open(upload_path(job), "rb") as file:
            import_jsonl(
                job.project,
                file,
                fmt=job.format,
                labels_as=job.labels_as,
                on_error=job.options.get("on_error", "refuse"),
                domain=job.options.get("domain", ""),
                on_progress=on_progress,
                before_commit=finish,
            )
    except _JobEnded:
        pass
    except ImportFailed as exc:
        _end_job(job_id, ImportJobState.FAILED, errors=exc.errors, reading=tuple(seen))
    except FileNotFoundError:
        _end_job(
            job_id,
            ImportJobState.FAILED,
            errors=[
                line_error(
                    0,
                    "(file)",
                    jobs.UPLOAD_GONE,
                )
            ],
        )
    except Exception as exc:
        if isinstance(exc, (OperationalError, InterfaceError)):
            raise  # transient: the task retries, the upload is kept
        logger.exception("import job %s failed", job_id)
        _end_job(
            job_id,
            ImportJobState.FAILED,
            errors=[
                line_error(
                    0,
                    "(server)",
                    f"the import stopped on an internal error ({type(exc).__name__}); nothing was imported",
                )
            ],
        )
    finally:
        progress.close()
    if ImportJob.objects.filter(pk=job_id, state__in=ImportJob.ENDED_STATES).exists():
        jobs.delete_upload(ImportJob, job_id)
    job.refresh_from_db()
    return job
