"""Errors the domain services raise; the API and the browser views turn them into answers."""


class DomainError(Exception):
    """A request the domain refuses, with a message fit to show the user."""


class VersionConflict(DomainError):
    """A save based on an older version than the stored one (e.g. a stale browser tab)."""

    def __init__(self, stored_version: int, given_version: int):
        self.stored_version = stored_version
        self.given_version = given_version
        super().__init__(
            f"version {given_version} is stale: version {stored_version} is stored; reload to get the newer work"
        )


class ProjectDeleted(DomainError):
    """The project was deleted while this write waited for it (the API answers 404)."""

    def __init__(self, project_id: int):
        self.project_id = project_id
        super().__init__("this project was deleted")


class ImportFailed(DomainError):
    """An import file with bad lines; nothing of it was written."""

    def __init__(self, errors: list[dict]):
        self.errors = errors
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"line {first['line']}, field {first['field']!r}: {first['message']}{more}")


class UploadTooLarge(DomainError):
    """An import file above ``IMPORT_MAX_UPLOAD_BYTES`` (the API answers 413)."""

    def __init__(self, size: int | None, limit: int):
        self.size, self.limit = size, limit
        got = f" ({readable_size(size)})" if size is not None else ""
        super().__init__(
            f"the file is too large{got}: imports take at most {readable_size(limit)} "
            "(IMPORT_MAX_UPLOAD_BYTES); split it into several files"
        )


def readable_size(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size} bytes"
