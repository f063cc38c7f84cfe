"""The agreement page's plots: their geometry, the numbers behind them (over time, against gold)
checked against a direct computation, and the page at 390 px in a real browser."""

import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.models import Annotation, Assignment, ItemStage, StageStatus
from annotation.research import plots
from tests.helpers.browser import login
from tests.helpers.builders import PASSWORD
from tests.helpers.phone import LAYOUT_PROBLEMS, SCREENSHOTS
from tests.helpers.research import build_campaign


def label_code(label):
    return "correct" if label else "error"


def iso_week(moment):
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


# -- geometry ---------------------------------------------------------------------------------


def test_bars_fit_the_view_box_and_clip_to_the_domain():
    plot = plots.bar_chart(
        [
            {"label": "alice / bob", "value": 0.8, "low": 0.7, "high": 0.9},
            {"label": "negative", "value": -0.4, "low": -0.7, "high": -0.1},
            {"label": "undefined", "value": None},
            {"label": "beyond", "value": 1.5, "low": 1.2, "high": 1.8},
        ],
        domain=(-0.5, 1.0),
        title="κ",
    )
    left, right = plot["axis"]["x1"], plot["axis"]["x2"]
    assert plot["view_box"] == f"0 0 {plots.WIDTH} {plot['height']}"
    zero = left + (0 - -0.5) / 1.5 * (right - left)
    assert plot["baseline"] == pytest.approx(zero, abs=0.01)
    good, negative, undefined, beyond = plot["bars"]
    assert good["bar_x"] == pytest.approx(zero, abs=0.01)
    assert good["bar_x"] + good["bar_width"] == pytest.approx(left + 1.3 / 1.5 * (right - left), abs=0.01)
    assert negative["bar_x"] + negative["bar_width"] == pytest.approx(zero, abs=0.01)  # points left from 0
    assert negative["whisker"]["x1"] == left and negative["clipped"]  # −0.7 is clipped at −0.5
    assert undefined["missing"] and "bar_x" not in undefined and undefined["value_text"] == "–"
    assert beyond["bar_x"] + beyond["bar_width"] == right and beyond["clipped"]
    assert good["value_text"] == "0.800 [0.700, 0.900]"
    for bar in plot["bars"]:
        assert bar["text_y"] < bar["bar_y"] < plot["axis"]["y"] <= plot["height"]
    assert [t["text"] for t in plot["ticks"]] == ["-0.5", "-0.25", "0", "0.25", "0.5", "0.75", "1"]
    assert [t["text"] for t in plots.bar_chart([], domain=(-1, 1))["ticks"]] == [
        "-1",
        "-0.5",
        "0",
        "0.5",
        "1",
    ]
    assert [t["text"] for t in plots.bar_chart([], domain=(0, 5))["ticks"]] == [
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
    ]


def test_a_long_label_is_shortened_on_the_plot_and_whole_in_its_title():
    label = "a-very-long-annotator-name-from-a-lab / another-very-long-annotator-name"
    bar = plots.bar_chart([{"label": label, "value": 0.5, "low": 0.4, "high": 0.6}])["bars"][0]
    assert bar["label"].endswith("…") and len(bar["label"]) < len(label)
    # label and value text share one line of the 400-unit plot
    assert (len(bar["label"]) + len(bar["value_text"])) * plots.CHAR <= plots.WIDTH
    assert bar["title"].startswith(label)


def test_bad_domain_and_matrix_shape_are_refused():
    with pytest.raises(ValueError, match="domain"):
        plots.bar_chart([], domain=(1, 0))
    with pytest.raises(ValueError, match="2 rows × 2 columns"):
        plots.heatmap([[1, 2]], row_labels=["a", "b"])
    assert plots.bar_chart([])["empty"] and plots.heatmap([], row_labels=[])["empty"]


def test_heatmap_shades_by_the_largest_cell_and_stays_in_its_view_box():
    plot = plots.heatmap(
        [[8, 2, 0], [1, 4, 0], [0, 0, 0]],
        row_labels=["correct", "not_enough_evidence", "x"],
        row_title="A",
        column_title="B",
    )
    shades = [cell["shade"] for cell in plot["cells"]]
    assert shades[0] == 1.0 and shades[1] == 0.25 and shades[-1] == 0.0
    assert [cell["dark"] for cell in plot["cells"][:2]] == [True, False]
    last = plot["cells"][-1]
    assert last["x"] + last["size"] <= plots.WIDTH and last["y"] + last["size"] <= plot["height"]
    # the upright column labels fit between the title and the cells
    longest = max(len(column["text"]) for column in plot["columns"]) * plots.CHAR
    assert all(0 <= column["y"] - longest and column["y"] < plot["grid"]["y"] for column in plot["columns"])


