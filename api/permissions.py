"""Permission rules of the API; each one has a test in tests/workflow/test_permissions.py."""

from rest_framework.permissions import BasePermission

from annotation import selectors


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
