"""Uploaded files kept for a background task under ``DATA_DIR``, which web and worker share."""

import logging
import os
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.http import JsonResponse, UnreadablePostError

logger = logging.getLogger(__name__)

# A temporary upload file not written to for this long belongs to no running request (a worker
# killed mid-upload): the next upload removes it. Requests end far sooner (gunicorn's timeout).
ABANDONED_AFTER_SECONDS = 3600


def stored_path(relative: str) -> Path:
    return Path(settings.DATA_DIR) / relative


def upload_name(upload) -> str:
    """The name an upload is shown under: the file's base name only, so a file opened by path
    (``manage.py import_corpus /srv/…``) does not show the server's directories."""
    name = str(getattr(upload, "name", "") or "")
    return name.replace("\\", "/").rsplit("/", 1)[-1][:255]


def store_upload(upload, folder: str) -> tuple[str, int]:
    """Copy ``upload`` (a Django upload or an open binary file) to ``DATA_DIR/folder`` in chunks;
    returns its path relative to ``DATA_DIR`` (what a job row keeps) and its size."""
    directory = Path(settings.DATA_DIR) / folder
    directory.mkdir(parents=True, exist_ok=True)
    relative = f"{folder}/{uuid.uuid4().hex}.upload"
    if hasattr(upload, "temporary_file_path"):
        # Django received it into a file under DATA_DIR already: a second name for it instead of a
        # copy (Django removes its own name after the request); a copy across file systems
        try:
            os.link(upload.temporary_file_path(), stored_path(relative))
            return relative, os.path.getsize(stored_path(relative))
        except OSError:
            pass
    size = 0
    with open(stored_path(relative), "wb") as target:
        for chunk in upload.chunks() if hasattr(upload, "chunks") else iter(lambda: upload.read(1 << 20), b""):
            size += len(chunk)
            target.write(chunk)
    return relative, size


class DataDirUploadHandler(TemporaryFileUploadHandler):
    """Django's temporary-file upload handler, writing under ``FILE_UPLOAD_TEMP_DIR`` (in
    ``DATA_DIR``, made when missing) instead of the system's temp directory. A file it was
    still writing when the request failed (a body cut off mid-upload) is removed by
    :class:`UploadCleanupMiddleware`; Django only closes files that were received whole."""

    def new_file(self, *args, **kwargs):
        directory = Path(settings.FILE_UPLOAD_TEMP_DIR)
        directory.mkdir(parents=True, exist_ok=True)
        remove_abandoned_uploads(directory)
        self.receiving = True
        super().new_file(*args, **kwargs)

    def file_complete(self, file_size):
        self.receiving = False
        return super().file_complete(file_size)

    def discard_unfinished(self) -> None:
        if getattr(self, "receiving", False):
            self.receiving = False
            self.upload_interrupted()  # closes and removes the file


def remove_abandoned_uploads(directory: Path) -> None:
    cutoff = time.time() - ABANDONED_AFTER_SECONDS
    for entry in directory.glob("*.upload*"):
        try:
            if entry.stat().st_mtime < cutoff:
                entry.unlink()
                logger.warning("removed abandoned upload %s", entry.name)
        except OSError:  # another request removed it first
            pass


class UploadCleanupMiddleware:
    """Outermost, so it also sees uploads that CSRF checking or a view started to read: after
    the response, files a cut-off or failed upload left half-written are removed. A body that
    broke off answers 400 (Django would answer 500), though the client is usually gone."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            return self.get_response(request)
        finally:
            # Handler instances exist only once the body was read (request.upload_handlers).
            for handler in getattr(request, "_upload_handlers", None) or ():
                if isinstance(handler, DataDirUploadHandler):
                    handler.discard_unfinished()

    def process_exception(self, request, exception):
        if isinstance(exception, UnreadablePostError):
            return JsonResponse({"detail": "the request body broke off before its end: send it again"}, status=400)
        return None
