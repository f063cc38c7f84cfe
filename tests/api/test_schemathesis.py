"""Property-based API run (schemathesis): no answer is a 5xx, and every answer is documented.

Each operation gets generated requests (valid and invalid), each sent as a staff admin, an
annotator and a consolidator of a project with items, assignments and an open consolidation.
Most path ids are steered to that data, so requests reach the code behind the 404s. The run is
derandomized, so CI sees the same cases every time; SCHEMATHESIS_MAX_EXAMPLES changes its size.
Bugs it found have a test of their own (test_hostile_input.py, test_login_rate_limit.py).
"""

import os
import random
from collections import Counter

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotation.imports.items import import_jsonl
from annotation.models import Assignment, Consolidation
from annotation.services.annotations import save_annotation
from annotation.services.projects import create_project
from tests.helpers.builders import felm_line, jsonl, project_with_team, segment

MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "60"))
ROLES = {"admin": "admin", "annotator": "alice", "consolidator": "carol"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Requests per role and status class, and per operation and status code, for test_summary.
TALLY: Counter = Counter()

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = get_wsgi_application()
# Filled per test by the `world` fixture: existing ids per collection of the API.
IDS: dict[str, list[int]] = {}


SEGMENTS = [segment(True), segment(False, "knowledge_error", "wrong"), segment(None)]


def stored_version(model, pk) -> int:
    row = model.objects.filter(pk=pk).first()
    if model is Assignment:
        return getattr(getattr(row, "annotation", None), "version", 0)
    return row.version if row else 0


# Bodies that pass validation, for a share of the cases of operations whose generated bodies
# almost never do (a FELM payload at the stored version, an existing username), so their
# success paths run too.
VALID_BODIES = {
    "PUT /api/assignments/{id}/annotation/": lambda rng, pk: {
        "payload": {"segments": [rng.choice(SEGMENTS) for _ in range(3)]},
        "submit": rng.random() < 0.2,
        "version": stored_version(Assignment, pk) if rng.random() < 0.8 else rng.randrange(3),
    },
    "PUT /api/consolidations/{id}/": lambda rng, pk: {
        "payload": {"segments": [rng.choice(SEGMENTS[:2]) for _ in range(3)]},
        "submit": rng.random() < 0.02,
        "version": stored_version(Consolidation, pk) if rng.random() < 0.8 else rng.randrange(3),
    },
    "POST /api/projects/{id}/members/": lambda rng, pk: {
        "username": rng.choice(["alice", "bob", "carol", "mallory"]),
        "role": rng.choice(["annotator", "consolidator"]),
    },
    "POST /api/consolidations/{id}/discard/": lambda rng, pk: {"reason": "duplicate item"},
}
# Cases steered so far, per operation: seeds its choices independently of which tests run.
STEPS: Counter = Counter()


def steer(case):
    """Seven in ten ids name an existing row of the path's collection (a random id is a 404 and
    tests little; the first ids listed are picked most), and three in ten bodies of the
    operations above are valid. Deterministic: the choices are seeded with the operation and
    the case's place in its derandomized run."""
    STEPS[case.operation.label] += 1
    rng = random.Random(f"{case.operation.label} {STEPS[case.operation.label]}")
    known = IDS.get(case.operation.path.split("/")[2])
    if isinstance(case.path_parameters, dict) and "id" in case.path_parameters and known and rng.random() < 0.7:
        case.path_parameters = {
            **case.path_parameters,
            "id": known[min(int(rng.expovariate(1.0)), len(known) - 1)],
        }
    valid_body = VALID_BODIES.get(case.operation.label)
    if valid_body and rng.random() < 0.3:
        pk = (case.path_parameters or {}).get("id")
        case.body, case.media_type = (
            valid_body(rng, pk if isinstance(pk, int) else None),
            "application/json",
        )


@pytest.fixture
def world(users):
    """A FELM project with three items assigned to alice and bob, one consolidation open, and a
    second project none of the three roles belongs to."""
    project = project_with_team(users, "Fuzzed", "felm")
    import_jsonl(
        project,
        jsonl([felm_line(i, [f"Claim {i}.{k}." for k in range(3)]) for i in range(3)]),
        fmt="felm",
    )
    for name in ("alice", "bob"):
        assignment = Assignment.objects.get(user=users[name], item_stage__item=project.items.order_by("id").first())
        save_annotation(
            assignment=assignment,
            user=users[name],
            payload={"segments": [segment(True)] * 3},
            version=0,
            submit=True,
        )
    other = create_project(name="Not theirs", kind="felm", created_by=users["mallory"])
    mine = Assignment.objects.filter(user=users["alice"]).order_by("-id")  # the last one first: still a draft
    IDS.update(
        projects=[project.id, other.id],
        assignments=[
            *mine.values_list("id", flat=True),
            Assignment.objects.filter(user=users["bob"]).first().id,
        ],
        consolidations=list(Consolidation.objects.values_list("id", flat=True)),
    )
    assert IDS["consolidations"], "the fixture should open a consolidation"
    headers = {
        role: {"Authorization": f"Token {Token.objects.get_or_create(user=users[name])[0].key}"}
        for role, name in ROLES.items()
    }
    # Django's test client keeps the test's transaction open across requests; a bare WSGI call
    # would close the connection (and roll the fixture data away) at the end of each request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield headers
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
        IDS.clear()


@pytest.mark.django_db
@schema.parametrize()
@hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_api(case, world):
    steer(case)
    for role, headers in world.items():
        response = case.call(headers=headers)
        TALLY[role, "cases"] += 1
        TALLY[role, f"{response.status_code // 100}xx"] += 1
        TALLY[case.operation.label, response.status_code] += 1
        case.validate_response(response, checks=CHECKS, headers=headers)


def test_summary(request):
    """The totals of the run above (pytest -s prints them): every operation test_api was given
    in this session sent requests (hypothesis may filter every generated case of an operation
    away and pass without a request), every role got answers of each class the API gives it,
    none a 5xx, and the steering reached past the 404s of every operation that takes an id (a
    run of 404s only would test nothing behind them)."""
    # schemathesis names each operation's item test_api[<label>] (its node id leaves the label out)
    given = {
        item.name.removeprefix("test_api[").removesuffix("]")
        for item in request.session.items
        if item.parent is request.node.parent and item.name.startswith("test_api[")
    }
    if not given:
        pytest.skip("test_api is not part of this session: nothing to sum up")
    problems = [f"{label} sent no request" for label in sorted(given) if not any(key == label for key, _ in TALLY)]
    for role in ROLES:
        counts = {key: n for (r, key), n in sorted(TALLY.items()) if r == role}
        print(f"schemathesis {role}: {counts}")
        if not counts.get("2xx"):
            problems.append(f"{role} never got a 2xx answer: {counts}")
        if counts.get("5xx"):
            problems.append(f"{role} got {counts['5xx']} server errors")
    for label in sorted({key for key, _ in TALLY if key not in ROLES}):
        codes = dict(sorted((code, n) for (op, code), n in TALLY.items() if op == label))
        print(f"schemathesis {label}: {codes}")
        if "{id}" in label and set(codes) <= {404}:
            problems.append(f"{label} only ever answered 404")
    assert not problems, problems
