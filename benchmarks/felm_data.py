"""FELM data for the benchmarks: items in FELM's released shape (given segments and labels), a
FELM project with its members, and both annotators' submissions with a gold record per item.
Used by felm_import.py, felm_export.py, saves.py, agreement_page.py and campaign_load.py; needs Django set up (harness)
for everything but the generated lines."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

SEGMENTS_PER_ITEM = 5
ERROR_TYPES = ("knowledge_error", "reasoning_error", "irrelevant_with_qst", "fooled")
DOMAINS = ("wk", "science", "writing_rec", "reasoning", "math")
SOURCES = ("quora", "twitter", "MATH", "gsm8k", "chatgpt", "sciq")

_SUBJECTS = (
    "The Eiffel Tower",
    "Marie Curie",
    "The Amazon River",
    "The Python language",
    "The Treaty of Versailles",
    "Mount Everest",
    "The human heart",
    "Photosynthesis",
    "The Great Wall of China",
    "Albert Einstein",
    "The speed of light",
    "Jupiter",
    "The French Revolution",
    "Penicillin",
    "The Pacific Ocean",
    "Ada Lovelace",
)
_PREDICATES = (
    "was completed in",
    "was first described in",
    "is usually compared with",
    "was first released in",
    "was signed in",
    "is located close to",
    "is discussed at length in",
    "became widely known after",
    "is larger than",
    "was studied extensively in",
    "is often confused with",
    "was celebrated in",
)
_OBJECTS = (
    "1889",
    "the early twentieth century",
    "several neighbouring countries",
    "1991",
    "1919",
    "the Himalayas",
    "most biology textbooks",
    "the industrial revolution",
    "the Mediterranean Sea",
    "a 1905 paper",
    "the work of earlier scientists",
    "the second world war",
    "the Roman Empire",
    "modern computing",
)
_TAILS = (
    "according to most historical sources",
    "which many people still find surprising",
    "as reported by several encyclopaedias",
    "although some accounts disagree on the details",
    "and this is mentioned in many school curricula",
    "which explains its lasting reputation",
)


def _sentence(rng: random.Random) -> str:
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_PREDICATES)} {rng.choice(_OBJECTS)}, {rng.choice(_TAILS)}."


def felm_record(index: int, rng: random.Random) -> dict:
    """One item in FELM's released shape, with given segments and labels (as in the data)."""
    segments = [_sentence(rng) for _ in range(SEGMENTS_PER_ITEM)]
    labels = [rng.random() > 0.2 for _ in segments]
    return {
        "index": str(index),
        "source": rng.choice(SOURCES),
        "prompt": f"Question {index}: what do you know about {rng.choice(_SUBJECTS).lower()}?",
        "response": " ".join(segments),
        "segmented_response": segments,
        "labels": labels,
        "comment": ["" if ok else "The date given here is wrong." for ok in labels],
        "type": [None if ok else rng.choice(ERROR_TYPES) for ok in labels],
        "ref": [f"https://en.wikipedia.org/wiki/Article_{index}"] if not all(labels) else [],
        "domain": rng.choice(DOMAINS),
    }


