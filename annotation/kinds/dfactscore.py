"""D-FActScore (Chiang & Lee, "Merging Facts, Crafting Fallacies"): one stage. Annotators say how
many individuals a paragraph about an ambiguous name describes, put each atomic fact into one of
them, link each individual to one candidate page (or none), and label each fact against its
individual's page; optional passes add plain FActScore (supported by any page) and the entity
each fact is really about. The paper's scores come from pipeline.dfactscore_scores."""
from collections import defaultdict
from typing import Any, Callable, Hashable, Iterable, Iterator

from pipeline.dfactscore_scores import model_scores, paragraph_scores, partition_agreements, topic_titles

from .base import (
    AgreementItem,
    ImportLineError,
    KindSpec,
    MergeResult,
    ParsedItem,
    PayloadError,
    field_error,
    is_valid_url,
    optional_str,
    require_str,
)
from .research import SUPPORT, GoldUnit, Task, dfactscore_figures, item_key, listed_units

LABELS = ("supported", "not_supported", "irrelevant")
ANY_PAGE = ("supported", "not_supported")
NONE = "none"  # "none of these" pages
LINE_FIELDS = ("prompt", "name", "response", "atomic_facts", "candidates", "model", "decisions", "global_decisions",
               "id")
DEFAULT_SETTINGS = {"factscore_pass": False, "entity_pass": False, "irrelevant": "exclude", "linking": "argmax",
                    "support_threshold": 0.5}
SETTING_CHOICES = {"irrelevant": ("exclude", "not_supported"), "linking": ("argmax", "hungarian")}


def dfactscore_settings(settings: dict | None) -> dict:
    """The project's "dfactscore" settings with their defaults filled in."""
    return {**DEFAULT_SETTINGS, **((settings or {}).get("dfactscore") or {})}


def settings_error(section: Any) -> str | None:
    """Why a "dfactscore" settings section is wrong (naming the key), or None."""
    if not isinstance(section, dict):
        return "dfactscore must be an object"
    if unknown := set(section) - set(DEFAULT_SETTINGS):
        return f"dfactscore has unknown keys: {', '.join(sorted(unknown))}"
    for key in ("factscore_pass", "entity_pass"):
        if not isinstance(section.get(key, False), bool):
            return f"dfactscore.{key} must be true or false"
    for key, choices in SETTING_CHOICES.items():
        if section.get(key, DEFAULT_SETTINGS[key]) not in choices:
            return f"dfactscore.{key} must be one of {', '.join(choices)}, not {section[key]!r}"
    threshold = section.get("support_threshold", DEFAULT_SETTINGS["support_threshold"])
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        return f"dfactscore.support_threshold must be a number from 0 to 1, not {threshold!r}"
    return None


def empty_fact() -> dict:
    return {"group": None, "label": None, "any_page": None, "entity": None}


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def support_label(value: Any) -> str:
    """true/false (JSON booleans) as the D-FActScore tasks' labels; strings as they are."""
    return SUPPORT_LABELS[value] if isinstance(value, bool) else value


def rater_inputs(item: dict) -> tuple[str, list[str], list[dict]]:
    """The LLM rater's paragraph name, facts and candidate pages of an item-step."""
    content = item["content"]
    name = content.get("name") or (item["metadata"] or {}).get("name", "")
    return (name, [fact["text"] for fact in content.get("facts") or []],
            [{key: c.get(key) or "" for key in ("title", "url", "text")} for c in content.get("candidates") or []])


