"""D-FActScore (Chiang & Lee, "Merging Facts, Crafting Fallacies"): one stage. Annotators say how
many individuals a paragraph about an ambiguous name describes, put each atomic fact into one of
them, link each individual to one candidate page (or none), and label each fact against its
individual's page; optional passes add plain FActScore (supported by any page) and the entity
each fact is really about. The paper's scores come from pipeline.dfactscore_scores.

This module holds the KindSpec; its jobs live beside it: ``settings.py`` (vocabulary and project
settings), ``released.py`` (import lines and released result files), ``payloads.py`` (checking and
merging answers), ``scores.py`` (the paper's scores, fact support, the exported record)."""

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from pipeline.dfactscore_scores import group_count, model_scores, paragraph_scores, partition_agreements

from ..base import AgreementItem, KindSpec, MergeResult, ParsedItem
from ..research import SUPPORT, GoldUnit, Task, dfactscore_figures, item_key, listed_units
from .payloads import check_payload, fact_groups, merge_payloads, suggested_partition
from .released import parse_line, suggestion_from_gold
from .scores import (
    SUPPORT_LABELS,
    consolidated_scores,
    fact_support,
    gold_support,
    machine_payload,
    paragraph_record,
    prediction_keys,
    rater_inputs,
    support_label,
)
from .settings import dfactscore_settings, empty_fact, settings_error

__all__ = [
    "DfactscoreKind",
    "dfactscore_settings",
    "fact_support",
    "support_label",
]


