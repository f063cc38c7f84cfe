"""Factcheck-Bench step 1 (paper §2 (1)–(3)): decomposition into atomic claims,
decontextualisation, checkworthiness and importance.

The payload is ``{"sentences": [{"decontext", "importance", "checkworthy", "claims": [{"text",
"category", "importance"}]}]}``, one sentence per sentence of the content.
"""

from collections.abc import Hashable, Iterable, Iterator
from statistics import mean
from typing import Any

from .. import claims as claim_text
from ..base import (
    GOLD_RATER,
    AgreementItem,
    ImportLineError,
    MergeResult,
    ParsedItem,
    PayloadError,
    field_error,
    optional_str,
    require_str,
)

SENTENCE_IMPORTANCE = ("yes", "intermediate", "no")
# The released data uses the claim categories for sentences that are not checkworthy.
SENTENCE_CHECKWORTHY = ("yes", "no", "opinion", "not_a_claim", "other")
CLAIM_CATEGORIES = ("factual", "opinion", "not_a_claim", "other")
CLAIM_IMPORTANCE = ("yes", "intermediate", "no")

AGREEMENT_FIELDS = {
    "sentence_checkworthy": "Sentence checkworthiness",
    "sentence_importance": "Sentence importance",
    "claim_category": "Claim category (aligned claims)",
    "claim_importance": "Claim importance (aligned claims)",
}


def empty_sentence(decontext: str = "", claims: list | None = None) -> dict:
    return {"decontext": decontext, "importance": None, "checkworthy": None, "claims": claims or []}


# -- import of the original tool's screen -----------------------------------------------------


def parse_tool_input(data: dict, line: int) -> ParsedItem:
    """The original tool's step-1 screen input: sentences and machine "atomic claims"."""
    response = require_str(data, "response", line)
    sentences = data.get("sentences")
    if not isinstance(sentences, list) or not sentences or not all(isinstance(s, str) and s.strip() for s in sentences):
        raise ImportLineError(line, "sentences", "must be a non-empty list of non-empty strings")
    atomic = data.get("atomic claims", [])
    if not isinstance(atomic, list) or (atomic and len(atomic) != len(sentences)):
        raise ImportLineError(
            line,
            "atomic claims",
            f"must be a list with one list of claims per sentence ({len(sentences)})",
        )
    for index, claims in enumerate(atomic):
        if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
            raise ImportLineError(line, f"atomic claims[{index}]", "must be a list of strings")
    known = ("prompt", "response", "sentences", "atomic claims", "id", "source")
    suggestion = None
    if atomic:
        suggestion = {
            "sentences": [
                {
                    "decontext": sentence,
                    "importance": None,
                    "checkworthy": None,
                    "claims": [{"text": c, "category": None, "importance": None} for c in claims],
                }
                for sentence, claims in zip(sentences, atomic)
            ]
        }
    return ParsedItem(
        line=line,
        prompt=optional_str(data, "prompt", line),
        response=response,
        external_id=optional_str(data, "id", line),
        source=optional_str(data, "source", line),
        metadata={k: v for k, v in data.items() if k not in known},
        content={1: {"sentences": sentences}},
        suggestions={1: suggestion} if suggestion else {},
    )


# -- annotation payloads ------------------------------------------------------------------------


def empty_payload(content: dict, suggestion: dict | None) -> dict:
    """Decontextualised sentences and claim texts start from the suggestion; every label
    (importance, checkworthiness, claim category and importance) is the annotator's own.

    Labels are shown as hints beside the choices, never pre-selected: a pre-selected machine
    label that annotators leave alone would count as their agreement."""
    texts = content.get("sentences", [])
    suggested = (suggestion or {}).get("sentences") or [None] * len(texts)
    sentences = []
    for text, hint in zip(texts, suggested):
        if not hint:
            sentences.append(empty_sentence(text))
            continue
        claims = [{"text": c.get("text", ""), "category": None, "importance": None} for c in hint.get("claims", [])]
        sentences.append(empty_sentence(hint.get("decontext") or text, claims))
    return {"sentences": sentences}


def validate_payload(content: dict, payload: Any, *, complete: bool) -> dict:
    expected = len(content.get("sentences", []))
    if not isinstance(payload, dict) or not isinstance(payload.get("sentences"), list):
        raise PayloadError([field_error("sentences", "must be a list with one object per sentence")])
    if len(payload["sentences"]) != expected:
        raise PayloadError(
            [
                field_error(
                    "sentences",
                    f"has {len(payload['sentences'])} entries, the item has {expected} sentences",
                )
            ]
        )
    errors: list[dict] = []
    sentences = [_validate_sentence(i, raw, complete, errors) for i, raw in enumerate(payload["sentences"])]
    if errors:
        raise PayloadError(errors)
    return {"sentences": sentences}


def validate_choice(value, choices, path, complete, errors, what):
    if value is None or value == "":
        if complete:
            errors.append(field_error(path, f"is required: choose the {what}"))
        return None
    if value not in choices:
        errors.append(field_error(path, f"must be one of {', '.join(choices)}"))
    return value


