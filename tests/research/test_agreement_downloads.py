"""CSV and JSON downloads of every table of the agreement page: same numbers as the API, safe
in a spreadsheet, named after project, step and table, and only for those who see the page."""

import csv
import io
import json
import re
from html import unescape

import pytest

from annotation.exports import downloads
from annotation.models import Annotation, Assignment, GoldRecord, ItemStage, StageStatus
from annotation.research.agreement_tables import agreement_tables
from tests.helpers.research import build_campaign

PAGE = "/projects/{}/agreement/"


def rows_of_csv(response):
    return list(csv.reader(io.StringIO(response.content.decode())))


def download_links(page: str) -> list[str]:
    return [unescape(href) for href in re.findall(r'<a href="(\?[^"]*download=[^"]*)"', page)]


def test_every_table_on_the_page_has_downloads_that_open(logged_in, felm_project, campaign):
    client = logged_in("carol")
    url = PAGE.format(felm_project.id)
    page = client.get(url, {"resamples": 20}).content.decode()
    # each table is followed by its download links before the next table starts
    main = page[page.index("<main") :]
    chunks = main.split("<table")[1:]
    assert len(chunks) == 2 * 4 + 1  # per field: matrix, pairs, weeks, gold; then the annotators
    for chunk in chunks:
        assert "download=csv" in chunk and "download=json" in chunk, chunk[:200]
    links = download_links(page)
    tables = {re.search(r"table=(\w+)", link).group(1) for link in links}
    assert tables == {"fields", "matrix", "pairs", "over_time", "versus_gold", "annotators"}
    for link in links:
        response = client.get(url + link)
        assert response.status_code == 200, (link, response.content[:200])
        assert "resamples=20" in link  # the page's options are kept
        if "download=csv" in link:
            assert response["Content-Type"] == "text/csv; charset=utf-8"
            assert len(rows_of_csv(response)) >= 2
        else:
            assert response["Content-Type"] == "application/json"
            assert json.loads(response.content)["rows"]


def test_csv_and_json_hold_the_numbers_of_the_api(logged_in, clients, felm_project, campaign):
    url = PAGE.format(felm_project.id)
    body = clients["admin"].get(f"/api/projects/{felm_project.id}/agreement/", {"resamples": 30, "seed": 4}).json()
    client = logged_in("admin")

    def download(fmt, table, **extra):
        return client.get(url, {"resamples": 30, "seed": 4, "download": fmt, "table": table, **extra})

    fields = json.loads(download("json", "fields").content)
    assert fields["bootstrap"] == body["bootstrap"] and fields["step"] == 1 and fields["project"] == "FELM test"
    label = next(row for row in fields["rows"] if row["field"] == "label")
    assert label["cohen_kappa"] == body["fields"]["label"]["cohen_kappa"]
    assert [label["cohen_kappa_ci_low"], label["cohen_kappa_ci_high"]] == body["fields"]["label"]["ci"]["cohen_kappa"]
    assert label["krippendorff_alpha_ordinal"] is None  # FELM labels have no order

    header, *rows = rows_of_csv(download("csv", "versus_gold", field="label"))
    assert header == [
        "field",
        "annotator",
        "units",
        "observed_agreement",
        "observed_agreement_ci_low",
        "observed_agreement_ci_high",
        "cohen_kappa",
        "cohen_kappa_ci_low",
        "cohen_kappa_ci_high",
    ]
    expected = body["fields"]["label"]["versus_gold"]
    assert [row[1] for row in rows] == [row["annotator"] for row in expected]
    for row, api in zip(rows, expected):
        assert int(row[2]) == api["units"]
        assert float(row[6]) == api["cohen_kappa"]  # full precision, not the page's three decimals
        assert [float(row[7]), float(row[8])] == api["ci"]["cohen_kappa"]

    weeks = json.loads(download("json", "over_time").content)["rows"]
    assert [(w["field"], w["week"], w["units"]) for w in weeks] == [
        (name, w["week"], w["units"]) for name in ("label", "error_type") for w in body["fields"][name]["over_time"]
    ]

    matrix = json.loads(download("json", "matrix", field="error_type").content)["rows"]
    api_matrix = body["fields"]["error_type"]["confusion_matrix"]
    assert [row["count"] for row in matrix] == [
        v for row in api_matrix["rows_annotator_a_columns_annotator_b"] for v in row
    ]
    assert {row["annotator_a"] for row in matrix} == set(api_matrix["labels"])

    pairs = rows_of_csv(download("csv", "pairs"))[1:]
    assert [(r[0], r[1], r[2]) for r in pairs] == [
        (name, *p["raters"]) for name in ("label", "error_type") for p in body["fields"][name]["pairs"]
    ]
    annotators = json.loads(download("json", "annotators").content)["rows"]
    assert [(a["annotator"], a["items_submitted"], a["agreement_with_gold_label"]) for a in annotators] == [
        (a["username"], a["items_submitted"], a["agreement_with_gold"]["label"]["agreement"])
        for a in body["annotators"]
    ]