def consolidated_scores(rows: Iterable[tuple], settings: dict | None, paragraph_limit: int = 500) -> dict:
    """FActScore and D-FActScore of the consolidated paragraphs, per paragraph (the first
    ``paragraph_limit``) and per source model, for the human gold records and for the machine
    pre-annotation of the same paragraphs, with the absolute difference per model (the paper
    reports at most 8 points). ``rows``: (item id, external id, source model, content, suggestion,
    gold payload) of each consolidated paragraph, in item order."""
    irrelevant = dfactscore_settings(settings)["irrelevant"]
    paragraphs: list[dict] = []
    human: dict[str, list[dict]] = defaultdict(list)
    machine: dict[str, list[dict]] = defaultdict(list)
    count = 0
    for item_id, external_id, model, content, suggestion, gold in rows:
        count += 1
        ours = paragraph_scores(content, gold, irrelevant)
        human[model].append(ours)
        guess = machine_payload(suggestion, len(content.get("facts") or []))
        theirs = paragraph_scores(content, guess, irrelevant) if guess is not None else None
        if theirs is not None:
            machine[model].append(theirs)
        if len(paragraphs) < paragraph_limit:
            paragraphs.append({"item_id": item_id, "external_id": external_id, "model": model,
                               "human": _paragraph_numbers(ours), "machine": theirs and _paragraph_numbers(theirs)})
    models = []
    for model, scored in human.items():
        ours = model_scores(scored)
        theirs = model_scores(machine[model]) if machine.get(model) else None
        entry = {"model": model, "paragraphs": len(scored), "machine_paragraphs": len(machine.get(model, [])),
                 "human": _model_numbers(ours), "machine": theirs and _model_numbers(theirs), "difference": None}
        if theirs is not None:
            entry["difference"] = {key: abs(ours[key] - theirs[key])
                                   if ours[key] is not None and theirs[key] is not None else None
                                   for key in ("init_score", "init_global_score")}
        models.append(entry)
    return {"irrelevant": irrelevant, "paragraph_count": count, "paragraphs": paragraphs, "models": models}


def _paragraph_numbers(scores: dict) -> dict:
    return {key: scores[key] for key in ("facts", "factscore", "dfactscore", "num_groups", "num_supporting_topics",
                                         "distinct_entities")}


