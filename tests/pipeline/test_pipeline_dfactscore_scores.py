import json
import math
import random

import pytest
from sklearn.metrics import adjusted_rand_score

from pipeline.dfactscore_scores import (
    length_penalty,
    model_scores,
    paragraph_scores,
    partition_agreements,
)
from tests.helpers.paths import shared_data_path

CONTENT = {
    "name": "Mara Quell",
    "facts": [
        {"text": t, "span": None}
        for t in (
            "Mara Quell is a glassblower.",
            "Mara Quell was born in Tallinn.",
            "Mara Quell won a rowing medal.",
            "Mara Quell coaches in Tartu.",
            "Tartu has a university.",
        )
    ],
    "candidates": [{"title": "Mara Quell (artist)"}, {"title": "Mara Quell (rower)"}],
}


def fact(group, label, any_page=None, entity=None):
    return {"group": group, "label": label, "any_page": any_page, "entity": entity}


# Two individuals: the artist (facts 0, 1) and one nobody's page describes (facts 2, 3); fact 4 is off topic.
GOLD = {
    "individuals": 2,
    "groups": [{"link": 0}, {"link": "none"}],
    "facts": [
        fact(0, "supported"),
        fact(0, "not_supported"),
        fact(1, "not_supported"),
        fact(1, "not_supported"),
        fact(0, "irrelevant"),
    ],
}


def test_paragraph_scores_by_hand():
    scores = paragraph_scores(CONTENT, GOLD)
    # Irrelevant left out: 4 facts, 1 supported by its group's page; no any_page pass: the same lower bound.
    assert scores["facts"] == 4
    assert scores["factscore"] == 0.25 and scores["dfactscore"] == 0.25
    assert scores["num_groups"] == 2
    assert scores["num_supporting_topics"] == 1
    assert scores["distinct_entities"] == 1  # links: page 0 and "none"
    assert scores["global_decisions"] == [
        {
            "atom": "Mara Quell is a glassblower.",
            "is_supported": True,
            "supporting_topic": "Mara Quell (artist)",
        },
        {
            "atom": "Mara Quell was born in Tallinn.",
            "is_supported": False,
            "supporting_topic": None,
        },
        {"atom": "Mara Quell won a rowing medal.", "is_supported": False, "supporting_topic": None},
        {"atom": "Mara Quell coaches in Tartu.", "is_supported": False, "supporting_topic": None},
    ]
    counted = paragraph_scores(CONTENT, GOLD, irrelevant="not_supported")
    assert counted["facts"] == 5 and counted["factscore"] == 0.2 and counted["dfactscore"] == 0.2
    assert counted["decisions"][4] == {
        "atom": "Tartu has a university.",
        "is_supported": False,
        "supporting_topic": None,
    }
    with pytest.raises(ValueError):
        paragraph_scores(CONTENT, GOLD, irrelevant="ignore")


def test_optional_passes_give_factscore_and_distinct_entities():
    gold = {
        **GOLD,
        "facts": [
            fact(0, "supported", "supported", 0),
            fact(0, "not_supported", "supported", 0),
            fact(1, "not_supported", "supported", 1),
            fact(1, "not_supported", "not_supported", "none"),
            fact(0, "irrelevant", "not_supported", "none"),
        ],
    }
    scores = paragraph_scores(CONTENT, gold)
    # FActScore: 3 of 4 supported by some page (rowing medal by the rower's); D-FActScore still 1 of 4.
    assert scores["factscore"] == 0.75 and scores["dfactscore"] == 0.25
    assert [d["supporting_topic"] for d in scores["decisions"]] == [
        "Mara Quell (artist)",
        "Mara Quell (artist)",
        "Mara Quell (rower)",
        None,
    ]
    assert scores["num_supporting_topics"] == 2
    assert scores["distinct_entities"] == 3  # candidates 0 and 1, and someone on no page


def test_a_paragraph_without_counted_facts_has_no_scores():
    gold = {"individuals": 1, "groups": [{"link": 0}], "facts": [fact(0, "irrelevant")]}
    content = {**CONTENT, "facts": CONTENT["facts"][:1]}
    scores = paragraph_scores(content, gold)
    assert scores["factscore"] is None and scores["dfactscore"] is None
    assert scores["decisions"] is None and scores["global_decisions"] is None and scores["facts"] == 0
    empty = paragraph_scores({**CONTENT, "facts": []}, {"individuals": 0, "groups": [], "facts": []})
    assert empty["factscore"] is None and empty["num_groups"] == 0