def test_line_chart_breaks_at_missing_weeks_and_labels_at_most_about_six():
    weeks = [f"2024-W{n:02d}" for n in range(1, 21)]
    points = [{"x": week, "value": 0.5 + n / 100, "low": 0.4, "high": 0.9} for n, week in enumerate(weeks) if n != 10]
    plot = plots.line_chart([{"name": "observed", "points": points}], x_labels=weeks)
    assert len(plot["series"][0]["lines"]) == 2  # week 11 has no value: two stretches
    shown = [tick for tick in plot["x_ticks"] if tick["shown"]]
    assert len(shown) <= 7 and shown[0]["text"] == "2024-W01" and shown[1]["text"] == shown[1]["full"][5:]
    # labelled ticks are far enough apart for their text
    assert all(b["x"] - a["x"] >= len(a["text"]) * plots.CHAR for a, b in zip(shown, shown[1:]))
    across_years = plots.line_chart(
        [{"name": "κ", "points": [{"x": w, "value": 0.5} for w in ("2023-W52", "2024-W01")]}]
    )
    assert [tick["text"] for tick in across_years["x_ticks"]] == ["2023-W52", "2024-W01"]
    marker = plot["series"][0]["markers"][0]
    assert (
        plot["plot"]["top"] <= marker["whisker"]["y2"] < marker["y"] < marker["whisker"]["y1"] <= plot["plot"]["bottom"]
    )
    assert plot["height"] > plot["plot"]["bottom"]


def test_domain_widens_for_negative_kappa_only():
    assert plots.domain_for([0.2, None, 0.9]) == (0.0, 1.0)
    assert plots.domain_for([0.2, -0.3]) == (-0.5, 1.0)
    assert plots.domain_for([-0.7]) == (-1.0, 1.0)
    assert plots.domain_for([-3]) == (-1.0, 1.0)


def test_the_bar_partial_escapes_labels_and_does_not_localise_numbers(settings):
    from django.template.loader import render_to_string
    from django.utils import translation

    settings.USE_THOUSAND_SEPARATOR = True
    plot = plots.bar_chart(
        [{"label": "<script>alert(1)</script>", "value": 0.25, "low": 0.125, "high": 0.5}],
        title='"><img src=x>',
    )
    with translation.override("de"):
        html = render_to_string("annotation/_plot_bars.html", {"plot": plot})
    assert "<script>" not in html and "&lt;script&gt;" in html and '"><img' not in html
    rect = re.search(r'<rect x="([^"]+)"[^>]* width="([^"]+)"', html)
    assert float(rect.group(1)) == plot["bars"][0]["bar_x"] and float(rect.group(2)) == plot["bars"][0]["bar_width"]


# -- the numbers behind the plots -------------------------------------------------------------


def direct_versus_gold(stored, field):
    """username → (annotator values, gold values) over the units both have, as the API names them."""
    pairs = defaultdict(lambda: ([], []))
    for record in stored:
        if record["gold"] is None:
            continue
        for name, labels, _ in record["annotations"]:
            for (label, kind), (gold_label, gold_kind) in zip(labels, record["gold"]):
                if field == "label":
                    pairs[name][0].append(label_code(label))
                    pairs[name][1].append(label_code(gold_label))
                elif label is False and gold_label is False and kind and gold_kind:
                    pairs[name][0].append(kind)
                    pairs[name][1].append(gold_kind)
    return pairs