def validate_text(value, path, complete, errors, required_message) -> str:
    value = value or ""
    if not isinstance(value, str):
        errors.append(field_error(path, "must be a string"))
        return ""
    if complete and not value.strip():
        errors.append(field_error(path, required_message))
    return value


def _validate_sentence(index: int, raw: Any, complete: bool, errors: list[dict]) -> dict:
    path = f"sentences[{index}]"
    if not isinstance(raw, dict):
        errors.append(field_error(path, "must be an object"))
        return empty_sentence()
    sentence = {
        "decontext": validate_text(
            raw.get("decontext"),
            f"{path}.decontext",
            complete,
            errors,
            "is required: write the decontextualised sentence",
        ),
        "importance": validate_choice(
            raw.get("importance"),
            SENTENCE_IMPORTANCE,
            f"{path}.importance",
            complete,
            errors,
            "importance",
        ),
        "checkworthy": validate_choice(
            raw.get("checkworthy"),
            SENTENCE_CHECKWORTHY,
            f"{path}.checkworthy",
            complete,
            errors,
            "checkworthiness",
        ),
        "claims": [],
    }
    claims = raw.get("claims") or []
    if not isinstance(claims, list):
        errors.append(field_error(f"{path}.claims", "must be a list of claims"))
        claims = []
    for claim_index, claim in enumerate(claims):
        claim_path = f"{path}.claims[{claim_index}]"
        if not isinstance(claim, dict):
            errors.append(field_error(claim_path, "must be an object with text, category and importance"))
            continue
        sentence["claims"].append(
            {
                "text": validate_text(
                    claim.get("text"),
                    f"{claim_path}.text",
                    complete,
                    errors,
                    "is required: write the claim or remove it",
                ),
                "category": validate_choice(
                    claim.get("category"),
                    CLAIM_CATEGORIES,
                    f"{claim_path}.category",
                    complete,
                    errors,
                    "claim category",
                ),
                "importance": validate_choice(
                    claim.get("importance"),
                    CLAIM_IMPORTANCE,
                    f"{claim_path}.importance",
                    complete,
                    errors,
                    "claim importance",
                ),
            }
        )
    return sentence


# -- consolidation ------------------------------------------------------------------------------


def merge(content: dict, payloads: list[dict]) -> MergeResult:
    merged, disagreed, alignment = [], [], []
    for index in range(len(content.get("sentences", []))):
        versions = [p["sentences"][index] for p in payloads]
        path = f"sentences[{index}]"
        sentence = empty_sentence()
        for key in ("decontext", "importance", "checkworthy"):
            values = [claim_text.normalise(v[key]) if isinstance(v[key], str) else v[key] for v in versions]
            if all(v == values[0] for v in values):
                sentence[key] = values[0]  # agreed up to whitespace: the gold gets it tidied
            else:
                disagreed.append(f"{path}.{key}")
        rows = align_claims([v["claims"] for v in versions])
        if len({len(v["claims"]) for v in versions}) > 1:
            disagreed.append(f"{path}.claims")
        for row_index, row in enumerate(rows):
            present = [versions[k]["claims"][i] for k, i in enumerate(row) if i is not None]
            claim = {"text": "", "category": None, "importance": None}
            for key in claim:
                values = [claim_text.normalise(c[key]) if key == "text" else c[key] for c in present]
                if len(present) == len(versions) and all(v == values[0] for v in values):
                    claim[key] = values[0]
                else:
                    disagreed.append(f"{path}.claims[{row_index}].{key}")
            sentence["claims"].append(claim)
        merged.append(sentence)
        alignment.append(rows)
    return MergeResult({"sentences": merged}, disagreed, alignment)


# -- agreement ----------------------------------------------------------------------------------


