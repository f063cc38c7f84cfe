"""`@extend_schema` for the API's views, applied when the OpenAPI schema is built, not at import.

Issue 22 (web worker memory): drf-spectacular's `extend_schema` resolves the base schema class when
it decorates (`api_settings.DEFAULT_SCHEMA_CLASS`, i.e. `api.schema.AutoSchema`), and importing that
class loads `drf_spectacular.openapi` → `drf_spectacular.plumbing` → `rest_framework.test` →
`django.test` (with unittest, jinja2, xml.dom): several MiB per web worker for the schema, which no
other request needs. This `extend_schema` only records the decoration; `apply_deferred()` hands every
recorded one, in the order they were made, to drf-spectacular's own `extend_schema` the first time
`api.schema` is imported (every schema generation goes through `api.schema.AutoSchema`, the
`DEFAULT_SCHEMA_CLASS`), and from then on decorations apply at once. drf-spectacular's decorator
returns its argument unchanged, so applying it later yields the same schema (`manage.py spectacular`
before and after: byte-identical). Use it above `@action`, as drf-spectacular's.

`extend_schema_field`, `OpenApiParameter`, `OpenApiResponse` and `OpenApiTypes` are light (no
schema class involved): import them from drf-spectacular directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema as spectacular_extend_schema  # light: decorating is not
from rest_framework.viewsets import _check_attr_name, _is_extra_action

_deferred: list[tuple[Any, dict[str, Any]]] = []
_applied = False


def extend_schema(**kwargs: Any) -> Callable[[Any], Any]:
    """drf-spectacular's `extend_schema(**kwargs)`, deferred until the schema is built."""

    def decorator(target: Any) -> Any:
        if _applied:
            return spectacular_extend_schema(**kwargs)(target)
        _deferred.append((target, kwargs))
        return target

    return decorator


def apply_deferred() -> None:
    """Apply the recorded decorations (called by `api.schema` once its AutoSchema exists)."""
    global _applied
    _applied = True
    while _deferred:
        target, kwargs = _deferred.pop(0)
        spectacular_extend_schema(**kwargs)(target)


# A viewset mixin (first among the bases): DRF's `get_extra_actions`, minus one attribute.
#
# DRF lists a viewset's `@action`s with `inspect.getmembers(cls)`, which reads every attribute,
# `schema` too: DRF's `DefaultSchema` descriptor then imports DEFAULT_SCHEMA_CLASS (api.schema and
# with it drf-spectacular's generator, rest_framework.test, django.test, jinja2). The router does
# this for every viewset when the URL conf loads, so every web worker paid for the schema at its
# first request. `schema` is never an action; skipping it changes nothing else.
# No docstring: drf-spectacular describes a viewset with the first docstring of its bases (the
# schema would gain this text).
class ExtraActionsWithoutSchema:
    @classmethod
    def get_extra_actions(cls):
        actions = []
        for name in sorted(dir(cls)):  # getmembers' order
            if name == "schema":
                continue
            try:
                value = getattr(cls, name)
            except AttributeError:
                continue
            if _is_extra_action(value):
                actions.append(_check_attr_name(value, name))
        return actions