def test_model_scores_by_hand():
    first = paragraph_scores(CONTENT, GOLD)  # 4 facts, 0.25 / 0.25
    second = paragraph_scores(
        CONTENT,
        {
            "individuals": 1,
            "groups": [{"link": 1}],
            "facts": [
                fact(0, "supported"),
                fact(0, "supported"),
                fact(0, "supported"),
                fact(0, "not_supported"),
                fact(0, "supported"),
            ],
        },
    )  # 5 facts, 0.8
    silent = paragraph_scores({**CONTENT, "facts": []}, {"individuals": 0, "groups": [], "facts": []})
    result = model_scores([first, silent, second])
    assert result["init_score"] == pytest.approx((0.25 + 0.8) / 2)
    assert result["init_global_score"] == pytest.approx((0.25 + 0.8) / 2)
    assert result["score"] == pytest.approx((math.exp(1 - 10 / 4) * 0.25 + math.exp(1 - 10 / 5) * 0.8) / 2)
    # the authors' code penalises D-FActScore by the number of groups (2 and 1), not of facts
    assert result["global_score"] == pytest.approx((math.exp(1 - 10 / 2) * 0.25 + math.exp(1 - 10 / 1) * 0.8) / 2)
    assert result["respond_ratio"] == pytest.approx(2 / 3)
    assert result["num_facts_per_response"] == 4.5
    assert result["num_groups"] == 1.5  # over the responding paragraphs only
    assert result["num_supporting_topics"] == 1.0
    assert result["nan"] == 0
    assert result["decisions"][1] is None and len(result["global_decisions"]) == 3
    nothing = model_scores([silent])
    assert nothing["init_score"] is None and nothing["respond_ratio"] == 0.0 and nothing["num_groups"] is None
    assert model_scores([])["respond_ratio"] is None


def test_length_penalty():
    assert length_penalty(11) == 1.0 and length_penalty(10) == 1.0
    assert length_penalty(5) == pytest.approx(math.exp(-1))
    assert length_penalty(0) == 0.0  # the code's exp(1 - 10 / 1e-10)


def test_a_release_kept_as_gold_has_no_number_of_groups():
    """The release keeps only each model's mean number of groups and its grouped list does not
    mark where a group ends: the individuals inferred at import (the pages the grouped list
    names) are not the paper's groups, so neither num_groups nor global_score counts them."""
    entries = [{"atom": f"fact {i}", "is_supported": i < 3, "supporting_topic": None} for i in range(4)]
    released = paragraph_scores({}, _released_gold(entries, entries, 1))
    assert released["num_groups"] is None and released["dfactscore"] == 0.75
    annotated = paragraph_scores(CONTENT, GOLD)  # 2 groups, D-FActScore 0.25
    result = model_scores([released, annotated])
    assert result["init_global_score"] == pytest.approx((0.75 + 0.25) / 2)
    assert result["num_groups"] == 2  # over the paragraphs whose groups are known
    assert result["global_score"] == pytest.approx(math.exp(1 - 10 / 2) * 0.25)
    assert model_scores([released])["num_groups"] is None and model_scores([released])["global_score"] is None


def _released_gold(decisions, global_decisions, individuals):
    return {
        "released": {"decisions": decisions, "global_decisions": global_decisions},
        "individuals": individuals,
    }


