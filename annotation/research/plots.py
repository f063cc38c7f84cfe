"""Geometry of the small plots drawn as inline SVG on server-rendered pages.

The functions take plain numbers and return plain dicts of coordinates and texts; the templates
``annotation/_plot_bars.html``, ``_plot_heatmap.html`` and ``_plot_lines.html`` only place them
(every text goes through Django's autoescape, so labels made by users are safe). No chart
library and no JavaScript: the plots work in an export-to-PDF, with scripts off, and on a phone.

Every SVG has a fixed viewBox of ``WIDTH`` units and scales to the width of its container, so
the sizes below are chosen to stay readable when the page is 390 px wide (a 400-unit-wide
plot drawn at about 350 px keeps 13-unit text at about 11 px).
"""

from math import ceil, floor, isfinite, log10

from annotation.research.agreement import iso_weeks_between

WIDTH = 400
FONT = 13
# average advance of a character at FONT, for truncating labels to the room they have
CHAR = FONT * 0.58
PAD = 8


def _number(value) -> float | None:
    """A finite float, or None for anything missing or undefined (NaN, None)."""
    if value is None:
        return None
    value = float(value)
    return value if isfinite(value) else None


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _tick_text(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1e-9 else "0"


def _truncate(text: str, room: float) -> str:
    """``text`` cut to about ``room`` units of width with an ellipsis (the full text goes in a <title>)."""
    most = max(int(room / CHAR), 3)
    return text if len(text) <= most else text[: most - 1] + "…"


def _ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Round values (multiples of 1, 2.5, 2 or 5 × 10ⁿ, the first that fits) from ``low`` to ``high``, at most ``most``."""
    span = high - low
    magnitude = 10.0 ** floor(log10(span / (most - 1)))
    step = next(magnitude * f for f in (1, 2.5, 2, 5, 10) if span / (magnitude * f) <= most - 1)
    first = ceil(low / step - 1e-9)
    values = []
    while (value := round((first + len(values)) * step, 10)) <= high + 1e-9:
        values.append(value)
    return values


def _check_domain(domain) -> tuple[float, float]:
    low, high = (float(v) for v in domain)
    if not (isfinite(low) and isfinite(high) and low < high):
        raise ValueError(f"domain must be two finite numbers, low < high, not {domain!r}")
    return low, high


def _interval_text(value, low, high) -> str:
    text = _fmt(value)
    if low is not None and high is not None:
        text += f" [{_fmt(low)}, {_fmt(high)}]"
    return text


def bar_chart(bars: list[dict], *, domain: tuple[float, float] = (0.0, 1.0), title: str = "", unit: str = "") -> dict:
    """Horizontal bars with confidence-interval whiskers.

    ``bars``: [{"label": str, "value": float | None, "low": float | None, "high": float | None}]
    (``low``/``high`` optional). Each bar gets its own row: the label and the value text (with the
    interval in brackets) on one line, the bar beneath it across the full width, so long labels
    never squeeze the bars on a narrow screen. Bars start at 0 when the domain contains it (a
    negative κ points left), otherwise at the domain's low end; values and whiskers outside the
    domain are drawn clipped to its edge and marked ``clipped``. A bar whose value is None is
    listed with "–" and no bar.

    Returns {"title", "unit", "width", "height", "view_box", "axis", "ticks", "baseline", "bars",
    "empty", "description"}; see ``templates/annotation/_plot_bars.html``.
    """
    low_end, high_end = _check_domain(domain)
    left, right = PAD, WIDTH - PAD
    span = right - left

    def x_of(value: float) -> float:
        clamped = min(max(value, low_end), high_end)
        return round(left + (clamped - low_end) / (high_end - low_end) * span, 2)

    base_value = 0.0 if low_end <= 0.0 <= high_end else low_end
    baseline = x_of(base_value)
    row_height, bar_height, top = FONT + 24, 12, (FONT + 10 if title else 4)
    rows = []
    for index, bar in enumerate(bars):
        label = str(bar.get("label", ""))
        value, low, high = (_number(bar.get(key)) for key in ("value", "low", "high"))
        text = _interval_text(value, low, high) + (f" {unit}" if unit and value is not None else "")
        y = top + index * row_height
        row = {
            "label": _truncate(label, span - len(text) * CHAR - PAD),
            "full_label": label,
            "value_text": text,
            "title": f"{label}: {text}",
            "text_y": y + FONT,
            "bar_y": y + FONT + 5,
            "bar_height": bar_height,
            "missing": value is None,
            "clipped": any(v is not None and not low_end <= v <= high_end for v in (value, low, high)),
            "whisker": None,
        }
        if value is not None:
            end = x_of(value)
            row["bar_x"], row["bar_width"] = min(baseline, end), round(abs(end - baseline), 2)
            if low is not None and high is not None:
                middle = row["bar_y"] + bar_height / 2
                row["whisker"] = {
                    "x1": x_of(low),
                    "x2": x_of(high),
                    "y": middle,
                    "cap_top": middle - 5,
                    "cap_bottom": middle + 5,
                }
        rows.append(row)
    axis_y = top + len(rows) * row_height + 2
    height = axis_y + FONT + 10
    values = _ticks(low_end, high_end)
    ticks = [
        {
            "x": x_of(t),
            "text": _tick_text(t),
            "anchor": "start"
            if x_of(t) - len(_tick_text(t)) * CHAR / 2 < 0
            else "end"
            if x_of(t) + len(_tick_text(t)) * CHAR / 2 > WIDTH
            else "middle",
        }
        for t in values
    ]
    return {
        "title": title,
        "unit": unit,
        "width": WIDTH,
        "height": height,
        "view_box": f"0 0 {WIDTH} {height}",
        "font": FONT,
        "title_y": FONT,
        "axis": {
            "x1": left,
            "x2": right,
            "y": axis_y,
            "grid_top": top,
            "label_y": axis_y + FONT + 4,
        },
        "ticks": ticks,
        "baseline": baseline,
        "bars": rows,
        "empty": not rows,
        "description": "; ".join(row["title"] for row in rows) or "no data",
    }


def heatmap(
    matrix: list[list[float]],
    *,
    row_labels: list[str],
    column_labels: list[str] | None = None,
    title: str = "",
    row_title: str = "",
    column_title: str = "",
) -> dict:
    """A matrix of counts as shaded squares with the count in each (a confusion matrix).

    Shade is the cell's share of the largest cell; text turns white on dark cells. Column labels
    stand upright over the columns so long labels ("Irrelevant to the question") cost height,
    not the cells' width. Returns {"title", "width", "height", "view_box", "cells", "rows", "columns",
    "row_title", "column_title", "empty", "description"}; see ``_plot_heatmap.html``.
    """
    column_labels = list(row_labels if column_labels is None else column_labels)
    row_labels = [str(label) for label in row_labels]
    column_labels = [str(label) for label in column_labels]
    if len(matrix) != len(row_labels) or any(len(row) != len(column_labels) for row in matrix):
        raise ValueError(f"matrix must be {len(row_labels)} rows × {len(column_labels)} columns like its labels")
    n_rows, n_columns = len(row_labels), len(column_labels)
    label_room = min(max((len(label) for label in row_labels), default=1) * CHAR + PAD, 150)
    left = PAD + label_room + (FONT + 4 if row_title else 0)
    # column labels stand upright over their columns: long labels cost height, not width
    column_room = min(max((len(label) for label in column_labels), default=1) * CHAR, 150)
    cell = min((WIDTH - left - PAD) / max(n_columns, 1), 64)
    top = (FONT + 10 if title else 4) + (FONT + 6 if column_title else 0) + column_room + 6
    peak = max((float(v) for row in matrix for v in row), default=0.0) or 1.0
    cells = []
    for r, row in enumerate(matrix):
        for c, value in enumerate(row):
            shade = round(float(value) / peak, 3)
            x, y = round(left + c * cell, 2), round(top + r * cell, 2)
            number = float(value)
            text = f"{int(number)}" if number.is_integer() else f"{number:.3g}"
            cells.append(
                {
                    "x": x,
                    "y": y,
                    "size": round(cell, 2),
                    "shade": shade,
                    "dark": shade > 0.55,
                    "text": text,
                    "text_x": round(x + cell / 2, 2),
                    "text_y": round(y + cell / 2 + FONT * 0.35, 2),
                    "title": f"{row_labels[r]} × {column_labels[c]}: {text}",
                }
            )
    rows = [
        {
            "text": _truncate(label, label_room),
            "full": label,
            "x": round(left - PAD / 2, 2),
            "y": round(top + r * cell + cell / 2 + FONT * 0.35, 2),
        }
        for r, label in enumerate(row_labels)
    ]
    column_base = top - 6
    columns = [
        {
            "text": _truncate(label, column_room),
            "full": label,
            "x": round(left + c * cell + cell / 2 + FONT * 0.35, 2),
            "y": round(column_base, 2),
        }
        for c, label in enumerate(column_labels)
    ]
    height = round(top + n_rows * cell + PAD, 2)
    return {
        "title": title,
        "width": WIDTH,
        "height": height,
        "view_box": f"0 0 {WIDTH} {height}",
        "font": FONT,
        "title_y": FONT,
        "cells": cells,
        "rows": rows,
        "columns": columns,
        "row_title": row_title,
        "column_title": column_title,
        "row_title_x": FONT,
        "row_title_y": round(top + n_rows * cell / 2, 2),
        "column_title_x": round(left + n_columns * cell / 2, 2),
        "column_title_y": (FONT + 10 if title else 4) + FONT,
        "grid": {
            "x": left,
            "y": round(top, 2),
            "width": round(n_columns * cell, 2),
            "height": round(n_rows * cell, 2),
        },
        "empty": not cells,
        "description": (
            f"{row_title or 'rows'} × {column_title or 'columns'}: " + "; ".join(cell["title"] for cell in cells)
        )
        if cells
        else "no data",
    }


def line_chart(
    series: list[dict],
    *,
    domain: tuple[float, float] = (0.0, 1.0),
    title: str = "",
    unit: str = "",
    x_labels: list[str] | None = None,
) -> dict:
    """Lines over ordered categories (ISO weeks) with interval whiskers at each point.

    ``series``: [{"name": str, "points": [{"x": str, "value": float | None, "low": ..., "high": ...}]}].
    The x axis is the categories of ``x_labels`` in that order (by default every x of the points, in
    order of first appearance); a missing or None point breaks the line. Series are told apart by
    the class ``series-<n>`` (colour and dash pattern in app.css) and a legend. Returns {"title",
    "width", "height", "view_box", "plot", "y_ticks", "x_ticks", "series", "legend", "empty",
    "description"}; see ``_plot_lines.html``.
    """
    low_end, high_end = _check_domain(domain)
    if x_labels is None:
        x_labels = []
        for one in series:
            for point in one["points"]:
                if str(point["x"]) not in x_labels:
                    x_labels.append(str(point["x"]))
    x_labels = [str(x) for x in x_labels]
    legend_rows = len(series)
    top = (FONT + 10 if title else 4) + legend_rows * (FONT + 6) + 6
    left, right = PAD + 4 * CHAR, WIDTH - PAD - 2
    plot_height = 170
    bottom = top + plot_height
    step = (right - left) / max(len(x_labels), 1)

    def y_of(value: float) -> float:
        clamped = min(max(value, low_end), high_end)
        return round(bottom - (clamped - low_end) / (high_end - low_end) * plot_height, 2)

    x_of = {x: round(left + step * (i + 0.5), 2) for i, x in enumerate(x_labels)}
    # every n-th category is labelled, so that the labels never overlap (the widest would be
    # a week with its year: "2024-W03")
    widest = max((len(x) for x in x_labels), default=1) * CHAR + 10
    every = max(1, ceil(widest / step))
    shown = [i % every == 0 for i in range(len(x_labels))]
    texts = _short_labels([x for x, show in zip(x_labels, shown) if show])[::-1]
    x_ticks = [
        {"x": x_of[x], "text": texts.pop() if show else x, "full": x, "shown": show} for x, show in zip(x_labels, shown)
    ]
    drawn, legend, descriptions = [], [], []
    for number, one in enumerate(series):
        name = str(one.get("name", ""))
        by_x = {str(point["x"]): point for point in one["points"]}
        segments, current, markers = [], [], []
        for x in x_labels:
            point = by_x.get(x)
            value = _number(point.get("value")) if point else None
            if value is None:
                if current:
                    segments.append(current)
                current = []
                continue
            low, high = _number(point.get("low")), _number(point.get("high"))
            # series side by side around the category, so their whiskers do not hide each other
            x_at = round(x_of[x] + (number - (len(series) - 1) / 2) * min(5, step / (2 * len(series))), 2)
            current.append(f"{x_at},{y_of(value)}")
            text = _interval_text(value, low, high)
            markers.append(
                {
                    "x": x_at,
                    "y": y_of(value),
                    "title": f"{name}, {x}: {text}",
                    "whisker": {"y1": y_of(low), "y2": y_of(high)} if low is not None and high is not None else None,
                }
            )
            descriptions.append(f"{name}, {x}: {text}")
        if current:
            segments.append(current)
        css = f"series-{number % 4}"
        drawn.append(
            {
                "name": name,
                "css": css,
                "lines": [" ".join(points) for points in segments],
                "markers": markers,
            }
        )
        legend_y = (FONT + 10 if title else 4) + number * (FONT + 6) + FONT
        legend.append(
            {
                "name": name,
                "css": css,
                "y": legend_y,
                "line_y": legend_y - FONT * 0.35,
                "x1": PAD,
                "x2": PAD + 24,
                "text_x": PAD + 30,
            }
        )
    height = round(bottom + FONT * 2 + PAD, 2)
    y_ticks = [
        {"y": y_of(t), "text": _tick_text(t), "text_y": round(y_of(t) + FONT * 0.35, 2)}
        for t in _ticks(low_end, high_end)
    ]
    return {
        "title": title,
        "unit": unit,
        "width": WIDTH,
        "height": height,
        "view_box": f"0 0 {WIDTH} {height}",
        "font": FONT,
        "title_y": FONT,
        "plot": {
            "left": round(left, 2),
            "right": right,
            "top": top,
            "bottom": bottom,
            "x_label_y": round(bottom + FONT + 4, 2),
            "y_label_x": round(left - 4, 2),
        },
        "y_ticks": y_ticks,
        "x_ticks": x_ticks,
        "series": drawn,
        "legend": legend,
        "empty": not descriptions,
        "description": "; ".join(descriptions) or "no data",
    }


def _short_labels(labels: list[str]) -> list[str]:
    """ISO weeks (``2024-W03``) as ``W03``, with the year where it starts or changes; other
    labels unchanged."""
    shown, year = [], None
    for label in labels:
        if len(label) == 8 and label[4:6] == "-W" and label[:4].isdigit():
            shown.append(label if label[:4] != year else label[5:])
            year = label[:4]
        else:
            shown.append(label)
    return shown


def domain_for(values, low: float = 0.0, high: float = 1.0) -> tuple[float, float]:
    """(low, high) widened in steps of 0.5 to hold every value (κ can be negative), never past
    −1: agreement coefficients live in [−1, 1]."""
    finite = [v for v in (_number(value) for value in values) if v is not None]
    if finite and min(finite) < low:
        low = max(-1.0, (min(finite) * 2 // 1) / 2)
    return low, high


# -- the agreement page's figures -------------------------------------------------------------


def agreement_figures(field: dict, value_name=str) -> dict:
    """The plots of one field of ``research.selectors.project_agreement``'s result: its confusion
    heatmap, observed agreement and κ per annotator pair, per week of submission, and of each
    annotator against the gold records. ``value_name`` turns a label code into the name the
    page shows."""
    matrix = field["confusion_matrix"]
    names = [value_name(label) for label in matrix["labels"]]
    figures = {
        "heatmap": heatmap(
            matrix["rows_annotator_a_columns_annotator_b"],
            row_labels=names,
            row_title="Annotator A",
            column_title="Annotator B",
        )
    }

    def bars(rows, label_of):
        observed = [
            {
                "label": label_of(row),
                "value": row["observed_agreement"],
                **_bounds(row, "observed_agreement"),
            }
            for row in rows
        ]
        kappa = [{"label": label_of(row), "value": row["cohen_kappa"], **_bounds(row, "cohen_kappa")} for row in rows]
        kappa_domain = domain_for(v for bar in kappa for v in (bar["value"], bar["low"]))
        return {
            "observed": bar_chart(observed, title="Observed agreement"),
            "kappa": bar_chart(kappa, domain=kappa_domain, title="Cohen's κ"),
        }

    figures["pairs"] = bars(field["pairs"], lambda pair: " / ".join(map(str, pair["raters"])))
    figures["gold"] = bars(field.get("versus_gold", ()), lambda row: row["annotator"])
    weeks = field.get("over_time", ())
    if weeks:
        series = [
            {
                "name": name,
                "points": [{"x": week["week"], "value": week[key], **_bounds(week, key)} for week in weeks],
            }
            for key, name in (
                ("observed_agreement", "Observed agreement"),
                ("cohen_kappa", "Cohen's κ"),
            )
        ]
        values = (v for one in series for point in one["points"] for v in (point["value"], point["low"]))
        figures["over_time"] = line_chart(
            series,
            domain=domain_for(values),
            x_labels=iso_weeks_between(weeks[0]["week"], weeks[-1]["week"]),
        )
    return figures


def _bounds(row: dict, name: str) -> dict:
    interval = (row.get("ci") or {}).get(name) or (None, None)
    return {"low": interval[0], "high": interval[1]}
