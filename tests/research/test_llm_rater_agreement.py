"""The LLM rater beside the annotators: its agreement with them equal to scikit-learn's, on the
agreement page and on the export keys of Factcheck-Bench steps 1 and 2."""

import json
import random

import pytest
from django.template.defaultfilters import floatformat
from sklearn.metrics import cohen_kappa_score

from annotation.imports.items import import_jsonl
from annotation.models import Annotation, Assignment, ItemStage, SystemRunState
from annotation.research.rater_agreement import rater_agreement
from annotation.services.annotations import save_annotation
from annotation.services.consolidation import save_consolidation
from tests.helpers.builders import felm_line, jsonl
from tests.helpers.fake_llm import FakeLLMServer, last_user_message, well_behaved_responder
from tests.helpers.llm_rater import rater_responder, run_rater, use_llm

# -- beside the annotators --------------------------------------------------------------------------


def annotate_felm(project, users, labels_of):
    """alice and bob submit ``labels_of(name, item index, segment)``; carol consolidates alice's."""

    def payload(name, index, count):
        return {
            "segments": [
                {
                    "label": labels_of(name, index, k),
                    "comment": "" if labels_of(name, index, k) else "wrong",
                    "error_type": None if labels_of(name, index, k) else "knowledge_error",
                    "refs": [],
                }
                for k in range(count)
            ]
        }

    for index, item in enumerate(project.items.order_by("id")):
        stage = item.stages.get()
        count = len(stage.content["segments"])
        for name in ("alice", "bob"):
            assignment = Assignment.objects.get(user=users[name], item_stage=stage)
            save_annotation(assignment=assignment, payload=payload(name, index, count), version=0, submit=True)
        consolidation = stage.consolidation
        save_consolidation(
            consolidation=consolidation,
            user=users["carol"],
            payload=payload("alice", index, count),
            version=consolidation.version,
            submit=True,
        )


def test_rater_agreement_beside_the_annotators_equals_scikit_learn(felm_project, users, client):
    import_jsonl(
        felm_project,
        jsonl([felm_line(i, [f"Claim {i}.{k} here." for k in range(4)]) for i in range(8)]),
        fmt="felm",
    )
    rng = random.Random(7)
    truth = {(i, k): rng.random() < 0.6 for i in range(8) for k in range(4)}
    noise = {(name, i, k): rng.random() < 0.25 for name in ("alice", "bob") for i in range(8) for k in range(4)}
    annotate_felm(felm_project, users, lambda name, i, k: truth[i, k] != noise[name, i, k])
    model_wrong = {i: {k + 1 for k in range(4) if rng.random() < 0.4} for i in range(8)}

    def felm(prompt):
        item = int(prompt.split("Question ")[-1].split("?")[0])
        wrong = model_wrong[item]
        return f"Answer: {', '.join(map(str, sorted(wrong)))}" if wrong else "Answer: ALL_CORRECT"

    with FakeLLMServer(rater_responder(felm)) as server:
        use_llm(felm_project, server)
        run = run_rater(felm_project, users["admin"])
    assert run.state == SystemRunState.DONE, run.errors

    result = rater_agreement(felm_project, 1)
    assert result["runs"][0]["id"] == run.id
    (field,) = result["fields"]
    rows = {tuple(row["compared"]): row for row in field["rows"]}
    units = [(i, k) for i in range(8) for k in range(4)]
    word = {True: "correct", False: "error"}
    model = [word[k + 1 not in model_wrong[i]] for i, k in units]
    for name in ("alice", "bob"):
        human = [word[truth[i, k] != noise[name, i, k]] for i, k in units]
        row = rows[(run.system, name)]
        assert row["machine"] and row["units"] == 32
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(human, model), abs=1e-12)
        assert row["observed_agreement"] == pytest.approx(sum(a == b for a, b in zip(human, model)) / 32)
    alice = [word[truth[i, k] != noise["alice", i, k]] for i, k in units]
    bob = [word[truth[i, k] != noise["bob", i, k]] for i, k in units]
    assert rows[("alice", "bob")]["cohen_kappa"] == pytest.approx(cohen_kappa_score(alice, bob), abs=1e-12)
    assert not rows[("alice", "bob")]["machine"]

    with_ci = rater_agreement(felm_project, 1, resamples=200, seed=3)
    low, high = with_ci["fields"][0]["rows"][0]["ci"]["cohen_kappa"]
    assert low <= with_ci["fields"][0]["rows"][0]["cohen_kappa"] <= high

    # the agreement page shows it to the consolidator
    client.force_login(users["carol"])
    page = client.get(f"/projects/{felm_project.id}/agreement/", {"resamples": "0"}).content.decode()
    section = page[page.index('id="llm-rater-agreement"') :]
    for (first, second), row in rows.items():
        assert f"<td>{first} / {second}</td>" in section
        assert f'<td class="kappa">{floatformat(row["cohen_kappa"], 3)}' in section