def generate_felm_jsonl(path: Path, count: int, seed: int) -> int:
    """Write ``count`` FELM lines to ``path``; returns the file size in bytes."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for index in range(count):
            out.write(json.dumps(felm_record(index, rng), ensure_ascii=False) + "\n")
    return path.stat().st_size


def create_felm_project(name: str, annotators: int = 2) -> int:
    """A FELM project (services) with ``annotators`` annotators and one consolidator; its id."""
    from django.contrib.auth import get_user_model

    from annotation.models import Role
    from annotation.services.projects import add_member, create_project

    User = get_user_model()
    slug = name.lower().replace(" ", "-")
    admin = User.objects.create_user(username=f"{slug}-admin", password=None, is_staff=True)
    project = create_project(name=name, kind="felm", created_by=admin)
    for number in range(annotators):
        user = User.objects.create_user(username=f"{slug}-annotator-{number}", password=None)
        add_member(project=project, user=user, role=Role.ANNOTATOR)
    consolidator = User.objects.create_user(username=f"{slug}-consolidator", password=None)
    add_member(project=project, user=consolidator, role=Role.CONSOLIDATOR)
    return project.pk


def _segment(label: bool, rng: random.Random, error_type: str | None = None) -> dict:
    if label:
        return {"label": True, "error_type": None, "comment": "", "refs": []}
    return {
        "label": False,
        "error_type": error_type or rng.choice(ERROR_TYPES),
        "comment": "The year is wrong: see the reference.",
        "refs": ["https://en.wikipedia.org/wiki/Example"] if rng.random() < 0.5 else [],
    }


def _annotator_pair(rng: random.Random, disagreement: float) -> tuple[dict, dict]:
    """Payloads of annotators A and B; each segment label differs with probability
    ``disagreement``; error types of segments both mark wrong differ 10 % of the time."""
    first, second = [], []
    for _ in range(SEGMENTS_PER_ITEM):
        a = _segment(rng.random() > 0.2, rng)
        if rng.random() < disagreement:
            b = _segment(not a["label"], rng)
        elif not a["label"] and rng.random() < 0.1:
            b = _segment(False, rng, rng.choice([t for t in ERROR_TYPES if t != a["error_type"]]))
        else:
            b = dict(a)
        first.append(a)
        second.append(b)
    return {"segments": first}, {"segments": second}


def _disagreed_fields(payloads: tuple[dict, dict]) -> list[str]:
    """Paths of the segment fields the two annotators answered differently (as consolidation lists them)."""
    out = []
    for index, (a, b) in enumerate(zip(payloads[0]["segments"], payloads[1]["segments"])):
        out.extend(f"segments[{index}].{key}" for key in ("label", "error_type", "comment", "refs") if a[key] != b[key])
    return out


def populate_submissions(project_id: int, *, seed: int, disagreement: float = 0.10, via_services: int = 20) -> dict:
    """Both annotators submit every item and a consolidator makes every gold record.

    The first ``via_services`` items go through the real services (save_annotation, which opens
    the consolidation, then save_consolidation); the rest are written in bulk with the same
    shapes (annotations, submitted assignments, done consolidations, gold records, stage done).
    """
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import (
        Annotation,
        Assignment,
        AssignmentStatus,
        Consolidation,
        ConsolidationStatus,
        GoldRecord,
        GoldSource,
        ItemStage,
        Membership,
        Project,
        Role,
        StageStatus,
    )
    from annotation.services.annotations import save_annotation
    from annotation.services.consolidation import save_consolidation

    started = time.perf_counter()
    rng = random.Random(seed)
    project = Project.objects.get(pk=project_id)
    consolidator = Membership.objects.get(project=project, role=Role.CONSOLIDATOR).user
    rows = list(
        Assignment.objects.filter(item_stage__item__project=project)
        .order_by("item_stage_id", "id")
        .values_list("id", "item_stage_id", "user_id")
    )
    by_stage: dict[int, list[int]] = {}
    for assignment_id, stage_id, _user in rows:
        by_stage.setdefault(stage_id, []).append(assignment_id)
    stage_ids = sorted(by_stage)

    # a sample through the services, as the app would do it
    for stage_id in stage_ids[:via_services]:
        payloads = _annotator_pair(rng, disagreement)
        for assignment_id, payload in zip(by_stage[stage_id], payloads):
            save_annotation(assignment=Assignment(pk=assignment_id), payload=payload, version=0, submit=True)
        consolidation = Consolidation.objects.get(item_stage_id=stage_id)
        gold = {"segments": [dict(s) for s in payloads[0]["segments"]]}  # the consolidator sides with A
        save_consolidation(consolidation=consolidation, user=consolidator, payload=gold, version=0, submit=True)

    # the rest in bulk
    now = timezone.now()
    annotations, consolidations, golds = [], [], []
    bulk_stages = stage_ids[via_services:]
    for stage_id in bulk_stages:
        payloads = _annotator_pair(rng, disagreement)
        for assignment_id, payload in zip(by_stage[stage_id], payloads):
            annotations.append(Annotation(assignment_id=assignment_id, payload=payload, version=3, submitted=True))
        disagreed = _disagreed_fields(payloads)
        gold = {"segments": [dict(s) for s in payloads[0]["segments"]]}
        consolidations.append(
            Consolidation(
                item_stage_id=stage_id,
                consolidator=consolidator,
                status=ConsolidationStatus.DONE,
                draft=gold,
                disagreed=disagreed,
                version=1,
            )
        )
        golds.append(
            GoldRecord(
                item_stage_id=stage_id,
                payload=gold,
                source=GoldSource.CONSOLIDATION,
                consolidated_by=consolidator,
                disagreed_fields=disagreed,
            )
        )
    with transaction.atomic():
        Annotation.objects.bulk_create(annotations, batch_size=2000)
        Assignment.objects.filter(item_stage_id__in=bulk_stages).update(
            status=AssignmentStatus.SUBMITTED, started_at=now, submitted_at=now, active_seconds=95
        )
        Consolidation.objects.bulk_create(consolidations, batch_size=2000)
        GoldRecord.objects.bulk_create(golds, batch_size=2000)
        ItemStage.objects.filter(id__in=bulk_stages).update(status=StageStatus.DONE)
    labelled = Annotation.objects.filter(assignment__item_stage__item__project=project, submitted=True).count()
    done = ItemStage.objects.filter(item__project=project, status=StageStatus.DONE).count()
    return {
        "annotations": labelled,
        "done_stages": done,
        "via_services": min(via_services, len(stage_ids)),
        "seconds": time.perf_counter() - started,
    }


def analyze_tables() -> None:
    """Refresh the planner's statistics after the bulk writes, as autovacuum would within a
    minute on a live server (right after a bulk load PostgreSQL still plans for empty tables)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def warm_imports() -> None:
    """Load the app modules the steps use, so a step's time and memory exclude module imports
    (importing annotation.kinds pulls in pipeline/, NLTK, SciPy and openai: seconds, ~135 MiB RSS)."""
    import annotation.exports  # noqa: F401
    import annotation.imports.items  # noqa: F401
    import annotation.selectors  # noqa: F401
    from annotation.kinds import get_kind

    get_kind("felm")
