"""Factcheck-Bench step 2 (paper §2 (4)–(7), Appendix D.4–D.6): for every checkworthy factual
claim, the stance of each evidence passage, whether the evidence decides the claim, evidence the
annotator found, the claim's factuality and its correction.

Content: each checkworthy claim with its evidence passages, released or retrieved
(``step2_content.py``).

Payload: ``{"claims": [...]}``, one entry per content claim, in the same order:

- ``stances``: one per passage, ``completely-support | partially-support | refute | irrelevant``;
- ``reliable``: one per passage, is the passage's source reliable (``true``/``false``);
- ``decided``: can the claim be decided from the passages, ``yes | no``;
- ``manual_evidence``: evidence the annotator found, ``[{"text", "url", "query", "reliable",
  "sufficient"}]`` (Appendix D.4: query, URL, source reliable, sufficient alone);
- ``factuality``: ``true | false | unknown`` (unknown: not enough evidence);
- ``needs_edit``: ``yes | no | not_enough_evidence``;
- ``correction``: the corrected claim (starts as the claim's text);
- ``used_evidence``: what the correction rests on, passage indexes (0-based) or ``"manual:N"``.

Always checked (drafts too): the shapes (one stance and one reliability per passage), the
vocabularies, URLs (http/https) where given, and that used evidence exists, without repeats.
Completeness, on submit:

1. every passage has a stance;
2. every passage whose stance is not ``irrelevant`` has its reliability;
3. ``decided``, ``factuality`` and ``needs_edit`` are chosen;
4. every manual evidence has text, an http(s) URL, ``reliable`` and ``sufficient``;
5. ``decided == "no"`` needs manual evidence, or ``needs_edit == "not_enough_evidence"``;
6. factuality follows ``needs_edit`` as in every released claim: yes ⇔ false, no ⇔ true,
   not_enough_evidence ⇔ unknown;
7. ``needs_edit == "yes"`` needs a non-empty correction and the evidence it used.

A gold record imported from the released file may also hold ``released``: the released values
that this schema cannot hold (see ``benchmark.py``), given back by the export. It is never part
of an annotator's or consolidator's payload: validation drops it.
"""

from collections.abc import Hashable, Iterable, Iterator
from statistics import mean
from typing import Any

from pipeline.evidence import verdict_from_stances

from .. import claims as claim_text
from ..base import AgreementItem, MergeResult, PayloadError, field_error, is_valid_url
from .step1 import validate_choice

STANCES = ("completely-support", "partially-support", "refute", "irrelevant")
# Three-way stance, as the paper also reports it: supporting = complete + partial.
STANCE3 = {
    "completely-support": "support",
    "partially-support": "support",
    "refute": "refute",
    "irrelevant": "irrelevant",
}
DECIDED = ("yes", "no")
FACTUALITY = ("true", "false", "unknown")
NEEDS_EDIT = ("yes", "no", "not_enough_evidence")
FACTUALITY_FOR_EDIT = {"yes": "false", "no": "true", "not_enough_evidence": "unknown"}
MANUAL = "manual:"

AGREEMENT_FIELDS = {
    "stance": "Evidence stance (claim × passage)",
    "stance3": "Evidence stance, three-way: support / refute / irrelevant",
    "decided": "Claim decidable from the retrieved evidence",
    "factuality": "Claim factuality",
    "needs_edit": "Claim needs an edit",
}


# -- annotation payloads ------------------------------------------------------------------------


def empty_claim(claim: dict) -> dict:
    passages = len(claim.get("evidence") or [])
    return {
        "stances": [None] * passages,
        "reliable": [None] * passages,
        "decided": None,
        "manual_evidence": [],
        "factuality": None,
        "needs_edit": None,
        "correction": claim.get("text", ""),
        "used_evidence": [],
    }


def empty_payload(content: dict, suggestion: dict | None = None) -> dict:
    """Nothing is pre-selected: stance hints stay hints beside the choices (a pre-selected
    machine label left alone would count as the annotator's); the correction starts as the claim."""
    return {"claims": [empty_claim(c) for c in content.get("claims", [])]}


def clear_claim_answer(content: dict, payload: dict, index: int) -> dict:
    """A draft after claim ``index`` got new passages: its stances and reliabilities (one per
    passage) and the passages its correction used start again; manual evidence, the verdict and
    the correction are kept."""
    claims = list(payload.get("claims") or [])
    if not 0 <= index < len(claims) or not isinstance(claims[index], dict):
        return payload
    fresh = empty_claim(content["claims"][index])
    answer = dict(claims[index])
    answer.update(
        stances=fresh["stances"],
        reliable=fresh["reliable"],
        used_evidence=[v for v in answer.get("used_evidence") or [] if isinstance(v, str)],
    )
    claims[index] = answer
    return {**payload, "claims": claims}