def test_before_a_run_the_section_points_to_the_rater_page(felm_rater_gold, factcheck_project, users, client):
    assert rater_agreement(felm_rater_gold, 1) == {
        "runs": [],
        "fields": [],
        "bootstrap": {"resamples": 0, "seed": 0},
    }
    assert rater_agreement(factcheck_project, 3) is None  # revisions are texts: no labels to compare
    client.force_login(users["carol"])
    page = client.get(f"/projects/{felm_rater_gold.id}/agreement/").content.decode()
    assert 'id="llm-rater-agreement"' in page and f'href="/projects/{felm_rater_gold.id}/llm-rater/"' in page


def test_factcheck_rater_agreement_meets_the_annotators_on_the_export_keys(factcheck_gold, users):
    """Steps 1 and 2: the annotators' units (sentences, gold claims, passages) and the rater's
    predictions meet on the same keys; κ equals scikit-learn's on the pairs built here."""

    def respond(request):
        prompt = last_user_message(request)
        if prompt == "Reply with OK.":
            return "OK"
        if "Evidence:" in prompt:  # stance: by the passage's length, so both labels occur
            return "refute" if len(prompt) % 2 else "completely-support"
        if prompt.rstrip().endswith("Label:"):  # category: by the claim's length
            return "factual" if len(prompt.rsplit("Claim:", 1)[-1]) % 3 else "opinion"
        return well_behaved_responder(request)

    with FakeLLMServer(respond) as server:
        use_llm(factcheck_gold, server)
        run = run_rater(factcheck_gold, users["admin"], steps=[1, 2])
    assert run.state == SystemRunState.DONE, run.errors
    predicted = {task: {tuple(row[:-1]): row[-1] for row in rows} for task, rows in run.predictions.items()}
    stages = list(
        ItemStage.objects.filter(item__project=factcheck_gold, stage__in=(1, 2)).select_related("item", "gold")
    )
    flip = {"yes": "no", "no": "yes"}
    for stage in stages:  # alice answers as the gold record; bob flips step 1's checkworthiness
        for name in ("alice", "bob"):
            payload = json.loads(json.dumps(stage.gold.payload))
            if name == "bob" and stage.stage == 1:
                for sentence in payload["sentences"]:
                    sentence["checkworthy"] = flip[sentence["checkworthy"]]
            assignment = Assignment.objects.create(item_stage=stage, user=users[name], status="submitted")
            Annotation.objects.create(assignment=assignment, payload=payload, submitted=True)
    expected = {
        "sentence_checkworthy": {"alice": [], "bob": []},
        "claim_category": {"alice": [], "bob": []},
        "stance": {"alice": [], "bob": []},
    }
    for stage in stages:
        item = stage.item.external_id or str(stage.item_id)
        if stage.stage == 1:
            for s, sentence in enumerate(stage.gold.payload["sentences"]):
                key = (item, f"sentence{s + 1}")
                if key in predicted["checkworthiness"]:
                    model = predicted["checkworthiness"][key]
                    expected["sentence_checkworthy"]["alice"].append(
                        ("yes" if sentence["checkworthy"] == "yes" else "no", model)
                    )
                    expected["sentence_checkworthy"]["bob"].append(
                        ("no" if sentence["checkworthy"] == "yes" else "yes", model)
                    )
                for c, claim in enumerate(sentence["claims"]):
                    if (*key, c) in predicted["claim_category"]:
                        for name in ("alice", "bob"):
                            expected["claim_category"][name].append(
                                (claim["category"], predicted["claim_category"][(*key, c)])
                            )
        else:
            for claim, answer in zip(stage.content["claims"], stage.gold.payload["claims"]):
                for e, stance in enumerate(answer["stances"]):
                    key = (item, f"sentence{claim['sentence'] + 1}", claim["claim"], e)
                    if stance and key in predicted["stance4"]:
                        for name in ("alice", "bob"):
                            expected["stance"][name].append((stance, predicted["stance4"][key]))
    for step, fields in ((1, ("sentence_checkworthy", "claim_category")), (2, ("stance",))):
        result = rater_agreement(factcheck_gold, step)
        rows = {(f["name"], tuple(r["compared"])): r for f in result["fields"] for r in f["rows"]}
        for field in fields:
            for name in ("alice", "bob"):
                pairs = expected[field][name]
                assert len({label for _, label in pairs}) == 2, field  # the rater used two labels
                row = rows[(field, (run.system, name))]
                assert row["units"] == len(pairs) > 0
                assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(*zip(*pairs)), abs=1e-12), (field, name)
    step1 = {
        (f["name"], tuple(r["compared"])): r for f in rater_agreement(factcheck_gold, 1)["fields"] for r in f["rows"]
    }
    assert step1[("sentence_checkworthy", ("alice", "bob"))]["observed_agreement"] == 0
    assert step1[("claim_category", ("alice", "bob"))]["observed_agreement"] == 1
