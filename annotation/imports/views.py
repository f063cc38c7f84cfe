"""Pages of the imports wing."""


def import_errors_text(errors: list[dict]) -> str:
    return "; ".join(f"line {e['line']}, field {e['field']}: {e['message']}" for e in errors)
