"""An upload Django received into a temporary file under DATA_DIR is stored under a second name
(a hard link), not copied; other uploads are copied."""

import io
import os
from pathlib import Path

from django.core.files.uploadedfile import TemporaryUploadedFile

from annotation.imports.uploads import store_upload, stored_path

CONTENT = b'{"prompt": "q", "response": "r"}\n' * 1000


def test_a_temporary_upload_is_linked_and_outlives_the_request(data_dir):
    Path(data_dir / "upload-tmp").mkdir(parents=True)
    upload = TemporaryUploadedFile("items.jsonl", "application/jsonl", len(CONTENT), None)
    upload.write(CONTENT)
    upload.flush()
    relative, size = store_upload(upload, "imports")
    stored = stored_path(relative)
    assert size == len(CONTENT)
    assert os.stat(stored).st_ino == os.stat(upload.temporary_file_path()).st_ino  # no copy made
    upload.close()  # the end of the request: Django's temporary name goes
    assert stored.read_bytes() == CONTENT


def test_an_upload_held_in_memory_is_copied(data_dir):
    relative, size = store_upload(io.BytesIO(CONTENT), "imports")
    assert size == len(CONTENT) and stored_path(relative).read_bytes() == CONTENT
