"""The released data goes in and comes back out unchanged."""

import json

import pytest

from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.models import GoldRecord
from tests.helpers.paths import shared_data_path

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["felm-example.jsonl", "felm-from-factcheck-bench.jsonl"])
def test_felm_gold_roundtrip_is_field_for_field(felm_project, name):
    path = shared_data_path("felm", name)
    released = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with open(path, "rb") as handle:
        result = import_jsonl(felm_project, handle, fmt="felm", labels_as="gold")
    assert result.items == len(released) == GoldRecord.objects.count()
    exported = [json.loads(line) for line in export_jsonl(felm_project, "felm")]
    assert exported == released


def test_felm_from_factcheck_bench_label_counts(felm_project):
    path = shared_data_path("felm", "felm-from-factcheck-bench.jsonl")
    with open(path, "rb") as handle:
        import_jsonl(felm_project, handle, fmt="felm", labels_as="gold")
    labels = [s["label"] for g in GoldRecord.objects.all() for s in g.payload["segments"]]
    assert len(labels) == 311 and labels.count(False) == 129
