"""API tokens (api/authentication.py): DRF's answers, one statement per request."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_valid_token_is_its_user_in_one_statement(users, felm_project):
    token = Token.objects.create(user=users["alice"])
    client = with_token(token.key)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/api/projects/{felm_project.id}/assignments/?mine=true")
    assert response.status_code == 200, response.content
    token_statements = [q["sql"] for q in captured.captured_queries if "authtoken_token" in q["sql"]]
    assert len(token_statements) == 1, token_statements
    assert "auth_user" in token_statements[0]  # the user joined, not read again
    me = client.get(f"/api/projects/{felm_project.id}/").json()
    assert me["my_roles"] == ["annotator"]


@pytest.mark.parametrize("key", ["0" * 40, "not-a-token", "abc\x00def"])
def test_an_unknown_token_is_refused(users, felm_project, key):
    response = with_token(key).get(f"/api/projects/{felm_project.id}/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."


def test_the_token_of_a_deactivated_user_is_refused_at_once(users, felm_project):
    token = Token.objects.create(user=users["bob"])
    client = with_token(token.key)
    assert client.get(f"/api/projects/{felm_project.id}/").status_code == 200
    users["bob"].is_active = False
    users["bob"].save(update_fields=["is_active"])
    response = client.get(f"/api/projects/{felm_project.id}/")
    assert response.status_code == 401
    assert response.json()["detail"] == "User inactive or deleted."


def test_a_deleted_token_is_refused_at_once(users, felm_project):
    token = Token.objects.create(user=users["carol"])
    client = with_token(token.key)
    assert client.get(f"/api/projects/{felm_project.id}/").status_code == 200
    token.delete()
    assert client.get(f"/api/projects/{felm_project.id}/").status_code == 401