def agreement_units(payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
    raters = list(payloads)
    units: dict[str, dict] = {name: {} for name in AGREEMENT_FIELDS}
    for index in range(min(len(p["sentences"]) for p in payloads.values())):
        versions = [payloads[r]["sentences"][index] for r in raters]
        for rater, sentence in zip(raters, versions):
            if sentence.get("checkworthy"):
                units["sentence_checkworthy"].setdefault(index, {})[rater] = sentence["checkworthy"]
            if sentence.get("importance"):
                units["sentence_importance"].setdefault(index, {})[rater] = sentence["importance"]
        for row_index, row in enumerate(align_claims([v["claims"] for v in versions])):
            for rater, sentence, claim_index in zip(raters, versions, row):
                if claim_index is None:
                    continue
                claim = sentence["claims"][claim_index]
                for field, key in (
                    ("claim_category", "category"),
                    ("claim_importance", "importance"),
                ):
                    if claim.get(key):
                        units[field].setdefault((index, row_index), {})[rater] = claim[key]
    return units


def unit_values(content: dict, payloads: dict[Hashable, dict]) -> Iterator[tuple[dict, str, dict]]:
    """agreement_units' units, named as the export names them: the sentence key and, for a claim,
    ``claim`` (its index in the gold record's claims where the first rater is the gold record;
    None otherwise, and for a claim the gold record does not have), ``pair`` (the index of the
    row align_claims gives in the sentence: one id for the claims aligned across the raters,
    before consolidation too) and ``claim_texts`` (each annotator's claim on that row, None
    where one has none)."""
    pivot_is_gold = next(iter(payloads), None) is GOLD_RATER
    rows_of: dict[int, list[list[int | None]]] = {}  # sentence → its aligned rows (a claim index per rater)
    for field, units in agreement_units(payloads).items():
        for unit, values in units.items():
            index, row = unit if isinstance(unit, tuple) else (unit, None)
            ids: dict = {"sentence": f"sentence{index + 1}"}
            if row is not None:
                if index not in rows_of:
                    rows_of[index] = align_claims([p["sentences"][index]["claims"] for p in payloads.values()])
                aligned = rows_of[index][row]
                ids["claim"] = aligned[0] if pivot_is_gold else None
                ids["pair"] = row
                ids["claim_texts"] = {
                    rater: None if at is None else payload["sentences"][index]["claims"][at].get("text")
                    for (rater, payload), at in zip(payloads.items(), aligned)
                    if rater is not GOLD_RATER
                }
            yield ids, field, values


def extra_agreement(items: Iterable[AgreementItem]) -> dict:
    """Decomposition agreement as in the paper (§4.1), between the two annotators of each
    item and between each annotator and the machine suggestion."""
    between, with_machine = [], {}
    for item in items:
        raters = list(item.payloads)
        decompositions = {r: [[c["text"] for c in s["claims"]] for s in item.payloads[r]["sentences"]] for r in raters}
        if len(raters) >= 2:
            between.extend(zip(decompositions[raters[0]], decompositions[raters[1]]))
        if item.suggestion:
            machine = [[c.get("text", "") for c in s.get("claims", [])] for s in item.suggestion["sentences"]]
            for rater in raters:
                with_machine.setdefault(rater, []).extend(zip(decompositions[rater], machine))
    return {
        "decomposition": {
            "between_annotators": decomposition_agreement(between),
            "annotator_vs_machine": {
                rater: decomposition_agreement(pairs) for rater, pairs in sorted(with_machine.items())
            },
        }
    }


def suggestion_predictions(
    content: dict, suggestion: dict | None, gold: dict | None = None
) -> Iterator[tuple[str, tuple, str]]:
    """The machine's sentence checkworthiness and claim categories as predictions of the
    scoring tasks (``checkworthiness``, ``claim_category``). The machine splits sentences into
    claims its own way: each of its claims is put on the gold claim it aligns with by text (as
    agreement aligns claims), and gold claims it has none for get no prediction; without
    ``gold``, its own claim indexes are used."""
    gold_sentences = (gold or {}).get("sentences")
    suggested = (suggestion or {}).get("sentences") or []
    for index, hint in enumerate(suggested[: len(content.get("sentences", []))]):
        if not isinstance(hint, dict):
            continue
        key = f"sentence{index + 1}"
        if hint.get("checkworthy"):
            yield "checkworthiness", (key,), hint["checkworthy"]
        machine = [c if isinstance(c, dict) else {} for c in hint.get("claims") or []]
        if gold_sentences is None:
            rows = [(j, j) for j in range(len(machine))]
        else:
            gold_claims = gold_sentences[index].get("claims", []) if index < len(gold_sentences) else []
            rows = align_claims([gold_claims, machine])
        for gold_index, machine_index in rows:
            if gold_index is not None and machine_index is not None and machine[machine_index].get("category"):
                yield "claim_category", (key, gold_index), machine[machine_index]["category"]


def align_claims(claim_lists: list[list[dict]]) -> list[list[int | None]]:
    """Rows of claim indexes, one column per annotator, aligned to the first annotator's claims."""
    texts = [[c.get("text", "") for c in claims] for claims in claim_lists]
    if not texts:
        return []
    rows: list[list[int | None]] = [[i] for i in range(len(texts[0]))]
    for column, other in enumerate(texts[1:], start=1):
        row_texts = [next(texts[k][i] for k, i in enumerate(row) if i is not None) for row in rows]
        rows = [(rows[r] if r is not None else [None] * column) + [j] for r, j in claim_text.align(row_texts, other)]
    return rows


def decomposition_agreement(pairs: list[tuple[list[str], list[str]]]) -> dict:
    """Share of sentences split into the same number of claims and, over those, the mean
    normalised edit distance and word overlap of the paired claims."""
    same = [(a, b) for a, b in pairs if len(a) == len(b)]
    distances, overlaps = [], []
    for a, b in same:
        for i, j in claim_text.align(a, b, min_similarity=0):
            if i is not None and j is not None:
                distances.append(claim_text.normalised_edit_distance(a[i], b[j]))
                overlaps.append(claim_text.word_overlap(a[i], b[j]))
    return {
        "sentences": len(pairs),
        "same_claim_count": len(same),
        "same_claim_count_share": len(same) / len(pairs) if pairs else None,
        "paired_claims": len(distances),
        "mean_normalised_edit_distance": mean(distances) if distances else None,
        "mean_word_overlap": mean(overlaps) if overlaps else None,
    }
