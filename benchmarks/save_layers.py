"""Where one request's Python time goes, in-process (Django's test client, no HTTP), on PostgreSQL:
the annotator's requests of the load test (queue, open an assignment, draft save) and the
consolidator's (list, open, save a draft). Per request: SQL statements, Python CPU
(``time.process_time``: waiting for PostgreSQL is not counted) and, for the draft save, the CPU of
each layer (every middleware, DRF's authentication / permissions / negotiation, the serializer,
the service, rendering).

    .venv/bin/python benchmarks/save_layers.py [--db-name workbench_bench_h3] [--repeats 300] [--sql]

The database is created and dropped (its name must start with ``workbench_bench``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import sys
import time
import warnings

from harness import configure_environment, create_database, django_setup, drop_database, migrate

DEFAULT_DB = "workbench_bench_layers"
CPU: dict[str, float] = {}


def _timed(label: str, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            CPU[label] = CPU.get(label, 0.0) + time.process_time() - started

    return wrapper


def instrument_drf() -> None:
    """Wrap DRF's and the service's steps (class attributes: every view and request)."""
    from rest_framework import request as drf_request
    from rest_framework import response, serializers, views

    from annotation.services import annotations

    for owner, name, label in (
        (views.APIView, "dispatch", "view: DRF dispatch (all below)"),
        (drf_request.Request, "_authenticate", "auth: token lookup (authenticators)"),
        (views.APIView, "check_permissions", "view: permissions"),
        (views.APIView, "check_throttles", "view: throttles"),
        (views.APIView, "perform_content_negotiation", "view: content negotiation"),
        (views.APIView, "finalize_response", "view: finalize_response"),
        (serializers.Serializer, "is_valid", "serializer: is_valid"),
        (annotations, "save_annotation", "service: save_annotation (incl. SQL round trips)"),
        (response.Response, "rendered_content", "render: JSON"),
    ):
        original = getattr(owner, name)
        if isinstance(original, property):
            setattr(owner, name, property(_timed(label, original.fget)))
        else:
            setattr(owner, name, _timed(label, original))


def instrument_middleware(handler) -> list[str]:
    """Wrap the handler's chain: ``inside X`` is everything X passes the request on to."""
    names = []
    chain = handler._middleware_chain
    handler._middleware_chain = _timed("handler: whole chain", chain)
    current = chain
    while True:
        cells = {
            name: cell.cell_contents for name, cell in zip(current.__code__.co_freevars, current.__closure__ or ())
        }
        middleware = cells.get("get_response")
        if middleware is None or not hasattr(middleware, "get_response"):
            break
        name = type(middleware).__name__
        names.append(name)
        inner = middleware.get_response
        middleware.get_response = _timed(f"inside {name}", inner)
        current = inner
    return names