class DfactscoreKind(KindSpec):
    key = "dfactscore"
    stages = (1,)
    import_formats = ("dfactscore",)
    export_formats = ("dfactscore-result", "dfactscore")
    agreement_fields = {
        "individuals": "Number of individuals",
        "label": "Fact label (against the individual's page)",
        "any_page": "Fact supported by any page (FActScore pass)",
        "entity": "Entity the fact is about (entity pass)",
    }
    agreement_paths = {
        "individuals": "$.individuals",
        "labels": "$.facts[*].label",
        "any_page": "$.facts[*].any_page",
        "entity": "$.facts[*].entity",
        "groups": "$.facts[*].group",
    }
    agreement_uses_suggestion = True

    # -- research (annotation.scoring, the LLM rater and its agreement) -----------------------
    rated_steps = (1,)
    rater_reads_metadata = True
    has_paragraph_scores = True
    settings_section = "dfactscore"

    def settings_section_error(self, section: Any) -> str | None:
        return settings_error(section)

    def consolidated_scores(self, rows: Iterable[tuple], settings: dict | None, paragraph_limit: int = 500) -> dict:
        return consolidated_scores(rows, settings, paragraph_limit)

    def page_extras(self, settings_of: Callable[[], dict | None]) -> dict:
        # Which optional passes the page asks for (plain FActScore, entity attribution).
        return {"passes": self.payload_content({}, settings_of)["passes"]}

    def scoring_tasks(self) -> dict[str, Task]:
        return {
            "support": Task(
                "support",
                "D-FActScore: fact supported by any page (FActScore)",
                ("item", "fact"),
                labels=SUPPORT,
                normalise=support_label,
                field="supported",
                vocabulary=(*SUPPORT, True, False),
                models={},
                paragraph_score="factscore",
                agreement_field="label",
                figures=dfactscore_figures("FActScore"),
            ),
            "global_support": Task(
                "global_support",
                "D-FActScore: fact supported by its individual's linked page (D-FActScore)",
                ("item", "fact"),
                labels=SUPPORT,
                normalise=support_label,
                field="global_supported",
                vocabulary=(*SUPPORT, True, False),
                models={},
                paragraph_score="dfactscore",
                agreement_field="label",
                figures=dfactscore_figures("D-FActScore"),
            ),
        }

    def gold_units(self, tasks: dict[str, Task], rows_of: Callable[..., Iterable[dict]], settings: dict) -> None:
        """Per fact, as the project's ``irrelevant`` setting counts facts in its scores; FActScore's
        over the plain list and D-FActScore's over the grouped one (``gold_support``)."""
        support, global_support = tasks["support"], tasks["global_support"]
        irrelevant = dfactscore_settings(settings)["irrelevant"]
        models: dict[Hashable, str] = {}
        groups: dict[Hashable, int | None] = {}
        for row in rows_of(metadata=False):
            item = item_key(row)
            models[item] = row["source"]
            groups[item] = group_count(row["gold"])
            plain, grouped = gold_support(row["content"], row["gold"], irrelevant)
            support.units += [GoldUnit((item, index), SUPPORT_LABELS[value]) for index, value in plain]
            global_support.units += [GoldUnit((item, index), SUPPORT_LABELS[value]) for index, value in grouped]
        support.models = global_support.models = models
        support.groups = global_support.groups = groups

    def existing_units(self, rows_of: Callable[..., Iterable[dict]]) -> set[tuple]:
        """The gold's facts, and the entries of a release's kept lists (gold_support's keys)."""
        keys = listed_units(rows_of, "facts")
        for row in rows_of(metadata=False):
            released = row["gold"].get("released") or {}
            size = max(len(released.get(key) or []) for key in ("decisions", "global_decisions")) if released else 0
            keys.update((item_key(row), index) for index in range(size))
        return keys

    def rater_plan(self, step: int, items: list[dict], settings: dict) -> list:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.llm_rater import (
            plan_dfactscore,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        batches = []
        for item in items:
            name, facts, _ = rater_inputs(item)
            batches += plan_dfactscore(name, facts, item["content"].get("candidates") or [])
        return batches

    def rate(self, step: int, items: list[dict], settings: dict, config) -> list:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.llm_rater import (
            rate_dfactscore,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        return [
            rate_dfactscore(name, item["response"], facts, candidates, settings, config)
            for item in items
            for name, facts, candidates in [rater_inputs(item)]
        ]

    # -- import -----------------------------------------------------------------------------

    def parse_import_line(self, fmt: str, data: dict, line: int) -> ParsedItem:
        if fmt != "dfactscore":
            raise ValueError(f"format {fmt!r} is not one of {', '.join(self.import_formats)}")
        return parse_line(data, line)

    def suggestion_from_labels(self, stage: int, labels: dict) -> dict:
        """Released decisions shown as hints: grouped by supporting page, labels, support."""
        return suggestion_from_gold(labels)

    # -- machine pre-annotation -------------------------------------------------------------

    def needs_precompute(self, stage: int, content: dict, suggestion: dict | None) -> bool:
        return "facts" not in content or suggestion is None

    def precompute(
        self,
        stage: int,
        prompt: str,
        response: str,
        content: dict,
        settings: dict,
        previous_gold: dict | None = None,
        evidence_search=None,
        item_metadata: dict | None = None,
        earlier: dict | None = None,
    ) -> dict:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.dfactscore import (
            preannotate,  # models load only where items are pre-annotated
        )

        facts = [fact["text"] for fact in content["facts"]] if "facts" in content else None
        candidates = [{key: c[key] for key in ("title", "url", "text")} for c in content.get("candidates", [])]
        result = preannotate(
            content.get("name") or (item_metadata or {}).get("name", ""),
            response,
            facts,
            candidates,
            settings,
        )
        suggestion = result["suggestion"]
        return {
            "content": result["content"],
            "suggestion": suggestion,
            "provenance": dict((suggestion or {}).get("provenance") or {}),
        }

    # -- annotation payloads ----------------------------------------------------------------

    def payload_content(self, content: dict, settings_of: Callable[[], dict]) -> dict:
        """The passes that make fields required on submit are project settings, read now."""
        current = dfactscore_settings(settings_of())
        return {
            **content,
            "passes": {key: current[key] for key in ("factscore_pass", "entity_pass")},
        }

    def empty_payload(self, stage: int, content: dict, suggestion: dict | None) -> dict:
        """Nothing pre-selected, not even the suggested number of individuals: an answer left
        as suggested would count as the annotator's."""
        return {
            "individuals": 0,
            "groups": [],
            "facts": [empty_fact() for _ in content.get("facts", [])],
        }

    def validate_payload(self, stage: int, content: dict, payload: Any, *, complete: bool) -> dict:
        return check_payload(content, payload, complete=complete)

    # -- consolidation ----------------------------------------------------------------------

    def merge(self, stage: int, content: dict, payloads: list[dict]) -> MergeResult:
        return merge_payloads(content, payloads)

    # -- agreement --------------------------------------------------------------------------

    def agreement_units(self, stage: int, payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
        units: dict[str, dict[Any, dict]] = {name: {} for name in self.agreement_fields}
        for rater, payload in payloads.items():
            if "facts" in payload and isinstance(payload.get("individuals"), int):  # a whole payload
                parts = {
                    "individuals": [payload["individuals"]],
                    **{
                        name: [f.get(key) for f in payload["facts"]]
                        for name, key in (
                            ("labels", "label"),
                            ("any_page", "any_page"),
                            ("entity", "entity"),
                        )
                    },
                }
            else:  # the small arrays agreement_paths fetched
                parts = payload
            if parts.get("individuals"):
                units["individuals"].setdefault("paragraph", {})[rater] = parts["individuals"][0]
            for name, key in (("labels", "label"), ("any_page", "any_page"), ("entity", "entity")):
                for index, value in enumerate(parts.get(name) or []):
                    if value is not None:
                        units[key].setdefault(index, {})[rater] = str(value)
        return units

    def agreement_unit_values(
        self, stage: int, content: dict, payloads: dict[Hashable, dict]
    ) -> Iterable[tuple[dict, str, dict]]:
        """Per fact (its index in the export's ``facts``); the number of individuals per paragraph."""
        for name, units in self.agreement_units(stage, payloads).items():
            for unit, values in units.items():
                yield ({} if unit == "paragraph" else {"fact": unit}), name, values

    def extra_agreement(self, stage: int, items: Iterable[AgreementItem]) -> dict:
        """Grouping agreement: the mean adjusted Rand index between the first two annotators'
        partitions of each item's facts, and between each annotator and the machine's grouping."""
        between_pairs: list[tuple] = []
        machine_pairs: list[tuple] = []
        machine_raters: list[Hashable] = []
        for item in items:
            partitions = {rater: fact_groups(payload) for rater, payload in item.payloads.items()}
            raters = list(partitions)
            if len(raters) >= 2 and len(partitions[raters[0]]) == len(partitions[raters[1]]):
                between_pairs.append((partitions[raters[0]], partitions[raters[1]]))
            if item.suggestion and item.suggestion.get("groups") is not None:
                for rater in raters:
                    machine_pairs.append(
                        (
                            partitions[rater],
                            suggested_partition(item.suggestion, len(partitions[rater])),
                        )
                    )
                    machine_raters.append(rater)
        between = [value for value in partition_agreements(between_pairs) if value is not None]
        with_machine: dict[Hashable, list[float]] = defaultdict(list)
        for rater, value in zip(machine_raters, partition_agreements(machine_pairs)):
            if value is not None:
                with_machine[rater].append(value)
        return {
            "grouping": {
                "measure": "adjusted Rand index",
                "between_annotators": {"items": len(between), "mean": _mean(between)},
                "annotator_vs_machine": {
                    str(rater): {"items": len(values), "mean": _mean(values)}
                    for rater, values in sorted(with_machine.items(), key=lambda kv: str(kv[0]))
                },
            }
        }

    # -- scoring ----------------------------------------------------------------------------

    def suggestion_predictions(
        self, stage: int, content: dict, suggestion: dict | None, gold: dict | None = None
    ) -> Iterable[tuple[str, tuple, Any]]:
        """Per fact, the machine's FActScore decision (``support``: supported by any page) and its
        D-FActScore one (``global_support``: by its group's linked page), computed from the
        suggestion as the humans' are from their payloads (``machine_payload``). A fact the
        machine calls irrelevant is predicted not supported. Against a gold that keeps a
        release's lists, each fact predicts the entry of its atom (``prediction_keys``)."""
        payload = machine_payload(suggestion, len(content.get("facts") or []))
        if payload is None:
            return
        keys = prediction_keys(content, gold)
        for index, supported, global_supported in fact_support(content, payload, "not_supported"):
            for task, value in (("support", supported), ("global_support", global_supported)):
                key = index if keys is None else keys[task].get(index)
                if key is not None:
                    yield task, (key,), SUPPORT_LABELS[value]

    # -- export -----------------------------------------------------------------------------

    def export_options(self, settings: dict) -> dict:
        return {"irrelevant": dfactscore_settings(settings)["irrelevant"]}

    def export_lines(self, fmt: str, rows: Iterable[dict], irrelevant: str = "exclude") -> Iterable[dict]:
        """``dfactscore``: one line per paragraph; ``dfactscore-result``: one line per model in the
        released result shape. Rows come in item order, so models are grouped here: only each
        paragraph's small score record is kept per model until the end."""
        if fmt == "dfactscore":
            for row in rows:
                yield paragraph_record(row, paragraph_scores(row["content"], row["gold"], irrelevant))
            return
        if fmt != "dfactscore-result":
            raise ValueError(f"export format {fmt!r} is not one of {', '.join(self.export_formats)}")
        by_model: dict[str, list[dict]] = {}
        for row in rows:
            by_model.setdefault(row["source"], []).append(paragraph_scores(row["content"], row["gold"], irrelevant))
        for model, paragraphs in by_model.items():
            yield {"model": model, **model_scores(paragraphs)}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