@pytest.mark.parametrize("field", ["label", "error_type"])
def test_each_annotator_against_gold_equals_scikit_learn(clients, felm_project, campaign, field):
    body = clients["admin"].get(f"/api/projects/{felm_project.id}/agreement/", {"resamples": 0}).json()
    rows = {row["annotator"]: row for row in body["fields"][field]["versus_gold"]}
    expected = direct_versus_gold(campaign, field)
    assert set(rows) == {"alice", "bob", "dave"}
    for name, (mine, gold) in expected.items():
        assert rows[name]["units"] == len(mine)
        assert rows[name]["observed_agreement"] == pytest.approx(np.mean(np.array(mine) == np.array(gold)), abs=1e-12)
        assert rows[name]["cohen_kappa"] == pytest.approx(cohen_kappa_score(mine, gold), abs=1e-12)
        # the older per-annotator number agrees with it
        assert body["fields"][field]["agreement_with_gold"][name]["agreement"] == pytest.approx(
            rows[name]["observed_agreement"]
        )
    if field == "label":  # the better annotator shows (error types: too few units to be sure)
        assert rows["alice"]["cohen_kappa"] > rows["dave"]["cohen_kappa"]


def test_intervals_against_gold_equal_a_direct_bootstrap_over_items(clients, felm_project, campaign):
    resamples, seed = 200, 5
    body = (
        clients["admin"]
        .get(f"/api/projects/{felm_project.id}/agreement/", {"resamples": resamples, "seed": seed})
        .json()
    )
    row = next(row for row in body["fields"]["label"]["versus_gold"] if row["annotator"] == "bob")
    items = [
        [(label_code(label), label_code(gold)) for (label, _), (gold, _) in zip(labels, record["gold"])]
        for record in campaign
        if record["gold"] is not None
        for name, labels, _ in record["annotations"]
        if name == "bob"
    ]
    rng = np.random.default_rng(seed)
    observed, kappas = [], []
    for _ in range(resamples):
        sample = [unit for index in rng.integers(0, len(items), len(items)) for unit in items[index]]
        mine, gold = zip(*sample)
        observed.append(np.mean(np.array(mine) == np.array(gold)))
        kappas.append(cohen_kappa_score(mine, gold))
    assert row["ci"]["observed_agreement"] == pytest.approx(list(np.quantile(observed, [0.025, 0.975])), abs=1e-9)
    assert row["ci"]["cohen_kappa"] == pytest.approx(list(np.quantile(kappas, [0.025, 0.975])), abs=1e-9)


