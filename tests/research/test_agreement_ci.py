"""Bootstrap confidence intervals of agreement equal a plain, direct bootstrap."""

import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.models import Assignment, AssignmentRole
from annotation.research import agreement
from tests.helpers.builders import felm_line, jsonl, segment
from tests.helpers.research import reliability_matrix

ORDER = ["yes", "intermediate", "no"]


def clustered_ratings(seed, items=40, raters=4, missing=0.25):
    """{(item, unit): {rater: label}} with 1–4 units per item and 2–4 raters per unit."""
    rng = random.Random(seed)
    ratings = {}
    for item in range(items):
        for unit in range(rng.randint(1, 4)):
            truth = rng.choice(ORDER)
            values = {
                r: truth if rng.random() < 0.7 else rng.choice(ORDER) for r in range(raters) if rng.random() > missing
            }
            ratings[(item, unit)] = values
    return ratings


def interval(samples):
    samples = np.array([np.nan if s is None else s for s in samples], dtype=float)
    samples = samples[~np.isnan(samples)]
    return list(np.quantile(samples, [0.025, 0.975])) if samples.size else None


def direct_bootstrap(ratings, raters, resamples, seed):
    """Resample items with replacement (the same generator draws), rebuild the data, recompute."""
    pairable = {key: values for key, values in ratings.items() if len(values) >= 2}
    items = list(dict.fromkeys(item for item, _ in pairable))
    units_of = {item: [(key, values) for key, values in pairable.items() if key[0] == item] for item in items}
    rng = np.random.default_rng(seed)
    stats = {name: [] for name in ("observed", "cohen", "fleiss", "alpha", "alpha_ordinal")}
    pair_stats = {}
    for _ in range(resamples):
        drawn = rng.integers(0, len(items), len(items))
        sample = {
            (position, key): values for position, index in enumerate(drawn) for key, values in units_of[items[index]]
        }
        first = [list(v.values())[0] for v in sample.values()]
        second = [list(v.values())[1] for v in sample.values()]
        stats["observed"].append(agreement.observed_agreement(sample))
        stats["cohen"].append(cohen_kappa_score(first, second) if len(set(first) | set(second)) > 1 else None)
        stats["fleiss"].append(agreement.fleiss_kappa(sample))
        data = reliability_matrix(sample, raters, ORDER)
        single = len({v for values in sample.values() for v in values.values()}) == 1
        stats["alpha"].append(
            None if single else krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        )
        stats["alpha_ordinal"].append(
            None
            if single
            else krippendorff.alpha(reliability_data=data, value_domain=[0, 1, 2], level_of_measurement="ordinal")
        )
        for a in range(raters):
            for b in range(a + 1, raters):
                shared = [(v[a], v[b]) for v in sample.values() if a in v and b in v]
                entry = pair_stats.setdefault((a, b), ([], []))
                entry[0].append(np.mean([x == y for x, y in shared]) if shared else None)
                xs, ys = [x for x, _ in shared], [y for _, y in shared]
                entry[1].append(cohen_kappa_score(xs, ys) if len(set(xs) | set(ys)) > 1 else None)
    return {name: interval(values) for name, values in stats.items()}, {
        pair: (interval(o), interval(k)) for pair, (o, k) in pair_stats.items()
    }


@pytest.mark.parametrize("seed", range(3))
def test_intervals_equal_a_direct_bootstrap_over_items(seed):
    ratings = clustered_ratings(seed)
    result = agreement.field_agreement(
        ratings, labels=ORDER, ordinal=True, resamples=200, seed=seed, item_of=lambda key: key[0]
    )
    expected, pairs = direct_bootstrap(ratings, 4, 200, seed)
    ci = result["ci"]
    assert ci["observed_agreement"] == pytest.approx(expected["observed"], abs=1e-9)
    assert ci["cohen_kappa"] == pytest.approx(expected["cohen"], abs=1e-9)
    assert ci["fleiss_kappa"] == pytest.approx(expected["fleiss"], abs=1e-9)
    assert ci["krippendorff_alpha"] == pytest.approx(expected["alpha"], abs=1e-9)
    assert ci["krippendorff_alpha_ordinal"] == pytest.approx(expected["alpha_ordinal"], abs=1e-9)
    assert len(result["pairs"]) == len(pairs) == 6
    for pair in result["pairs"]:
        observed, kappa = pairs[tuple(pair["raters"])]
        assert pair["ci"]["observed_agreement"] == pytest.approx(observed, abs=1e-9)
        assert pair["ci"]["cohen_kappa"] == pytest.approx(kappa, abs=1e-9)
        low, high = pair["ci"]["cohen_kappa"]
        assert low <= high


