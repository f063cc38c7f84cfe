"""FELM at scale on PostgreSQL: import, export, agreement and the annotation-save endpoint.

Usage: .venv/bin/python benchmarks/felm_scale.py [--items 10000] [--small-items 2000,5000]
           [--clients 20] [--saves 100] [--configs sync:2,sync:3,gthread:2x4] [--think-ms 600]
           [--skip-http] [--profile]          (--help lists every option)

It creates its own PostgreSQL database (``workbench_bench`` on 127.0.0.1:5432, user postgres),
migrates it, and always drops it at the end. Everything runs on loopback; every loop is bounded.

What is measured (each step is a function below):

1. ``bench_import``: ``import_jsonl(project, open(path, 'rb'), fmt="felm")`` of N generated items
   in FELM's released shape (5 given segments each) into a FELM project with 2 annotators and a
   consolidator; this includes writing the items, their stages and the 2N assignments.
2. ``bench_export``: ``export_jsonl(project, "felm")`` consumed to /dev/null, after both
   annotators submitted every item (~10 % of segment labels disagree) and every item has a gold
   record; also at smaller sizes, to show whether peak memory grows with the item count.
3. ``bench_agreement``: ``research.selectors.project_agreement(project)`` over the N x 5 doubly-labelled
   segments.
4. ``bench_save``: latency (p50/p95/p99) and throughput of ``PUT /api/assignments/{id}/annotation/``
   (draft saves, version tracked per assignment) from concurrent clients (threads using
   ``http.client``, keep-alive when the server allows it) against gunicorn, for several worker
   configurations, clients saving back to back (closed loop: latency ~ clients / throughput);
   then the best configuration again with clients pausing ``--think-ms`` after each answer (the
   browser autosaves 600 ms after the last change). While the load runs, the PostgreSQL backends'
   wait events are sampled (cpu, Lock:tuple / Lock:transactionid = row locks, IO:WALSync = commit
   flush). Before that, the same save in-process (Django test client) with its SQL statements.

How time and memory are taken: every import/export/agreement measurement runs in a fresh child
process (multiprocessing "spawn", app modules imported before measuring), so earlier steps do not
hide its memory. The TIMING run has no tracing; it reports wall time, the Python process's CPU
time (the rest is PostgreSQL, I/O or waiting for a CPU) and the ru_maxrss delta (growth of the
child's peak resident set during the step, whole process incl. C allocations). A SEPARATE run of
the same step under tracemalloc reports the peak of the traced Python heap and the number of SQL
statements (tracemalloc slows code down, so its run is never used for time). The machine's load
average is printed next to each time: other work on the machine inflates wall times.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import gc
import http.client
import json
import multiprocessing
import os
import platform
import random
import resource
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

PG_SERVER = "postgres://postgres@127.0.0.1:5432"
DEFAULT_DB = "workbench_bench"
SEGMENTS_PER_ITEM = 5
TARGETS = {"import_s": 3.0, "export_s": 2.0, "agreement_s": 1.0, "save_p95_ms": 50.0}
DEFAULT_CONFIGS = "sync:2,sync:3,sync:4,sync:5,gthread:2x4,gthread:3x4,gthread:2x8"
ERROR_TYPES = ("knowledge_error", "reasoning_error", "irrelevant_with_qst", "fooled")
DOMAINS = ("wk", "science", "writing_rec", "reasoning", "math")
SOURCES = ("quora", "twitter", "MATH", "gsm8k", "chatgpt", "sciq")


# -- environment and database ------------------------------------------------------------------

def configure_environment(db_name: str) -> None:
    """Settings the app reads at django.setup(); must run before any Django import."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DATABASE_URL"] = f"{PG_SERVER}/{db_name}"
    os.environ["DJANGO_DEBUG"] = "false"  # DEBUG would keep every query in memory
    os.environ.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))  # a throwaway database: a throwaway key
    os.environ["DJANGO_ALLOWED_HOSTS"] = "127.0.0.1,testserver"
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.pop("CELERY_BROKER_URL", None)  # no task is enqueued (segments are given) anyway


