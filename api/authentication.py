"""API token authentication: DRF's rules, one plain statement on PostgreSQL.

Every API request of the load test carries a token (``Authorization: Token …``), so its lookup is
on the path of every save; DRF builds it with the ORM (``select_related("user").get(key=…)``),
whose query building costs more Python time than the statement itself. Here it is one prepared
text with the user's columns, read into a User as the ORM would. No cache: a token deleted or a
user deactivated is refused at the next request, as before.
"""

import functools

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

User = get_user_model()


@functools.cache  # the model's columns do not change while a process runs
def _user_fields() -> tuple[str, ...]:
    return tuple(field.attname for field in User._meta.concrete_fields)


@functools.cache  # built once a process, not on every request
def _token_sql() -> str:
    columns = ", ".join(f'u."{User._meta.get_field(name).column}"' for name in _user_fields())
    return (
        f'SELECT {columns}, t."created" FROM "{User._meta.db_table}" u '
        f'JOIN "{Token._meta.db_table}" t ON t."user_id" = u."{User._meta.pk.column}" WHERE t."key" = %s'
    )


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, as DRF's (same answers for a missing, unknown or inactive one)."""

    def authenticate_credentials(self, key):
        if connection.vendor != "postgresql":
            return super().authenticate_credentials(key)
        if "\x00" in key:  # PostgreSQL refuses NUL in text: no token has one
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        fields = _user_fields()
        with connection.cursor() as cursor:
            cursor.execute(_token_sql(), [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user = User.from_db(connection.alias, fields, row[: len(fields)])
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token = Token.from_db(connection.alias, ["key", "user_id", "created"], [key, user.pk, row[len(fields)]])
        token.user = user
        return user, token
