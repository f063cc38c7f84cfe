"""Pages of the exports wing: a project's export download."""

from django.contrib.auth.decorators import login_required
from django.http import Http404

from annotation.exports import formats as exports
from annotation.models import Role
from annotation.pages import project_for


@login_required
def project_export(request, project_id, fmt):
    project, _ = project_for(request, project_id, {Role.ADMIN})
    if fmt not in exports.export_formats(project):
        raise Http404("unknown export format")
    return exports.download(project, fmt)
