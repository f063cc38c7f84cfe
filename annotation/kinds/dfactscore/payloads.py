"""D-FActScore annotation payloads: checking one annotator's answer, and comparing and merging
several (individuals compared as partitions of the facts)."""

from typing import Any

from ..base import MergeResult, PayloadError, field_error
from .released import check_released
from .settings import ANY_PAGE, LABELS, NONE, empty_fact


def check_payload(content: dict, payload: Any, *, complete: bool) -> dict:
    """The payload checked against the item's facts, pages and passes, normalised; PayloadError
    naming every wrong field otherwise."""
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
    normal_groups = [check_group(index, raw, pages, complete, errors) for index, raw in enumerate(groups)]
    normal_facts = [
        check_fact(index, raw, individuals, pages, passes, complete, errors) for index, raw in enumerate(raw_facts)
    ]
    if complete:
        held = {fact["group"] for fact in normal_facts}
        errors += [
            field_error(
                f"groups[{index}]",
                "holds no fact: put a fact in it or lower the number of individuals",
            )
            for index in range(individuals)
            if index not in held
        ]
    normalised = {"individuals": individuals, "groups": normal_groups, "facts": normal_facts}
    if "released" in payload:
        normalised["released"] = check_released(payload["released"], errors)
    if errors:
        raise PayloadError(errors)
    return normalised


def check_group(index: int, raw: Any, pages: int, complete: bool, errors: list[dict]) -> dict:
    path = f"groups[{index}]"
    if not isinstance(raw, dict):
        errors.append(field_error(path, "must be an object with a link"))
        return {"link": None}
    link = raw.get("link")
    if link is None:
        if complete:
            errors.append(field_error(f"{path}.link", "is required: link the individual to a page or to none of these"))
    elif link != NONE and not index_in(link, pages):
        errors.append(
            field_error(
                f"{path}.link",
                f'must be a page number from 0 to {pages - 1} or "none"'
                if pages
                else 'must be "none": the item has no candidate pages',
            )
        )
        link = None
    return {"link": link}


def check_fact(
    index: int,
    raw: Any,
    individuals: int,
    pages: int,
    passes: dict,
    complete: bool,
    errors: list[dict],
) -> dict:
    path = f"facts[{index}]"
    if not isinstance(raw, dict):
        errors.append(field_error(path, "must be an object"))
        return empty_fact()
    fact = {key: raw.get(key) for key in ("group", "label", "any_page", "entity")}
    if fact["group"] is not None and not index_in(fact["group"], individuals):
        errors.append(
            field_error(
                f"{path}.group",
                f"must be an individual from 0 to {individuals - 1}"
                if individuals
                else "must be null: there are no individuals yet",
            )
        )
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
    if fact["entity"] is not None and fact["entity"] != NONE and not index_in(fact["entity"], pages):
        errors.append(
            field_error(
                f"{path}.entity",
                f'must be a page number from 0 to {pages - 1} or "none"'
                if pages
                else 'must be "none": the item has no candidate pages',
            )
        )
    elif fact["entity"] is None and complete and passes.get("entity_pass"):
        errors.append(field_error(f"{path}.entity", "is required: which page's person is the fact about?"))
    return fact


def merge_payloads(content: dict, payloads: list[dict]) -> MergeResult:
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


def index_in(value: Any, size: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size


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
