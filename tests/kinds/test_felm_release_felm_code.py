"""Lines FELM's evaluation code (hkust-nlp/felm, eval/eval.py) scores import as it reads them
(issue 29): lists longer than the segments cut to them, a NaN response, ``"type": ""``; each
with a warning naming line and field, the values given kept for the export. The leaderboard's
FELM figures are then the figures FELM's code gives on the same lines, None where it gives None."""

import csv
import io
import json
import math

import pytest

from annotation.exceptions import ImportFailed
from annotation.exports.formats import export_jsonl
from annotation.imports import reading
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.models import GoldRecord, Item
from annotation.research.leaderboard import leaderboard, leaderboard_csv
from tests.helpers.felm_release import (
    GOOD,
    NON_FINITE,
    READ_AS_FELM,
    lines_of,
    long_lists_line,
    nan_line,
    released_file,
)
from tests.helpers.research import make_run

pytestmark = pytest.mark.django_db

FIGURES = ("per_label.error.precision", "per_label.error.recall", "per_label.error.f1", "balanced_accuracy")


def records() -> list[dict]:
    return [make() for make in (*GOOD, *READ_AS_FELM, nan_line)]


def felm_code_figures(pairs: list[tuple[bool, bool]]) -> dict:
    """FELM's compute_accuracy re-stated: (gold label, predicted label), true = no error; the
    error class is positive (TN in its code); None where it divides by zero."""
    tp = sum(gold and predicted for gold, predicted in pairs)
    tn = sum(not gold and not predicted for gold, predicted in pairs)
    fp = sum(not gold and predicted for gold, predicted in pairs)
    fn = sum(gold and not predicted for gold, predicted in pairs)
    precision = tn / (tn + fn) if tn + fn else None
    recall = tn / (tn + fp) if tn + fp else None
    return {
        "per_label.error.precision": precision,
        "per_label.error.recall": recall,
        "per_label.error.f1": 2 * recall * precision / (recall + precision) if tn + fp and tn + fn else None,
        "balanced_accuracy": 0.5 * (tp / (tp + fn) + tn / (tn + fp)) if tp + fn and tn + fp else None,
    }


def read_as_felm_code(lines: list[dict], says_error) -> tuple[list, list]:
    """Segment and response (gold, predicted) pairs as FELM's code reads each line: segment i
    of ``range(len(segmented_response))`` by ``labels[i]``; a response wrong when a segment is."""
    segments, responses = [], []
    for line in lines:
        pairs = [(line["labels"][i], not says_error(line, i)) for i in range(len(line["segmented_response"]))]
        segments += pairs
        responses.append((all(gold for gold, _ in pairs), all(predicted for _, predicted in pairs)))
    return segments, responses


def predictions(lines: list[dict], says_error) -> list[dict]:
    result = []
    for line in lines:
        labels = ["error" if says_error(line, i) else "correct" for i in range(len(line["segmented_response"]))]
        result += [{"item": str(line["index"]), "segment": i, "label": label} for i, label in enumerate(labels)]
        result.append({"item": str(line["index"]), "response_label": "error" if "error" in labels else "correct"})
    return result


def test_lines_felm_code_scores_import_with_a_warning_each_and_export_back_byte_for_byte(felm_project):
    data = released_file(*records())
    result = import_jsonl(felm_project, lines_of(data), fmt="felm", labels_as="gold")
    assert (result.items, result.gold_records, result.skipped) == (7, 7, [])
    read_as = "as FELM's evaluation code reads them"
    assert result.warnings == [
        f"line 5, field labels: has 3 entries for 2 segments: the first 2 read, {read_as}; the other 1 kept for the export",
        f"line 5, field comment: has 3 entries for 2 segments: the first 2 read, {read_as}; the other 1 kept for the export",
        f"line 5, field type: has 3 entries for 2 segments: the first 2 read, {read_as}; the other 1 kept for the export",
        'line 6, field type: is "", a text, not a list: no error type read (FELM\'s evaluation code scores none); '
        "exported as given",
        "line 7, field response: is NaN, not a text: read as the segments joined by spaces (FELM's evaluation "
        "code reads only the segments); exported as NaN",
    ]
    gold = {
        g.item_stage.item.external_id: g.payload["segments"]
        for g in GoldRecord.objects.select_related("item_stage__item")
    }
    assert [(s["label"], s["error_type"], s["comment"]) for s in gold["98"]] == [
        (False, "knowledge_error", "no"),
        (True, None, ""),
    ]
    assert [(s["label"], s["error_type"]) for s in gold["41"]] == [(False, None)]
    assert Item.objects.get(external_id="100").response == "Shakespeare wrote Hamlet. I like tea."
    exported = "".join(export_jsonl(felm_project, "felm")).encode()
    assert exported == data  # every value as given, NaN and the entries past the segments too
    assert math.isnan(json.loads(exported.splitlines()[-1])["response"])


