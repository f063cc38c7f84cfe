"""Builders shared by the tests: users' password, projects with a team, import lines and
uploads, API clients and stored annotations."""

import io
import json

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Assignment, AssignmentRole, AssignmentStatus, Role
from annotation.services.projects import add_member, create_project

PASSWORD = "test-pass-123"


def project_with_team(users, name: str, kind: str):
    """A project created by the staff admin, with alice and bob annotating and carol consolidating."""
    project = create_project(name=name, kind=kind, created_by=users["admin"])
    add_member(project=project, user=users["alice"], role=Role.ANNOTATOR)
    add_member(project=project, user=users["bob"], role=Role.ANNOTATOR)
    add_member(project=project, user=users["carol"], role=Role.CONSOLIDATOR)
    return project


def felm_line(index: int, segments: list[str], **extra) -> dict:
    return {
        "index": str(index),
        "source": "test",
        "prompt": f"Question {index}?",
        "response": " ".join(segments),
        "segmented_response": segments,
        "labels": [True] * len(segments),
        "comment": [""] * len(segments),
        "type": [None] * len(segments),
        "ref": [],
        "domain": "wk",
        **extra,
    }


def jsonl(records: list[dict]) -> io.BytesIO:
    buffer = io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())
    buffer.name = "items.jsonl"
    return buffer


def post_import(client, project_id: int, upload, fmt: str = "plain", **fields):
    """POST an upload to the import endpoint, let its task run (on commit, eagerly), then read
    the job: (answer to the POST, job as GET answers it after the task)."""
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(
            f"/api/projects/{project_id}/import/",
            {"file": upload, "format": fmt, **fields},
            format="multipart",
        )
    if response.status_code != 202:
        return response, None
    job = client.get(response.json()["url"])
    assert job.status_code == 200, job.content
    return response, job.json()


def api_client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def segment(label, error_type=None, comment="", refs=()):
    return {"label": label, "error_type": error_type, "comment": comment, "refs": list(refs)}


def submit(item_stage, user, payload, role=AssignmentRole.ANNOTATOR, submitted=True):
    """A stored (submitted) annotation of ``user`` on ``item_stage``, written without the services."""
    assignment = Assignment.objects.create(
        item_stage=item_stage, user=user, role=role, status=AssignmentStatus.SUBMITTED
    )
    Annotation.objects.create(assignment=assignment, payload=payload, submitted=submitted)
