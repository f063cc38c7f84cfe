"""The OpenAPI schema also documents the error answers each operation can give."""

from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from drf_spectacular.plumbing import get_view_model
from rest_framework.permissions import SAFE_METHODS, AllowAny, IsAuthenticated

from annotation.params import NATURAL

from .openapi import apply_deferred
from .permissions import IsProjectMember
from .serializers import ErrorSerializer

ERROR_DESCRIPTIONS = {
    "400": "Invalid input: a refused parameter or field is named with its messages, or `detail` says why",
    "401": "No valid credentials: an `Authorization: Token …` header or a session",
    "403": "The caller's role does not allow this, or a session request lacks its CSRF token",
    "404": "No such object, or one the caller may not see",
    "413": "The request body is larger than accepted",
    "415": "The body's Content-Type is none of those the operation reads",
}
# Answered by gunicorn before the application sees the request, so as its HTML page, not JSON.
REQUEST_LINE_TOO_LONG = {
    "description": "The request line (method, path and query string) is longer than the server reads "
    "(gunicorn's `limit_request_line`, 4094 bytes by default): answered by the HTTP server "
    "as a short HTML page, before the application sees the request",
    "content": {"text/html": {"schema": {"type": "string"}}},
}
# Permissions that never answer 403 to a signed-in caller (a non-member's project is a 404).
NEVER_FORBIDDEN = (AllowAny, IsAuthenticated, IsProjectMember)


class AutoSchema(BaseAutoSchema):
    """drf-spectacular's AutoSchema, adding the 4xx answers each operation can give.

    Operations declare their own special answers (409 where versions are checked, 429 on the
    token endpoint); the common ones follow from what the operation takes and who may call it.
    """

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        parameters = operation.get("parameters", [])
        has_body = "requestBody" in operation
        codes = []
        if has_body or any(p["in"] == "query" for p in parameters):
            codes.append("400")
        if self.view.authentication_classes:
            codes.append("401")
        if method not in SAFE_METHODS or any(not isinstance(p, NEVER_FORBIDDEN) for p in self.view.get_permissions()):
            codes.append("403")
        if any(p["in"] == "path" for p in parameters):
            codes.append("404")
        if has_body:
            codes += ["413", "415"]
        error = self._error_schema()
        for code in codes:
            operation["responses"].setdefault(
                code,
                {
                    "description": ERROR_DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": error}},
                },
            )
        # Any request line can be too long (a path, a query string).
        operation["responses"].setdefault("414", REQUEST_LINE_TOO_LONG)
        operation["responses"] = dict(sorted(operation["responses"].items()))
        return operation

    def _resolve_path_parameters(self, variables):
        """Router ids match a digits pattern (api.urls.Router), which drf-spectacular documents as
        a string with that pattern: document them as the integer ids they are."""
        parameters = super()._resolve_path_parameters(variables)
        model = get_view_model(self.view, emit_warnings=False)
        for parameter in parameters:
            if parameter["schema"].get("pattern") == f"^{NATURAL.pattern}$":
                parameter["schema"] = {"type": "integer"}
                if model is not None and not parameter.get("description"):
                    parameter["description"] = f"A unique integer value identifying this {model._meta.verbose_name}."
        return parameters

    def _error_schema(self):
        return self.resolve_serializer(ErrorSerializer, "response").ref


# The API's `@extend_schema` decorations wait for this class (api/openapi.py: drf-spectacular's
# decorator needs the schema class, and loading it at start-up cost every web worker several MiB).
# Every schema generation reaches this module through DEFAULT_SCHEMA_CLASS before it reads them.
apply_deferred()
