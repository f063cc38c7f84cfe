"""What research needs of a kind, in the kinds layer (no Django models, no queries): the
scoring task, its gold units and headline figures. Each kind's ``KindSpec`` hooks build them
(``scoring_tasks``, ``gold_units``, ``existing_units``); annotation.scoring reads and scores them.
"""

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

# the labels a prediction may carry: the released vocabularies and the app's own
SENTENCE_CHECKWORTHINESS = ("yes", "no", "opinion", "not_a_claim", "other")
CLAIM_CATEGORIES = ("factual", "opinion", "not_a_claim", "other")
FACTUALITY = ("true", "false", "not_enough_evidence", "unknown")
SUPPORT = ("not_supported", "supported")


@dataclass(frozen=True)
class GoldUnit:
    key: tuple
    gold: str
    original: str | None = None  # revision: the response before it was revised

    @property
    def item(self) -> Hashable:
        return self.key[0]


@dataclass(frozen=True)
class Figure:
    """A number a task's leaderboard shows: a path into score_task's answer (``accuracy``,
    ``macro_f1``, ``per_label.error.f1``, ``against_gold.word_overlap``…), its heading, and
    whether higher is better (the first of a task's headline figures ranks its systems)."""

    name: str
    title: str
    higher_is_better: bool = True


def class_figures(label: str, what: str) -> tuple[Figure, ...]:
    """F1, precision and recall of one label taken as the positive class."""
    return (
        Figure(f"per_label.{label}.f1", f"F1 ({what})"),
        Figure(f"per_label.{label}.precision", f"P ({what})"),
        Figure(f"per_label.{label}.recall", f"R ({what})"),
    )


# The figures each paper reports first (docs/measures.md), the task's headline on its leaderboard.
# Factcheck-Bench, Tables 3-4 (subtasks 1-3): accuracy and macro P/R/F1.
ACCURACY_AND_MACRO = (
    Figure("accuracy", "Accuracy"),
    Figure("macro_precision", "Macro P"),
    Figure("macro_recall", "Macro R"),
    Figure("macro_f1", "Macro F1"),
)
# Factcheck-Bench, Table 5 (claim factuality): P/R/F1 of false and of true claims, each its own
# positive class; false first (the abstract's "best F1 = 0.53" is on false claims).
FACTUALITY_FIGURES = (
    *class_figures("false", "false claims"),
    *class_figures("true", "true claims"),
)
# FELM: F1 (P, R) of detecting errors, the error class positive, and balanced accuracy, as its
# evaluation code computes them at segment and response level.
FELM_FIGURES = (*class_figures("error", "errors"), Figure("balanced_accuracy", "Balanced accuracy"))
REVISION_FIGURES = (
    Figure("against_gold.word_overlap", "Word overlap with the gold revision"),
    Figure("against_gold.normalised_edit_distance", "Edit distance to the gold revision", False),
    Figure("against_original.word_overlap", "Word overlap with the original"),
    Figure("against_original.normalised_edit_distance", "Edit distance to the original", False),
)


def dfactscore_figures(score: str) -> tuple[Figure, ...]:
    """D-FActScore (Chiang & Lee) reports FActScore and D-FActScore per source model: a system is
    as good as its per-model score is close to the human one (``paragraph_comparison``)."""
    return (Figure("paragraph_scores.mean_difference", f"Mean |system − human| {score} over models", False),)


@dataclass
class Task:
    name: str
    title: str
    key_fields: tuple[str, ...]
    units: list[GoldUnit] = field(default_factory=list)
    labels: tuple[str, ...] | None = None  # None: those in gold or predictions, as scikit-learn
    normalise: Callable[[Any], str] = field(
        default=lambda label: label
    )  # a prediction's label in the task's vocabulary
    # the field of a prediction line that holds this task's label, and the labels it may hold
    # (before normalise); a line keyed by key_fields may carry the fields of several tasks
    field: str = "label"
    vocabulary: tuple = ()
    # "labels": classification scores; "revision": a free text compared with texts
    measure: str = "labels"
    # D-FActScore: each paragraph's item key → its source model (item order), and which of the
    # paper's scores this task's decisions make ("factscore" | "dfactscore")
    models: dict[Hashable, str] | None = None
    paragraph_score: str = ""
    # D-FActScore: each paragraph's number of groups (None: not known), global_score's penalty
    groups: dict[Hashable, int | None] | None = None
    # the per-unit agreement export's field that says whether the annotators agreed on this
    # task's unit ("" = the prediction field); scores on agreed units only read it
    agreement_field: str = ""
    # the figures the task's paper reports, its leaderboard's headline (the first ranks)
    figures: tuple[Figure, ...] = ACCURACY_AND_MACRO
    # where the paper's figures are over some of the units only: which ones (words for pages,
    # "" when over every unit) and their keys (set with the units by the kind's gold_units);
    # scored apart, the leaderboard's default view
    paper_subset: str = ""
    paper_units: frozenset[tuple] = frozenset()
    # the labels whose recalls balanced accuracy averages, undefined when the gold lacks one
    # (FELM's code: both classes); None: those the gold holds, as scikit-learn
    balanced_labels: tuple[str, ...] | None = None

    def accepts(self, value: Any) -> bool:
        """Whether a prediction line's value can be this task's prediction (before normalise):
        any string for a revision, else one of the vocabulary of the same type (``1`` is not
        ``true``)."""
        if self.measure == "revision":
            return isinstance(value, str)
        return any(type(value) is type(allowed) and value == allowed for allowed in self.vocabulary)


def item_key(row: dict) -> Hashable:
    """How scoring keys an item: its name (external id, else database id) or, for an item with a
    domain, ``(domain, name)``, since ids are unique only per domain (FELM's five domain files
    each number from "0"). Prediction lines name the two apart (``item`` and ``domain``)."""
    return item_name(row["external_id"], row["item_id"], row.get("domain") or "")


def item_name(external_id: str, item_id: int, domain: str = "") -> Hashable:
    name = external_id or str(item_id)
    return (domain, name) if domain else name


def named_item(key: Hashable) -> tuple[str, str]:
    """(domain, name) of an item key ("" when it has no domain)."""
    return key if isinstance(key, tuple) else ("", key)


def checkworthy(label: str) -> str:
    return "yes" if label == "yes" else "no"


def factuality(label: str) -> str:
    return "not_enough_evidence" if label == "unknown" else label


def listed_units(rows_of: Callable[..., Iterable[dict]], listed: str) -> set[tuple]:
    """Every item and every entry of its gold record's list ``listed`` (FELM segments,
    D-FActScore facts), keyed as the exports name them."""
    keys: set[tuple] = set()
    for row in rows_of(metadata=False):
        item = item_key(row)
        keys.add((item,))
        keys.update((item, index) for index in range(len(row["gold"].get(listed) or [])))
    return keys
