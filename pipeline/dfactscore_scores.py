"""FActScore and D-FActScore from annotations, per paragraph and per model, in the released shape.

Plain data in, plain data out. Per paragraph, ``paragraph_scores`` turns a gold payload into the
released per-generation lists (``decisions``: plain FActScore, a fact supported by any page;
``global_decisions``: each fact against its group's linked page) and scores both lists the same
way, so a result file imported as gold (``gold["released"]``) gives its numbers back exactly.

How a human payload becomes the lists:

* ``global_decisions``: a fact is supported iff ``label == "supported"`` (against the linked page;
  a group linked to ``"none"`` has no page, so its facts are unsupported); its
  ``supporting_topic`` is the linked page's title when supported;
* ``decisions``: the fact's ``any_page`` label when the optional pass gave one, else its
  ``label`` — a lower bound, since a fact its own page does not support may be on another; the
  topic is the ``entity`` pass's page when given, else the linked page;
* ``irrelevant`` facts: left out of both lists (``"exclude"``, the default) or counted as not
  supported (``"not_supported"``); facts without a label yet are left out.

Per model, ``model_scores`` follows the authors' code (``factscorer_ambig.py`` of
d223302/Merging-Facts-Crafting-Fallacies, which wrote the released files): ``init_score`` /
``init_global_score`` are means over paragraphs with facts, with no length penalty (the numbers
the paper reports); ``score`` applies FActScore's penalty exp(1 - 10/n) to a paragraph of n ≤ 10
facts, ``global_score`` the same penalty with n the paragraph's number of groups (the code's
``len(resolved_facts)``: the splitter's groups, not their facts). ``num_groups`` is the mean
number of groups (the paper's "# bios"): for a human gold its individuals; a gold that keeps a
release's lists has no known number (the release keeps only the model's mean, and its grouped
list does not mark where a group ends), so it is left out of ``num_groups`` and ``global_score``.
``num_supporting_topics`` counts the distinct pages in ``decisions``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

GAMMA = 10  # FActScore's length penalty: paragraphs of at most this many facts are penalised
IRRELEVANT_MODES = ("exclude", "not_supported")


def _judged(entries: list[dict] | None) -> list[bool]:
    """The ``is_supported`` values of a generation's entries; an entry without one (or null) was
    not judged and is left out, as a fact without a label is."""
    return [e["is_supported"] for e in entries or [] if isinstance(e, dict) and isinstance(e.get("is_supported"), bool)]


def _share(entries: list[dict] | None) -> float | None:
    judged = _judged(entries)
    return sum(judged) / len(judged) if judged else None


def topic_titles(topic) -> list[str]:
    """The page titles a released ``supporting_topic`` names: the string, none for null or ``[]``
    (the releases' "no page"), the strings of a list."""
    if isinstance(topic, str):
        return [topic] if topic else []
    if isinstance(topic, list):
        return [t for t in topic if isinstance(t, str) and t]
    return []


def _topics(entries: list[dict] | None) -> int:
    return len(
        {
            title
            for e in entries or []
            if isinstance(e, dict) and e.get("is_supported") is True
            for title in topic_titles(e.get("supporting_topic"))
        }
    )


def released_lists(
    content: dict, gold: dict, irrelevant: str = "exclude"
) -> tuple[list[dict] | None, list[dict] | None]:
    """(decisions, global_decisions) of one paragraph: the released ones, as given (null, ``[]``
    or the entries), when the gold keeps them, else built from the payload (see the module
    docstring; None for a list without facts)."""
    if irrelevant not in IRRELEVANT_MODES:
        raise ValueError(f"irrelevant must be one of {IRRELEVANT_MODES}, got {irrelevant!r}")
    released = gold.get("released")
    if released is not None:
        return released.get("decisions"), released.get("global_decisions")
    texts = [f.get("text", "") for f in content.get("facts") or []]
    titles = {c: candidate.get("title") or None for c, candidate in enumerate(content.get("candidates") or [])}
    links = [titles.get(g.get("link")) if type(g.get("link")) is int else None for g in gold.get("groups") or []]
    decisions, global_decisions = [], []
    for index, fact in enumerate(gold.get("facts") or []):
        label = fact.get("label")
        if label is None or (label == "irrelevant" and irrelevant == "exclude"):
            continue
        atom = texts[index] if index < len(texts) else ""
        group = fact.get("group")
        linked = links[group] if type(group) is int and 0 <= group < len(links) else None
        supported = label == "supported" and linked is not None
        global_decisions.append(
            {
                "atom": atom,
                "is_supported": supported,
                "supporting_topic": linked if supported else None,
            }
        )
        any_page = fact.get("any_page")
        if any_page is not None and label != "irrelevant":
            supported = any_page == "supported"
        entity = fact.get("entity")
        topic = (titles.get(entity) if type(entity) is int else None) or (linked if label == "supported" else None)
        decisions.append(
            {
                "atom": atom,
                "is_supported": supported,
                "supporting_topic": topic if supported else None,
            }
        )
    return decisions or None, global_decisions or None


def group_count(gold: dict) -> int | None:
    """The paragraph's number of groups: the annotators' individuals; None for a gold that keeps
    a release's lists (its individuals are only the pages the grouped list names)."""
    individuals = gold.get("individuals")
    if gold.get("released") is not None or isinstance(individuals, bool) or not isinstance(individuals, int):
        return None
    return individuals


def paragraph_scores(content: dict, gold: dict, irrelevant: str = "exclude") -> dict:
    """FActScore, D-FActScore and counts of one paragraph's gold (scores None without counted facts)."""
    decisions, global_decisions = released_lists(content, gold, irrelevant)
    entities = [f.get("entity") for f in gold.get("facts") or [] if f.get("entity") is not None]
    if entities:
        distinct = len(set(entities))
    else:
        distinct = len({g.get("link") for g in gold.get("groups") or [] if g.get("link") not in (None, "none")})
    return {
        "facts": len(decisions or []),
        "factscore": _share(decisions),
        "dfactscore": _share(global_decisions),
        "num_groups": group_count(gold),
        "num_supporting_topics": _topics(decisions),
        "distinct_entities": distinct,
        "decisions": decisions,
        "global_decisions": global_decisions,
    }


def length_penalty(count: int) -> float:
    """FActScore's penalty for a paragraph of ``count`` facts (groups, for D-FActScore); 0 for
    none, as the code's exp(1 - 10 / (0 + 1e-10)) is."""
    if count <= 0:
        return 0.0
    return 1.0 if count > GAMMA else math.exp(1 - GAMMA / count)


def _mean(values: list[float]) -> float | None:
    import numpy as np  # numpy: web workers start without it (the kind imports this module)

    return float(np.mean(values)) if values else None


def model_scores(paragraphs: list[dict]) -> dict:
    """One model's numbers in the released result shape (``paragraphs``: ``paragraph_scores`` results,
    in prompt order). Means are over the paragraphs with facts; None where there are none."""
    # a generation responded when either list has entries (null and [] both mean no facts)
    responding = [p for p in paragraphs if p["decisions"] or p["global_decisions"]]
    plain = [p for p in responding if p["factscore"] is not None]
    grouped = [p for p in responding if p["dfactscore"] is not None]
    # the number of groups is known for human golds only (group_count)
    groups = [p["num_groups"] for p in responding if p.get("num_groups") is not None]
    return {
        "score": _mean([length_penalty(len(_judged(p["decisions"]))) * p["factscore"] for p in plain]),
        "init_score": _mean([p["factscore"] for p in plain]),
        "global_score": _mean(
            [length_penalty(p["num_groups"]) * p["dfactscore"] for p in grouped if p.get("num_groups") is not None]
        ),
        "init_global_score": _mean([p["dfactscore"] for p in grouped]),
        "respond_ratio": len(responding) / len(paragraphs) if paragraphs else None,
        "num_facts_per_response": _mean([len(p["decisions"] or []) for p in responding]),
        "num_groups": _mean(groups),
        "num_supporting_topics": _mean([p["num_supporting_topics"] for p in responding]),
        "nan": sum(p["factscore"] is None or p["dfactscore"] is None for p in responding),
        "decisions": [p["decisions"] for p in paragraphs],
        "global_decisions": [p["global_decisions"] for p in paragraphs],
    }


def _assigned(groups_a: Sequence[int | None], groups_b: Sequence[int | None]) -> tuple[list[int], list[int]]:
    if len(groups_a) != len(groups_b):
        raise ValueError(f"the two assignments cover {len(groups_a)} and {len(groups_b)} facts")
    pairs = [(a, b) for a, b in zip(groups_a, groups_b) if a is not None and b is not None]
    return [a for a, _ in pairs], [b for _, b in pairs]


def partition_agreements(
    pairs: Sequence[tuple[Sequence[int | None], Sequence[int | None]]],
) -> list[float | None]:
    """Adjusted Rand index of two annotators' fact → group assignments, per paragraph (facts
    either left ungrouped are left out; None when no fact is grouped by both). The pair-counting
    formula of ``sklearn.metrics.adjusted_rand_score``, from each paragraph's contingency table,
    for every paragraph at once: a library call per paragraph spends most of its time checking
    its input (benchmarks/README.md, ``dfactscore_scores.py``)."""
    import numpy as np  # numpy: web workers start without it (the kind imports this module)

    rows, la, lb = [], [], []
    for number, (groups_a, groups_b) in enumerate(pairs):
        a, b = _assigned(groups_a, groups_b)
        rows.extend([number] * len(a))
        la.extend(a)
        lb.extend(b)
    count = len(pairs)
    if not rows:
        return [None] * count
    row, a, b = (
        np.asarray(rows, dtype=np.int64),
        np.asarray(la, dtype=np.int64),
        np.asarray(lb, dtype=np.int64),
    )
    a -= a.min()
    b -= b.min()
    width_a, width_b = int(a.max()) + 1, int(b.max()) + 1

    def squares(keys: np.ndarray, per_row: int) -> np.ndarray:
        """Σ over a paragraph's cells of (cell count)²."""
        cells, sizes = np.unique(keys, return_counts=True)
        return np.bincount(cells // per_row, weights=sizes.astype(np.float64) ** 2, minlength=count).astype(np.int64)

    n = np.bincount(row, minlength=count).astype(np.int64)
    cells = squares((row * width_a + a) * width_b + b, width_a * width_b)
    sum_a = squares(row * width_a + a, width_a)
    sum_b = squares(row * width_b + b, width_b)
    tp = cells - n
    fp = sum_b - cells
    fn = sum_a - cells
    tn = n * n - fp - fn - cells
    results: list[float | None] = []
    for k in range(count):
        if n[k] == 0:
            results.append(None)
        elif fn[k] == 0 and fp[k] == 0:
            results.append(1.0)
        else:
            t_p, t_n, f_p, f_n = int(tp[k]), int(tn[k]), int(fp[k]), int(fn[k])
            results.append(2.0 * (t_p * t_n - f_n * f_p) / ((t_p + f_n) * (f_n + t_n) + (t_p + f_p) * (f_p + t_n)))
    return results