def test_file_names_name_project_step_table_and_field(logged_in, factcheck_project):
    factcheck_project.name = "Lab A: fact/check"
    factcheck_project.save()
    response = logged_in("admin").get(
        PAGE.format(factcheck_project.id),
        {"stage": 2, "download": "csv", "table": "matrix", "field": "stance"},
    )
    assert response.status_code == 200
    assert (
        response["Content-Disposition"] == 'attachment; filename="Lab-A--fact-check-step2-agreement-matrix-stance.csv"'
    )
    response = logged_in("admin").get(PAGE.format(factcheck_project.id), {"download": "json", "table": "fields"})
    assert response["Content-Disposition"] == 'attachment; filename="Lab-A--fact-check-step1-agreement-fields.json"'


def test_a_cell_a_spreadsheet_would_run_is_quoted(logged_in, felm_project, users, make_user):
    build_campaign(felm_project, users, make_user, third='=HYPERLINK("http://evil","x")', items=6)
    client = logged_in("admin")
    text = client.get(PAGE.format(felm_project.id), {"download": "csv", "table": "annotators"}).content.decode()
    names = [row[0] for row in csv.reader(io.StringIO(text))][1:]
    assert '\'=HYPERLINK("http://evil","x")' in names
    assert not any(cell.startswith(("=", "+", "@")) for row in csv.reader(io.StringIO(text)) for cell in row)
    # JSON is data, not a sheet: the name as it is
    body = json.loads(client.get(PAGE.format(felm_project.id), {"download": "json", "table": "annotators"}).content)
    assert '=HYPERLINK("http://evil","x")' in [row["annotator"] for row in body["rows"]]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("alice", "alice"),
        (-0.25, -0.25),
        (None, ""),
        (0, 0),
    ],
)
def test_spreadsheet_safe(value, expected):
    assert downloads.spreadsheet_safe(value) == expected


def test_negative_numbers_stay_numbers_in_csv():
    text = downloads.table_csv(["field", "cohen_kappa"], [["label", -0.125], ["-x", None]])
    assert text.splitlines() == ["field,cohen_kappa", "label,-0.125", "'-x,"]


