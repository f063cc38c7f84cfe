"""Reading a predictions file: every validation rule with its line and field, numeric item ids,
D-FActScore's booleans, and the import_predictions command (its scores and its bad lines)."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import SystemRun, SystemRunState
from annotation.research import scoring
from annotation.research.prediction_files import MAX_REPORTED_ERRORS
from tests.helpers.research import make_run, post_run, read, system_lines, upload

pytestmark = pytest.mark.django_db


def errors_of(project, lines) -> list[tuple]:
    return [(e["line"], e["field"], e["message"]) for e in read(project, lines).errors]


# -- validation, one rule at a time --------------------------------------------------------------------

GOOD = {"item": "q0", "sentence": "sentence1", "checkworthy": "yes"}


@pytest.mark.parametrize(
    "bad, field, message",
    [
        ("not json", "(json)", "is not valid JSON"),
        ("[1, 2]", "(line)", "must be a JSON object with the unit's ids and the predicted labels"),
        (
            {"item": "q0", "claim": 0, "category": "factual"},
            "sentence",
            "is missing: category is predicted per (item, sentence, claim)",
        ),
        (
            {"sentence": "sentence1", "checkworthy": "yes"},
            "item",
            "is missing: checkworthy is predicted per (item, sentence)",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "evidence": 0, "checkworthy": "yes"},
            "evidence",
            "is not a key of checkworthy, which is predicted per (item, sentence)",
        ),
        (
            {"item": "q0", "claim": 0},
            "(keys)",
            "(item, claim) match no task of this project; lines are keyed (item, sentence) "
            "for checkworthy; (item, sentence, claim) for category, factuality",
        ),
        (
            {"item": "q9", "sentence": "sentence4", "claim": 2, "category": "factual"},
            "item",
            "item 'q9' matches no item with a gold record of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence4", "claim": 2, "category": "factual"},
            "sentence",
            "item 'q0' sentence 'sentence4' matches no sentence of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": 2, "category": "factual"},
            "claim",
            "item 'q0' sentence 'sentence1' claim 2 matches no claim of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": 0, "evidence": 5, "stance": "refute"},
            "evidence",
            "item 'q0' sentence 'sentence1' claim 0 evidence 5 matches no evidence passage of the project",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "checkworthy": "maybe"},
            "checkworthy",
            '"maybe" is not a label of checkworthy: one of "yes", "no", "opinion", "not_a_claim", "other"',
        ),
        (
            {"item": "q0", "sentence": "sentence1", "checkworthy": True},
            "checkworthy",
            "true is not a label of checkworthy",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": "0", "category": "factual"},
            "claim",
            'must be a whole number from 0 (an index as the exports give it), not "0"',
        ),
        (
            {"item": "q0", "sentence": "sentence1", "claim": True, "category": "factual"},
            "claim",
            "must be a whole number",
        ),
        (
            {"item": "q0", "sentence": 1, "checkworthy": "yes"},
            "sentence",
            "must be a string (the id as the exports give it), not 1",
        ),
        (
            {"item": "q0", "sentence": "sentence1"},
            "(line)",
            "has no prediction: lines keyed (item, sentence) carry checkworthy",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "stance": "refute"},
            "stance",
            "is not predicted per (item, sentence): stance is keyed (item, sentence, claim, evidence)",
        ),
        (
            {"item": "q0", "sentence": "sentence1", "checkworthy": "yes", "confidence": 0.9},
            "confidence",
            "is not a prediction field of this project: lines keyed (item, sentence) carry checkworthy",
        ),
        (
            {"item": "q0", "revised_response": 3},
            "revised_response",
            "must be a string (the revised text), not 3",
        ),
    ],
)
def test_each_bad_line_is_named_with_its_line_and_field(gold, bad, field, message):
    other = {"item": "q1", "sentence": "sentence1", "checkworthy": "no"}
    errors = errors_of(gold, [other, bad if isinstance(bad, str) else bad, GOOD])
    assert len(errors) == 1, errors
    line, got_field, got_message = errors[0]
    assert (line, got_field) == (2, field) and got_message.startswith(message), errors


def test_a_revision_with_a_nul_character_is_refused(gold):
    assert errors_of(gold, [{"item": "q0", "revised_response": "A\u0000B"}]) == [
        (1, "revised_response", "contains the NUL character (U+0000), which cannot be stored")
    ]


def test_a_project_without_gold_refuses_the_upload_with_one_reason(clients, factcheck_project):
    response, run = post_run(clients["admin"], factcheck_project.id, system_lines())
    assert response.status_code == 202 and run["state"] == "failed"
    assert run["errors"] == [
        {
            "line": 0,
            "field": "(project)",
            "message": "has no consolidated gold record yet: there is nothing to score against",
        }
    ]


def test_a_second_prediction_of_the_same_unit_is_refused_naming_the_first_line(gold):
    errors = errors_of(
        gold,
        [
            GOOD,
            {"item": "q0", "sentence": "sentence2", "checkworthy": "no"},
            {"item": "q0", "sentence": "sentence1", "checkworthy": "no"},
        ],
    )
    assert errors == [
        (
            3,
            "checkworthy",
            "predicts checkworthy of the same sentence as line 1: item 'q0' sentence 'sentence1'",
        )
    ]
    # the same claim may carry category and factuality on two lines, but not factuality twice
    claim = {"item": "q0", "sentence": "sentence1", "claim": 0}
    errors = errors_of(
        gold,
        [
            {**claim, "category": "factual"},
            {**claim, "factuality": "true"},
            {**claim, "factuality": "false", "category": "opinion"},
        ],
    )
    assert [(line, field) for line, field, _ in errors] == [(3, "factuality"), (3, "category")]


def test_every_error_is_collected_with_its_line_up_to_a_cap(gold):
    errors = errors_of(
        gold,
        [
            GOOD,
            "{",
            {"item": "q0", "sentence": "sentence9", "checkworthy": "yes"},
            {"item": "q1", "sentence": "sentence1", "checkworthy": "perhaps", "x": 1},
        ],
    )
    assert [(line, field) for line, field, _ in errors] == [
        (2, "(json)"),
        (3, "sentence"),
        (4, "x"),
        (4, "checkworthy"),
    ]
    many = errors_of(
        gold,
        [{"item": f"z{i}", "sentence": "sentence1", "checkworthy": "yes"} for i in range(MAX_REPORTED_ERRORS + 50)],
    )
    assert len(many) == MAX_REPORTED_ERRORS + 1
    assert many[-1] == (0, "(file)", f"reading stopped after {MAX_REPORTED_ERRORS} errors")
    assert many[MAX_REPORTED_ERRORS - 1][0] == MAX_REPORTED_ERRORS


def test_an_empty_file_or_one_without_a_scored_unit_is_refused(gold):
    assert errors_of(gold, []) == [(0, "(file)", "contains no predictions")]
    assert errors_of(gold, ["", "  "]) == [(0, "(file)", "contains no predictions")]
    # the factuality of the opinion claim: it exists, but no gold factuality (it was never verified)
    unverified = {"item": "q0", "sentence": "sentence1", "claim": 1, "factuality": "true"}
    assert errors_of(gold, [unverified]) == [(0, "(file)", "contains no predictions for a unit with a gold label")]


def test_a_prediction_of_a_unit_without_this_tasks_gold_is_counted_not_refused(gold):
    got = read(
        gold,
        [
            {
                "item": "q0",
                "sentence": "sentence1",
                "claim": 1,
                "category": "opinion",
                "factuality": "true",
            }
        ],
    )
    assert got.errors == []
    assert got.by_task["claim_category"] == {("q0", "sentence1", 1): "opinion"}
    assert got.by_task["factuality"] == {} and got.ignored == {
        "factuality": 1,
        "factuality_without_nee": 1,
    }
    # the revision of an item whose step 3 is not consolidated: the item exists
    assert read(gold, [{"item": "q0", "revised_response": "A is C."}]).ignored == {"revision": 1}


def test_indexes_counted_from_one_are_refused_at_the_end_of_each_list(gold):
    """A passage that does not exist (q0's verified claim has two) refuses the file; so does a
    stance of a claim that was never verified (it has no passages)."""
    one_based = [{"item": "q0", "sentence": "sentence1", "claim": 0, "evidence": e, "stance": "refute"} for e in (1, 2)]
    assert errors_of(gold, one_based) == [
        (
            2,
            "evidence",
            "item 'q0' sentence 'sentence1' claim 0 evidence 2 matches no evidence passage of the project",
        )
    ]
    assert errors_of(
        gold,
        [{"item": "q0", "sentence": "sentence1", "claim": 1, "evidence": 0, "stance": "refute"}],
    ) == [
        (
            1,
            "evidence",
            "item 'q0' sentence 'sentence1' claim 1 evidence 0 matches no evidence passage of the project",
        )
    ]


def test_one_line_feeds_every_task_of_its_key_and_field(gold):
    """A stance feeds both stance tasks; a claim line may carry category and factuality; FELM's
    released ids are numbers and are read as the exports' strings."""
    got = read(
        gold,
        [
            {"item": "q1", "sentence": "sentence1", "claim": 0, "evidence": 0, "stance": "refute"},
            {
                "item": "q1",
                "sentence": "sentence1",
                "claim": 0,
                "category": "factual",
                "factuality": "unknown",
            },
        ],
    )
    assert got.errors == []
    assert got.by_task["stance4"] == got.by_task["stance3"] == {("q1", "sentence1", 0, 0): "refute"}
    assert got.by_task["claim_category"] == {("q1", "sentence1", 0): "factual"}
    assert got.by_task["factuality"] == got.by_task["factuality_without_nee"] == {("q1", "sentence1", 0): "unknown"}


def test_numeric_item_ids_are_read_as_the_exports_strings(felm_gold):
    got = read(felm_gold, [{"item": 0, "segment": 1, "label": "error"}])
    assert got.errors == [] and got.by_task["segment"] == {("0", 1): "error"}


def test_dfactscore_predictions_take_booleans_and_are_scored_per_source_model(dfs_project, logged_in):
    lines = [
        {"item": "A", "fact": 0, "supported": True, "global_supported": True},
        {"item": "A", "fact": 1, "supported": False},
        {"item": "A", "fact": 3, "supported": "not_supported"},
        {"item": "B", "fact": 0, "supported": "supported"},
        {"item": "C", "fact": 0, "global_supported": False},
    ]
    assert errors_of(dfs_project, [*lines, {"item": "A", "fact": 9, "supported": 1}]) == [
        (
            6,
            "supported",
            '1 is not a label of supported: one of "not_supported", "supported", true, false',
        )
    ]
    assert errors_of(dfs_project, [{"item": "A", "fact": 9, "supported": True}]) == [
        (1, "fact", "item 'A' fact 9 matches no fact of the project")
    ]
    got = read(dfs_project, lines)
    assert got.ignored == {"support": 1}  # A/3 is irrelevant: no FActScore decision (the default setting)
    run = make_run(dfs_project, lines, resamples=20)
    tasks = scoring.project_tasks(dfs_project)
    for name in ("support", "global_support"):
        expected = scoring.score_task(tasks[name], got.by_task[name], resamples=20)
        assert {key: run.scores[name][key] for key in expected} == json.loads(json.dumps(expected))
    assert [m["model"] for m in run.scores["support"]["paragraph_scores"]["models"]] == ["m1", "m2"]
    page = logged_in("admin").get(f"/projects/{dfs_project.id}/leaderboard/?task=support").content.decode()
    assert "Per source model: the system" in page


# -- the management command ---------------------------------------------------------------------------------


def test_the_command_prints_the_scores(gold, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(upload(system_lines()).getvalue())
    out = io.StringIO()
    call_command(
        "import_predictions",
        str(gold.id),
        str(path),
        "--system",
        "cli",
        "--version",
        "3",
        "--resamples",
        "20",
        stdout=out,
    )
    text = out.getvalue()
    run = SystemRun.objects.get()
    assert (run.system, run.version, run.state, run.file_name) == (
        "cli",
        "3",
        SystemRunState.DONE,
        "p.jsonl",
    )
    f1 = run.scores["checkworthiness"]["macro"]["f1"]
    assert f"scored cli 3 on {gold.name} (run {run.id})" in text
    assert f"Macro F1 {f1['value']:.3f} [{f1['low']:.3f}, {f1['high']:.3f}]" in text
    assert "baseline always yes: Macro F1" in text


def test_the_command_exits_with_every_bad_line(gold, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(
        upload([GOOD, {"item": "q0", "sentence": "sentence1", "claim": 9, "category": "factual"}, "x"]).getvalue()
    )
    with pytest.raises(CommandError) as caught:
        call_command("import_predictions", gold.name, str(path), "--system", "cli")
    assert str(caught.value).splitlines() == [
        "nothing stored:",
        "  line 2, field claim: item 'q0' sentence 'sentence1' claim 9 matches no claim of the project",
        "  line 3, field (json): is not valid JSON: Expecting value at column 1, near «⟨here⟩x»",
    ]
    assert SystemRun.objects.get().state == SystemRunState.FAILED
    with pytest.raises(CommandError, match="refused:\n  system: is required"):
        call_command("import_predictions", gold.name, str(path), "--system", " ")
