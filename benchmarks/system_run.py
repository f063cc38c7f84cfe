"""Scoring an uploaded system end to end on PostgreSQL, and reading its leaderboard.

Usage: .venv/bin/python benchmarks/system_run.py [--items 10000] [--resamples 1000] [--keep]

It creates its own database (``workbench_bench_runs`` on 127.0.0.1:5432, user postgres),
migrates it and drops it at the end. A FELM project gets N items of 5 segments with gold records,
each item annotated by two annotators who disagree on about 10 % of the segments (so the
agreed-only scores are computed too). Then, timed:

1. ``first run``: research.predictions.run_system_run of an uploaded JSONL file (one line per
   segment and per response, about 6 N lines): reading and checking every line, storing, and
   scoring both tasks on every unit and on the agreed ones, with the majority and random
   baselines and the paired differences to them, ``--resamples`` bootstrap resamples each;
2. ``second run``: the same for another system, which is also compared with the first (paired
   differences to an earlier run);
3. ``leaderboard``: annotation.research.leaderboard.leaderboard(project, "segment") as the page and the
   API read it (what a web request does; target ≤ 0.2 s).

Printed: wall and CPU time of each step and the run's own step count. The scoring runs in a
Celery task with visible progress, so its time is not a web request's; it is printed to see
where it goes.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    configure_environment,
    create_database,
    django_setup,
    drop_database,
    migrate,
    wall_and_cpu,
)

DB = "workbench_bench_runs"
SEGMENTS = 5
LEADERBOARD_TARGET_S = 0.2


def setup(data_dir: str) -> None:
    configure_environment(DB, data_dir)
    create_database(DB)
    django_setup()
    migrate()


def build_project(items: int):
    """N FELM items with gold records, each annotated by two annotators (about 10 % disagree)."""
    from django.contrib.auth import get_user_model

    from annotation.models import (
        Annotation,
        Assignment,
        AssignmentRole,
        AssignmentStatus,
        GoldRecord,
        Item,
        ItemStage,
        StageStatus,
    )
    from annotation.services.projects import create_project

    users = get_user_model()
    admin = users.objects.create_user("admin", is_staff=True)
    alice, bob = users.objects.create_user("alice"), users.objects.create_user("bob")
    project = create_project(name="bench", kind="felm", created_by=admin)
    rng = random.Random(0)
    gold = [[rng.random() > 0.2 for _ in range(SEGMENTS)] for _ in range(items)]
    created = Item.objects.bulk_create(
        [Item(project=project, external_id=str(i), prompt="Q?", response="S. " * SEGMENTS) for i in range(items)],
        batch_size=2000,
    )
    stages = ItemStage.objects.bulk_create(
        [
            ItemStage(item=item, stage=1, status=StageStatus.DONE, content={"segments": ["S."] * SEGMENTS})
            for item in created
        ],
        batch_size=2000,
    )

    def payload(labels):
        return {
            "segments": [
                {
                    "label": ok,
                    "error_type": None if ok else "knowledge_error",
                    "comment": "",
                    "refs": [],
                }
                for ok in labels
            ]
        }

    GoldRecord.objects.bulk_create(
        [GoldRecord(item_stage=stage, payload=payload(labels)) for stage, labels in zip(stages, gold)],
        batch_size=2000,
    )
    for user, flip in ((alice, 0.0), (bob, 0.1)):
        assignments = Assignment.objects.bulk_create(
            [
                Assignment(
                    item_stage=stage,
                    user=user,
                    role=AssignmentRole.ANNOTATOR,
                    status=AssignmentStatus.SUBMITTED,
                )
                for stage in stages
            ],
            batch_size=2000,
        )
        Annotation.objects.bulk_create(
            [
                Annotation(
                    assignment=a,
                    submitted=True,
                    payload=payload([ok != (rng.random() < flip) for ok in labels]),
                )
                for a, labels in zip(assignments, gold)
            ],
            batch_size=2000,
        )
    return project, gold


def predictions_file(gold, error_rate: float, seed: int) -> io.BytesIO:
    rng = random.Random(seed)
    lines = []
    for i, labels in enumerate(gold):
        guessed = [ok != (rng.random() < error_rate) for ok in labels]
        lines += [
            json.dumps({"item": str(i), "segment": k, "label": "correct" if ok else "error"})
            for k, ok in enumerate(guessed)
        ]
        lines.append(json.dumps({"item": str(i), "response_label": "correct" if all(guessed) else "error"}))
    buffer = io.BytesIO(("\n".join(lines) + "\n").encode())
    buffer.name = f"system{seed}.jsonl"
    return buffer


def timed(step, label: str):
    result, wall, cpu = wall_and_cpu(step)
    print(f"{label}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    return result, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the database (dropped by default)")
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as data_dir:
        setup(data_dir)
        try:
            run(args)
        finally:
            from django.db import connections

            connections.close_all()
            if not args.keep:
                drop_database(DB)


def run(args) -> None:
    from annotation.research.leaderboard import leaderboard
    from annotation.research.predictions import create_system_run, run_system_run

    (project, gold), _ = timed(
        lambda: build_project(args.items),
        f"set-up: {args.items:,} FELM items of {SEGMENTS} segments",
    )
    walls = {}
    for number, (system, error_rate) in enumerate((("first", 0.15), ("second", 0.1)), start=1):
        upload = predictions_file(gold, error_rate, number)
        run_row = create_system_run(
            project=project,
            user=None,
            upload=upload,
            system=system,
            resamples=args.resamples,
            queue=False,
        )
        done, walls[system] = timed(
            lambda: run_system_run(run_row.id),
            f"{system} run ({len(upload.getvalue()) / 2**20:.1f} MiB, {args.resamples} resamples)",
        )
        assert done.state == "done", done.errors
        segment = done.scores["segment"]
        print(
            f"  {done.units_total:,} steps (lines + scores); segment units {segment['units']:,}, agreed "
            f"{segment['agreed']['units']:,}; macro F1 {segment['macro']['f1']['value']:.3f} "
            f"[{segment['macro']['f1']['low']:.3f}, {segment['macro']['f1']['high']:.3f}]; "
            f"differences: {', '.join(sorted(segment['differences']))}"
        )
    board, wall = timed(lambda: leaderboard(project, "segment"), "leaderboard (a page load)")
    print(
        f"  {len(board['rows'])} rows; target ≤ {LEADERBOARD_TARGET_S} s: {'met' if wall <= LEADERBOARD_TARGET_S else 'NOT met'}"
    )
    sys.exit(0 if wall <= LEADERBOARD_TARGET_S else 1)


if __name__ == "__main__":
    main()
