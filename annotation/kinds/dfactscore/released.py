"""Reading a D-FActScore import line: the paragraph and its candidate pages, and a released result
file's decisions as a gold payload and as hints (docs/released-files.md)."""

from typing import Any

from pipeline.dfactscore_scores import topic_titles

from ..base import ImportLineError, ParsedItem, field_error, is_valid_url, optional_str, require_str
from .settings import empty_fact

LINE_FIELDS = (
    "prompt",
    "name",
    "response",
    "atomic_facts",
    "candidates",
    "model",
    "decisions",
    "global_decisions",
    "id",
)


def parse_line(data: dict, line: int) -> ParsedItem:
    """One ``dfactscore`` line as an item: facts given (or left to pre-annotation) and, when the
    line holds a result file's decisions, its gold payload."""
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


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _parse_candidates(data: dict, line: int) -> list[dict]:
    candidates = data.get("candidates")
    if not isinstance(candidates, list):
        raise ImportLineError(
            line,
            "candidates",
            "must be a list of {title, url, text} objects" if "candidates" in data else "is missing",
        )
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
            raise ImportLineError(
                line,
                f"{path}.url",
                "is missing" if "url" not in candidate else "must be an http(s) URL",
            )
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
    from pipeline.dfactscore import (  # loads NLTK and scikit-learn: kept out of web start-up
        fact_span,
        sentence_spans,
        split_page,
    )

    # loads NLTK and scikit-learn: kept out of web start-up
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
    return {
        "individuals": len(groups),
        "groups": groups,
        "facts": payload_facts,
        "released": {key: released.get(key) for key in ("decisions", "global_decisions")},
    }


def released_positions(facts: list[str], entries: list[dict] | None) -> dict[int, int]:
    """Fact index → the position of the entry of a released list with the same atom (by text,
    each entry taken once, in order); facts the list does not hold are left out."""
    waiting: dict[str, list[int]] = {}
    for position, entry in enumerate(entries or []):
        if isinstance(entry, dict) and isinstance(entry.get("atom"), str):
            waiting.setdefault(_norm(entry["atom"]), []).append(position)
    positions = {}
    for index, text in enumerate(facts):
        if waiting.get(_norm(text)):
            positions[index] = waiting[_norm(text)].pop(0)
    return positions


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


def check_released(released: Any, errors: list[dict]) -> dict:
    if not isinstance(released, dict) or set(released) - {"decisions", "global_decisions"}:
        errors.append(field_error("released", "must be an object with decisions and global_decisions"))
        return {}
    for key in released:
        try:
            _parse_decisions(released, key, 0)
        except ImportLineError as exc:
            errors.append(field_error(f"released.{exc.field}", exc.message))
    return released
