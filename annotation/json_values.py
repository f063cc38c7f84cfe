"""Checks on JSON values from outside (import lines, API payloads) before they reach the database."""


def nul_path(value, path: str = "") -> str | None:
    """The path ("response", "labels[2]", "meta.note") of the first string or key holding U+0000, or None.

    PostgreSQL cannot store U+0000 in text or JSON, so such input is refused with its place
    instead of failing in the database.
    """
    if isinstance(value, str):
        return (path or "(value)") if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if "\x00" in str(key):
                return where
            found = nul_path(item, where)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = nul_path(item, f"{path}[{index}]")
            if found:
                return found
    return None
