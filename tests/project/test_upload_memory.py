"""An import upload of a few MiB goes to a temporary file in the data directory, not into the
web worker's memory (issue 22)."""

import json

from django.core.files.uploadedfile import TemporaryUploadedFile
from django.test import RequestFactory
from django.test.client import encode_multipart

from tests.helpers.builders import jsonl


def test_a_one_mib_upload_is_spooled_to_the_data_directory(settings):
    line = {"index": 0, "prompt": "p", "response": "r " * 500}
    upload = jsonl([{**line, "index": i} for i in range(1100)])
    assert upload.getbuffer().nbytes > 1 << 20
    body = encode_multipart("BoUnDaRy", {"format": "felm", "file": upload})
    request = RequestFactory().post("/", data=body, content_type="multipart/form-data; boundary=BoUnDaRy")
    received = request.FILES["file"]
    assert isinstance(received, TemporaryUploadedFile)
    assert received.temporary_file_path().startswith(settings.FILE_UPLOAD_TEMP_DIR)
    assert json.loads(received.readline())["index"] == 0
    received.close()
