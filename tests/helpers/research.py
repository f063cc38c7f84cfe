"""Research data shared by the tests: Factcheck-Bench gold lines and a system's predictions,
stored system runs, D-FActScore lines with gold, a FELM campaign over several weeks, and a
reliability matrix for the reference agreement implementations."""

import io
import json
import random
from datetime import UTC, datetime, timedelta

import numpy as np
from django.test import TestCase

from annotation.imports.items import import_jsonl
from annotation.models import (
    Annotation,
    Assignment,
    GoldRecord,
    GoldSource,
    Item,
    ItemStage,
    Role,
    StageStatus,
    SystemRun,
)
from annotation.research import scoring
from annotation.research.prediction_files import from_stored
from annotation.research.predictions import create_system_run, read_predictions
from annotation.services.projects import add_member, create_project

from .builders import jsonl, project_with_team, segment, submit

# -- Factcheck-Bench gold and a system's predictions ---------------------------------------------------


def bench_sentence(
    checkworthy="yes",
    claims=(("A is B.", "factual"),),
    stances=(("refute", "irrelevant"),),
    factuality=(False,),
    needs_edit=("yes",),
):
    texts = [t for t, _ in claims]
    return {
        "text": "A is B.",
        "decontext": "A is B.",
        "sentence_checkworthiness": checkworthy,
        "most_importance_sentence": "yes",
        "claims": texts,
        "claim_checkworthiness": [c for _, c in claims],
        "if_most_important_claim": ["yes"] * len(texts),
        "auto_evidence": [[f"passage {k}" for k in range(len(s))] for s in stances],
        "auto_evidence_url": [[f"https://e.org/{k}" for k in range(len(s))] for s in stances],
        "stance_claim_autoEvid": [list(s) for s in stances],
        "if_automatic_evidence_enough_to_verify": ["yes"] * len(texts),
        "human_evidence": ["NA"] * len(texts),
        "claims_factuality_label": list(factuality),
        "if_claim_needs_edit": list(needs_edit),
        "revised_claims": texts,
        "usedEvidence_index_in_revision": ["1"] * len(texts),
    }


ITEMS = 8


def bench_line(i: int) -> dict:
    """Item q<i>: sentence1 checkworthy with a verified factual claim (two passages) and an
    opinion; sentence2 checkworthy (every third item) or an opinion, without claims."""
    return {
        "id": f"q{i}",
        "prompt": "p",
        "response": "A is B. C is D.",
        "sentences": {
            "sentence1": bench_sentence(
                claims=(("A is B.", "factual"), ("I like A.", "opinion")),
                stances=(("refute" if i % 2 else "completely-support", "irrelevant"), ()),
                factuality=(not i % 2, "unknown"),
                needs_edit=("no", "NA"),
            ),
            "sentence2": bench_sentence(
                checkworthy="opinion" if i % 3 else "yes",
                claims=(),
                stances=(),
                factuality=(),
                needs_edit=(),
            ),
        },
    }


def gold_project(factcheck_project):
    """The Factcheck-Bench project with ITEMS items of gold (steps 1 and 2)."""
    import_jsonl(
        factcheck_project,
        jsonl([bench_line(i) for i in range(ITEMS)]),
        fmt="factcheck-bench",
        labels_as="gold",
    )
    return factcheck_project


def system_lines(items=range(ITEMS), wrong_every=3) -> list[dict]:
    """A system's predictions for every task of bench_line, wrong on some units."""
    lines = []
    for i in items:
        wrong = i % wrong_every == 0
        lines.append({"item": f"q{i}", "sentence": "sentence1", "checkworthy": "no" if wrong else "yes"})
        lines.append({"item": f"q{i}", "sentence": "sentence2", "checkworthy": "yes"})
        lines.append(
            {
                "item": f"q{i}",
                "sentence": "sentence1",
                "claim": 0,
                "category": "factual",
                "factuality": "true" if (i % 2 == 0) != wrong else "false",
            }
        )
        lines.append(
            {
                "item": f"q{i}",
                "sentence": "sentence1",
                "claim": 1,
                "category": "opinion" if i % 4 else "factual",
            }
        )
        lines.append(
            {
                "item": f"q{i}",
                "sentence": "sentence1",
                "claim": 0,
                "evidence": 0,
                "stance": "partially-support" if i % 2 == 0 else "refute",
            }
        )
        lines.append(
            {
                "item": f"q{i}",
                "sentence": "sentence1",
                "claim": 0,
                "evidence": 1,
                "stance": "refute" if wrong else "irrelevant",
            }
        )
    return lines


