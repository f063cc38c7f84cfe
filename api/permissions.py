"""Permission rules of the API; each one has a test in tests/workflow/test_permissions.py.

Every operation names its rule where it is defined: an extra action in its
``@action(permission_classes=...)``, the router's own actions of a viewset in the viewset
(``permission_classes``, or ``action_permissions`` where they differ), a plain view in its class.
One that names none gets ``Undeclared`` (DEFAULT_PERMISSION_CLASSES), which refuses everyone;
tests/api/test_route_permissions.py fails on it before that.
"""

from rest_framework.permissions import BasePermission, IsAuthenticated

from annotation import selectors


class Undeclared(BasePermission):
    message = "this operation declares no permission rule"

    def has_permission(self, request, view):
        return False


class IsStaff(BasePermission):
    message = "only staff administrators may do this"

    def has_permission(self, request, view):
        return selectors.can_create_projects(request.user)


class IsProjectMember(BasePermission):
    def has_object_permission(self, request, view, obj):
        return bool(selectors.user_roles(request.user, obj))


class IsProjectAdmin(BasePermission):
    message = "only the project's admins may do this"

    def has_object_permission(self, request, view, obj):
        return selectors.is_project_admin(request.user, obj)


class CanConsolidate(BasePermission):
    message = "only the project's consolidators and admins may do this"

    def has_object_permission(self, request, view, obj):
        return selectors.can_consolidate(request.user, obj)


# A project's operations (the object rules apply when the view reads the project).
PROJECT_MEMBERS = [IsAuthenticated, IsProjectMember]  # annotators, consolidators, admins
PROJECT_CONSOLIDATORS = [IsAuthenticated, CanConsolidate]  # consolidators and admins
PROJECT_ADMINS = [IsAuthenticated, IsProjectAdmin]