def validate_payload(content: dict, payload: Any, *, complete: bool) -> dict:
    claims = content.get("claims", [])
    if not isinstance(payload, dict) or not isinstance(payload.get("claims"), list):
        raise PayloadError([field_error("claims", "must be a list with one object per claim")])
    if len(payload["claims"]) != len(claims):
        raise PayloadError(
            [
                field_error(
                    "claims",
                    f"has {len(payload['claims'])} entries, the item has {len(claims)} claims",
                )
            ]
        )
    errors: list[dict] = []
    result = [
        _validate_claim(i, claim, raw, complete, errors)
        for i, (claim, raw) in enumerate(zip(claims, payload["claims"]))
    ]
    if errors:
        raise PayloadError(errors)
    return {"claims": result}


def _is_bool_or_none(value) -> bool:
    return value is None or isinstance(value, bool)


def _validate_claim(index: int, claim: dict, raw: Any, complete: bool, errors: list[dict]) -> dict:
    path = f"claims[{index}]"
    passages = len(claim.get("evidence") or [])
    if not isinstance(raw, dict):
        errors.append(field_error(path, "must be an object"))
        return empty_claim(claim)
    out = {}
    stances = raw.get("stances")
    if not isinstance(stances, list) or len(stances) != passages:
        errors.append(
            field_error(
                f"{path}.stances",
                f"must be a list with one stance per evidence passage ({passages})",
            )
        )
        stances = [None] * passages
    out["stances"] = [
        validate_choice(s, STANCES, f"{path}.stances[{k}]", complete, errors, "stance of this passage")
        for k, s in enumerate(stances)
    ]
    reliable = raw.get("reliable")
    if not isinstance(reliable, list) or len(reliable) != passages:
        errors.append(
            field_error(
                f"{path}.reliable",
                f"must be a list with one true/false/null per evidence passage ({passages})",
            )
        )
        reliable = [None] * passages
    out["reliable"] = []
    for k, value in enumerate(reliable):
        if not _is_bool_or_none(value):
            errors.append(field_error(f"{path}.reliable[{k}]", "must be true, false or null"))
            value = None
        elif value is None and complete and out["stances"][k] not in (None, "irrelevant"):
            errors.append(
                field_error(
                    f"{path}.reliable[{k}]",
                    "is required: say whether the source of this relevant passage is reliable",
                )
            )
        out["reliable"].append(value)
    out["decided"] = validate_choice(
        raw.get("decided"),
        DECIDED,
        f"{path}.decided",
        complete,
        errors,
        "whether the evidence decides the claim",
    )
    out["manual_evidence"] = _validate_manual(raw.get("manual_evidence"), f"{path}.manual_evidence", complete, errors)
    out["factuality"] = validate_choice(
        raw.get("factuality"), FACTUALITY, f"{path}.factuality", complete, errors, "factuality"
    )
    out["needs_edit"] = validate_choice(
        raw.get("needs_edit"),
        NEEDS_EDIT,
        f"{path}.needs_edit",
        complete,
        errors,
        "whether the claim needs an edit",
    )
    correction = raw.get("correction")
    if correction is None:
        correction = ""
    if not isinstance(correction, str):
        errors.append(field_error(f"{path}.correction", "must be a string"))
        correction = ""
    out["correction"] = correction
    out["used_evidence"] = _validate_used(
        raw.get("used_evidence"),
        passages,
        len(out["manual_evidence"]),
        f"{path}.used_evidence",
        errors,
    )
    if complete:
        edit = out["needs_edit"]
        if out["decided"] == "no" and not out["manual_evidence"] and edit != "not_enough_evidence":
            errors.append(
                field_error(
                    f"{path}.manual_evidence",
                    "is required when the retrieved evidence cannot decide the claim: "
                    "add the evidence you found, or choose not_enough_evidence",
                )
            )
        if (
            edit in FACTUALITY_FOR_EDIT
            and out["factuality"] in FACTUALITY
            and out["factuality"] != FACTUALITY_FOR_EDIT[edit]
        ):
            errors.append(
                field_error(
                    f"{path}.factuality",
                    f"must be {FACTUALITY_FOR_EDIT[edit]} when needs_edit is {edit}",
                )
            )
        if edit == "yes":
            if not correction.strip():
                errors.append(field_error(f"{path}.correction", "is required when the claim needs an edit"))
            if not out["used_evidence"]:
                errors.append(
                    field_error(
                        f"{path}.used_evidence",
                        "is required when the claim needs an edit: name the evidence the correction rests on",
                    )
                )
    return out