def test_kind_specific_tables_download_too(logged_in, factcheck_project, users):
    """Step 1 of Factcheck-Bench has a decomposition table (claims per sentence)."""

    def sentence(claims):
        return {
            "decontext": "A is B.",
            "importance": "yes",
            "checkworthy": "yes",
            "claims": [{"text": text, "category": "factual", "importance": "yes"} for text in claims],
        }

    item = factcheck_project.items.create(prompt="p", response="A is B.", external_id="0")
    stage = ItemStage.objects.create(
        item=item, stage=1, status=StageStatus.CONSOLIDATING, content={"sentences": ["A is B."]}
    )
    for name, claims in (("alice", ["A is B."]), ("bob", ["A is B.", "B is C."])):
        assignment = Assignment.objects.create(item_stage=stage, user=users[name], status="submitted")
        Annotation.objects.create(assignment=assignment, payload={"sentences": [sentence(claims)]}, submitted=True)
    client = logged_in("carol")
    page = client.get(PAGE.format(factcheck_project.id)).content.decode()
    section = page[page.index('id="decomposition"') :]
    assert "table=decomposition" in section[: section.index("</section>")]
    header, *rows = rows_of_csv(
        client.get(PAGE.format(factcheck_project.id), {"download": "csv", "table": "decomposition"})
    )
    assert header[0] == "compared" and rows[0][:3] == ["annotator A vs B", "1", "0"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"download": "xlsx", "table": "fields"}, "download: must be one of csv, json, not 'xlsx'"),
        ({"download": "csv", "table": "nope"}, "table: must be one of fields, matrix, pairs"),
        ({"download": "csv"}, "table: must be one of"),
        (
            {"download": "csv", "table": "matrix", "field": "nope"},
            "field: the matrix table has no field 'nope' (fields: label, error_type)",
        ),
        (
            {"download": "csv", "table": "annotators", "field": "label"},
            "field: the annotators table has no field 'label'",
        ),
        ({"download": "csv", "table": "decomposition"}, "table: must be one of"),  # FELM has none
        (
            {"download": "csv", "table": "fields", "resamples": "lots"},
            "resamples: must be a whole number",
        ),
    ],
)
def test_bad_download_parameters_are_a_400_that_says_why(logged_in, felm_project, params, message):
    response = logged_in("carol").get(PAGE.format(felm_project.id), params)
    assert response.status_code == 400
    assert message in unescape(response.content.decode())


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("admin", 200),
        ("carol", 200),
        ("alice", 403),
        ("mallory", 404),
        (None, 302),
    ],
)
def test_downloads_follow_the_page_permissions(client, users, felm_project, who, status):
    if who:
        client.force_login(users[who])
    for fmt in ("csv", "json"):
        response = client.get(PAGE.format(felm_project.id), {"download": fmt, "table": "fields"})
        assert response.status_code == status
        if status != 200:
            assert "attachment" not in response.get("Content-Disposition", "")
        if who is None:
            assert response["Location"].startswith("/accounts/login/")


def test_gold_from_a_single_submission_is_not_compared(logged_in, felm_project, users):
    """Gold taken from an item's one submission agrees with its annotator by construction."""
    from annotation.models import GoldSource

    item = felm_project.items.create(prompt="Q?", response="x", external_id="0")
    stage = ItemStage.objects.create(item=item, stage=1, status=StageStatus.DONE, content={"segments": ["S."]})
    payload = {"segments": [{"label": True, "error_type": None, "comment": "", "refs": []}]}
    for name in ("alice", "bob"):
        assignment = Assignment.objects.create(item_stage=stage, user=users[name], status="submitted")
        Annotation.objects.create(assignment=assignment, submitted=True, payload=payload)
    GoldRecord.objects.create(item_stage=stage, source=GoldSource.SINGLE, payload=payload)
    body = json.loads(
        logged_in("carol").get(PAGE.format(felm_project.id), {"download": "json", "table": "versus_gold"}).content
    )
    assert body["rows"] == []


def test_the_llm_rater_table_is_a_table_too():
    """The LLM rater's comparison (annotation.research.rater_agreement's result) downloads like the others."""
    result = {"stage": 1, "fields": {}, "annotators": []}
    rater = {
        "runs": [{"id": 1, "system": "gpt", "version": "1"}],
        "fields": [
            {
                "name": "label",
                "label": "Label",
                "rows": [
                    {
                        "compared": ["gpt", "alice"],
                        "machine": True,
                        "units": 10,
                        "observed_agreement": 0.8,
                        "cohen_kappa": 0.5,
                        "ci": {"observed_agreement": [0.6, 0.9], "cohen_kappa": [0.2, 0.7]},
                    }
                ],
            }
        ],
    }
    assert "llm_rater" not in agreement_tables(result)
    table = agreement_tables(result, rater)["llm_rater"]
    assert table["rows"] == [["label", "gpt", "alice", True, 10, 0.8, 0.6, 0.9, 0.5, 0.2, 0.7]]
    assert len(table["columns"]) == len(table["rows"][0])
