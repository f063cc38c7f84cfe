"""Import errors name the real line and column of text that is not JSON (or not UTF-8), with a
short excerpt around it, for every upload: items of every import format, corpora, predictions
(issue 19). One reader (annotation.imports.items.read_json_line) serves them all."""

import io
import json

import pytest

from annotation.evidence.corpora import create_corpus
from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl
from annotation.models import Corpus, CorpusState
from annotation.research import scoring
from annotation.research.prediction_files import read_predictions
from tests.helpers.builders import project_with_team

pytestmark = pytest.mark.django_db

# a line whose JSON breaks at column 126: "nul" where a value is expected
PREFIX = '{"prompt": "Where is the Eiffel Tower?", "response": "It is in Paris.", "notes": "' + "x" * 34 + '", "n": ['
BROKEN = PREFIX + "nul, 1]}"
COLUMN = len(PREFIX) + 1
assert COLUMN == 126


def good_line(kind: str, fmt: str) -> str:
    if fmt == "felm":
        return json.dumps({"index": "1", "prompt": "Q?", "response": "A.", "segmented_response": ["A."]})
    if fmt == "dfactscore":
        return json.dumps(
            {
                "name": "Ivo",
                "response": "Ivo is a cartographer.",
                "atomic_facts": ["Ivo is a cartographer."],
                "candidates": [],
            }
        )
    return json.dumps({"prompt": "Q?", "response": "A."})


def check(error: dict, line: int, column: int = COLUMN) -> None:
    assert error["line"] == line and error["column"] == column, error
    assert f"at column {column}, near «" in error["message"]
    assert "[⟨here⟩nul, 1]}»" in error["message"]  # the text around the place, the place marked


@pytest.mark.parametrize(
    "kind, fmt",
    [
        ("felm", "felm"),
        ("felm", "plain"),
        ("factcheck", "plain"),
        ("factcheck", "factcheck-bench"),
        ("dfactscore", "dfactscore"),
    ],
)
def test_every_item_format_names_the_line_and_column(users, kind, fmt):
    project = project_with_team(users, f"{kind} {fmt}", kind)
    data = f"{good_line(kind, fmt)}\n{good_line(kind, fmt)}\n{BROKEN}\n".encode()
    with pytest.raises(ImportFailed) as caught:
        import_jsonl(project, io.BytesIO(data), fmt=fmt)
    # the good lines of a bare shape may have errors of their own: the broken line's is the one looked at
    check(next(error for error in caught.value.errors if error["line"] == 3), 3)


def test_the_tool_screen_document_names_the_line_and_column_in_the_document(users):
    project = project_with_team(users, "tool", "factcheck")
    document = '{\n  "prompt": "Q?",\n  "response": "A.", "n": [nul, 1]}\n'
    with pytest.raises(ImportFailed) as caught:
        import_jsonl(project, io.BytesIO(document.encode()), fmt="factcheck-tool")
    error = caught.value.errors[0]
    assert (error["line"], error["column"]) == (3, len('  "response": "A.", "n": [') + 1)
    assert "[⟨here⟩nul, 1]}»" in error["message"]


def test_a_line_that_is_not_utf8_names_the_column_of_the_bad_byte(felm_project):
    bad = b'{"prompt": "caf\xc3\xa9", "response": "\xff"}\n'  # the \xff is character 33 (é is one)
    with pytest.raises(ImportFailed) as caught:
        import_jsonl(felm_project, io.BytesIO(b'{"prompt": "q", "response": "a"}\n' + bad), fmt="plain")
    error = caught.value.errors[0]
    assert (error["line"], error["field"], error["column"]) == (2, "(line)", 33)
    assert "is not UTF-8" in error["message"] and '"response": "⟨here⟩\\xff"}»' in error["message"]


def test_a_long_line_shows_only_the_text_around_the_place(felm_project):
    line = '{"prompt": "' + "p" * 5000 + '", "response": "r", "x": tru}'
    with pytest.raises(ImportFailed) as caught:
        import_jsonl(felm_project, io.BytesIO((line + "\n").encode()), fmt="plain")
    error = caught.value.errors[0]
    assert error["column"] == len(line) - len("tru}") + 1
    assert error["message"].endswith('near «…, "response": "r", "x": ⟨here⟩tru}»')


def test_a_corpus_upload_names_the_line_and_column(
    factcheck_project, users, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.DATA_DIR = tmp_path
    data = (json.dumps({"title": "T", "text": "Some text."}) + "\n" + BROKEN + "\n").encode()
    upload = io.BytesIO(data)
    upload.name, upload.size = "corpus.jsonl", len(data)
    with django_capture_on_commit_callbacks(execute=True):
        corpus = create_corpus(name="Broken", user=users["admin"], upload=upload, projects=[factcheck_project])
    corpus = Corpus.objects.get(pk=corpus.pk)
    assert corpus.state == CorpusState.FAILED
    check(corpus.errors[0], 2)


def test_a_predictions_upload_names_the_line_and_column(felm_project):
    tasks = scoring.task_definitions("felm")
    lines = [b'{"item": "1", "segment": 0, "label": "correct"}\n', (BROKEN + "\n").encode()]
    result = read_predictions(tasks, lines)
    check(next(error for error in result.errors if error["line"] == 2), 2)
