"""Fixtures of the research folder's LLM rater tests: FELM and Factcheck-Bench projects whose
gold the rater is scored against."""

import pytest

from annotation.imports.items import import_jsonl
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.llm_rater import released


@pytest.fixture
def felm_rater_gold(felm_project):
    """Three FELM items of three segments, their labels imported as gold."""
    records = [felm_line(i, [f"Sentence {i}.{k} is a claim." for k in range(3)]) for i in range(3)]
    import_jsonl(felm_project, jsonl(records), fmt="felm", labels_as="gold")
    return felm_project


@pytest.fixture
def factcheck_gold(factcheck_project, django_capture_on_commit_callbacks):
    """Two items of the released Factcheck-Bench file, every step's gold imported."""
    with django_capture_on_commit_callbacks(execute=True):
        import_jsonl(factcheck_project, jsonl(released(2)), fmt="factcheck-bench", labels_as="gold")
    return factcheck_project