def _admin_sql(statement: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def create_database(db_name: str) -> None:
    _admin_sql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
    _admin_sql(f'CREATE DATABASE "{db_name}"')


def drop_database(db_name: str) -> None:
    _admin_sql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')


def django_setup() -> None:
    import django

    django.setup()


def migrate() -> float:
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    return time.perf_counter() - started


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# -- data --------------------------------------------------------------------------------------

_SUBJECTS = (
    "The Eiffel Tower", "Marie Curie", "The Amazon River", "The Python language", "The Treaty of Versailles",
    "Mount Everest", "The human heart", "Photosynthesis", "The Great Wall of China", "Albert Einstein",
    "The speed of light", "Jupiter", "The French Revolution", "Penicillin", "The Pacific Ocean", "Ada Lovelace",
)
_PREDICATES = (
    "was completed in", "was first described in", "is usually compared with", "was first released in",
    "was signed in", "is located close to", "is discussed at length in", "became widely known after",
    "is larger than", "was studied extensively in", "is often confused with", "was celebrated in",
)
_OBJECTS = (
    "1889", "the early twentieth century", "several neighbouring countries", "1991", "1919", "the Himalayas",
    "most biology textbooks", "the industrial revolution", "the Mediterranean Sea", "a 1905 paper",
    "the work of earlier scientists", "the second world war", "the Roman Empire", "modern computing",
)
_TAILS = (
    "according to most historical sources", "which many people still find surprising",
    "as reported by several encyclopaedias", "although some accounts disagree on the details",
    "and this is mentioned in many school curricula", "which explains its lasting reputation",
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
        Annotation, Assignment, AssignmentStatus, Consolidation, ConsolidationStatus, GoldRecord,
        GoldSource, ItemStage, Membership, Project, Role, StageStatus,
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
        consolidations.append(Consolidation(item_stage_id=stage_id, consolidator=consolidator, status=ConsolidationStatus.DONE,
                                            draft=gold, disagreed=disagreed, version=1))
        golds.append(GoldRecord(item_stage_id=stage_id, payload=gold, source=GoldSource.CONSOLIDATION,
                                consolidated_by=consolidator, disagreed_fields=disagreed))
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
    return {"annotations": labelled, "done_stages": done, "via_services": min(via_services, len(stage_ids)),
            "seconds": time.perf_counter() - started}


def analyze_tables() -> None:
    """Refresh the planner's statistics after the bulk writes, as autovacuum would within a
    minute on a live server (right after a bulk load PostgreSQL still plans for empty tables)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


# -- steps measured in a fresh child process ---------------------------------------------------

def _step_import(project_id: int, path: str) -> dict:
    from annotation.models import Project
    from annotation.imports.items import import_jsonl

    project = Project.objects.get(pk=project_id)
    with open(path, "rb") as file:
        return import_jsonl(project, file, fmt="felm").as_dict()


def _step_export(project_id: int) -> dict:
    from annotation.exports.formats import export_jsonl
    from annotation.models import Project

    project = Project.objects.get(pk=project_id)
    lines = chars = 0
    with open(os.devnull, "w", encoding="utf-8") as sink:
        for line in export_jsonl(project, "felm"):
            sink.write(line)
            lines += 1
            chars += len(line)
    return {"lines": lines, "chars": chars}


def _step_agreement(project_id: int) -> dict:
    from annotation.models import Project
    from annotation.research.selectors import project_agreement

    result = project_agreement(Project.objects.get(pk=project_id))
    label = result["fields"]["label"]
    return {"units": label["units"], "observed": label["observed_agreement"], "cohen_kappa": label["cohen_kappa"],
            "alpha": label["krippendorff_alpha"], "error_type_units": result["fields"]["error_type"]["units"]}


STEPS = {"import": _step_import, "export": _step_export, "agreement": _step_agreement}


class _QueryCounter:
    def __init__(self):
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def _warm_imports() -> None:
    """Load the app modules the steps use, so a step's time and memory exclude module imports
    (importing annotation.kinds pulls in pipeline/, NLTK, SciPy and openai: seconds, ~135 MiB RSS)."""
    import annotation.exports.formats  # noqa: F401
    import annotation.research.selectors  # noqa: F401
    import annotation.imports.items  # noqa: F401
    from annotation.kinds import get_kind

    get_kind("felm")


def _measure_in_child(step: str, kwargs: dict, trace: bool, repeats: int) -> dict:
    """Runs in a spawned process: set Django up, then run ``step`` ``repeats`` times."""
    django_setup()
    from django.db import connection

    connection.ensure_connection()
    _warm_imports()
    fn = STEPS[step]
    gc.collect()
    rss_before = maxrss_mib()
    seconds, cpu, result, queries, peak = [], [], None, None, None
    counter = _QueryCounter()
    for _ in range(repeats):
        gc.collect()
        if trace:
            tracemalloc.start()
            with connection.execute_wrapper(counter):
                result = fn(**kwargs)
            peak = max(peak or 0, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            queries = counter.count
        else:
            started, cpu_started = time.perf_counter(), time.process_time()
            result = fn(**kwargs)
            seconds.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
    connection.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "result": result, "rss_delta_mib": maxrss_mib() - rss_before,
            "tracemalloc_peak_mib": None if peak is None else peak / 2**20,
            "queries": None if queries is None else queries // max(repeats, 1)}


def measure(step: str, *, trace: bool, repeats: int = 1, **kwargs) -> dict:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_measure_in_child, step, kwargs, trace, repeats).result(timeout=1800)


def _fmt_seconds(run: dict) -> str:
    """Wall time (best and median when repeated), the Python process's CPU time of the best
    run (the rest is PostgreSQL, I/O or waiting), and the load average of the machine."""
    values, cpu = run["seconds"], run["cpu_seconds"]
    best = values.index(min(values))
    text = f"{values[0]:.3f} s" if len(values) == 1 else \
        f"best {values[best]:.3f} s, median {statistics.median(values):.3f} s of {len(values)}"
    return f"{text} [python cpu {cpu[best]:.3f} s; load avg {os.getloadavg()[0]:.1f}]"


# -- 1. import ---------------------------------------------------------------------------------

def bench_import(tmp: Path, items: int, seed: int) -> dict:
    """Time import_jsonl of ``items`` FELM lines (untraced run), then trace a second import of
    the same file into a second, identical project for the Python-heap peak."""
    path = tmp / f"felm-{items}.jsonl"
    size = generate_felm_jsonl(path, items, seed)
    print(f"  generated {items} FELM items x {SEGMENTS_PER_ITEM} segments: {size / 2**20:.1f} MiB JSONL")
    project_id = create_felm_project(f"felm bench {items}")
    timed = measure("import", trace=False, project_id=project_id, path=str(path))
    mem_project = create_felm_project(f"felm bench {items} memory run")
    traced = measure("import", trace=True, project_id=mem_project, path=str(path))
    result = timed["result"]
    print(f"  import_jsonl: {_fmt_seconds(timed)}  ({result['items']} items, "
          f"{result['assignments']} assignments)")
    print(f"    memory: ru_maxrss delta {timed['rss_delta_mib']:.1f} MiB (timed run); "
          f"tracemalloc peak {traced['tracemalloc_peak_mib']:.1f} MiB, {traced['queries']} SQL statements (traced run)")
    return {"project_id": project_id, "path": path, "seconds": timed["seconds"][0],
            "rss_delta_mib": timed["rss_delta_mib"], "tracemalloc_peak_mib": traced["tracemalloc_peak_mib"],
            "queries": traced["queries"], **result}


# -- 2. export ---------------------------------------------------------------------------------

def prepare_submitted_project(tmp: Path, items: int, seed: int, project_id: int | None = None) -> int:
    """A project of ``items`` items that both annotators submitted and that all have gold."""
    if project_id is None:
        from annotation.models import Project
        from annotation.imports.items import import_jsonl

        path = tmp / f"felm-{items}.jsonl"
        generate_felm_jsonl(path, items, seed)
        project_id = create_felm_project(f"felm bench {items}")
        with path.open("rb") as file:
            import_jsonl(Project.objects.get(pk=project_id), file, fmt="felm")
    filled = populate_submissions(project_id, seed=seed + 1)
    analyze_tables()
    print(f"  project {project_id}: {filled['annotations']} submitted annotations "
          f"({filled['via_services']} items via services, rest in bulk), {filled['done_stages']} gold records "
          f"[setup {filled['seconds']:.1f} s, then ANALYZE]")
    return project_id


def bench_export(sizes: dict[int, int], repeats: int) -> dict:
    """Export FELM at each size (items → project id): time (untraced), memory (traced run)."""
    out = {}
    for items, project_id in sorted(sizes.items()):
        timed = measure("export", trace=False, repeats=repeats, project_id=project_id)
        traced = measure("export", trace=True, project_id=project_id)
        print(f"  export_jsonl felm, {items} items: {_fmt_seconds(timed)}  "
              f"({timed['result']['lines']} lines, {timed['result']['chars'] / 2**20:.1f} MiB)")
        print(f"    memory: ru_maxrss delta {timed['rss_delta_mib']:.1f} MiB (timed runs); "
              f"tracemalloc peak {traced['tracemalloc_peak_mib']:.2f} MiB, {traced['queries']} SQL statements (traced run)")
        out[items] = {"seconds": min(timed["seconds"]), "median_s": statistics.median(timed["seconds"]),
                      "rss_delta_mib": timed["rss_delta_mib"], "tracemalloc_peak_mib": traced["tracemalloc_peak_mib"],
                      "queries": traced["queries"], "lines": timed["result"]["lines"], "chars": timed["result"]["chars"]}
    if len(out) >= 2:
        # Django's .iterator(chunk_size=2000) holds at most two fetched chunks, so below 2 x 2000
        # items the peak still rises; what matters is the marginal cost per item at the top sizes.
        sizes_sorted = sorted(out)
        mid, large = sizes_sorted[-2], sizes_sorted[-1]
        per_item_kib = (out[large]["tracemalloc_peak_mib"] - out[mid]["tracemalloc_peak_mib"]) * 1024 / (large - mid)
        output_kib = out[large]["chars"] / 1024 / large
        flat = per_item_kib < 0.05 * output_kib
        peaks = ", ".join(f"{n}: {out[n]['tracemalloc_peak_mib']:.2f} MiB" for n in sizes_sorted)
        print(f"  export peak memory by item count: {peaks}")
        print(f"    marginal {per_item_kib:.3f} KiB per extra item between {mid} and {large} items "
              f"(each exported line is {output_kib:.2f} KiB) -> {'FLAT' if flat else 'GROWS with the item count'}")
        if mid < 2 * 2000:
            print("    (below 4000 items the export holds fewer than two 2000-row chunks, so the peak still "
                  "rises there; compare sizes of at least 4000 items)")
        out["flat"] = flat
        out["per_item_kib"] = per_item_kib
    return out


# -- 3. agreement ------------------------------------------------------------------------------

def bench_agreement(project_id: int, repeats: int) -> dict:
    timed = measure("agreement", trace=False, repeats=repeats, project_id=project_id)
    traced = measure("agreement", trace=True, project_id=project_id)
    r = timed["result"]
    print(f"  project_agreement over {r['units']} doubly-labelled segments: {_fmt_seconds(timed)}")
    obs = r["observed"]
    print(f"    label: observed {obs:.3f}, Cohen's kappa {r['cohen_kappa']:.3f}, Krippendorff alpha {r['alpha']:.3f}; "
          f"error_type units {r['error_type_units']}")
    print(f"    memory: ru_maxrss delta {timed['rss_delta_mib']:.1f} MiB (timed runs); "
          f"tracemalloc peak {traced['tracemalloc_peak_mib']:.1f} MiB, {traced['queries']} SQL statements (traced run)")
    return {"seconds": min(timed["seconds"]), "median_s": statistics.median(timed["seconds"]), "units": r["units"],
            "tracemalloc_peak_mib": traced["tracemalloc_peak_mib"], "rss_delta_mib": timed["rss_delta_mib"],
            "queries": traced["queries"]}


# -- 4. annotation saves over HTTP -------------------------------------------------------------

def setup_save_project(clients: int, per_client: int) -> list[tuple[str, list[int]]]:
    """A small FELM project in annotating status with one annotator (and token) per client;
    returns (token, own assignment ids) per client."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.models import Assignment, Project, Role, StageStatus
    from annotation.imports.items import import_jsonl
    from annotation.services.projects import add_member, create_project

    User = get_user_model()
    project = create_project(name="save bench", kind="felm", annotators_per_item=2)
    users = []
    for number in range(clients):
        user = User.objects.create_user(username=f"save-client-{number:02d}", password=None)
        add_member(project=project, user=user, role=Role.ANNOTATOR)
        users.append(user)
    rng = random.Random(7)
    items = (clients * per_client + 1) // 2
    lines = [json.dumps(felm_record(i, rng)).encode() + b"\n" for i in range(items)]
    import_jsonl(project, lines, fmt="felm")
    out = []
    for user in users:
        ids = list(Assignment.objects.filter(user=user, item_stage__item__project=project,
                                             item_stage__status=StageStatus.ANNOTATING).values_list("id", flat=True))
        out.append((Token.objects.create(user=user).key, ids))
    assert Project.objects.get(pk=project.pk).items.count() == items
    return out


def draft_body(rng: random.Random, version: int) -> bytes:
    segments = []
    for _ in range(SEGMENTS_PER_ITEM):
        roll = rng.random()
        if roll < 0.7:
            segments.append({"label": True, "error_type": None, "comment": "", "refs": []})
        elif roll < 0.9:
            segments.append({"label": False, "error_type": rng.choice(ERROR_TYPES), "comment": "wrong year",
                             "refs": ["https://en.wikipedia.org/wiki/Example"]})
        else:
            segments.append({"label": None, "error_type": None, "comment": "", "refs": []})
    return json.dumps({"payload": {"segments": segments}, "version": version, "submit": False}).encode()


def _http(conn: http.client.HTTPConnection, method: str, path: str, token: str, body: bytes | None = None):
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def _client_loop(port, token, assignment_ids, warmup, saves, start_barrier, measured_barrier, sink, seed, think):
    """One client: warm up, wait for everyone, then ``saves`` timed draft saves, each followed
    by ``think`` seconds of pause (0: back to back)."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies, errors = [], {}  # errors: HTTP status (0: no answer) → count
    versions = {}
    try:
        for aid in assignment_ids:
            status, data = _http(conn, "GET", f"/api/assignments/{aid}/annotation/", token)
            versions[aid] = json.loads(data)["version"] if status == 200 else 0
        start_barrier.wait(timeout=120)
        for phase, count in (("warmup", warmup), ("measured", saves)):
            if phase == "measured":
                measured_barrier.wait(timeout=120)
            for number in range(count):
                aid = assignment_ids[number % len(assignment_ids)]
                body = draft_body(rng, versions[aid])
                started = time.perf_counter()
                status, data = 0, b""
                for _attempt in range(2):  # a keep-alive connection the server closed: reconnect once
                    try:
                        status, data = _http(conn, "PUT", f"/api/assignments/{aid}/annotation/", token, body)
                        break
                    except (OSError, http.client.HTTPException):
                        conn.close()
                elapsed = time.perf_counter() - started
                if status == 200:
                    versions[aid] = json.loads(data)["version"]
                else:
                    if phase == "measured":
                        errors[status] = errors.get(status, 0) + 1
                    if status == 409:
                        versions[aid] = json.loads(data)["stored_version"]
                if phase == "measured":
                    latencies.append(elapsed)
                    if think:
                        time.sleep(think)
    finally:
        conn.close()
        sink.append((latencies, errors))


class WaitSampler(threading.Thread):
    """Samples what the benchmark database's active backends wait on (pg_stat_activity) every
    20 ms: 'cpu' (running), Lock:* (row locks), IO:WALSync (commit flush), …"""

    def __init__(self, db_name: str):
        super().__init__(daemon=True)
        self.db_name, self.counts, self.stop = db_name, {}, threading.Event()

    def run(self):
        import psycopg

        sql = ("SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu') FROM pg_stat_activity "
               "WHERE datname = %s AND state = 'active' AND pid <> pg_backend_pid()")
        with psycopg.connect(f"{PG_SERVER}/{self.db_name}", autocommit=True) as conn:
            while not self.stop.wait(0.02):
                for (event,) in conn.execute(sql, (self.db_name,)):
                    self.counts[event] = self.counts.get(event, 0) + 1

    def summary(self) -> str:
        total = sum(self.counts.values()) or 1
        top = sorted(self.counts.items(), key=lambda kv: -kv[1])[:4]
        return ", ".join(f"{event} {100 * count / total:.0f}%" for event, count in top)


def load_test(port: int, client_specs: list[tuple[str, list[int]]], *, warmup: int, saves: int, think: float = 0,
              db_name: str = DEFAULT_DB) -> dict:
    """``len(client_specs)`` threads, each ``warmup`` + ``saves`` saves on its own assignments."""
    n = len(client_specs)
    start_barrier, measured_barrier = threading.Barrier(n), threading.Barrier(n + 1)
    sink: list = []
    threads = [
        threading.Thread(target=_client_loop, daemon=True,
                         args=(port, token, ids, warmup, saves, start_barrier, measured_barrier, sink, number, think))
        for number, (token, ids) in enumerate(client_specs)
    ]
    for thread in threads:
        thread.start()
    sampler = WaitSampler(db_name)
    measured_barrier.wait(timeout=300)
    started = time.perf_counter()
    sampler.start()
    for thread in threads:
        thread.join(timeout=600)
    wall = time.perf_counter() - started
    sampler.stop.set()
    sampler.join(timeout=10)
    latencies = sorted(x for lat, _ in sink for x in lat)
    errors: dict[int, int] = {}
    for _, per_client in sink:
        for status, count in per_client.items():
            errors[status] = errors.get(status, 0) + count
    if len(latencies) < 2:
        raise RuntimeError("the load test produced no measurements")
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"requests": len(latencies), "errors": sum(errors.values()), "error_statuses": errors, "p50_ms": q[49] * 1000, "p95_ms": q[94] * 1000,
            "p99_ms": q[98] * 1000, "max_ms": latencies[-1] * 1000, "rps": len(latencies) / wall,
            "pg_waits": sampler.summary(), "load": os.getloadavg()[0]}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parse_config(text: str) -> tuple[str, list[str]]:
    """``sync:3`` → 3 sync workers; ``gthread:2x4`` → 2 workers x 4 threads."""
    worker_class, _, spec = text.partition(":")
    if worker_class == "sync":
        return f"sync, {int(spec)} workers", ["--workers", str(int(spec))]
    if worker_class == "gthread":
        workers, _, threads = spec.partition("x")
        return (f"gthread, {int(workers)} workers x {int(threads)} threads",
                ["--worker-class", "gthread", "--workers", str(int(workers)), "--threads", str(int(threads))])
    raise ValueError(f"unknown worker configuration {text!r} (sync:N or gthread:WxT)")


class Gunicorn:
    """A gunicorn server on loopback for one configuration; stopped on exit, whatever happens."""

    def __init__(self, options: list[str], log: Path):
        self.port = free_port()
        self.options, self.log = options, log
        self.process: subprocess.Popen | None = None

    def __enter__(self):
        env = {**os.environ, "DJANGO_ALLOWED_HOSTS": "127.0.0.1"}
        command = [str(Path(sys.executable).with_name("gunicorn")), "config.wsgi", "--bind", f"127.0.0.1:{self.port}",
                   "--log-level", "warning", *self.options]
        self._log_file = self.log.open("wb")
        self.process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=self._log_file,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_ready(self, token: str, assignment_id: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.log.read_text()[-2000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                status, _ = _http(conn, "GET", f"/api/assignments/{assignment_id}/annotation/", token)
                conn.close()
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer in time")

    def __exit__(self, *exc):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)  # its own session: only its workers
                self.process.wait(timeout=10)
        self._log_file.close()


def inprocess_save_profile(client_spec: tuple[str, list[int]], count: int = 200) -> dict:
    """The same PUT through Django's test client (no network, no gunicorn): latency and SQL count."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    warnings.filterwarnings("ignore", message="No directory at")  # whitenoise: static files not collected
    token, ids = client_spec
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    rng = random.Random(99)
    aid = ids[0]
    version = client.get(f"/api/assignments/{aid}/annotation/").json()["version"]
    latencies, queries = [], []
    for number in range(count):
        body = draft_body(rng, version)
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.put(f"/api/assignments/{aid}/annotation/", data=body, content_type="application/json")
            latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"in-process save failed: {response.status_code} {response.content[:300]!r}")
        version = response.json()["version"]
        queries.append(len(captured.captured_queries))
    sql = [q["sql"][:90] for q in captured.captured_queries]
    return {"median_ms": statistics.median(latencies) * 1000, "queries": statistics.median(queries), "sql": sql}


def bench_save(tmp: Path, *, clients: int, per_client: int, warmup: int, saves: int, configs: list[str],
               think_ms: int, think_saves: int, db_name: str) -> dict:
    """Closed-loop load (each client saves again as soon as it has its answer) for every worker
    configuration; then, for the best one, the same clients pausing ``think_ms`` between saves
    (the browser's autosave waits 600 ms after the last change)."""
    specs = setup_save_project(clients, per_client)
    inproc = inprocess_save_profile(specs[0])
    print(f"  in-process (test client, no HTTP): median {inproc['median_ms']:.1f} ms, {inproc['queries']:.0f} SQL "
          f"statements per save:")
    for sql in inproc["sql"]:
        print(f"      {sql}")
    print(f"  {clients} clients x ({warmup} warm-up + {saves} measured) back-to-back draft saves, "
          f"{per_client} own assignments each, on {os.cpu_count()} CPUs shared with the clients:")
    header = f"    {'configuration':34s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} {'max ms':>8s} {'req/s':>7s} {'errors':>6s} {'load':>5s}"
    print(header + "  PostgreSQL backends were")
    runs = {}

    def run_one(text: str, think: float, count: int) -> dict:
        label, options = parse_config(text)
        with Gunicorn(options, tmp / f"gunicorn-{text.replace(':', '-')}.log") as server:
            server.wait_ready(specs[0][0], specs[0][1][0])
            run = load_test(server.port, specs, warmup=warmup, saves=count, think=think, db_name=db_name)
        errors = f"{run['errors']}" + (f" {run['error_statuses']}" if run["errors"] else "")
        print(f"    {label:34s} {run['p50_ms']:8.1f} {run['p95_ms']:8.1f} {run['p99_ms']:8.1f} {run['max_ms']:8.1f} "
              f"{run['rps']:7.0f} {errors:>6s} {run['load']:5.1f}  {run['pg_waits']}")
        return {"label": label, **run}

    for text in configs:
        runs[text] = run_one(text, 0, saves)
    best = min(runs, key=lambda key: (runs[key]["errors"] > 0, runs[key]["p95_ms"]))
    print(f"  best by p95 (back to back): {runs[best]['label']}")
    paced = None
    if think_ms:
        print(f"  {clients} clients pausing {think_ms} ms after each answer ({think_saves} saves each), "
              f"with {runs[best]['label']}:")
        paced = run_one(best, think_ms / 1000, think_saves)
    return {"runs": runs, "best": best, "paced": paced, "think_ms": think_ms, "inprocess": inproc}


# -- profiling (optional) ----------------------------------------------------------------------

def profile_steps(tmp: Path, import_path: Path, items: int, export_project: int) -> None:
    """cProfile of import (into a fresh project), export and agreement, in this process."""
    import cProfile
    import pstats

    profile_project = create_felm_project(f"felm bench {items} profile run")
    for step, kwargs in (("import", {"project_id": profile_project, "path": str(import_path)}),
                         ("export", {"project_id": export_project}),
                         ("agreement", {"project_id": export_project})):
        profiler = cProfile.Profile()
        profiler.enable()
        STEPS[step](**kwargs)
        profiler.disable()
        print(f"\n--- cProfile: {step} (top 18 by cumulative time) ---")
        pstats.Stats(profiler).strip_dirs().sort_stats("cumulative").print_stats(18)
        print(f"--- cProfile: {step} (top 12 by own time) ---")
        pstats.Stats(profiler).strip_dirs().sort_stats("tottime").print_stats(12)


# -- main --------------------------------------------------------------------------------------

def print_header(args) -> None:
    pg = "?"
    try:
        import psycopg

        with psycopg.connect(f"{PG_SERVER}/postgres") as conn:
            pg = conn.execute("SHOW server_version").fetchone()[0]
    except Exception as exc:  # noqa: BLE001 - informational only
        pg = f"unreachable ({exc})"
    print("FELM scale benchmark")
    print(f"  date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"  python: {platform.python_version()} ({sys.executable})")
    print(f"  machine: {platform.platform()}, {os.cpu_count()} CPUs, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB RAM, PostgreSQL {pg}")
    print(f"  items: {args.items} (also exported at {', '.join(map(str, args.small_items))}), "
          f"{SEGMENTS_PER_ITEM} segments each; load average now {os.getloadavg()[0]:.1f}")


def print_summary(results: dict, args) -> None:
    print("\nSummary (targets from DESIGN.md section 9 / the issue):")
    rows = []
    if "import" in results:
        r = results["import"]
        rows.append((f"import {args.items} items", f"{r['seconds']:.2f} s", f"<= {TARGETS['import_s']:.0f} s",
                     r["seconds"] <= TARGETS["import_s"]))
    if "export" in results:
        r = results["export"]
        big = r[max(k for k in r if isinstance(k, int))]  # noqa: E501
        rows.append((f"export {args.items} items", f"{big['seconds']:.2f} s", f"<= {TARGETS['export_s']:.0f} s",
                     big["seconds"] <= TARGETS["export_s"]))
        if "flat" in r:
            rows.append(("export memory flat in item count", f"{r['per_item_kib']:+.3f} KiB/item", "~0", r["flat"]))
    if "agreement" in results:
        r = results["agreement"]
        rows.append((f"agreement {r['units']} segments", f"{r['seconds']:.2f} s", f"<= {TARGETS['agreement_s']:.0f} s",
                     r["seconds"] <= TARGETS["agreement_s"]))
    if "save" in results:
        best = results["save"]["runs"][results["save"]["best"]]
        rows.append((f"save p95, {args.clients} clients ({best['label']})",
                     f"{best['p95_ms']:.1f} ms (p50 {best['p50_ms']:.1f})",
                     f"<= {TARGETS['save_p95_ms']:.0f} ms", best["p95_ms"] <= TARGETS["save_p95_ms"]))
        paced = results["save"]["paced"]
        if paced:
            rows.append((f"save p95, {args.clients} clients, {results['save']['think_ms']} ms pauses",
                         f"{paced['p95_ms']:.1f} ms (p50 {paced['p50_ms']:.1f})",
                         f"<= {TARGETS['save_p95_ms']:.0f} ms", paced["p95_ms"] <= TARGETS["save_p95_ms"]))
    for name, value, target, ok in rows:
        print(f"  {name:44s} {value:24s} {target:10s} {'ok' if ok else 'MISSED'}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10000, help="FELM items to import/export (default 10000)")
    parser.add_argument("--small-items", default="2000,5000",
                        help="smaller export sizes for the memory comparison, comma-separated (default 2000,5000)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent HTTP clients (default 20)")
    parser.add_argument("--saves", type=int, default=100, help="measured saves per client (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up saves per client (default 10)")
    parser.add_argument("--per-client", type=int, default=5, help="own assignments per client (default 5)")
    parser.add_argument("--configs", default=DEFAULT_CONFIGS, help=f"gunicorn configurations (default {DEFAULT_CONFIGS})")
    parser.add_argument("--think-ms", type=int, default=600,
                        help="pause per client between saves for the extra paced run (default 600, 0: skip it)")
    parser.add_argument("--think-saves", type=int, default=40, help="measured saves per client in the paced run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of export and agreement (default 3)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--db-name", default=DEFAULT_DB,
                        help="database created and dropped, must start with workbench_bench (default workbench_bench)")
    parser.add_argument("--skip-http", action="store_true", help="skip the gunicorn save benchmark")
    parser.add_argument("--profile", action="store_true", help="also print cProfile tables of import/export/agreement")
    args = parser.parse_args(argv)
    try:
        args.small_items = sorted({int(n) for n in args.small_items.split(",") if n.strip()} - {args.items})
    except ValueError:
        parser.error("--small-items must be comma-separated integers")
    if any(not 1 <= n <= 1_000_000 for n in args.small_items):
        parser.error("--small-items must be between 1 and 1000000")
    if not args.db_name.startswith(DEFAULT_DB) or not args.db_name.replace("_", "").isalnum():
        parser.error(f"--db-name must start with {DEFAULT_DB} (the database is dropped at the end)")
    if not 0 <= args.warmup <= 10_000:
        parser.error("--warmup must be between 0 and 10000")
    if not 0 <= args.think_ms <= 10_000:
        parser.error("--think-ms must be between 0 and 10000")
    for name in ("items", "clients", "saves", "per_client", "repeats", "think_saves"):
        if not 1 <= getattr(args, name) <= 1_000_000:
            parser.error(f"--{name.replace('_', '-')} must be between 1 and 1000000")
    return args


def _raise_system_exit(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_system_exit)  # so the finally below drops the database
    print_header(args)
    configure_environment(args.db_name)
    create_database(args.db_name)
    results: dict = {}
    try:
        with tempfile.TemporaryDirectory(prefix="felm-bench-") as tmp_name:
            tmp = Path(tmp_name)
            started = time.perf_counter()
            django_setup()
            setup_s = time.perf_counter() - started
            started = time.perf_counter()
            _warm_imports()
            print(f"  start-up: django.setup {setup_s:.2f} s, then importing the domain modules "
                  f"(annotation.kinds → pipeline/) {time.perf_counter() - started:.2f} s")
            print(f"  database {args.db_name} created and migrated in {migrate():.1f} s")

            print("\n1. Import")
            results["import"] = bench_import(tmp, args.items, args.seed)

            print("\n2. Export (setting up submitted annotations and gold records first)")
            big = prepare_submitted_project(tmp, args.items, args.seed, results["import"]["project_id"])
            sizes = {args.items: big}
            for offset, small in enumerate(args.small_items, start=1):
                sizes[small] = prepare_submitted_project(tmp, small, args.seed + 10 * offset)
            results["export"] = bench_export(sizes, args.repeats)

            print("\n3. Agreement")
            results["agreement"] = bench_agreement(big, args.repeats)

            if not args.skip_http:
                print("\n4. Annotation saves over HTTP (gunicorn)")
                results["save"] = bench_save(tmp, clients=args.clients, per_client=args.per_client, warmup=args.warmup,
                                             saves=args.saves, configs=[c for c in args.configs.split(",") if c],
                                             think_ms=args.think_ms, think_saves=args.think_saves, db_name=args.db_name)
            print_summary(results, args)
            if args.profile:
                profile_steps(tmp, results["import"]["path"], args.items, big)
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may not be set up yet
            pass
        drop_database(args.db_name)
        print(f"\n  database {args.db_name} dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
