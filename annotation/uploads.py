"""Uploaded files kept for a background task under ``DATA_DIR``, which web and worker share."""
import uuid
from pathlib import Path

from django.conf import settings


def stored_path(relative: str) -> Path:
    return Path(settings.DATA_DIR) / relative


def store_upload(upload, folder: str) -> tuple[str, int]:
    """Copy ``upload`` (a Django upload or an open binary file) to ``DATA_DIR/folder`` in chunks;
    returns its path relative to ``DATA_DIR`` (what a job row keeps) and its size."""
    directory = Path(settings.DATA_DIR) / folder
    directory.mkdir(parents=True, exist_ok=True)
    relative = f"{folder}/{uuid.uuid4().hex}.upload"
    size = 0
    with open(stored_path(relative), "wb") as target:
        for chunk in upload.chunks() if hasattr(upload, "chunks") else iter(lambda: upload.read(1 << 20), b""):
            size += len(chunk)
            target.write(chunk)
    return relative, size
