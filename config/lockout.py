"""Login rate limiting (django-axes): who a client is, and what a locked-out client reads.

Failures count per username and client address (AXES_LOCKOUT_PARAMETERS), so one attacker
cannot lock a user out everywhere, and a locked-out address can still log in as someone else.
"""

from django.conf import settings
from django.shortcuts import render


def client_ip(request) -> str | None:
    """The client's address: behind our TLS proxy the last X-Forwarded-For entry (the one the
    proxy appended; earlier entries are whatever the client sent), else REMOTE_ADDR."""
    if settings.TRUST_X_FORWARDED_FOR:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.split(",")[-1].strip()
        if last:
            return last
    return request.META.get("REMOTE_ADDR")


# AccessAttempt.username's length: a longer name failed the failure record with a 500.
RECORDED_USERNAME_LENGTH = 255


def client_username(request, credentials=None) -> str | None:
    """The username a login attempt is counted under (AXES_USERNAME_CALLABLE): axes' own choice,
    cut to what its table stores (real usernames are at most 150 characters)."""
    field = settings.AXES_USERNAME_FORM_FIELD
    if credentials:
        username = credentials.get(field)
    else:
        username = getattr(request, "data", request.POST).get(field)
    return username[:RECORDED_USERNAME_LENGTH] if isinstance(username, str) else username


def cooloff_minutes() -> int:
    return max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))


def lockout_message() -> str:
    return f"Too many failed logins for this username from your address: try again in {cooloff_minutes()} minutes."


def lockout_response(request, original_response=None, credentials=None):
    """The login page's answer to a locked-out client (AXES_LOCKOUT_CALLABLE); the token
    endpoint answers JSON itself (api.views.TokenView)."""
    return render(
        request,
        "registration/lockout.html",
        {
            "message": lockout_message(),
            "minutes": cooloff_minutes(),
            "failure_limit": settings.AXES_FAILURE_LIMIT,
        },
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