def test_pair_kappa_matches_scikit_learn():
    ratings = clustered_ratings(5)
    for pair in agreement.field_agreement(ratings)["pairs"]:
        a, b = pair["raters"]
        shared = [(v[a], v[b]) for v in ratings.values() if a in v and b in v]
        assert pair["cohen_kappa"] == pytest.approx(cohen_kappa_score(*zip(*shared)), abs=1e-12)


def test_fleiss_interval_follows_the_most_common_rater_count_of_each_resample():
    # 2-rater and 3-rater units equally often: resamples pick either count, as the point function does
    ratings = {}
    rng = random.Random(3)
    for item in range(30):
        raters = 2 if item % 2 else 3
        ratings[(item, 0)] = {r: rng.choice("ab") for r in range(raters)}
    result = agreement.field_agreement(ratings, resamples=300, seed=1, item_of=lambda key: key[0])
    rng_draws = np.random.default_rng(1)
    items = list(range(30))
    kappas = []
    for _ in range(300):
        drawn = rng_draws.integers(0, 30, 30)
        kappas.append(agreement.fleiss_kappa({(p, items[i]): ratings[(items[i], 0)] for p, i in enumerate(drawn)}))
    assert result["ci"]["fleiss_kappa"] == pytest.approx(interval(kappas), abs=1e-9)


def test_same_seed_same_interval_other_seed_other_interval():
    ratings = clustered_ratings(1)

    def run(seed):
        return agreement.field_agreement(ratings, resamples=100, seed=seed, item_of=lambda key: key[0])["ci"]

    assert run(4) == run(4)
    assert run(4)["cohen_kappa"] != run(5)["cohen_kappa"]


def test_resampling_items_not_units_widens_the_interval_of_clustered_units():
    # all units of an item agree or all disagree: units are not independent, the item is the sample
    ratings = {}
    for item in range(60):
        agree = item % 3 != 0
        for unit in range(8):
            ratings[(item, unit)] = {
                "a": "x" if unit % 2 else "y",
                "b": ("x" if unit % 2 else "y") if agree else "z",
            }
    by_item = agreement.field_agreement(ratings, resamples=500, item_of=lambda key: key[0])["ci"]["observed_agreement"]
    by_unit = agreement.field_agreement(ratings, resamples=500)["ci"]["observed_agreement"]
    assert by_item[1] - by_item[0] > 1.5 * (by_unit[1] - by_unit[0])


def test_no_resamples_no_interval_and_undefined_statistics_have_none():
    ratings = clustered_ratings(2)
    assert agreement.field_agreement(ratings)["ci"] is None
    assert all("ci" not in pair for pair in agreement.field_agreement(ratings)["pairs"])
    same = {(i, 0): {"a": "x", "b": "x"} for i in range(10)}
    ci = agreement.field_agreement(same, resamples=50)["ci"]
    assert ci["observed_agreement"] == [1.0, 1.0]
    assert ci["cohen_kappa"] is None and ci["krippendorff_alpha"] is None and ci["fleiss_kappa"] is None
    assert agreement.field_agreement({}, resamples=50)["ci"]["cohen_kappa"] is None


