"""The agreement page's tables, for download: one flat table per kind of number the page shows,
built from project_agreement's result, so a CSV / JSON download holds the same numbers as the
page (and the API), interval bounds in their own columns. Label values are the codes the API
and the exports use.
"""

from collections.abc import Callable, Iterable

_FIELD_NUMBERS = (
    "observed_agreement",
    "cohen_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_ordinal",
    "fleiss_kappa",
)


def _with_ci(names: Iterable[str]) -> list[str]:
    return [column for name in names for column in (name, f"{name}_ci_low", f"{name}_ci_high")]


def _numbers_with_ci(row: dict, names: Iterable[str]) -> list:
    ci = row.get("ci") or {}
    cells = []
    for name in names:
        interval = ci.get(name) or (None, None)
        cells += [row.get(name), interval[0], interval[1]]
    return cells


def _compared(extra: dict, numbers: Callable[[dict], list]) -> list[list]:
    rows = [["annotator A vs B", *numbers(extra["between_annotators"])]] if extra.get("between_annotators") else []
    return rows + [
        [f"{name} vs machine suggestion", *numbers(values)]
        for name, values in (extra.get("annotator_vs_machine") or {}).items()
    ]


def _gold_cells(gold: dict | None) -> list:
    return [gold["agreement"], gold["units"]] if gold else [None, None]


def _revision_rows(revisions: dict) -> list[tuple[str, dict]]:
    """(compared, {"sentences": numbers, "responses": numbers}) of step 3's revisions."""
    return [
        ("annotator A vs B", revisions.get("between_annotators") or {}),
        *(
            (f"{name} vs machine suggestion", units)
            for name, units in (revisions.get("against_suggestion") or {}).items()
        ),
    ]


def agreement_tables(result: dict, rater: dict | None = None) -> dict[str, dict]:
    """name → {"title", "columns", "rows", "per_field"} for every table of the agreement page
    (those of kind-specific numbers only when the result has them; the LLM rater's when
    ``rater``, annotation.research.rater_agreement's result, is given). ``per_field`` tables start with
    the field's name, so one field's rows can be picked out."""
    fields = result["fields"]
    tables = {
        "fields": {
            "title": "Agreement per field",
            "per_field": True,
            "columns": ["field", "label", "units", *_with_ci(_FIELD_NUMBERS)],
            "rows": [
                [name, f["label"], f["units"], *_numbers_with_ci(f, _FIELD_NUMBERS)] for name, f in fields.items()
            ],
        },
        "matrix": {
            "title": "Confusion matrices (annotator A × annotator B)",
            "per_field": True,
            "columns": ["field", "annotator_a", "annotator_b", "count"],
            "rows": [
                [name, a, b, count]
                for name, f in fields.items()
                for a, row in zip(
                    f["confusion_matrix"]["labels"],
                    f["confusion_matrix"]["rows_annotator_a_columns_annotator_b"],
                )
                for b, count in zip(f["confusion_matrix"]["labels"], row)
            ],
        },
        "pairs": {
            "title": "Agreement per annotator pair",
            "per_field": True,
            "columns": [
                "field",
                "annotator_1",
                "annotator_2",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa")),
            ],
            "rows": [
                [
                    name,
                    *pair["raters"],
                    pair["units"],
                    *_numbers_with_ci(pair, ("observed_agreement", "cohen_kappa")),
                ]
                for name, f in fields.items()
                for pair in f["pairs"]
            ],
        },
        "over_time": {
            "title": "Agreement per week of submission",
            "per_field": True,
            "columns": [
                "field",
                "week",
                "items",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa", "krippendorff_alpha")),
            ],
            "rows": [
                [
                    name,
                    week["week"],
                    week["items"],
                    week["units"],
                    *_numbers_with_ci(week, ("observed_agreement", "cohen_kappa", "krippendorff_alpha")),
                ]
                for name, f in fields.items()
                for week in f.get("over_time", ())
            ],
        },
        "versus_gold": {
            "title": "Each annotator against the gold records",
            "per_field": True,
            "columns": [
                "field",
                "annotator",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa")),
            ],
            "rows": [
                [
                    name,
                    row["annotator"],
                    row["units"],
                    *_numbers_with_ci(row, ("observed_agreement", "cohen_kappa")),
                ]
                for name, f in fields.items()
                for row in f.get("versus_gold", ())
            ],
        },
        "annotators": {
            "title": "Annotators",
            "per_field": False,
            "columns": [
                "annotator",
                "items_submitted",
                *(f"{column}_{name}" for name in fields for column in ("agreement_with_gold", "units_with_gold")),
            ],
            "rows": [
                [
                    a["username"],
                    a["items_submitted"],
                    *(value for name in fields for value in _gold_cells(a["agreement_with_gold"].get(name))),
                ]
                for a in result.get("annotators", ())
            ],
        },
    }
    if result.get("decomposition"):
        names = (
            "sentences",
            "same_claim_count",
            "same_claim_count_share",
            "paired_claims",
            "mean_normalised_edit_distance",
            "mean_word_overlap",
        )
        tables["decomposition"] = {
            "title": "Decomposition into claims",
            "per_field": False,
            "columns": ["compared", *names],
            "rows": _compared(result["decomposition"], lambda d: [d.get(n) for n in names]),
        }
    if result.get("grouping"):
        tables["grouping"] = {
            "title": "Grouping of facts into individuals",
            "per_field": False,
            "columns": ["compared", "items", "mean_adjusted_rand_index"],
            "rows": _compared(result["grouping"], lambda g: [g.get("items"), g.get("mean")]),
        }
    if result.get("corrections"):
        names = (
            "claims",
            "both_corrected",
            "both_corrected_share",
            "mean_normalised_edit_distance",
        )
        tables["corrections"] = {
            "title": "Corrections",
            "per_field": False,
            "columns": list(names),
            "rows": [[result["corrections"].get(n) for n in names]],
        }
    if result.get("revisions"):
        names = ("pairs", "identical_share", "mean_normalised_edit_distance", "mean_word_overlap")
        tables["revisions"] = {
            "title": "Revisions",
            "per_field": False,
            "columns": ["compared", "unit", *names],
            "rows": [
                [compared, unit, *(numbers.get(n) for n in names)]
                for compared, units in _revision_rows(result["revisions"])
                for unit, numbers in units.items()
            ],
        }
    if rater and rater.get("fields"):
        tables["llm_rater"] = {
            "title": "LLM rater beside the annotators",
            "per_field": True,
            "columns": [
                "field",
                "compared_1",
                "compared_2",
                "machine",
                "units",
                *_with_ci(("observed_agreement", "cohen_kappa")),
            ],
            "rows": [
                [
                    f["name"],
                    *row["compared"],
                    row.get("machine"),
                    row["units"],
                    *_numbers_with_ci(row, ("observed_agreement", "cohen_kappa")),
                ]
                for f in rater["fields"]
                for row in f["rows"]
            ],
        }
    return tables
