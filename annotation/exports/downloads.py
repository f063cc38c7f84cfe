"""What the pages hand out as files: names made from a project's name, and CSV a spreadsheet
opens as data (agreement tables, the leaderboard, exports)."""

import csv
import io
from collections.abc import Iterable
from typing import Any

# A spreadsheet runs a cell starting with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def file_stem(project) -> str:
    """The project's name with only letters, digits, "-" and "_" (a file name every system takes)."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in project.name).strip("-") or "project"


def attachment(response, filename: str):
    """``response`` as a download named ``filename``."""
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def spreadsheet_safe(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula, quoted with a leading apostrophe; numbers
    (a negative κ too) and everything else unchanged, None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def table_csv(columns: list[str], rows: Iterable[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    writer.writerows([spreadsheet_safe(cell) for cell in row] for row in rows)
    return out.getvalue()