def test_imported_result_gives_its_scores_back_exactly():
    rng = random.Random(11)
    decisions, global_decisions = [], []
    for number in range(50):
        if number % 7 == 0:
            decisions.append(None)
            global_decisions.append(None)
        else:
            size = rng.randint(1, 30)
            plain = [
                {
                    "atom": f"fact {i}",
                    "is_supported": rng.random() < 0.7,
                    "supporting_topic": f"page {rng.randint(0, 3)}",
                }
                for i in range(size)
            ]
            for entry in plain:
                entry["supporting_topic"] = entry["supporting_topic"] if entry["is_supported"] else None
            decisions.append(plain)
            global_decisions.append([{**e, "is_supported": e["is_supported"] and rng.random() < 0.8} for e in plain])
    result = model_scores([paragraph_scores({}, _released_gold(d, g, 1)) for d, g in zip(decisions, global_decisions)])
    # A second round trip through the exported lists gives the same numbers, to the bit.
    again = model_scores(
        [paragraph_scores({}, _released_gold(d, g, 1)) for d, g in zip(result["decisions"], result["global_decisions"])]
    )
    assert again == result
    responding = [(d, g) for d, g in zip(decisions, global_decisions) if d]
    assert result["init_score"] == pytest.approx(
        sum(sum(e["is_supported"] for e in d) / len(d) for d, _ in responding) / len(responding)
    )
    assert result["decisions"] == decisions


def test_example_result_file():
    released = json.loads(shared_data_path("dfactscore", "example-result.json").read_text())
    paragraphs = [
        paragraph_scores({}, _released_gold(d, g, 1 if d else 0))
        for d, g in zip(released["decisions"], released["global_decisions"])
    ]
    result = model_scores(paragraphs)
    assert result["init_score"] == released["init_score"]
    assert result["init_global_score"] == released["init_global_score"]
    for key in ("score", "respond_ratio", "num_facts_per_response", "num_supporting_topics"):
        assert result[key] == pytest.approx(released[key], rel=1e-12), key
    # The file keeps only the mean number of groups: num_groups, and global_score (penalised by
    # each paragraph's groups), cannot be recomputed from it.
    assert result["num_groups"] is None and result["global_score"] is None
    assert result["nan"] == released["nan"]
    assert result["decisions"] == released["decisions"]
    assert result["global_decisions"] == released["global_decisions"]
    assert set(result) == set(released)


def partition_agreement(groups_a, groups_b):
    return partition_agreements([(groups_a, groups_b)])[0]


def reference_agreement(groups_a, groups_b):
    """scikit-learn's adjusted Rand index on the facts both annotators grouped."""
    both = [(a, b) for a, b in zip(groups_a, groups_b) if a is not None and b is not None]
    return float(adjusted_rand_score([a for a, _ in both], [b for _, b in both])) if both else None


def test_partition_agreement_by_hand():
    assert partition_agreement([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0  # the same partition, renamed
    assert partition_agreement([0, 0, 1, 1], [0, 0, 0, 1]) == 0.0
    # tp=4, fp=2, fn=8, tn=16: 2(4·16 − 8·2) / ((4+8)(8+16) + (4+2)(2+16)) = 96/396
    assert partition_agreement([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]) == pytest.approx(8 / 33)
    assert partition_agreement([0, None, 0, 0, 1, 1, 1, 2], [0, 5, 0, 1, 1, 2, 2, None]) == pytest.approx(8 / 33)
    assert partition_agreement([None, 0], [1, None]) is None
    with pytest.raises(ValueError, match="3 and 2 facts"):
        partition_agreement([0, 0, 1], [0, 1])


def test_partition_agreements_match_scikit_learn():
    rng = random.Random(3)
    pairs = []
    for _ in range(300):
        size = rng.randint(0, 25)
        a = [
            rng.choice([None] + list(range(rng.randint(1, 5)))) if rng.random() < 0.1 else rng.randint(0, 3)
            for _ in range(size)
        ]
        b = [x if x is not None and rng.random() < 0.6 else rng.choice([None, 0, 1, 2, 7]) for x in a]
        pairs.append((a, b))
    pairs.append(([5, 5, 9], [0, 0, 0]))
    batch = partition_agreements(pairs)
    one_by_one = [reference_agreement(a, b) for a, b in pairs]
    assert [x is None for x in batch] == [x is None for x in one_by_one]
    assert all(x == y or abs(x - y) < 1e-12 for x, y in zip(batch, one_by_one) if x is not None)
    kept = [(a, b) for a, b in pairs if any(x is not None and y is not None for x, y in zip(a, b))]
    assert sum(x is not None for x in batch) == len(kept) > 250
    assert partition_agreements([]) == []
    assert adjusted_rand_score([0, 0, 1], [0, 1, 1]) == partition_agreements([([0, 0, 1], [0, 1, 1])])[0]
