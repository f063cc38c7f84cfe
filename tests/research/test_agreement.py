"""Agreement numbers equal the reference implementations on the same data."""

import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotation.models import Assignment
from annotation.research import agreement
from tests.helpers.builders import felm_line, jsonl, segment
from tests.helpers.research import reliability_matrix


def random_ratings(seed, units=300, raters=4, labels=("a", "b", "c"), missing=0.3):
    rng = random.Random(seed)
    ratings = {}
    for unit in range(units):
        truth = rng.choice(labels)
        values = {}
        for rater in range(raters):
            if rng.random() < missing:
                continue
            values[rater] = truth if rng.random() < 0.7 else rng.choice(labels)
        ratings[unit] = values
    return ratings


@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_alpha_matches_the_krippendorff_package(seed):
    ratings = random_ratings(seed)
    expected = krippendorff.alpha(
        reliability_data=reliability_matrix(ratings, 4, ("a", "b", "c")),
        level_of_measurement="nominal",
    )
    assert agreement.krippendorff_alpha_nominal(ratings) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_matches_scikit_learn(seed):
    rng = random.Random(seed)
    first = [rng.choice("xyz") for _ in range(500)]
    second = [v if rng.random() < 0.6 else rng.choice("xyz") for v in first]
    assert agreement.cohen_kappa(first, second) == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)


def test_confusion_matrix_matches_scikit_learn():
    first, second = list("aabbcab"), list("abbbcca")
    ours = agreement.confusion_matrix(first, second, ["a", "b", "c"])
    assert ours.tolist() == confusion_matrix(first, second, labels=["a", "b", "c"]).tolist()


def test_fleiss_kappa_on_the_textbook_example():
    # Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories; κ = 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    ratings = {}
    for unit, counts in enumerate(table):
        raters = [category for category, n in enumerate(counts) for _ in range(n)]
        ratings[unit] = dict(enumerate(raters))
    assert agreement.fleiss_kappa(ratings) == pytest.approx(0.2099, abs=1e-4)


def test_observed_agreement_for_two_raters_is_percent_agreement():
    ratings = {0: {1: "a", 2: "a"}, 1: {1: "a", 2: "b"}, 2: {1: "b", 2: "b"}, 3: {1: "a"}}
    assert agreement.observed_agreement(ratings) == pytest.approx(2 / 3)


def test_undefined_metrics_are_none_not_numbers():
    ratings = {0: {1: "a", 2: "a"}, 1: {1: "a", 2: "a"}}
    assert agreement.cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert agreement.krippendorff_alpha_nominal(ratings) is None
    assert agreement.observed_agreement({}) is None
    assert agreement.cohen_kappa([], []) is None


@pytest.mark.django_db
def test_project_agreement_endpoint_matches_the_references(clients, users, felm_project):
    from annotation.imports.items import import_jsonl
    from annotation.services.annotations import save_annotation

    rng = random.Random(7)
    import_jsonl(
        felm_project,
        jsonl([felm_line(i, [f"S{k}." for k in range(5)]) for i in range(30)]),
        fmt="felm",
    )
    alice_labels, bob_labels, alice_types, bob_types = [], [], [], []
    for stage_assignments in _assignments_by_stage(felm_project):
        per_user = {}
        for assignment in stage_assignments:
            segments = []
            for _ in range(5):
                if rng.random() < 0.6:
                    segments.append(segment(True))
                else:
                    segments.append(
                        segment(
                            False,
                            rng.choice(["knowledge_error", "reasoning_error", "fooled"]),
                            "why",
                        )
                    )
            per_user[assignment.user.username] = segments
            save_annotation(assignment=assignment, payload={"segments": segments}, version=0, submit=True)
        for a, b in zip(per_user["alice"], per_user["bob"]):
            alice_labels.append(str(a["label"]))
            bob_labels.append(str(b["label"]))
            if a["label"] is False and b["label"] is False:
                alice_types.append(a["error_type"])
                bob_types.append(b["error_type"])

    body = clients["admin"].get(f"/api/projects/{felm_project.id}/agreement/").json()
    label, error_type = body["fields"]["label"], body["fields"]["error_type"]
    assert label["units"] == 150
    assert label["cohen_kappa"] == pytest.approx(cohen_kappa_score(alice_labels, bob_labels), abs=1e-12)
    code = {"True": 0, "False": 1}
    expected_alpha = krippendorff.alpha(
        reliability_data=[[code[v] for v in alice_labels], [code[v] for v in bob_labels]],
        level_of_measurement="nominal",
    )
    assert label["krippendorff_alpha"] == pytest.approx(expected_alpha, abs=1e-12)
    assert label["observed_agreement"] == pytest.approx(np.mean(np.array(alice_labels) == np.array(bob_labels)))
    assert label["confusion_matrix"]["labels"] == ["correct", "error"]
    matrix = confusion_matrix(alice_labels, bob_labels, labels=["True", "False"]).tolist()
    assert label["confusion_matrix"]["rows_annotator_a_columns_annotator_b"] == matrix

    assert error_type["units"] == len(alice_types)
    assert error_type["cohen_kappa"] == pytest.approx(cohen_kappa_score(alice_types, bob_types), abs=1e-12)
    assert [a["username"] for a in body["annotators"]] == ["alice", "bob"]
    assert body["annotators"][0]["items_submitted"] == 30