def upload(lines, name="predictions.jsonl") -> io.BytesIO:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    buffer = io.BytesIO(text.encode())
    buffer.name = name
    return buffer


def make_run(project, lines, system="checker", version="", **options) -> SystemRun:
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = create_system_run(
            project=project,
            user=None,
            upload=upload(lines),
            system=system,
            version=version,
            **options,
        )
    run.refresh_from_db()
    return run


def post_run(client, project_id, lines, **fields):
    """POST predictions to the API, let the task run (on commit, eagerly), then read the run."""
    fields.setdefault("system", "checker")
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(
            f"/api/projects/{project_id}/system-runs/",
            {"file": upload(lines), **fields},
            format="multipart",
        )
    if response.status_code != 202:
        return response, None
    run = client.get(response["Location"])
    assert run.status_code == 200, run.content
    return response, run.json()


def stored_predictions(run: SystemRun, task: str) -> list[tuple]:
    """A run's stored predictions of a task, as sorted (*unit key, label) rows."""
    return sorted((*key, label) for key, label in from_stored(run.predictions)[task].items())


def read(project, lines):
    return read_predictions(scoring.project_tasks(project), upload(lines), known=scoring.existing_units(project))


RESAMPLES = 200


def lines_with_an_extra_label():
    """A system that also predicts a stance no gold unit holds (so its label set is not the baseline's)."""
    lines = system_lines(wrong_every=2)
    for line in lines:
        if line.get("stance") == "refute":
            line["stance"] = "completely-support"
    return lines


def felm_gold_line(index, labels):
    segments = [f"Segment {i}." for i in range(len(labels))]
    return {
        "index": index,
        "prompt": "p",
        "response": " ".join(segments),
        "segmented_response": segments,
        "labels": labels,
        "comment": ["" if ok else "wrong" for ok in labels],
        "type": [None if ok else "knowledge_error" for ok in labels],
        "ref": [],
        "source": "s",
    }


def felm_gold_project(users):
    """A FELM project: six items of three segments with gold records, each annotated by alice
    and bob, who disagree on segment 1 of the even items."""
    project = create_project(name="FELM scored", kind="felm", created_by=users["admin"])
    for i in range(6):
        item = Item.objects.create(project=project, external_id=str(i), prompt="Q?", response="One. Two. Three.")
        stage = ItemStage.objects.create(
            item=item,
            stage=1,
            content={"segments": ["One.", "Two.", "Three."]},
            status=StageStatus.DONE,
        )
        labels = [True, i % 3 != 0, True]
        GoldRecord.objects.create(
            item_stage=stage,
            payload={"segments": [segment(ok, None if ok else "knowledge_error") for ok in labels]},
        )
        submit(
            stage,
            users["alice"],
            {"segments": [segment(ok, None if ok else "knowledge_error") for ok in labels]},
        )
        bob = [ok if (k != 1 or i % 2) else not ok for k, ok in enumerate(labels)]
        submit(
            stage,
            users["bob"],
            {"segments": [segment(ok, None if ok else "knowledge_error") for ok in bob]},
        )
    return project


# -- D-FActScore ---------------------------------------------------------------------------------------


def dfs_line(item, model, facts, pages):
    return {
        "id": item,
        "prompt": f"Tell me a bio of {item}.",
        "name": item,
        "response": " ".join(facts),
        "atomic_facts": facts,
        "model": model,
        "candidates": [
            {"title": f"{item} page {p}", "url": f"https://example.org/{item}/{p}", "text": "t"} for p in range(pages)
        ],
    }


def dfs_fact(group=None, label=None, any_page=None):
    return {"group": group, "label": label, "any_page": any_page, "entity": None}


def set_gold(project, golds):
    """Gold records (by the line's id) written directly, as a consolidation would leave them."""
    for stage in ItemStage.objects.filter(item__project=project):
        GoldRecord.objects.create(item_stage=stage, payload=golds[stage.item.external_id])
        ItemStage.objects.filter(pk=stage.pk).update(status=StageStatus.DONE)


DFS_GOLD = {
    # A: f0 supported by its linked page; f1 not by its page but by another (any_page);
    # f2 "supported" in an individual linked to no page (so not for D-FActScore); f3 irrelevant
    "A": {
        "individuals": 2,
        "groups": [{"link": 0}, {"link": "none"}],
        "facts": [
            dfs_fact(0, "supported"),
            dfs_fact(0, "not_supported", "supported"),
            dfs_fact(1, "supported"),
            dfs_fact(0, "irrelevant"),
        ],
    },
    "B": {
        "individuals": 1,
        "groups": [{"link": 0}],
        "facts": [dfs_fact(0, "supported"), dfs_fact(0, "not_supported")],
    },
    "C": {
        "individuals": 1,
        "groups": [{"link": 0}],
        "facts": [dfs_fact(0, "supported", "not_supported")],
    },
    "D": {"individuals": 0, "groups": [], "facts": []},  # an abstention
}