def _annotated_felm_project(felm_project, items=12):
    from annotation.imports.items import import_jsonl
    from annotation.services.annotations import save_annotation

    rng = random.Random(2)
    import_jsonl(
        felm_project,
        jsonl([felm_line(i, [f"S{k}." for k in range(4)]) for i in range(items)]),
        fmt="felm",
    )
    for assignment in Assignment.objects.filter(item_stage__item__project=felm_project).order_by("id"):
        segments = [segment(True) if rng.random() < 0.7 else segment(False, "knowledge_error", "why") for _ in range(4)]
        save_annotation(assignment=assignment, payload={"segments": segments}, version=0, submit=True)
    return felm_project


@pytest.mark.django_db
def test_api_intervals_resample_items_and_follow_the_parameters(clients, users, felm_project):
    from annotation.research import selectors

    project = _annotated_felm_project(felm_project)
    url = f"/api/projects/{project.id}/agreement/"
    body = clients["admin"].get(url).json()
    assert body["bootstrap"] == {"resamples": 1000, "seed": 0, "level": 0.95, "resampled": "items"}
    label = body["fields"]["label"]
    low, high = label["ci"]["cohen_kappa"]
    assert low <= label["cohen_kappa"] <= high
    assert label["pairs"][0]["ci"]["observed_agreement"] == label["ci"]["observed_agreement"]
    # the intervals are the module's over (item-stage, segment) units grouped by item-stage
    ratings = {}
    annotators = Assignment.objects.filter(item_stage__item__project=project, role=AssignmentRole.ANNOTATOR)
    for assignment in annotators.order_by("item_stage_id", "id"):
        for index, s in enumerate(assignment.annotation.payload["segments"]):
            ratings.setdefault((assignment.item_stage_id, index), {})[assignment.user_id] = (
                "correct" if s["label"] else "error"
            )
    expected = agreement.field_agreement(ratings, labels=None, resamples=200, seed=9, item_of=lambda key: key[0])["ci"]
    assert clients["admin"].get(url, {"resamples": 200, "seed": 9}).json()["fields"]["label"]["ci"] == expected
    assert clients["admin"].get(url, {"resamples": 0}).json()["fields"]["label"]["ci"] is None
    assert selectors.project_agreement(project)["fields"]["label"]["ci"] is None  # callers opt in


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params, name",
    [
        ({"resamples": "-1"}, "resamples"),
        ({"resamples": "10001"}, "resamples"),
        ({"resamples": "1e3"}, "resamples"),
        ({"resamples": "99999999999999999999"}, "resamples"),
        ({"seed": "x"}, "seed"),
        ({"seed": "-3"}, "seed"),
        ({"seed": "1" * 19}, "seed"),
    ],
)
def test_api_refuses_bad_bootstrap_parameters(clients, felm_project, params, name):
    response = clients["admin"].get(f"/api/projects/{felm_project.id}/agreement/", params)
    assert response.status_code == 400 and name in response.json()
    assert list(params.values())[0] in response.json()[name]


@pytest.mark.django_db
def test_api_accepts_the_bounds(clients, felm_project):
    url = f"/api/projects/{felm_project.id}/agreement/"
    for params in ({"resamples": "0"}, {"resamples": "10000", "seed": "123456789012345678"}):
        assert clients["admin"].get(url, params).status_code == 200


@pytest.mark.django_db
def test_the_page_shows_each_number_with_its_interval(users, client, felm_project):
    project = _annotated_felm_project(felm_project)
    client.force_login(users["admin"])
    page = client.get(f"/projects/{project.id}/agreement/", {"resamples": 300, "seed": 4}).content.decode()
    from annotation.research import selectors

    label = selectors.project_agreement(project, resamples=300, seed=4)["fields"]["label"]
    low, high = label["ci"]["krippendorff_alpha"]
    assert f'<span class="ci" title="95 % bootstrap confidence interval">[{low:.3f}, {high:.3f}]</span>' in page
    assert "300 resamples" in page
    assert 'class="ci"' not in client.get(f"/projects/{project.id}/agreement/", {"resamples": 0}).content.decode()
    response = client.get(f"/projects/{project.id}/agreement/", {"resamples": "lots"})
    assert response.status_code == 400
