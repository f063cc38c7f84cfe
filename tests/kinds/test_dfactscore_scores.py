"""The dfactscore kind's scores: the result export and the scores selector from gold, and the
dfactscore_lines command that joins a released result file to its generations."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.exports.formats import export_jsonl
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.models import GoldRecord, ItemStage, StageStatus
from annotation.research import selectors
from tests.helpers.builders import jsonl
from tests.helpers.dfactscore_results import (
    ARTIST,
    DECISIONS,
    GENERATIONS,
    GLOBAL_DECISIONS,
    MARA_FACTS,
    ROWER,
    dfactscore_project,
    entry,
    fact,
    payload,
    result_lines,
)

KIND = get_kind("dfactscore")


@pytest.fixture
def project(users):
    return dfactscore_project(users)


# -- scores and export --------------------------------------------------------------------------


def test_importing_a_result_as_gold_gives_back_its_scores_exactly(project):
    import_jsonl(project, jsonl(result_lines()), fmt="dfactscore", labels_as="gold")
    lines = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert len(lines) == 1 and lines[0]["model"] == "m1"
    # init_score = mean(3/4, 1/2) = 0.625, init_global_score = mean(2/4, 1/2) = 0.5 (by hand)
    assert lines[0]["init_score"] == 0.625 and lines[0]["init_global_score"] == 0.5
    assert lines[0]["respond_ratio"] == pytest.approx(2 / 3)
    assert lines[0]["num_facts_per_response"] == 3.0
    assert lines[0]["decisions"] == DECISIONS and lines[0]["global_decisions"] == GLOBAL_DECISIONS


def test_released_result_shapes_import_as_gold_and_come_back_unchanged(project):
    """The shapes the released result files use (issue 19): ``supporting_topic`` as ``[]`` (no
    page), a topic no candidate is titled, an entry without ``is_supported`` (not judged), a
    generation whose lists are ``[]`` or null. Nothing is refused, the result export gives every
    list back as given, and the scores are the means computed directly from the lists."""
    lines = result_lines()
    lines[0]["decisions"] = [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], True, []),
        entry(MARA_FACTS[2], True, "Mara Quell (poet)"),
        entry(MARA_FACTS[3], False, []),
    ]
    lines[0]["global_decisions"] = [
        entry(MARA_FACTS[0], True, ARTIST["title"]),
        entry(MARA_FACTS[1], False, []),
        entry(MARA_FACTS[2], False, []),
        {"atom": MARA_FACTS[3], "supporting_topic": None, "extra": "kept"},
    ]
    lines[1]["decisions"], lines[1]["global_decisions"] = [], None
    lines[2]["global_decisions"] = [
        entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
        entry("Ivo Brandt mapped the Faroe coast.", False, []),
    ]
    result = import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="gold")
    assert result.items == 3
    (exported,) = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert exported["decisions"] == [line["decisions"] for line in lines]
    assert exported["global_decisions"] == [line["global_decisions"] for line in lines]
    assert exported["decisions"][0][1]["supporting_topic"] == []

    def direct(lists):  # FActScore's mean of shares over generations with judged facts
        shares = []
        for entries in lists:
            judged = [e["is_supported"] for e in entries or [] if "is_supported" in e]
            if judged:
                shares.append(sum(judged) / len(judged))
        return sum(shares) / len(shares)

    assert exported["init_score"] == pytest.approx(direct(exported["decisions"]))
    assert exported["init_global_score"] == pytest.approx(direct(exported["global_decisions"]))
    # by hand: decisions (3/4 + 1/2) / 2; global (1/3 + 1/2) / 2, the unjudged fact left out
    assert exported["init_score"] == pytest.approx(0.625)
    assert exported["init_global_score"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert exported["respond_ratio"] == pytest.approx(2 / 3)
    # the supported page "Ivo Brandt" counts as a topic, [] does not
    assert exported["num_supporting_topics"] == pytest.approx((2 + 1) / 2)
    mara = GoldRecord.objects.filter(item_stage__item__project=project).order_by("item_stage__item_id").first().payload
    assert [f["group"] for f in mara["facts"]] == [0, None, None, None]
    assert [f["label"] for f in mara["facts"]] == [
        "supported",
        "not_supported",
        "not_supported",
        None,
    ]


def test_a_result_line_with_an_empty_supporting_topic_list_is_accepted_as_gold(project):
    """The line of issue 19: decisions carrying ``"supporting_topic": []`` (refused before as
    "must be a string or null")."""
    line = {
        **GENERATIONS[2],
        "decisions": [
            entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
            entry("Ivo Brandt mapped the Faroe coast.", False, []),
        ],
        "global_decisions": [
            entry("Ivo Brandt is a cartographer.", True, "Ivo Brandt"),
            entry("Ivo Brandt mapped the Faroe coast.", False, []),
        ],
    }
    import_jsonl(project, jsonl([line]), fmt="dfactscore", labels_as="gold")
    (exported,) = [json.loads(text) for text in export_jsonl(project, "dfactscore-result")]
    assert exported["decisions"] == [line["decisions"]] and exported["global_decisions"] == [line["global_decisions"]]
    assert exported["init_score"] == exported["init_global_score"] == 0.5


def test_result_export_groups_rows_by_model_from_annotated_gold(project):
    lines = result_lines()
    lines[2]["model"] = "m2"
    import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="suggestion")
    stages = list(ItemStage.objects.filter(item__project=project).order_by("item_id"))
    # Human gold for the Mara paragraph: two individuals, artist and rower; the Tartu fact unsupported.
    human = payload(
        2,
        [0, 1],
        [
            fact(0, "supported"),
            fact(0, "supported"),
            fact(1, "supported"),
            fact(1, "not_supported"),
        ],
    )
    ivo = payload(1, [0], [fact(0, "supported"), fact(0, "irrelevant")])
    for stage, gold in zip(stages, (human, {"individuals": 0, "groups": [], "facts": []}, ivo)):
        GoldRecord.objects.create(item_stage=stage, payload=gold)
        ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.DONE)
    records = {r["model"]: r for r in map(json.loads, export_jsonl(project, "dfactscore-result"))}
    assert set(records) == {"m1", "m2"}
    assert records["m1"]["init_global_score"] == pytest.approx(0.75)  # 3 of 4; the abstention does not count
    assert records["m1"]["respond_ratio"] == pytest.approx(0.5)
    assert records["m1"]["num_groups"] == 2
    assert records["m1"]["global_decisions"][0][2] == entry(MARA_FACTS[2], True, ROWER["title"])
    assert records["m1"]["global_decisions"][1] is None
    assert records["m2"]["init_global_score"] == 1.0  # the irrelevant fact is left out (default)
    paragraphs = [json.loads(line) for line in export_jsonl(project, "dfactscore")]
    assert [p["individuals"] for p in paragraphs] == [2, 0, 1]
    assert paragraphs[0]["facts"][2] == {
        "text": MARA_FACTS[2],
        "group": 1,
        "link": ROWER["title"],
        "label": "supported",
        "any_page": None,
        "entity": None,
    }
    assert paragraphs[0]["dfactscore"] == pytest.approx(0.75) and paragraphs[0]["model"] == "m1"

    scores = selectors.consolidated_scores(project)
    by_model = {m["model"]: m for m in scores["models"]}
    # The machine (the imported decisions as suggestion): Mara 2/4 against the paper's 3/4 → 0.25 apart.
    assert by_model["m1"]["human"]["init_global_score"] == pytest.approx(0.75)
    assert by_model["m1"]["machine"]["init_global_score"] == pytest.approx(0.5)
    assert by_model["m1"]["difference"]["init_global_score"] == pytest.approx(0.25)
    assert scores["paragraph_count"] == 3 and scores["paragraphs"][0]["human"]["num_groups"] == 2


def test_the_irrelevant_setting_changes_the_scores_selector(project):
    project.pipeline_settings = {
        **project.pipeline_settings,
        "dfactscore": {"irrelevant": "not_supported"},
    }
    project.save()
    import_jsonl(project, jsonl([result_lines()[2]]), fmt="dfactscore", labels_as="suggestion")
    stage = ItemStage.objects.get(item__project=project)
    GoldRecord.objects.create(item_stage=stage, payload=payload(1, [0], [fact(0, "supported"), fact(0, "irrelevant")]))
    ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.DONE)
    scores = selectors.consolidated_scores(project)
    assert scores["irrelevant"] == "not_supported"
    assert scores["models"][0]["human"]["init_global_score"] == pytest.approx(0.5)
    # and the exports follow the same setting
    (result,) = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert result["init_global_score"] == pytest.approx(0.5)
    project.pipeline_settings = {
        **project.pipeline_settings,
        "dfactscore": {"irrelevant": "exclude"},
    }
    project.save()
    (result,) = [json.loads(line) for line in export_jsonl(project, "dfactscore-result")]
    assert result["init_global_score"] == pytest.approx(1.0)


# -- the result-file command --------------------------------------------------------------------


def test_dfactscore_lines_joins_a_result_file_and_its_generations(tmp_path, project):
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"init_score": 0.625, "decisions": DECISIONS, "global_decisions": GLOBAL_DECISIONS}))
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    out = tmp_path / "lines.jsonl"
    call_command("dfactscore_lines", str(result), str(generations), "-o", str(out), stderr=io.StringIO())
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines == result_lines()
    with out.open("rb") as file:
        import_jsonl(project, file, fmt="dfactscore", labels_as="gold")
    exported = json.loads(next(export_jsonl(project, "dfactscore-result")))
    assert (exported["init_score"], exported["init_global_score"]) == (0.625, 0.5)


def test_dfactscore_lines_passes_the_released_shapes_through(tmp_path, project):
    decisions = [[entry(MARA_FACTS[0], True, []), {"atom": MARA_FACTS[1]}], [], None]
    global_decisions = [[entry(MARA_FACTS[0], False, [])], None, []]
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"decisions": decisions, "global_decisions": global_decisions, "nan": 0}))
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    out = tmp_path / "lines.jsonl"
    call_command("dfactscore_lines", str(result), str(generations), "-o", str(out), stderr=io.StringIO())
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["decisions"] for line in lines] == decisions
    assert [line["global_decisions"] for line in lines] == global_decisions
    with out.open("rb") as file:
        import_jsonl(project, file, fmt="dfactscore", labels_as="gold")
    exported = json.loads(next(export_jsonl(project, "dfactscore-result")))
    assert exported["decisions"] == decisions and exported["global_decisions"] == global_decisions
    assert (exported["init_score"], exported["init_global_score"]) == (1.0, 0.0)


def test_dfactscore_lines_refuses_lists_that_do_not_match_the_generations(tmp_path):
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"decisions": DECISIONS[:2]}))
    generations = tmp_path / "generations.jsonl"
    generations.write_text("".join(json.dumps(g) + "\n" for g in GENERATIONS))
    with pytest.raises(CommandError, match="decisions has 2 entries, the generations file 3 lines"):
        call_command("dfactscore_lines", str(result), str(generations), stderr=io.StringIO())
    generations.write_text(json.dumps(GENERATIONS[0]) + "\n{not json\n")
    with pytest.raises(CommandError, match="line 2: not JSON"):
        call_command("dfactscore_lines", str(result), str(generations), stderr=io.StringIO())