def dfs_scored_project(users):
    """A D-FActScore project of four paragraphs (two models, one abstention) with DFS_GOLD."""
    project = project_with_team(users, "D-FActScore scoring", "dfactscore")
    project.pipeline_settings = {"embeddings": False}
    project.save()
    lines = [
        dfs_line("A", "m1", ["A was born.", "A sings.", "A rows.", "A likes tea."], 2),
        dfs_line("B", "m1", ["B paints.", "B swims."], 1),
        dfs_line("C", "m2", ["C writes."], 1),
        {**dfs_line("D", "m1", [], 0), "response": "I do not know."},
    ]
    import_jsonl(project, jsonl(lines), fmt="dfactscore", labels_as="ignore")
    set_gold(project, DFS_GOLD)
    return project


# -- a FELM campaign over five weeks ----------------------------------------------------------------

# Monday 1 January 2024 is the first day of ISO week 2024-W01.
MONDAY = datetime(2024, 1, 1, 9, tzinfo=UTC)
ERROR_TYPES = ["knowledge_error", "reasoning_error", "irrelevant_with_qst", "fooled"]
# item index % 5 → week offset: weeks 0, 1, 3, 4 have items, week 2 none (a gap on the plot)
WEEK_OF = [0, 1, 3, 4, 0]


def build_campaign(project, users, make_user, third="dave", items=30, segments=4, seed=3):
    """FELM items annotated by rotating pairs of three annotators, submitted over five ISO weeks
    (none in the third), two thirds of them with a consolidated gold record. Returns what was
    stored, for direct computations: [{"stage_id", "annotations": [(username, labels, submitted_at)],
    "gold": labels | None}] with labels = [(label, error_type)] per segment."""
    users = dict(users)
    users[third] = make_user(third)
    add_member(project=project, user=users[third], role=Role.ANNOTATOR)
    rng = random.Random(seed)
    skill = {"alice": 0.9, "bob": 0.75, third: 0.6}
    pairs = [("alice", "bob"), ("alice", third), ("bob", third)]
    stored = []
    for index in range(items):
        truth = [(rng.random() < 0.6, rng.choice(ERROR_TYPES)) for _ in range(segments)]
        item = project.items.create(prompt=f"Q{index}?", response="x", external_id=str(index))
        has_gold = index % 3 != 0
        stage = ItemStage.objects.create(
            item=item,
            stage=1,
            status=StageStatus.DONE if has_gold else StageStatus.CONSOLIDATING,
            content={"segments": [f"S{k}." for k in range(segments)]},
        )
        first_at = MONDAY + timedelta(weeks=WEEK_OF[index % 5], hours=rng.randint(0, 100))
        record = {"stage_id": stage.id, "annotations": [], "gold": None}
        for position, name in enumerate(pairs[index % 3]):
            labels = []
            for correct, error_type in truth:
                label = correct if rng.random() < skill[name] else not correct
                kind = (error_type if rng.random() < skill[name] else rng.choice(ERROR_TYPES)) if not label else None
                labels.append((label, kind))
            # the second annotator submits later; item 7's second submission has no time (left out of weeks)
            submitted_at = None if index == 7 and position == 1 else first_at + timedelta(hours=30 * position)
            assignment = Assignment.objects.create(
                item_stage=stage, user=users[name], status="submitted", submitted_at=submitted_at
            )
            Annotation.objects.create(
                assignment=assignment,
                submitted=True,
                payload={
                    "segments": [
                        {"label": label, "error_type": kind, "comment": "", "refs": []} for label, kind in labels
                    ]
                },
            )
            record["annotations"].append((name, labels, submitted_at))
        if has_gold:
            gold = [(correct, None if correct else error_type) for correct, error_type in truth]
            GoldRecord.objects.create(
                item_stage=stage,
                source=GoldSource.CONSOLIDATION,
                payload={
                    "segments": [
                        {"label": label, "error_type": kind, "comment": "", "refs": []} for label, kind in gold
                    ]
                },
            )
            record["gold"] = gold
        stored.append(record)
    return stored


def reliability_matrix(ratings, raters, labels):
    code = {label: i for i, label in enumerate(labels)}
    matrix = np.full((raters, len(ratings)), np.nan)
    for column, values in enumerate(ratings.values()):
        for rater, value in values.items():
            matrix[rater, column] = code[value]
    return matrix
