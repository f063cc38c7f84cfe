"""What every page view starts with, the core's and the wings': the project a user may see."""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation import selectors
from annotation.models import Project


def project_for(request, project_id: int, roles: set[str] | None = None) -> tuple[Project, set[str]]:
    """The project if the user belongs to it (404 otherwise), with one of ``roles`` (403 otherwise)."""
    project = get_object_or_404(Project, pk=project_id)
    user_roles = selectors.user_roles(request.user, project)
    if not user_roles:
        raise Http404("no such project")
    if roles and not (user_roles & roles):
        raise PermissionDenied("your role in this project does not allow this page")
    return project, user_roles