def test_agreement_by_week_of_the_later_submission_equals_a_direct_grouping(clients, felm_project, campaign):
    body = clients["admin"].get(f"/api/projects/{felm_project.id}/agreement/", {"resamples": 0}).json()
    weeks = defaultdict(lambda: ([], []))
    for record in campaign:
        (_, first, first_at), (_, second, second_at) = record["annotations"]
        if first_at is None or second_at is None:
            continue
        week = iso_week(max(first_at, second_at))
        for (a, _), (b, _) in zip(first, second):
            weeks[week][0].append(label_code(a))
            weeks[week][1].append(label_code(b))
    over_time = body["fields"]["label"]["over_time"]
    assert [w["week"] for w in over_time] == sorted(weeks) and "2024-W03" not in weeks
    assert sum(w["items"] for w in over_time) == len(campaign) - 1  # item 7 has no second submission time
    for row in over_time:
        a, b = weeks[row["week"]]
        assert row["units"] == len(a)
        assert row["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)), abs=1e-12)
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_an_item_submitted_across_a_week_boundary_counts_in_the_later_week(clients, felm_project, users):
    item = felm_project.items.create(prompt="Q?", response="x", external_id="edge")
    stage = ItemStage.objects.create(item=item, stage=1, status=StageStatus.CONSOLIDATING, content={"segments": ["S."]})
    sunday_night = datetime(2024, 1, 7, 23, 59, tzinfo=UTC)  # still 2024-W01
    for name, moment in (("alice", sunday_night), ("bob", sunday_night + timedelta(minutes=2))):
        assignment = Assignment.objects.create(
            item_stage=stage, user=users[name], status="submitted", submitted_at=moment
        )
        Annotation.objects.create(
            assignment=assignment,
            submitted=True,
            payload={"segments": [{"label": True, "error_type": None, "comment": "", "refs": []}]},
        )
    over_time = (
        clients["carol"].get(f"/api/projects/{felm_project.id}/agreement/").json()["fields"]["label"]["over_time"]
    )
    assert [(w["week"], w["items"], w["observed_agreement"]) for w in over_time] == [("2024-W02", 1, 1.0)]


# -- the page -----------------------------------------------------------------------------------


def test_the_page_draws_every_plot_with_the_numbers_of_the_api(logged_in, clients, felm_project, campaign):
    page = logged_in("carol").get(f"/projects/{felm_project.id}/agreement/?resamples=50").content.decode()
    body = clients["carol"].get(f"/api/projects/{felm_project.id}/agreement/", {"resamples": 50}).json()
    section = page[page.index('data-field="label"') :]
    section = section[: section.index("</section>")]
    assert section.count("<svg") == 6  # heatmap, pairs ×2, over time, against gold ×2
    label = body["fields"]["label"]
    # the heatmap: one cell per matrix entry, the counts as the API gives them
    cells = re.findall(
        r'<g class="plot-cell[^"]*"><title>[^<]*</title>\s*<rect[^>]*/>\s*<text[^>]*>(\d+)</text>',
        section,
    )
    assert [int(c) for c in cells] == [
        v for row in label["confusion_matrix"]["rows_annotator_a_columns_annotator_b"] for v in row
    ]
    for pair in label["pairs"]:
        low, high = pair["ci"]["cohen_kappa"]
        assert f"{' / '.join(pair['raters'])}: {pair['cohen_kappa']:.3f} [{low:.3f}, {high:.3f}]" in section
    for row in label["versus_gold"]:
        assert f"<title>{row['annotator']}: {row['observed_agreement']:.3f}" in section
    # the over-time plot spans weeks 1 to 5, the empty third week a gap between two stretches
    lines = section[section.index('class="plot plot-lines"') :]
    assert all(week in lines for week in ("2024-W01", "2024-W05"))
    assert lines.split('class="plot-series series-0"')[1].split("</g>")[0].count("<polyline") == 2
    assert "Each annotator against gold" in section and "By week of submission" in section


def test_the_page_escapes_an_annotator_name_in_its_plots(logged_in, felm_project, users, make_user):
    hostile = '"><script>alert(1)</script>'
    build_campaign(felm_project, users, make_user, third=hostile, items=6)
    page = logged_in("admin").get(f"/projects/{felm_project.id}/agreement/?resamples=0").content.decode()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_project_without_gold_or_dates_says_so_instead_of_plotting(logged_in, felm_project, users):
    item = felm_project.items.create(prompt="Q?", response="x", external_id="0")
    stage = ItemStage.objects.create(item=item, stage=1, status=StageStatus.CONSOLIDATING, content={"segments": ["S."]})
    for name in ("alice", "bob"):
        assignment = Assignment.objects.create(item_stage=stage, user=users[name], status="submitted")
        Annotation.objects.create(
            assignment=assignment,
            submitted=True,
            payload={"segments": [{"label": True, "error_type": None, "comment": "", "refs": []}]},
        )
    page = logged_in("carol").get(f"/projects/{felm_project.id}/agreement/").content.decode()
    assert "No consolidated gold records to compare with yet." in page
    assert "No items with a submission date yet." in page


def test_a_field_without_units_draws_no_empty_matrix(logged_in, factcheck_project):
    """Importance has a fixed (ordinal) label order, so its matrix has rows before anyone
    answered: an all-zero heatmap says nothing, the "0 units" does."""
    page = logged_in("carol").get(f"/projects/{factcheck_project.id}/agreement/").content.decode()
    assert "Sentence importance" in page and "Confusion matrix" not in page


# -- in a browser, on a phone -------------------------------------------------------------------


@pytest.mark.browser
def test_the_plots_fit_a_phone(browser, live_server, problems, felm_project, campaign):
    from playwright.sync_api import expect

    page = login(
        browser,
        live_server.url,
        "admin",
        PASSWORD,
        problems,
        viewport={"width": 390, "height": 844},
    )
    page.goto(f"/projects/{felm_project.id}/agreement/?resamples=200")
    expect(page.locator("section[data-field=label] .plot-heatmap svg")).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "agreement_plots_390.png"), full_page=True)
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    # every plot lies inside the screen and its text is at least 10 px high
    sizes = page.evaluate("""() => Array.from(document.querySelectorAll("figure.plot svg")).map((svg) => {
        const box = svg.getBoundingClientRect();
        const text = Array.from(svg.querySelectorAll("text")).map((t) => t.getBoundingClientRect().height);
        return {left: box.left, right: box.right, smallest: Math.min(...text)};
    })""")
    assert len(sizes) == 2 * 6
    for size in sizes:
        assert size["left"] >= 0 and size["right"] <= 390
        assert size["smallest"] >= 10, size
