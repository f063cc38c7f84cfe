"""Login rate limiting (django-axes): failures count per username and client address, on the
login page and on POST /api/auth/token/; a locked-out pair gets 429 for the cool-off period."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.helpers.builders import PASSWORD

pytestmark = pytest.mark.django_db

LIMIT = 5  # the default of AXES_FAILURE_LIMIT
LOCKED = "Too many failed logins for this username from your address"


def page_login(client, username, password, ip="10.0.0.1", **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=ip, **extra)


def token_login(client, username, password, ip="10.0.0.1", **extra):
    return client.post(
        "/api/auth/token/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=ip,
        **extra,
    )


def test_the_defaults_are_five_failures_and_fifteen_minutes(settings):
    assert settings.AXES_FAILURE_LIMIT == LIMIT
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_login_page_locks_a_username_out_from_an_address_after_five_failures(users):
    client = Client()
    for _ in range(LIMIT - 1):
        response = page_login(client, "alice", "wrong")
        assert response.status_code == 200 and b"didn't match" in response.content
    assert page_login(client, "alice", "wrong").status_code == 429
    locked = page_login(client, "alice", PASSWORD)  # the right password does not help now
    assert locked.status_code == 429
    page = locked.content.decode()
    assert LOCKED in page and "15 minutes" in page and "<html" in page
    assert "_auth_user_id" not in client.session
    # another username from the same address, and the same username from another address, log in
    assert page_login(Client(), "bob", PASSWORD).status_code == 302
    assert page_login(Client(), "alice", PASSWORD, ip="10.0.0.2").status_code == 302


def test_token_endpoint_locks_a_username_out_from_an_address_after_five_failures(users):
    client = APIClient()
    for _ in range(LIMIT - 1):
        assert token_login(client, "alice", "wrong").status_code == 400
    assert token_login(client, "alice", "wrong").status_code == 429
    locked = token_login(client, "alice", PASSWORD)
    assert locked.status_code == 429
    assert locked.json() == {"detail": f"{LOCKED}: try again in 15 minutes."}
    assert token_login(client, "bob", PASSWORD).status_code == 200
    assert "token" in token_login(client, "alice", PASSWORD, ip="10.0.0.2").json()


def test_failures_on_the_page_and_the_api_add_up(users):
    for _ in range(3):
        assert page_login(Client(), "alice", "wrong").status_code == 200
    assert token_login(APIClient(), "alice", "wrong").status_code == 400
    assert token_login(APIClient(), "alice", "wrong").status_code == 429
    assert page_login(Client(), "alice", PASSWORD).status_code == 429


def test_a_success_resets_only_its_own_username_and_address(users):
    for _ in range(LIMIT - 1):
        token_login(APIClient(), "alice", "wrong")
    assert token_login(APIClient(), "alice", PASSWORD).status_code == 200  # resets alice@10.0.0.1
    for _ in range(LIMIT - 1):
        assert token_login(APIClient(), "alice", "wrong").status_code == 400
    assert token_login(APIClient(), "alice", PASSWORD).status_code == 200

    for _ in range(LIMIT):
        token_login(APIClient(), "carol", "wrong")
    # bob's success from the same address, and alice's, do not unlock carol
    assert token_login(APIClient(), "bob", PASSWORD).status_code == 200
    assert token_login(APIClient(), "alice", PASSWORD).status_code == 200
    assert token_login(APIClient(), "carol", PASSWORD).status_code == 429


def test_the_lockout_ends_after_the_cooloff(users, settings):
    from datetime import timedelta

    for _ in range(LIMIT):
        token_login(APIClient(), "alice", "wrong")
    assert token_login(APIClient(), "alice", PASSWORD).status_code == 429
    settings.AXES_COOLOFF_TIME = timedelta(seconds=0)
    assert token_login(APIClient(), "alice", PASSWORD).status_code == 200


def test_a_forged_x_forwarded_for_does_not_escape_the_lockout_without_a_proxy(users, settings):
    settings.TRUST_X_FORWARDED_FOR = False
    for n in range(LIMIT):
        token_login(APIClient(), "alice", "wrong", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert token_login(APIClient(), "alice", PASSWORD, HTTP_X_FORWARDED_FOR="192.0.2.99").status_code == 429


def test_behind_the_proxy_the_address_it_appended_is_the_client(users, settings):
    settings.TRUST_X_FORWARDED_FOR = True
    for _ in range(LIMIT):
        # the client forges the first entry; the proxy appends the address it saw
        token_login(
            APIClient(),
            "alice",
            "wrong",
            ip="10.9.9.9",
            HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7",
        )
    assert (
        token_login(
            APIClient(),
            "alice",
            PASSWORD,
            ip="10.9.9.9",
            HTTP_X_FORWARDED_FOR="5.6.7.8, 198.51.100.7",
        ).status_code
        == 429
    )
    # another client behind the same proxy is not locked out
    assert (
        token_login(APIClient(), "alice", PASSWORD, ip="10.9.9.9", HTTP_X_FORWARDED_FOR="198.51.100.8").status_code
        == 200
    )


def test_an_overlong_username_is_refused_and_counted_not_a_500(users):
    """django-axes records failures with the username (255 characters at most): 500 on PostgreSQL."""
    response = token_login(APIClient(), "x" * 300, "wrong")
    assert response.status_code == 400 and "username" in response.json()
    for _ in range(LIMIT - 1):
        assert page_login(Client(), "x" * 300, "wrong").status_code == 200
    assert page_login(Client(), "x" * 300, "wrong").status_code == 429