def test_the_entry_past_the_segments_is_no_contradiction_shown(felm_project):
    import_jsonl(felm_project, lines_of(released_file(long_lists_line())), fmt="felm", labels_as="gold")
    item = Item.objects.get()
    stage = item.stages.get()
    warnings = get_kind("felm").item_warnings(1, stage.content, item.metadata, stage.gold.payload)
    assert warnings == []  # labels[2] (correct) with a type belongs to no segment


@pytest.mark.parametrize("task", ["segment", "response"])
def test_the_leaderboard_gives_felm_codes_figures_on_these_lines(felm_project, task):
    lines = records()
    import_jsonl(felm_project, lines_of(released_file(*lines)), fmt="felm", labels_as="gold")

    def eager(line, i):  # calls the first segment of every other line an error
        return i == 0 and int(line["index"]) % 2 == 0

    run = make_run(felm_project, predictions(lines, eager), system="eager", resamples=0)
    quiet = make_run(felm_project, predictions(lines, lambda line, i: False), system="quiet", resamples=0)
    board = leaderboard(felm_project, task)
    rows = {row["run"]: row for row in board["rows"]}
    segments, responses = read_as_felm_code(lines, eager)
    expected = felm_code_figures(segments if task == "segment" else responses)
    assert all(value is not None for value in expected.values())
    assert {name: rows[run.id]["metrics"][name]["value"] for name in FIGURES} == pytest.approx(expected)
    segments, responses = read_as_felm_code(lines, lambda line, i: False)
    expected = felm_code_figures(segments if task == "segment" else responses)
    assert expected["per_label.error.precision"] is None and expected["per_label.error.f1"] is None
    assert {name: rows[quiet.id]["metrics"][name]["value"] for name in FIGURES} == pytest.approx(expected)


def test_an_undefined_figure_is_a_dash_on_the_page_null_in_the_api_and_json_and_empty_in_the_csv(
    felm_project, logged_in, clients
):
    lines = records()
    import_jsonl(felm_project, lines_of(released_file(*lines)), fmt="felm", labels_as="gold")
    quiet = make_run(felm_project, predictions(lines, lambda line, i: False), system="quiet", resamples=20)
    page = logged_in("admin").get(f"/projects/{felm_project.id}/leaderboard/?task=segment").content.decode()
    row = page[page.index(f'data-run="{quiet.id}"') :]
    cells = row[: row.index("</tr>")].split('<td class="metric">')[1:]
    # F1, P, R, balanced accuracy: no predicted error, so P and F1 have no value (not 0.000)
    assert [cell.split("<")[0].strip() for cell in cells] == ["–", "–", "0.000", "0.500"]
    api = clients["admin"].get(f"/api/projects/{felm_project.id}/leaderboard/?task=segment").json()
    metrics = next(r for r in api["rows"] if r["run"] == quiet.id)["metrics"]
    assert metrics["per_label.error.f1"] == {"value": None, "low": None, "high": None}
    assert metrics["per_label.error.recall"]["value"] == 0.0
    download = logged_in("admin").get(f"/projects/{felm_project.id}/leaderboard/?task=segment&download=json")
    body = json.loads(b"".join(download).decode() if download.streaming else download.content)
    assert (
        next(r for r in body["rows"] if r["run"] == quiet.id)["metrics"]["per_label.error.precision"]["value"] is None
    )
    table = list(csv.DictReader(io.StringIO("".join(leaderboard_csv(leaderboard(felm_project, "segment"))))))
    quiet_row = next(r for r in table if r["run"] == str(quiet.id))
    assert (quiet_row["per_label.error.f1"], quiet_row["per_label.error.f1_low"]) == ("", "")
    assert quiet_row["per_label.error.recall"] == "0"


def test_nan_is_read_only_in_a_felm_lines_response(felm_project):
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines_of(released_file(nan_line())), fmt="plain")
    assert failed.value.errors == [{"line": 1, "field": "response", "message": NON_FINITE}]
    nan_both = {**nan_line(), "ref_contents": ["<NaN>"]}
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines_of(released_file(nan_both)), fmt="felm")
    assert failed.value.errors == [{"line": 1, "field": "ref_contents[0]", "message": NON_FINITE}]
    assert not Item.objects.exists()


def test_the_warnings_listed_are_bounded(felm_project, monkeypatch):
    monkeypatch.setattr(reading, "MAX_LISTED_WARNINGS", 4)
    lines = [{**long_lists_line(), "index": str(i)} for i in range(3)]
    result = import_jsonl(felm_project, lines_of(released_file(*lines)), fmt="felm", labels_as="gold")
    assert result.items == 3
    assert [w.split(":")[0] for w in result.warnings] == ["line 1, field labels"] + [
        f"line {n}, field {name}" for n, name in ((1, "comment"), (1, "type"), (2, "labels"))
    ]