def _validate_manual(raw: Any, path: str, complete: bool, errors: list[dict]) -> list[dict]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(field_error(path, "must be a list of evidence objects"))
        return []
    result = []
    for m, entry in enumerate(raw):
        where = f"{path}[{m}]"
        if not isinstance(entry, dict):
            errors.append(field_error(where, "must be an object with text, url, query, reliable and sufficient"))
            continue
        item = {}
        for key in ("text", "url", "query"):
            value = entry.get(key)
            value = "" if value is None else value
            if not isinstance(value, str):
                errors.append(field_error(f"{where}.{key}", "must be a string"))
                value = ""
            item[key] = value
        if complete and not item["text"].strip():
            errors.append(field_error(f"{where}.text", "is required: quote the evidence or remove it"))
        if item["url"] and not is_valid_url(item["url"]):
            errors.append(field_error(f"{where}.url", "must be an http or https URL"))
        elif complete and not item["url"]:
            errors.append(field_error(f"{where}.url", "is required: give the evidence's http or https URL"))
        for key in ("reliable", "sufficient"):
            value = entry.get(key)
            if not _is_bool_or_none(value):
                errors.append(field_error(f"{where}.{key}", "must be true, false or null"))
                value = None
            elif value is None and complete:
                errors.append(field_error(f"{where}.{key}", "is required: answer yes or no"))
            item[key] = value
        result.append(item)
    return result


def _validate_used(raw: Any, passages: int, manual: int, path: str, errors: list[dict]) -> list:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(field_error(path, 'must be a list of passage indexes or "manual:N"'))
        return []
    result = []
    for k, value in enumerate(raw):
        where = f"{path}[{k}]"
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < passages:
                errors.append(field_error(where, f"must be a passage index below {passages}"))
                continue
        elif (
            isinstance(value, str)
            and value.startswith(MANUAL)
            and value[len(MANUAL) :].isdigit()
            and value[len(MANUAL) :].isascii()
        ):
            if int(value[len(MANUAL) :]) >= manual:
                errors.append(field_error(where, f"names manual evidence that does not exist (there are {manual})"))
                continue
            value = f"{MANUAL}{int(value[len(MANUAL) :])}"
        else:
            errors.append(field_error(where, 'must be a passage index or "manual:N"'))
            continue
        if value in result:
            errors.append(field_error(where, "repeats an entry"))
            continue
        result.append(value)
    return result


# -- consolidation ------------------------------------------------------------------------------


def _same(values: list) -> bool:
    return all(v == values[0] for v in values)


def _manual_key(entry: dict) -> tuple[str, str]:
    return entry.get("url", "").strip(), claim_text.normalise(entry.get("text", ""))


def merge(content: dict, payloads: list[dict]) -> MergeResult:
    """Agreed answers are copied (corrections up to whitespace); the others are left empty (the
    correction: the claim's text) and listed as disagreed, e.g. ``claims[0].stances[2]``.

    Every annotator's manual evidence is offered, once per (URL, text); ``alignment[i]`` gives,
    for each merged entry of claim i, its index in each annotator's list (or None). Used evidence
    is compared with manual references renumbered to the merged list."""
    merged, disagreed, alignment = [], [], []
    for index, claim in enumerate(content.get("claims", [])):
        versions = [p["claims"][index] for p in payloads]
        path = f"claims[{index}]"
        out = empty_claim(claim)
        for key in ("stances", "reliable"):
            for k in range(len(out[key])):
                values = [v[key][k] for v in versions]
                if _same(values):
                    out[key][k] = values[0]
                else:
                    disagreed.append(f"{path}.{key}[{k}]")
        for key in ("decided", "factuality", "needs_edit"):
            values = [v[key] for v in versions]
            if _same(values):
                out[key] = values[0]
            else:
                disagreed.append(f"{path}.{key}")
        corrections = [claim_text.normalise(v["correction"]) for v in versions]
        if _same(corrections):
            out["correction"] = corrections[0]
        else:
            disagreed.append(f"{path}.correction")
        rows, keys = [], {}
        for column, version in enumerate(versions):
            for m, entry in enumerate(version["manual_evidence"]):
                key = _manual_key(entry)
                if key not in keys:
                    keys[key] = len(rows)
                    rows.append([None] * len(versions))
                if rows[keys[key]][column] is None:
                    rows[keys[key]][column] = m
        for r, row in enumerate(rows):
            entries = [versions[c]["manual_evidence"][m] for c, m in enumerate(row) if m is not None]
            entry = dict(entries[0])
            for key in ("query", "reliable", "sufficient"):
                if not _same([e[key] for e in entries]):
                    entry[key] = "" if key == "query" else None
                    disagreed.append(f"{path}.manual_evidence[{r}].{key}")
            out["manual_evidence"].append(entry)
        if any(m is None for row in rows for m in row):  # some annotator did not give an entry
            disagreed.append(f"{path}.manual_evidence")
        used = []
        for column, version in enumerate(versions):
            renumbered = set()
            for value in version["used_evidence"]:
                if isinstance(value, str):
                    key = _manual_key(version["manual_evidence"][int(value[len(MANUAL) :])])
                    value = f"{MANUAL}{keys[key]}"
                renumbered.add(value)
            used.append(renumbered)
        if _same(used):
            out["used_evidence"] = sorted(
                used[0],
                key=lambda v: (
                    isinstance(v, str),
                    v if isinstance(v, int) else int(v[len(MANUAL) :]),
                ),
            )
        else:
            disagreed.append(f"{path}.used_evidence")
        merged.append(out)
        alignment.append(rows)
    return MergeResult({"claims": merged}, disagreed, alignment)


