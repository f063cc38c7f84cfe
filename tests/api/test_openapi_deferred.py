"""The API's `@extend_schema` decorations wait until the schema is built (api/openapi.py, issue 22):
the schema must be exactly the one drf-spectacular makes when they apply at import."""

import json
import os
import subprocess
import sys

from rest_framework import viewsets

from api import corpora, views
from tests.helpers.paths import REPO_ROOT

SCRIPT = """
import json, sys
import django
django.setup()
if sys.argv[1] == "at-import":
    import api.schema  # the schema class first: every decoration then applies at once
import config.urls  # the URL conf: every view module
from drf_spectacular.generators import SchemaGenerator
import api.openapi
schema = SchemaGenerator().get_schema(request=None, public=True)
assert not api.openapi._deferred, "decorations left unapplied"
print(json.dumps(schema, sort_keys=True, default=str))
"""


def schema_in_fresh_interpreter(mode):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(REPO_ROOT)}
    env.setdefault("DJANGO_SECRET_KEY", "tests-only-secret-key-not-used-anywhere-else-0123456789")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_deferred_decorations_give_the_schema_of_decorations_applied_at_import():
    deferred = schema_in_fresh_interpreter("deferred")
    at_import = schema_in_fresh_interpreter("at-import")
    assert deferred == at_import
    # and the decorations are there: an operation's summary and a documented error answer
    operations = [op for path in deferred["paths"].values() for op in path.values() if isinstance(op, dict)]
    assert any("summary" in op for op in operations)
    assert any("409" in op.get("responses", {}) for op in operations)


def test_viewsets_list_the_same_actions_as_drf():
    for viewset in (
        views.UserViewSet,
        views.ProjectViewSet,
        views.AssignmentViewSet,
        views.ConsolidationViewSet,
        corpora.CorpusViewSet,
    ):
        ours = [action.__name__ for action in viewset.get_extra_actions()]
        drf = [action.__name__ for action in viewsets.ViewSetMixin.get_extra_actions.__func__(viewset)]
        assert ours == drf, viewset.__name__
    assert [a.__name__ for a in views.ProjectViewSet.get_extra_actions()]  # it has actions