@pytest.mark.django_db
def test_agreement_with_gold_per_annotator(clients, users, felm_project):
    from annotation.imports.items import import_jsonl
    from annotation.services.annotations import save_annotation
    from annotation.services.consolidation import save_consolidation

    import_jsonl(felm_project, jsonl([felm_line(0, ["A.", "B."])]), fmt="felm")
    for assignment in Assignment.objects.select_related("user"):
        labels = (
            [segment(True), segment(True)]
            if assignment.user.username == "alice"
            else [segment(True), segment(False, "fooled", "x")]
        )
        save_annotation(assignment=assignment, payload={"segments": labels}, version=0, submit=True)
    consolidation = felm_project.items.get().stages.get().consolidation
    save_consolidation(
        consolidation=consolidation,
        user=users["carol"],
        payload={"segments": [segment(True), segment(True)]},
        version=0,
        submit=True,
    )
    body = clients["carol"].get(f"/api/projects/{felm_project.id}/agreement/").json()
    per_user = {a["username"]: a["agreement_with_gold"]["label"] for a in body["annotators"]}
    assert per_user == {
        "alice": {"units": 2, "agreement": 1.0},
        "bob": {"units": 2, "agreement": 0.5},
    }


def _assignments_by_stage(project):
    grouped = {}
    for assignment in (
        Assignment.objects.filter(item_stage__item__project=project).select_related("user").order_by("id")
    ):
        grouped.setdefault(assignment.item_stage_id, []).append(assignment)
    return grouped.values()


@pytest.mark.parametrize("seed", range(5))
def test_ordinal_krippendorff_alpha_matches_the_krippendorff_package(seed):
    order = ["yes", "intermediate", "no"]
    ratings = random_ratings(seed, labels=tuple(order))
    expected = krippendorff.alpha(
        reliability_data=reliability_matrix(ratings, 4, order), level_of_measurement="ordinal"
    )
    assert agreement.krippendorff_alpha_ordinal(ratings, order) == pytest.approx(expected, abs=1e-12)
    result = agreement.field_agreement(ratings, labels=order, ordinal=True)
    assert result["krippendorff_alpha_ordinal"] == pytest.approx(expected, abs=1e-12)
    assert result["confusion_matrix"]["labels"] == order  # the scale's order, not the alphabet's
    assert "krippendorff_alpha_ordinal" not in agreement.field_agreement(ratings)


@pytest.mark.django_db
def test_the_agreement_page_shows_importance_in_order_with_the_ordinal_alpha(factcheck_project, users, client):
    from annotation.models import Annotation, ItemStage, StageStatus

    def sentence(importance):
        return {
            "decontext": "A is B.",
            "importance": importance,
            "checkworthy": "yes",
            "claims": [{"text": "A is B.", "category": "factual", "importance": importance}],
        }

    for n, (a, b) in enumerate([("yes", "intermediate"), ("no", "no"), ("yes", "yes"), ("intermediate", "no")]):
        item = factcheck_project.items.create(prompt="p", response="A is B.", external_id=str(n))
        stage = ItemStage.objects.create(
            item=item, stage=1, status=StageStatus.CONSOLIDATING, content={"sentences": ["A is B."]}
        )
        for name, value in (("alice", a), ("bob", b)):
            assignment = Assignment.objects.create(item_stage=stage, user=users[name], status="submitted")
            Annotation.objects.create(assignment=assignment, payload={"sentences": [sentence(value)]}, submitted=True)
    client.force_login(users["carol"])
    page = client.get(f"/projects/{factcheck_project.id}/agreement/").content.decode()
    section = page[page.index('data-field="sentence_importance"') :]
    section = section[: section.index("</section>")]
    assert "Krippendorff's α (ordinal)" in section
    # in order, by their names (not the codes yes / intermediate / no)
    assert section.index(">Yes<") < section.index(">Intermediate<") < section.index(">No<")


@pytest.mark.parametrize(
    ("kind", "code", "name"),
    [
        ("felm", "knowledge_error", "Knowledge error"),
        ("felm", "irrelevant_with_qst", "Irrelevant to the question"),
        ("felm", "correct", "Correct"),
        ("factcheck", "not_a_claim", "Not a claim"),
        ("factcheck", "completely-support", "Completely support"),
        ("factcheck", "NA", "NA"),
    ],
)
def test_label_codes_have_names_for_the_pages(kind, code, name):
    from annotation.kinds import get_kind

    assert get_kind(kind).value_name(code) == name