def _model_numbers(scores: dict) -> dict:
    """The unpenalised means the paper reports (init_score: FActScore, init_global_score: D-FActScore)."""
    return {key: scores.get(key) for key in ("init_score", "init_global_score", "respond_ratio", "num_facts_per_response",
                                             "num_groups", "num_supporting_topics")}


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
    agreement_paths = {"individuals": "$.individuals", "labels": "$.facts[*].label",
                       "any_page": "$.facts[*].any_page", "entity": "$.facts[*].entity", "groups": "$.facts[*].group"}
    agreement_uses_suggestion = True

    # -- research (annotation.scoring, the LLM rater and its agreement) -----------------------
    rated_steps = (1,)
    rater_reads_metadata = True
    has_paragraph_scores = True

    def consolidated_scores(self, rows: Iterable[tuple], settings: dict | None, paragraph_limit: int = 500) -> dict:
        return consolidated_scores(rows, settings, paragraph_limit)

    def page_extras(self, settings_of: Callable[[], dict | None]) -> dict:
        # Which optional passes the page asks for (plain FActScore, entity attribution).
        return {"passes": self.payload_content({}, settings_of)["passes"]}

    def scoring_tasks(self) -> dict[str, Task]:
        return {
            "support": Task("support", "D-FActScore: fact supported by any page (FActScore)", ("item", "fact"),
                            labels=SUPPORT, normalise=support_label, field="supported",
                            vocabulary=(*SUPPORT, True, False), models={}, paragraph_score="factscore",
                            agreement_field="label", figures=dfactscore_figures("FActScore")),
            "global_support": Task("global_support",
                                   "D-FActScore: fact supported by its individual's linked page (D-FActScore)",
                                   ("item", "fact"), labels=SUPPORT, normalise=support_label, field="global_supported",
                                   vocabulary=(*SUPPORT, True, False), models={}, paragraph_score="dfactscore",
                                   agreement_field="label", figures=dfactscore_figures("D-FActScore")),
        }

    def gold_units(self, tasks: dict[str, Task], rows_of: Callable[..., Iterable[dict]], settings: dict) -> None:
        """Per fact, as the project's ``irrelevant`` setting counts facts in its scores."""
        support, global_support = tasks["support"], tasks["global_support"]
        irrelevant = dfactscore_settings(settings)["irrelevant"]
        models: dict[Hashable, str] = {}
        for row in rows_of(metadata=False):
            item = item_key(row)
            models[item] = row["source"]
            for index, supported, global_supported in fact_support(row["content"], row["gold"], irrelevant):
                support.units.append(GoldUnit((item, index), SUPPORT_LABELS[supported]))
                global_support.units.append(GoldUnit((item, index), SUPPORT_LABELS[global_supported]))
        support.models = global_support.models = models

    def existing_units(self, rows_of: Callable[..., Iterable[dict]]) -> set[tuple]:
        return listed_units(rows_of, "facts")

    def rater_plan(self, step: int, items: list[dict], settings: dict) -> list:
        from pipeline.llm_rater import plan_dfactscore  # loads NLTK and scikit-learn: kept out of web start-up

        batches = []
        for item in items:
            name, facts, _ = rater_inputs(item)
            batches += plan_dfactscore(name, facts, item["content"].get("candidates") or [])
        return batches

    def rate(self, step: int, items: list[dict], settings: dict, config) -> list:
        from pipeline.llm_rater import rate_dfactscore  # loads NLTK and scikit-learn: kept out of web start-up

        return [rate_dfactscore(name, item["response"], facts, candidates, settings, config)
                for item in items for name, facts, candidates in [rater_inputs(item)]]

    # -- import -----------------------------------------------------------------------------

    def parse_import_line(self, fmt: str, data: dict, line: int) -> ParsedItem:
        if fmt != "dfactscore":
            raise ValueError(f"format {fmt!r} is not one of {', '.join(self.import_formats)}")
        name = require_str(data, "name", line)
        response = require_str(data, "response", line, allow_empty=True)
        candidates = _parse_candidates(data, line)
        facts = None
        if "atomic_facts" in data:
            facts = data["atomic_facts"]
            if not isinstance(facts, list):
                raise ImportLineError(line, "atomic_facts", "must be a list of strings")
            for index, fact in enumerate(facts):
                if not isinstance(fact, str) or not fact.strip():
                    raise ImportLineError(line, f"atomic_facts[{index}]", "must be a non-empty string")
        released = {key: _parse_decisions(data, key, line) for key in ("decisions", "global_decisions") if key in data}
        if facts is None and released:
            # The facts annotators see: the grouped list's atoms (the labels D-FActScore judges), else the plain one's.
            given = released.get("global_decisions") or released.get("decisions") or []
            facts = [entry["atom"] for entry in given]
        parsed = ParsedItem(
            line=line,
            prompt=optional_str(data, "prompt", line),
            response=response,
            external_id=optional_str(data, "id", line),
            source=optional_str(data, "model", line),
            metadata={"name": name, **{k: v for k, v in data.items() if k not in LINE_FIELDS}},
        )
        if facts is not None:
            parsed.content[1] = build_content(name, response, facts, candidates)
        else:
            parsed.content[1] = {"name": name, "candidates": candidates}  # facts: by pre-annotation
        if released and facts is not None:
            parsed.labels[1] = gold_from_released(facts, candidates, released, line)
        return parsed

    def suggestion_from_labels(self, stage: int, labels: dict) -> dict:
        """Released decisions shown as hints: grouped by supporting page, labels, support."""
        return suggestion_from_gold(labels)

    # -- machine pre-annotation -------------------------------------------------------------

    def needs_precompute(self, stage: int, content: dict, suggestion: dict | None) -> bool:
        return "facts" not in content or suggestion is None

    def precompute(self, stage: int, prompt: str, response: str, content: dict, settings: dict,
                   previous_gold: dict | None = None, evidence_search=None, item_metadata: dict | None = None,
                   earlier: dict | None = None) -> dict:
        from pipeline.dfactscore import preannotate  # models load only where items are pre-annotated

        facts = [fact["text"] for fact in content["facts"]] if "facts" in content else None
        candidates = [{key: c[key] for key in ("title", "url", "text")} for c in content.get("candidates", [])]
        result = preannotate(content.get("name") or (item_metadata or {}).get("name", ""), response, facts,
                             candidates, settings)
        suggestion = result["suggestion"]
        return {"content": result["content"], "suggestion": suggestion,
                "provenance": dict((suggestion or {}).get("provenance") or {})}

    # -- annotation payloads ----------------------------------------------------------------

    def payload_content(self, content: dict, settings_of: Callable[[], dict]) -> dict:
        """The passes that make fields required on submit are project settings, read now."""
        current = dfactscore_settings(settings_of())
        return {**content, "passes": {key: current[key] for key in ("factscore_pass", "entity_pass")}}

    def empty_payload(self, stage: int, content: dict, suggestion: dict | None) -> dict:
        """Nothing pre-selected, not even the suggested number of individuals: an answer left
        as suggested would count as the annotator's."""
        return {"individuals": 0, "groups": [], "facts": [empty_fact() for _ in content.get("facts", [])]}

    def validate_payload(self, stage: int, content: dict, payload: Any, *, complete: bool) -> dict:
        facts = content.get("facts") or []
        pages = len(content.get("candidates") or [])
        passes = content.get("passes") or {}
        if not isinstance(payload, dict):
            raise PayloadError([field_error("payload", "must be an object with individuals, groups and facts")])
        errors: list[dict] = []
        individuals = payload.get("individuals")
        if isinstance(individuals, bool) or not isinstance(individuals, int) or individuals < 0:
            raise PayloadError([field_error("individuals", "must be a whole number, 0 or more")])
        if complete and individuals == 0 and facts:
            errors.append(field_error("individuals", "must be at least 1: the paragraph has facts"))
        groups = payload.get("groups")
        if not isinstance(groups, list) or len(groups) != individuals:
            raise PayloadError([field_error("groups", f"must be a list with one object per individual ({individuals})")])
        raw_facts = payload.get("facts")
        if not isinstance(raw_facts, list) or len(raw_facts) != len(facts):
            count = f", not {len(raw_facts)}" if isinstance(raw_facts, list) else ""
            raise PayloadError([field_error("facts", f"must be a list with one object per fact ({len(facts)}){count}")])
        normal_groups = [self._group(index, raw, pages, complete, errors) for index, raw in enumerate(groups)]
        normal_facts = [self._fact(index, raw, individuals, pages, passes, complete, errors)
                        for index, raw in enumerate(raw_facts)]
        if complete:
            held = {fact["group"] for fact in normal_facts}
            errors += [field_error(f"groups[{index}]", "holds no fact: put a fact in it or lower the number of individuals")
                       for index in range(individuals) if index not in held]
        normalised = {"individuals": individuals, "groups": normal_groups, "facts": normal_facts}
        if "released" in payload:
            normalised["released"] = _check_released(payload["released"], errors)
        if errors:
            raise PayloadError(errors)
        return normalised

    @staticmethod
    def _group(index: int, raw: Any, pages: int, complete: bool, errors: list[dict]) -> dict:
        path = f"groups[{index}]"
        if not isinstance(raw, dict):
            errors.append(field_error(path, "must be an object with a link"))
            return {"link": None}
        link = raw.get("link")
        if link is None:
            if complete:
                errors.append(field_error(f"{path}.link", "is required: link the individual to a page or to none of these"))
        elif link != NONE and not _index_in(link, pages):
            errors.append(field_error(f"{path}.link", f"must be a page number from 0 to {pages - 1} or \"none\""
                                      if pages else "must be \"none\": the item has no candidate pages"))
            link = None
        return {"link": link}

    @staticmethod
    def _fact(index: int, raw: Any, individuals: int, pages: int, passes: dict, complete: bool,
              errors: list[dict]) -> dict:
        path = f"facts[{index}]"
        if not isinstance(raw, dict):
            errors.append(field_error(path, "must be an object"))
            return empty_fact()
        fact = {key: raw.get(key) for key in ("group", "label", "any_page", "entity")}
        if fact["group"] is not None and not _index_in(fact["group"], individuals):
            errors.append(field_error(f"{path}.group", f"must be an individual from 0 to {individuals - 1}"
                                      if individuals else "must be null: there are no individuals yet"))
        elif fact["group"] is None and complete:
            errors.append(field_error(f"{path}.group", "is required: put the fact into an individual"))
        if fact["label"] is not None and fact["label"] not in LABELS:
            errors.append(field_error(f"{path}.label", f"must be one of {', '.join(LABELS)}"))
        elif fact["label"] is None and complete:
            errors.append(field_error(f"{path}.label", "is required: supported, not supported or irrelevant"))
        if fact["any_page"] is not None and fact["any_page"] not in ANY_PAGE:
            errors.append(field_error(f"{path}.any_page", f"must be one of {', '.join(ANY_PAGE)}"))
        elif fact["any_page"] is None and complete and passes.get("factscore_pass"):
            errors.append(field_error(f"{path}.any_page", "is required: is the fact supported by any page?"))
        if fact["entity"] is not None and fact["entity"] != NONE and not _index_in(fact["entity"], pages):
            errors.append(field_error(f"{path}.entity", f"must be a page number from 0 to {pages - 1} or \"none\""
                                      if pages else "must be \"none\": the item has no candidate pages"))
        elif fact["entity"] is None and complete and passes.get("entity_pass"):
            errors.append(field_error(f"{path}.entity", "is required: which page's person is the fact about?"))
        return fact

    # -- consolidation ----------------------------------------------------------------------

    def merge(self, stage: int, content: dict, payloads: list[dict]) -> MergeResult:
        """Groups are compared as partitions (an individual's number is arbitrary): each
        annotator's individuals are renumbered in order of their first fact first."""
        count = len(content.get("facts") or [])
        numbered = [canonical(p) for p in payloads]
        disagreed: list[str] = []
        individuals_values = {p["individuals"] for p in numbered}
        if len(individuals_values) == 1:
            individuals = individuals_values.pop()
        else:
            individuals = max(individuals_values)  # room for every annotator's individuals
            disagreed.append("individuals")
        groups = []
        for index in range(individuals):
            links = [p["groups"][index]["link"] if index < len(p["groups"]) else None for p in numbered]
            same = all(link == links[0] for link in links) and "individuals" not in disagreed
            groups.append({"link": links[0] if same else None})
            if not same:
                disagreed.append(f"groups[{index}].link")
        facts = []
        for index in range(count):
            fact = empty_fact()
            for key in fact:
                values = [p["facts"][index][key] for p in numbered]
                if all(value == values[0] for value in values):
                    fact[key] = values[0]
                else:
                    disagreed.append(f"facts[{index}].{key}")
            facts.append(fact)
        return MergeResult({"individuals": individuals, "groups": groups, "facts": facts}, disagreed)

    # -- agreement --------------------------------------------------------------------------

    def agreement_units(self, stage: int, payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
        units: dict[str, dict[Any, dict]] = {name: {} for name in self.agreement_fields}
        for rater, payload in payloads.items():
            if "facts" in payload and isinstance(payload.get("individuals"), int):  # a whole payload
                parts = {"individuals": [payload["individuals"]],
                         **{name: [f.get(key) for f in payload["facts"]]
                            for name, key in (("labels", "label"), ("any_page", "any_page"), ("entity", "entity"))}}
            else:  # the small arrays agreement_paths fetched
                parts = payload
            if parts.get("individuals"):
                units["individuals"].setdefault("paragraph", {})[rater] = parts["individuals"][0]
            for name, key in (("labels", "label"), ("any_page", "any_page"), ("entity", "entity")):
                for index, value in enumerate(parts.get(name) or []):
                    if value is not None:
                        units[key].setdefault(index, {})[rater] = str(value)
        return units

    def agreement_unit_values(self, stage: int, content: dict, payloads: dict[Hashable, dict]) -> Iterable[tuple[dict, str, dict]]:
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
                    machine_pairs.append((partitions[rater], suggested_partition(item.suggestion, len(partitions[rater]))))
                    machine_raters.append(rater)
        between = [value for value in partition_agreements(between_pairs) if value is not None]
        with_machine: dict[Hashable, list[float]] = defaultdict(list)
        for rater, value in zip(machine_raters, partition_agreements(machine_pairs)):
            if value is not None:
                with_machine[rater].append(value)
        return {"grouping": {
            "measure": "adjusted Rand index",
            "between_annotators": {"items": len(between), "mean": _mean(between)},
            "annotator_vs_machine": {str(rater): {"items": len(values), "mean": _mean(values)}
                                     for rater, values in sorted(with_machine.items(), key=lambda kv: str(kv[0]))},
        }}

    # -- scoring ----------------------------------------------------------------------------

    def suggestion_predictions(self, stage: int, content: dict, suggestion: dict | None,
                               gold: dict | None = None) -> Iterable[tuple[str, tuple, Any]]:
        """Per fact, the machine's FActScore decision (``support``: supported by any page) and its
        D-FActScore one (``global_support``: by its group's linked page), computed from the
        suggestion as the humans' are from their payloads (``machine_payload``). A fact the
        machine calls irrelevant is predicted not supported."""
        payload = machine_payload(suggestion, len(content.get("facts") or []))
        if payload is None:
            return
        for index, supported, global_supported in fact_support(content, payload, "not_supported"):
            yield "support", (index,), SUPPORT_LABELS[supported]
            yield "global_support", (index,), SUPPORT_LABELS[global_supported]

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


# -- import helpers ---------------------------------------------------------------------------

def _parse_candidates(data: dict, line: int) -> list[dict]:
    candidates = data.get("candidates")
    if not isinstance(candidates, list):
        raise ImportLineError(line, "candidates", "must be a list of {title, url, text} objects"
                              if "candidates" in data else "is missing")
    parsed, titles = [], set()
    for index, candidate in enumerate(candidates):
        path = f"candidates[{index}]"
        if not isinstance(candidate, dict):
            raise ImportLineError(line, path, "must be an object with title, url and text")
        title = require_str(candidate, "title", line, path=f"{path}.title")
        if title in titles:
            raise ImportLineError(line, f"{path}.title", f"{title!r} names an earlier candidate too")
        titles.add(title)
        url = candidate.get("url")
        if not is_valid_url(url):
            raise ImportLineError(line, f"{path}.url", "is missing" if "url" not in candidate
                                  else "must be an http(s) URL")
        text = require_str(candidate, "text", line, path=f"{path}.text")
        parsed.append({"title": title, "url": url, "text": text})
    return parsed


def _parse_decisions(data: dict, key: str, line: int) -> list[dict] | None:
    """One generation's entry of a result file: null or [] (no facts: the model abstained) or
    [{atom, is_supported, supporting_topic}]. Kept as given, entry for entry (docs/released-files.md),
    so the result export gives it back: ``supporting_topic`` may be a string, null or ``[]`` (no
    page) or any other value the scores do not read; ``is_supported`` may be missing (a fact not
    judged, left out of the shares). Only what the scores need is checked: a list of objects whose
    ``atom`` is a string and whose ``is_supported``, when present, is true, false or null."""
    value = data[key]
    if value is None:
        return None
    if not isinstance(value, list):
        raise ImportLineError(line, key, "must be null or a list of {atom, is_supported, supporting_topic} objects")
    for index, entry in enumerate(value):
        path = f"{key}[{index}]"
        if not isinstance(entry, dict):
            raise ImportLineError(line, path, "must be an object with atom and is_supported")
        if not isinstance(entry.get("atom"), str):
            raise ImportLineError(line, f"{path}.atom", "must be a string" if "atom" in entry else "is missing")
        if entry.get("is_supported") is not None and not isinstance(entry["is_supported"], bool):
            raise ImportLineError(line, f"{path}.is_supported", "must be true, false or null")
    return value


def build_content(name: str, response: str, facts: list[str], candidates: list[dict]) -> dict:
    """Stage content for facts the file gives, cut and placed as pre-annotation does it (the
    pages' passages, each fact's span in the response), so the item is ready without it."""
    from pipeline.dfactscore import fact_span, sentence_spans, split_page  # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.segmenter import split_sentences

    sentences = split_sentences(response)
    spans = sentence_spans(response, sentences)
    return {
        "name": name,
        "facts": [{"text": fact, "span": fact_span(fact, response, sentences, spans)} for fact in facts],
        "candidates": [{**candidate, "passages": split_page(candidate["text"])} for candidate in candidates],
    }


def gold_from_released(facts: list[str], candidates: list[dict], released: dict, line: int) -> dict:
    """A gold payload from a result file's entries. The facts are matched to the entries by text
    (the two lists may hold different atoms). Facts sharing a supporting page of the grouped list
    form one individual linked to that page; a fact the grouped list marks unsupported has no
    known individual (the release does not say), so its group stays open. The entries themselves
    are kept under ``released``: the item's scores are computed from them, exactly."""
    titles = {candidate["title"]: index for candidate, index in zip(candidates, range(len(candidates)))}
    grouped = _by_atom(released.get("global_decisions"))
    plain = _by_atom(released.get("decisions"))
    groups: list[dict] = []
    group_of_page: dict[int, int] = {}
    payload_facts = []
    for text in facts:
        fact = empty_fact()
        if (entry := grouped.get(_norm(text))) is not None and isinstance(entry.get("is_supported"), bool):
            fact["label"] = "supported" if entry["is_supported"] else "not_supported"
            # a page the candidates do not hold (or no page) leaves the fact's individual open:
            # the scores come from the kept entries, not from the grouping
            pages = [titles[t] for t in topic_titles(entry.get("supporting_topic")) if t in titles]
            page = pages[0] if entry["is_supported"] and pages else None
            if page is not None:
                if page not in group_of_page:
                    group_of_page[page] = len(groups)
                    groups.append({"link": page})
                fact["group"] = group_of_page[page]
        if (entry := plain.get(_norm(text))) is not None and isinstance(entry.get("is_supported"), bool):
            fact["any_page"] = "supported" if entry["is_supported"] else "not_supported"
        payload_facts.append(fact)
    return {"individuals": len(groups), "groups": groups, "facts": payload_facts,
            "released": {key: released.get(key) for key in ("decisions", "global_decisions")}}


def _by_atom(entries: list[dict] | None) -> dict[str, dict]:
    by_atom: dict[str, dict] = {}
    for entry in entries or []:
        by_atom.setdefault(_norm(entry["atom"]), entry)
    return by_atom


def suggestion_from_gold(labels: dict) -> dict:
    """The suggestion shape (see the spec) from a gold payload built by gold_from_released."""
    groups: list[list[int]] = [[] for _ in labels["groups"]]
    for index, fact in enumerate(labels["facts"]):
        if fact["group"] is not None:
            groups[fact["group"]].append(index)
    return {
        "groups": groups,
        "links": [group["link"] for group in labels["groups"]],
        "support": [[] for _ in labels["facts"]],
        "labels": [fact["label"] for fact in labels["facts"]],
        "any_page": [fact["any_page"] for fact in labels["facts"]],
        "provenance": {"facts": "import", "grouping": "import", "support": "import"},
    }


def _check_released(released: Any, errors: list[dict]) -> dict:
    if not isinstance(released, dict) or set(released) - {"decisions", "global_decisions"}:
        errors.append(field_error("released", "must be an object with decisions and global_decisions"))
        return {}
    for key in released:
        try:
            _parse_decisions(released, key, 0)
        except ImportLineError as exc:
            errors.append(field_error(f"released.{exc.field}", exc.message))
    return released


# -- shared helpers ---------------------------------------------------------------------------

def _index_in(value: Any, size: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def canonical(payload: dict) -> dict:
    """The payload with its individuals renumbered by their first fact (empty ones last, in
    their order), so two annotators' equal partitions compare equal."""
    order: list[int] = []
    for fact in payload["facts"]:
        if fact.get("group") is not None and fact["group"] not in order:
            order.append(fact["group"])
    order += [index for index in range(payload["individuals"]) if index not in order]
    renumber = {old: new for new, old in enumerate(order)}
    return {
        "individuals": payload["individuals"],
        "groups": [payload["groups"][old] for old in order],
        "facts": [{**fact, "group": renumber.get(fact.get("group"))} for fact in payload["facts"]],
    }


def fact_groups(payload: dict) -> list[int | None]:
    """Each fact's individual, from a whole payload or from the arrays agreement_paths fetched."""
    if "facts" in payload:
        return [fact.get("group") for fact in payload["facts"]]
    return list(payload.get("groups") or [])


def suggested_partition(suggestion: dict, count: int) -> list[int | None]:
    """The machine's groups (fact indices per individual) as one group number per fact."""
    partition: list[int | None] = [None] * count
    for group, members in enumerate(suggestion.get("groups") or []):
        for index in members:
            if isinstance(index, int) and 0 <= index < count:
                partition[index] = group
    return partition


def paragraph_record(row: dict, scores: dict) -> dict:
    """One consolidated paragraph: its facts with their individual, linked page and labels."""
    content, gold = row["content"], row["gold"]
    candidates = content.get("candidates") or []

    def title(page):
        return candidates[page]["title"] if isinstance(page, int) and 0 <= page < len(candidates) else None

    links = [group["link"] for group in gold["groups"]]
    metadata = row.get("metadata") or {}
    record = {
        "id": row["external_id"] or str(row["item_id"]),
        "prompt": row["prompt"],
        "name": content.get("name") or metadata.get("name", ""),
        "response": row["response"],
        "model": row["source"],
        "individuals": gold["individuals"],
        "links": [title(link) for link in links],
        "facts": [
            {"text": fact["text"], "group": answer["group"],
             "link": title(links[answer["group"]]) if answer["group"] is not None else None,
             "label": answer["label"], "any_page": answer["any_page"],
             "entity": NONE if answer["entity"] == NONE else title(answer["entity"])}
            for fact, answer in zip(content.get("facts") or [], gold["facts"])
        ],
        "factscore": scores["factscore"],
        "dfactscore": scores["dfactscore"],
        "num_groups": scores["num_groups"],
        "num_supporting_topics": scores["num_supporting_topics"],
        "distinct_entities": scores["distinct_entities"],
    }
    record.update((k, v) for k, v in metadata.items() if k != "name" and k not in record)
    return record


SUPPORT_LABELS = {True: "supported", False: "not_supported"}


def fact_support(content: dict, payload: dict, irrelevant: str = "exclude") -> Iterator[tuple[int, bool, bool]]:
    """(fact index, supported by any page, supported by its group's linked page) for each fact
    FActScore and D-FActScore count: the rules of pipeline.dfactscore_scores.released_lists,
    fact by fact (its lists do not keep the facts' indexes, which scoring keys units by)."""
    candidates = content.get("candidates") or []
    titles = {c: candidate.get("title") or None for c, candidate in enumerate(candidates)}
    links = [titles.get(g.get("link")) if type(g.get("link")) is int else None for g in payload.get("groups") or []]
    for index, fact in enumerate(payload.get("facts") or []):
        label = fact.get("label")
        if label is None or (label == "irrelevant" and irrelevant == "exclude"):
            continue
        group = fact.get("group")
        linked = links[group] if type(group) is int and 0 <= group < len(links) else None
        global_supported = label == "supported" and linked is not None
        any_page = fact.get("any_page")
        supported = any_page == "supported" if any_page is not None and label != "irrelevant" else global_supported
        yield index, supported, global_supported


def machine_payload(suggestion: dict | None, count: int) -> dict | None:
    """The machine pre-annotation as a gold-shaped payload, so its scores are computed as the
    humans' are. A group the machine linked to no page is linked to "none"; a fact's any-page
    answer is whether some page supports it (``support``), where the machine judged support."""
    if not suggestion or suggestion.get("groups") is None:
        return None
    links = list(suggestion.get("links") or [])
    groups = [{"link": link if link is not None else NONE} for link in links]
    groups += [{"link": NONE}] * (len(suggestion["groups"]) - len(groups))
    partition = suggested_partition(suggestion, count)
    labels = list(suggestion.get("labels") or []) + [None] * count
    support = list(suggestion.get("support") or []) + [[]] * count
    any_page = list(suggestion.get("any_page") or []) + [None] * count
    facts = []
    for index in range(count):
        judged = support[index] or []
        answer = any_page[index] or (("supported" if any(s.get("supported") for s in judged) else "not_supported")
                                     if judged else None)
        facts.append({"group": partition[index], "label": labels[index], "any_page": answer, "entity": None})
    return {"individuals": len(groups), "groups": groups, "facts": facts}