def setup_data(annotated: int = 40):
    """A FELM project: two annotators, a consolidator, ``annotated`` items submitted by both
    (open consolidations) and the rest waiting; API tokens for all three."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotation.imports.items import import_jsonl
    from annotation.models import Assignment, Role
    from annotation.services.annotations import save_annotation
    from annotation.services.projects import add_member, create_project
    from felm_data import felm_record

    User = get_user_model()
    project = create_project(name="layers", kind="felm", annotators_per_item=2)
    people = {}
    for name, role in (("ann-a", Role.ANNOTATOR), ("ann-b", Role.ANNOTATOR), ("cons", Role.CONSOLIDATOR)):
        people[name] = User.objects.create_user(username=name, password=None)
        add_member(project=project, user=people[name], role=role)
    rng = random.Random(3)
    import_jsonl(project, [json.dumps(felm_record(i, rng)).encode() + b"\n" for i in range(annotated + 60)], fmt="felm")
    for user in (people["ann-a"], people["ann-b"]):
        for assignment in Assignment.objects.filter(user=user).order_by("id")[:annotated]:
            segments = assignment.item_stage.content["segments"]
            payload = {"segments": [{"label": True, "error_type": None, "comment": "", "refs": []} for _ in segments]}
            save_annotation(assignment=assignment, payload=payload, version=0, submit=True, user=user)
    tokens = {name: Token.objects.create(user=user).key for name, user in people.items()}
    return project, people, tokens


def measure(client, method: str, path: str, body_of, repeats: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cpu, wall, statements, last = [], [], [], None
    for number in range(repeats):
        body = body_of(number) if body_of else None
        with CaptureQueriesContext(connection) as captured:
            started_cpu, started = time.process_time(), time.perf_counter()
            if method == "GET":
                response = client.get(path)
            else:
                response = client.put(path, data=json.dumps(body), content_type="application/json")
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.content[:300]!r}")
        statements.append(len(captured.captured_queries))
        last = (response, [q["sql"] for q in captured.captured_queries])
    cpu.sort()
    wall.sort()
    return {
        "cpu_ms": 1000 * cpu[len(cpu) // 2],
        "wall_ms": 1000 * wall[len(wall) // 2],
        "statements": max(statements),
        "sql": last[1],
        "response": last[0],
    }


def run(repeats: int, show_sql: bool, profile: bool = False) -> None:
    from rest_framework.test import APIClient

    from annotation.models import Assignment, Consolidation

    warnings.filterwarnings("ignore", message="No directory at")
    project, people, tokens = setup_data()
    clients = {}
    for name, token in tokens.items():
        clients[name] = APIClient()
        clients[name].credentials(HTTP_AUTHORIZATION=f"Token {token}")
    open_assignment = (
        Assignment.objects.filter(user=people["ann-a"], annotation__isnull=True)
        .order_by("id")
        .values_list("id", flat=True)
    )[0]
    consolidation = Consolidation.objects.filter(item_stage__item__project=project).order_by("id").first()
    state = {"version": 0, "consolidation_version": consolidation.version}
    rng = random.Random(5)

    def draft(_number):
        segments = [
            {"label": rng.random() < 0.8, "error_type": None, "comment": "", "refs": []}
            for _ in range(len(Assignment.objects.get(pk=open_assignment).item_stage.content["segments"]))
        ]
        return segments

    segment_count = len(draft(0))

    def save_body(_number):
        body = {
            "payload": {
                "segments": [
                    {"label": rng.random() < 0.8, "error_type": None, "comment": "", "refs": []}
                    for _ in range(segment_count)
                ]
            },
            "version": state["version"],
            "submit": False,
            "active_seconds": 3,
        }
        state["version"] += 1
        return body

    consolidation_segments = len(consolidation.item_stage.content["segments"])

    def consolidation_body(_number):
        body = {
            "payload": {
                "segments": [
                    {"label": True, "error_type": None, "comment": "", "refs": []}
                    for _ in range(consolidation_segments)
                ]
            },
            "version": state["consolidation_version"],
            "submit": False,
        }
        state["consolidation_version"] += 1
        return body

    requests = [
        ("annotator: queue", "ann-a", "GET", f"/api/projects/{project.id}/assignments/?mine=true&page_size=20", None),
        ("annotator: open", "ann-a", "GET", f"/api/assignments/{open_assignment}/annotation/", None),
        ("annotator: draft save", "ann-a", "PUT", f"/api/assignments/{open_assignment}/annotation/", save_body),
        ("consolidator: list", "cons", "GET", f"/api/projects/{project.id}/consolidations/?status=open", None),
        ("consolidator: open", "cons", "GET", f"/api/consolidations/{consolidation.id}/", None),
        ("consolidator: save", "cons", "PUT", f"/api/consolidations/{consolidation.id}/", consolidation_body),
    ]
    for _label, who, method, path, body_of in requests:  # warm-up: every code path loaded once
        measure(clients[who], method, path, body_of, 3)
    print(
        f"  {'request':24s} {'SQL':>4s} {'CPU ms':>7s} {'wall ms':>8s}   (medians of {repeats}; load {os.getloadavg()[0]:.1f})"
    )
    for label, who, method, path, body_of in requests:
        result = measure(clients[who], method, path, body_of, repeats)
        print(f"  {label:24s} {result['statements']:4d} {result['cpu_ms']:7.2f} {result['wall_ms']:8.2f}")
        if show_sql:
            for sql in result["sql"]:
                print(f"      {sql[:150]}")

    client = clients["ann-a"]
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        measure(client, "PUT", f"/api/assignments/{open_assignment}/annotation/", save_body, repeats)
        profiler.disable()
        print(f"\n  cProfile of {repeats} draft saves:")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)

    # The draft save, layer by layer.
    client.handler.load_middleware()
    names = instrument_middleware(client.handler)
    instrument_drf()
    CPU.clear()
    measure(client, "PUT", f"/api/assignments/{open_assignment}/annotation/", save_body, repeats)
    per = {label: 1000 * seconds / repeats for label, seconds in CPU.items()}
    print(f"\n  draft save, Python CPU per request by layer (ms, mean of {repeats}, wrappers included):")
    outer = per.pop("handler: whole chain")
    print(f"    {'the whole middleware chain and view':52s} {outer:6.3f}")
    for name in names:
        inside = per.pop(f"inside {name}")
        print(f"    {'middleware ' + name + ' (own)':52s} {outer - inside:6.3f}")
        outer = inside
    print(f"    {'URL resolving, view call, rendering (innermost)':52s} {outer:6.3f}")
    for label, ms in per.items():
        print(f"      {label:50s} {ms:6.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-name", default=DEFAULT_DB)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--sql", action="store_true", help="print each request's SQL statements")
    parser.add_argument("--profile", action="store_true", help="cProfile the draft save")
    args = parser.parse_args(argv)
    if not args.db_name.startswith("workbench_bench") or not args.db_name.replace("_", "").isalnum():
        parser.error("--db-name must start with workbench_bench (the database is dropped at the end)")
    if not 1 <= args.repeats <= 100_000:
        parser.error("--repeats must be between 1 and 100000")
    configure_environment(args.db_name)
    create_database(args.db_name)
    try:
        django_setup()
        migrate()
        run(args.repeats, args.sql, args.profile)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(args.db_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
