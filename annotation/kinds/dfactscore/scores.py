"""D-FActScore research: the paper's scores of consolidated paragraphs (human and machine), each
fact's support for scoring, the LLM rater's inputs and the exported paragraph record."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from pipeline.dfactscore_scores import model_scores, paragraph_scores

from .payloads import suggested_partition
from .released import released_positions
from .settings import NONE, dfactscore_settings

SUPPORT_LABELS = {True: "supported", False: "not_supported"}


def support_label(value: Any) -> str:
    """true/false (JSON booleans) as the D-FActScore tasks' labels; strings as they are."""
    return SUPPORT_LABELS[value] if isinstance(value, bool) else value


def rater_inputs(item: dict) -> tuple[str, list[str], list[dict]]:
    """The LLM rater's paragraph name, facts and candidate pages of an item-step."""
    content = item["content"]
    name = content.get("name") or (item["metadata"] or {}).get("name", "")
    return (
        name,
        [fact["text"] for fact in content.get("facts") or []],
        [{key: c.get(key) or "" for key in ("title", "url", "text")} for c in content.get("candidates") or []],
    )


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
            paragraphs.append(
                {
                    "item_id": item_id,
                    "external_id": external_id,
                    "model": model,
                    "human": _paragraph_numbers(ours),
                    "machine": theirs and _paragraph_numbers(theirs),
                }
            )
    models = []
    for model, scored in human.items():
        ours = model_scores(scored)
        theirs = model_scores(machine[model]) if machine.get(model) else None
        entry = {
            "model": model,
            "paragraphs": len(scored),
            "machine_paragraphs": len(machine.get(model, [])),
            "human": _model_numbers(ours),
            "machine": theirs and _model_numbers(theirs),
            "difference": None,
        }
        if theirs is not None:
            entry["difference"] = {
                key: abs(ours[key] - theirs[key]) if ours[key] is not None and theirs[key] is not None else None
                for key in ("init_score", "init_global_score")
            }
        models.append(entry)
    return {
        "irrelevant": irrelevant,
        "paragraph_count": count,
        "paragraphs": paragraphs,
        "models": models,
    }


def _paragraph_numbers(scores: dict) -> dict:
    return {
        key: scores[key]
        for key in (
            "facts",
            "factscore",
            "dfactscore",
            "num_groups",
            "num_supporting_topics",
            "distinct_entities",
        )
    }


def _model_numbers(scores: dict) -> dict:
    """The unpenalised means the paper reports (init_score: FActScore, init_global_score: D-FActScore)."""
    return {
        key: scores.get(key)
        for key in (
            "init_score",
            "init_global_score",
            "respond_ratio",
            "num_facts_per_response",
            "num_groups",
            "num_supporting_topics",
        )
    }


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
            {
                "text": fact["text"],
                "group": answer["group"],
                "link": title(links[answer["group"]]) if answer["group"] is not None else None,
                "label": answer["label"],
                "any_page": answer["any_page"],
                "entity": NONE if answer["entity"] == NONE else title(answer["entity"]),
            }
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


def gold_support(content: dict, gold: dict, irrelevant: str = "exclude") -> tuple[list, list]:
    """The gold's FActScore units and D-FActScore units, each a list of (fact key, supported):
    from a release's kept lists, each judged entry of ``decisions`` and of ``global_decisions``
    keyed by its position in its list (the lists may hold different atoms, and the release's
    scores are over each list's own); else ``fact_support``'s, keyed by the fact's index."""
    released = gold.get("released")
    if released is None:
        facts = list(fact_support(content, gold, irrelevant))
        return [(index, supported) for index, supported, _ in facts], [(index, grouped) for index, _, grouped in facts]
    return tuple(
        [
            (position, entry["is_supported"])
            for position, entry in enumerate(released.get(key) or [])
            if isinstance(entry, dict) and isinstance(entry.get("is_supported"), bool)
        ]
        for key in ("decisions", "global_decisions")
    )


def prediction_keys(content: dict, gold: dict | None) -> dict[str, dict[int, int]] | None:
    """Per task, fact index → the gold's unit key (gold_support) where they differ: the
    entries of a release's kept lists with the fact's atom; None where they are the same."""
    released = (gold or {}).get("released")
    if released is None:
        return None
    texts = [fact.get("text", "") for fact in content.get("facts") or []]
    return {
        task: released_positions(texts, released.get(key))
        for task, key in (("support", "decisions"), ("global_support", "global_decisions"))
    }


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
        answer = any_page[index] or (
            ("supported" if any(s.get("supported") for s in judged) else "not_supported") if judged else None
        )
        facts.append({"group": partition[index], "label": labels[index], "any_page": answer, "entity": None})
    return {"individuals": len(groups), "groups": groups, "facts": facts}