# -- agreement ----------------------------------------------------------------------------------


def agreement_units(payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
    """Units: (claim, passage) for the stances, the claim for the other fields. Claims are the
    content's, so no alignment is needed; unanswered fields are missing values."""
    units: dict[str, dict] = {name: {} for name in AGREEMENT_FIELDS}
    for rater, payload in payloads.items():
        for index, claim in enumerate(payload.get("claims", [])):
            for k, stance in enumerate(claim.get("stances") or []):
                if stance:
                    units["stance"].setdefault((index, k), {})[rater] = stance
                    units["stance3"].setdefault((index, k), {})[rater] = STANCE3[stance]
            for key in ("decided", "factuality", "needs_edit"):
                if claim.get(key):
                    units[key].setdefault(index, {})[rater] = claim[key]
    return units


def unit_values(content: dict, payloads: dict[Hashable, dict]) -> Iterator[tuple[dict, str, dict]]:
    """agreement_units' units, named as the export names them: the step-1 sentence key, the
    claim's index among that sentence's claims and the passage's index in its evidence."""
    claims = content.get("claims", [])
    for field, units in agreement_units(payloads).items():
        for unit, values in units.items():
            index, passage = unit if isinstance(unit, tuple) else (unit, None)
            ids = {
                "sentence": f"sentence{claims[index]['sentence'] + 1}",
                "claim": claims[index]["claim"],
            }
            if passage is not None:
                ids["evidence"] = passage
            yield ids, field, values


def suggestion_predictions(content: dict, suggestion: dict | None) -> Iterator[tuple[str, tuple, str]]:
    """Stances and factuality as predictions of the scoring tasks (``stance4``/``stance3``,
    ``factuality``/``factuality_without_nee``). The content's claims are the gold step-1 claims
    step 2 verifies, so no alignment is needed. A suggestion in the payload's shape
    (``{"claims": [{"stances", "factuality"}]}``, e.g. an LLM rater's) is taken as it is; without
    one, the stance hints pre-annotation put beside each passage (step 2 stores no suggestion).
    Without a factuality, one follows from the stances when every passage has one
    (pipeline.evidence.verdict_from_stances)."""
    suggested = (suggestion or {}).get("claims") or []
    for index, claim in enumerate(content.get("claims", [])):
        key = (f"sentence{claim['sentence'] + 1}", claim["claim"])
        passages = claim.get("evidence") or []
        if suggestion is None:
            stances = [(p.get("stance_hint") or {}).get("label") for p in passages]
            factuality = None
        else:
            answer = suggested[index] if index < len(suggested) and isinstance(suggested[index], dict) else {}
            stances, factuality = answer.get("stances") or [], answer.get("factuality")
        if not factuality and passages and len(stances) >= len(passages) and all(stances[: len(passages)]):
            factuality = verdict_from_stances(stances[: len(passages)])  # every passage judged: the votes decide
        for k, stance in enumerate(stances[: len(passages)]):
            if stance:
                yield "stance4", (*key, k), stance
                yield "stance3", (*key, k), stance
        if factuality:
            yield "factuality", key, factuality
            yield "factuality_without_nee", key, factuality


def extra_agreement(items: Iterable[AgreementItem]) -> dict:
    """Corrections between the first two annotators of each item: how many claims both said
    need an edit, and the mean normalised edit distance between their two corrections
    (0 = identical, as for step 1's claims)."""
    compared, both, distances = 0, 0, []
    for item in items:
        raters = list(item.payloads)
        if len(raters) < 2:
            continue
        a, b = (item.payloads[r].get("claims", []) for r in raters[:2])
        for first, second in zip(a, b):
            compared += 1
            if first.get("needs_edit") == "yes" and second.get("needs_edit") == "yes":
                both += 1
                distances.append(
                    claim_text.normalised_edit_distance(first.get("correction", ""), second.get("correction", ""))
                )
    return {
        "corrections": {
            "claims": compared,
            "both_corrected": both,
            "both_corrected_share": both / compared if compared else None,
            "mean_normalised_edit_distance": mean(distances) if distances else None,
        }
    }
