"""The released Factcheck-Bench shape (``factcheck-GPT-benchmark.jsonl``): import of its lines
and export of consolidated items, field for field.

Step 2 in the released file is per sentence, one entry per claim (claims of checkworthy
sentences only; step 2 verifies the factual ones, the others carry "NA"):
``auto_evidence`` / ``auto_evidence_url`` (lists of passages), ``stance_claim_autoEvid`` (one
stance per passage, ``[]`` for "NA" claims), ``if_automatic_evidence_enough_to_verify``
(yes/no/NA), ``human_evidence`` (free text, "NA" when none), ``claims_factuality_label``
(true/false booleans or "unknown"), ``if_claim_needs_edit`` (yes/no/not_enough_evidence/NA),
``revised_claims`` (one per claim; sentences without claims also hold their revised sentence
here), ``usedEvidence_index_in_revision`` (1-based passage numbers "1,5", "self-retrieved" for
the annotator's own evidence, "-1" for none, and free notes).

Import maps these onto step 2's content and payload (``step2_content.py``, ``step2.py``). What the
payload cannot hold is kept in the gold record's ``released`` so the export gives it back unchanged:
``released["claims"]["<sentence>/<claim>"]`` holds, for a verified claim, the released values whose
rendering from the payload differs (e.g. ``"1, 5, 2"``, ``" "`` as human evidence), and for a claim
step 2 does not verify (not factual) all nine values plus its ``claim`` text;
``released["sentences"]["<sentence>"]["revised_claims"]`` the list of a sentence without claims.
Strings there may be ``{"nul_free": text, "nul_offsets": [...]}``: PostgreSQL cannot store U+0000,
which the released evidence holds (evidence passages keep it as ``nul_offsets``). A gold record
re-consolidated in the app has no ``released`` and exports the canonical rendering.

The export writes the released fields only (and the item's ``id``). What step 2 records beyond
them goes to its own export, ``factcheck-evidence`` (``evidence_lines``): per verified claim,
``auto_evidence_reliable`` (per passage: is its source reliable, true/false/null) and
``human_evidence_metadata`` (the annotators' evidence as ``{"text", "url", "query", "reliable",
"sufficient"}``, Appendix D.4), which the released ``human_evidence`` text renders only in part.
"""

import re

from annotation.json_values import nul_path

from ..base import (
    ImportLineError,
    ParsedItem,
    PayloadError,
    is_valid_url,
    optional_str,
    require_str,
)
from . import step2, step2_content, step3
from .step1 import CLAIM_CATEGORIES, CLAIM_IMPORTANCE, SENTENCE_CHECKWORTHY, SENTENCE_IMPORTANCE

SENTENCE_KEY = re.compile(r"^sentence(\d+)$")
# The nine step-2 fields of a released sentence, one entry per claim.
STEP2_FIELDS = (
    "auto_evidence",
    "auto_evidence_url",
    "stance_claim_autoEvid",
    "if_automatic_evidence_enough_to_verify",
    "human_evidence",
    "claims_factuality_label",
    "if_claim_needs_edit",
    "revised_claims",
    "usedEvidence_index_in_revision",
)
# a manual evidence entry's keys, in the order an export writes them (Appendix D.4)
MANUAL_KEYS = ("text", "url", "query", "reliable", "sufficient")
# Step 3 in the released shape: per sentence, per item.
STEP3_SENTENCE_FIELDS = ("revised_decontext", "sentence_factuality_label")
STEP3_ITEM_FIELDS = ("revised_response", "response_factuality")
NA = "NA"
SELF_RETRIEVED = "self-retrieved"
NO_EVIDENCE_USED = "-1"
URL = re.compile(r"https?://\S+")
# Step-2 and step-3 fields of a released sentence: empty until the step has a gold record.
LATER_STEP_FIELDS = {
    "sentence_factuality_label": None,
    "revised_decontext": "",
    "if_automatic_evidence_enough_to_verify": [],
    "human_evidence": [],
    "auto_evidence": [],
    "auto_evidence_url": [],
    "stance_claim_autoEvid": [],
    "if_claim_needs_edit": [],
    "claims_factuality_label": [],
    "revised_claims": [],
    "usedEvidence_index_in_revision": [],
}


# -- import -------------------------------------------------------------------------------------


def parse_benchmark_line(data: dict, line: int) -> ParsedItem:
    prompt = require_str(data, "prompt", line, allow_empty=True)
    response = require_str(data, "response", line)
    raw_sentences = data.get("sentences")
    if not isinstance(raw_sentences, dict) or not raw_sentences:
        raise ImportLineError(line, "sentences", "must be an object of sentence1, sentence2, …")
    keys = []
    for key in raw_sentences:
        match = SENTENCE_KEY.match(key)
        if not match:
            raise ImportLineError(line, f"sentences.{key}", "keys must be sentence1, sentence2, …")
        keys.append((int(match.group(1)), key))
    texts, gold, paths = [], [], []
    for _, key in sorted(keys):
        sentence = raw_sentences[key]
        path = f"sentences.{key}"
        if not isinstance(sentence, dict):
            raise ImportLineError(line, path, "must be an object")
        texts.append(require_str(sentence, "text", line, path=f"{path}.text"))
        gold.append(_released_step1(sentence, path, line))
        paths.append(path)
    known = ("id", "prompt", "response", "sentences", *STEP3_ITEM_FIELDS)
    item = ParsedItem(
        line=line,
        prompt=prompt,
        response=response,
        external_id=optional_str(data, "id", line),
        source=optional_str(data, "source", line),
        metadata={k: v for k, v in data.items() if k not in known},
        content={1: {"sentences": texts}},
        labels={1: {"sentences": gold}},
    )
    released = [raw_sentences[key] for _, key in sorted(keys)]
    if _carries_step2(released, gold):
        _released_step2(item, released, paths, line)
        if _carries_step3(data, released):
            _released_step3(item, data, released, paths, line)
    return item


def _carries_step2(released: list[dict], step1: list[dict]) -> bool:
    """Whether the line holds step-2 labels: some step-2 field is filled, or the item has no
    claims at all and gives every step-2 field (its step 2 is done, with nothing to verify).
    A line of our own export made before step 2 was consolidated has empty lists: no step 2."""
    if any(isinstance(s.get(f), list) and s.get(f) for s in released for f in STEP2_FIELDS):
        return True
    return not any(s["claims"] for s in step1) and all(f in s for s in released for f in STEP2_FIELDS)


def _choice(data: dict, key: str, choices: tuple, path: str, line: int):
    value = data.get(key)
    if value not in choices:
        raise ImportLineError(line, f"{path}.{key}", f"must be one of {', '.join(choices)}, not {value!r}")
    return value


def _released_step1(sentence: dict, path: str, line: int) -> dict:
    """A released sentence's step-1 fields as a payload sentence."""
    claims = sentence.get("claims", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise ImportLineError(line, f"{path}.claims", "must be a list of strings")
    per_claim = {}
    for key, choices in (
        ("claim_checkworthiness", CLAIM_CATEGORIES),
        ("if_most_important_claim", CLAIM_IMPORTANCE),
    ):
        values = sentence.get(key, [])
        if not isinstance(values, list) or len(values) != len(claims):
            raise ImportLineError(line, f"{path}.{key}", f"must be a list with one entry per claim ({len(claims)})")
        for index, value in enumerate(values):
            if value not in choices:
                raise ImportLineError(
                    line,
                    f"{path}.{key}[{index}]",
                    f"must be one of {', '.join(choices)}, not {value!r}",
                )
        per_claim[key] = values
    decontext = sentence.get("decontext", "")
    if not isinstance(decontext, str):
        raise ImportLineError(line, f"{path}.decontext", "must be a string")
    return {
        "decontext": decontext,
        "importance": _choice(sentence, "most_importance_sentence", SENTENCE_IMPORTANCE, path, line),
        "checkworthy": _choice(sentence, "sentence_checkworthiness", SENTENCE_CHECKWORTHY, path, line),
        "claims": [
            {"text": text, "category": category, "importance": importance}
            for text, category, importance in zip(
                claims, per_claim["claim_checkworthiness"], per_claim["if_most_important_claim"]
            )
        ],
    }


def _released_claim(sentence: dict, j: int, path: str, line: int) -> dict:
    """The nine step-2 values of claim ``j``, their shapes checked."""
    values = {field: sentence[field][j] for field in STEP2_FIELDS}
    for field in ("auto_evidence", "auto_evidence_url", "stance_claim_autoEvid"):
        if not isinstance(values[field], list) or not all(isinstance(v, str) for v in values[field]):
            raise ImportLineError(line, f"{path}.{field}[{j}]", "must be a list of strings")
    passages = len(values["auto_evidence"])
    if len(values["auto_evidence_url"]) != passages:
        raise ImportLineError(line, f"{path}.auto_evidence_url[{j}]", f"must have one URL per passage ({passages})")
    if values["stance_claim_autoEvid"] and len(values["stance_claim_autoEvid"]) != passages:
        raise ImportLineError(
            line,
            f"{path}.stance_claim_autoEvid[{j}]",
            f"must be empty or have one stance per passage ({passages})",
        )
    for k, stance in enumerate(values["stance_claim_autoEvid"]):
        if stance not in step2.STANCES:
            raise ImportLineError(
                line,
                f"{path}.stance_claim_autoEvid[{j}][{k}]",
                f"must be one of {', '.join(step2.STANCES)}, not {stance!r}",
            )
    for field, choices in (
        ("if_automatic_evidence_enough_to_verify", (*step2.DECIDED, NA)),
        ("if_claim_needs_edit", (*step2.NEEDS_EDIT, NA)),
    ):
        if values[field] not in choices:
            raise ImportLineError(
                line,
                f"{path}.{field}[{j}]",
                f"must be one of {', '.join(choices)}, not {values[field]!r}",
            )
    factuality = values["claims_factuality_label"]
    if not isinstance(factuality, bool) and factuality not in ("true", "false", "unknown", NA):
        raise ImportLineError(
            line,
            f"{path}.claims_factuality_label[{j}]",
            f'must be true, false, "unknown" or "NA", not {values["claims_factuality_label"]!r}',
        )
    for field in ("human_evidence", "revised_claims", "usedEvidence_index_in_revision"):
        if not isinstance(values[field], str):
            raise ImportLineError(line, f"{path}.{field}[{j}]", "must be a string")
    return values


def _released_step2(item: ParsedItem, released: list[dict], paths: list[str], line: int) -> None:
    """Stage-2 content, gold payload and the evidence carried for retrieval, from the released
    step-2 fields of every sentence."""
    step1 = item.labels[1]["sentences"]
    carried, per_claim, extras = [], {}, {"claims": {}, "sentences": {}}
    for s, (sentence, path, gold_sentence) in enumerate(zip(released, paths, step1)):
        claims = [c["text"] for c in gold_sentence["claims"]]
        for field in STEP2_FIELDS:
            value = sentence.get(field)
            if not isinstance(value, list):
                raise ImportLineError(line, f"{path}.{field}", "must be a list with one entry per claim")
            if len(value) != len(claims) and not (field == "revised_claims" and not claims):
                raise ImportLineError(
                    line,
                    f"{path}.{field}",
                    f"must have one entry per claim ({len(claims)}), not {len(value)}",
                )
        if not claims and sentence["revised_claims"]:
            extras["sentences"][str(s)] = {"revised_claims": _encode(sentence["revised_claims"])}
        carried_claims = []
        for j, text in enumerate(claims):
            values = _released_claim(sentence, j, path, line)
            evidence = [
                step2_content.released_passage(t, u, k + 1)
                for k, (t, u) in enumerate(zip(values["auto_evidence"], values["auto_evidence_url"]))
            ]
            carried_claims.append({"text": text, "evidence": evidence})
            per_claim[(s, j)] = (values, evidence)
        carried.append({"claims": carried_claims})
    content_claims, payload_claims = [], []
    for claim in step2_content.checkworthy_claims(item.labels[1]):
        values, evidence = per_claim.pop((claim["sentence"], claim["claim"]))
        content_claims.append({**claim, "queries": [], "evidence": evidence, "problems": []})
        answer = _payload_claim(values, len(evidence))
        payload_claims.append(answer)
        rendered = render_claim(evidence, answer)
        differing = {f: _encode(v) for f, v in values.items() if rendered[f] != v}
        if differing:
            extras["claims"][f"{claim['sentence']}/{claim['claim']}"] = differing
    for (s, j), (values, _) in per_claim.items():  # claims step 2 does not verify: kept as released
        extras["claims"][f"{s}/{j}"] = {"claim": step1[s]["claims"][j]["text"], **_encode(values)}
    content = {"claims": content_claims}
    try:
        payload = step2.validate_payload(content, {"claims": payload_claims}, complete=False)
    except PayloadError as exc:
        first = exc.errors[0]
        raise ImportLineError(line, f"step 2: {first['field']}", first["message"]) from None
    if extras["claims"] or extras["sentences"]:
        payload["released"] = extras
    if where := nul_path(payload, "step 2"):
        raise ImportLineError(line, where, "contains U+0000, which cannot be stored")
    item.metadata[step2_content.RELEASED_EVIDENCE_KEY] = {"sentences": carried}
    item.content[2] = content
    item.labels[2] = payload


def _carries_step3(data: dict, released: list[dict]) -> bool:
    """Whether the line holds step 3: a revised response or a revised sentence (our export of
    an item whose step 3 is not consolidated writes them empty)."""
    return bool(data.get("revised_response")) or any(s.get("revised_decontext") for s in released)


def _released_step3(item: ParsedItem, data: dict, released: list[dict], paths: list[str], line: int) -> None:
    """Stage-3 content (from the step-1 and step-2 gold) and gold payload. The released derived
    labels, and a revised sentence that is not a string (a list, in 7 released sentences), are
    kept in ``released`` and come back unchanged on export."""
    response = data.get("revised_response")
    if not isinstance(response, str):
        raise ImportLineError(line, "revised_response", "must be a string")
    kept: dict = {"sentences": {}}
    revised = []
    for s, (sentence, path) in enumerate(zip(released, paths)):
        value = sentence.get("revised_decontext", "")
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            kept["sentences"][str(s)] = {"revised_decontext": _encode(value)}
            value = " ".join(value)
        elif not isinstance(value, str):
            raise ImportLineError(line, f"{path}.revised_decontext", "must be a string (or a list of strings)")
        label = sentence.get("sentence_factuality_label")
        if label not in (True, False, NA, None):
            raise ImportLineError(
                line,
                f"{path}.sentence_factuality_label",
                f'must be true, false or "NA", not {label!r}',
            )
        revised.append({"revised": value})
    if data.get("response_factuality") not in (True, False, NA, None):
        raise ImportLineError(
            line,
            "response_factuality",
            f'must be true, false or "NA", not {data.get("response_factuality")!r}',
        )
    kept["labels"] = {
        "sentences": [s.get("sentence_factuality_label") for s in released],
        "response": data.get("response_factuality"),
    }
    content = step3.build_content(item.content[1], item.labels[1], item.content[2], item.labels[2])
    try:
        payload = step3.validate_payload(content, {"sentences": revised, "response": response}, complete=False)
    except PayloadError as exc:
        first = exc.errors[0]
        raise ImportLineError(line, f"step 3: {first['field']}", first["message"]) from None
    payload["released"] = _encode(kept)
    if where := nul_path(payload, "step 3"):
        raise ImportLineError(line, where, "contains U+0000, which cannot be stored")
    item.content[3] = content
    item.labels[3] = payload


def _payload_claim(values: dict, passages: int) -> dict:
    manual = parse_human_evidence(values["human_evidence"])
    factuality = values["claims_factuality_label"]
    return {
        "stances": list(values["stance_claim_autoEvid"]) or [None] * passages,
        "reliable": [None] * passages,
        "decided": values["if_automatic_evidence_enough_to_verify"]
        if values["if_automatic_evidence_enough_to_verify"] != NA
        else None,
        "manual_evidence": manual,
        "factuality": {True: "true", False: "false", NA: None}.get(factuality, factuality),
        "needs_edit": values["if_claim_needs_edit"] if values["if_claim_needs_edit"] != NA else None,
        "correction": values["revised_claims"],
        "used_evidence": parse_used_evidence(values["usedEvidence_index_in_revision"], passages, len(manual)),
    }


def parse_human_evidence(raw: str) -> list[dict]:
    """Released human evidence (one free text, "NA" when none) as one manual evidence entry,
    its URL the first http(s) URL in the text."""
    if raw.strip() in ("", NA):
        return []
    url = next((u for u in URL.findall(raw) if is_valid_url(u)), "")
    return [{"text": raw, "url": url, "query": "", "reliable": None, "sufficient": None}]


def render_human_evidence(entries: list[dict]) -> str:
    if not entries:
        return NA
    return "\n\n".join(
        e["text"] if not e["url"] or e["url"] in e["text"] else f"{e['url']}\n{e['text']}" for e in entries
    )


def parse_used_evidence(raw: str, passages: int, manual: int) -> list:
    """ "1,5" → [0, 4]; "self-retrieved" → the first manual evidence; "-1", "NA" and notes → nothing."""
    used = []
    for token in (t.strip() for t in raw.split(",")):
        value = None
        if token.isdigit() and token.isascii() and 1 <= int(token) <= passages:
            value = int(token) - 1
        elif token == SELF_RETRIEVED and manual:
            value = f"{step2.MANUAL}0"
        if value is not None and value not in used:
            used.append(value)
    return used


def render_used_evidence(used: list) -> str:
    if not used:
        return NO_EVIDENCE_USED
    numbers = [str(v + 1) for v in used if isinstance(v, int)]
    return ",".join(numbers + ([SELF_RETRIEVED] if any(isinstance(v, str) for v in used) else []))


def render_claim(evidence: list[dict], answer: dict) -> dict:
    """A payload claim in the released step-2 vocabularies."""
    factuality = answer["factuality"]
    return {
        "auto_evidence": [step2_content.restore_nuls(p["text"], p.get("nul_offsets") or []) for p in evidence],
        "auto_evidence_url": [p["url"] for p in evidence],
        "stance_claim_autoEvid": list(answer["stances"]),
        "if_automatic_evidence_enough_to_verify": answer["decided"] or NA,
        "human_evidence": render_human_evidence(answer["manual_evidence"]),
        "claims_factuality_label": {"true": True, "false": False, None: NA}.get(factuality, factuality),
        "if_claim_needs_edit": answer["needs_edit"] or NA,
        "revised_claims": answer["correction"],
        "usedEvidence_index_in_revision": render_used_evidence(answer["used_evidence"]),
    }


def _encode(value):
    """Released values as PostgreSQL can store them (U+0000 moved out of strings)."""
    if isinstance(value, str) and "\x00" in value:
        text, offsets = step2_content.strip_nuls(value)
        return {"nul_free": text, "nul_offsets": offsets}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode(value):
    if isinstance(value, dict) and set(value) == {"nul_free", "nul_offsets"}:
        return step2_content.restore_nuls(value["nul_free"], value["nul_offsets"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    return value


# -- export -------------------------------------------------------------------------------------


def _unverified_claim(text: str) -> dict:
    """A claim step 2 did not verify, as the released file writes one."""
    return {
        "auto_evidence": [],
        "auto_evidence_url": [],
        "stance_claim_autoEvid": [],
        "if_automatic_evidence_enough_to_verify": NA,
        "human_evidence": NA,
        "claims_factuality_label": "unknown",
        "if_claim_needs_edit": NA,
        "revised_claims": text,
        "usedEvidence_index_in_revision": NA,
    }


def _step2_sentences(step1_gold: dict, stage2: dict) -> list[dict]:
    """Per sentence, the step-2 fields from the step-2 content and gold."""
    content, gold = stage2["content"], stage2["gold"]
    released = gold.get("released") or {}
    verified = {(c["sentence"], c["claim"]): (c, a) for c, a in zip(content.get("claims", []), gold.get("claims", []))}
    result = []
    for s, sentence in enumerate(step1_gold["sentences"]):
        fields = {f: [] for f in STEP2_FIELDS}
        for j, claim in enumerate(sentence["claims"]):
            kept = _decode((released.get("claims") or {}).get(f"{s}/{j}") or {})
            if (s, j) in verified:
                evidence, answer = verified[(s, j)][0]["evidence"], verified[(s, j)][1]
                values = {
                    **render_claim(evidence, answer),
                    **{f: v for f, v in kept.items() if f in STEP2_FIELDS},
                }
            else:
                values = _unverified_claim(claim["text"])
                if kept.get("claim") == claim["text"]:
                    values.update({f: v for f, v in kept.items() if f in STEP2_FIELDS})
            for field in STEP2_FIELDS:
                fields[field].append(values[field])
        if not sentence["claims"]:
            fields["revised_claims"] = _decode(
                ((released.get("sentences") or {}).get(str(s)) or {}).get("revised_claims", [])
            )
        result.append(fields)
    return result


def _manual_entry(entry: dict) -> dict:
    """A manual evidence entry in the documented key order (text, url, query, reliable,
    sufficient), whether it comes from the database (jsonb orders keys shorter first) or from an
    import's parsed values: the same line either way."""
    ordered = {key: entry[key] for key in MANUAL_KEYS if key in entry}
    if len(ordered) < len(entry):  # not written by step2.validate_payload: the rest in jsonb's order
        rest = sorted((k for k in entry if k not in ordered), key=lambda k: (len(k.encode()), k.encode()))
        ordered.update((key, entry[key]) for key in rest)
    return ordered


def evidence_lines(row: dict) -> list[dict]:
    """The ``factcheck-evidence`` lines of one consolidated item: one per claim its step-2 gold
    verified, keyed as the predictions and the per-unit agreement export key claims (``item``,
    ``sentence``, ``claim``), with what the released shape has no field for: each passage's
    ``auto_evidence_reliable`` (in ``auto_evidence``'s order) and the annotators' own evidence,
    ``human_evidence_metadata``. No line before step 2 is consolidated."""
    stage2 = (row.get("stages") or {}).get(2)
    if not stage2:
        return []
    item = row.get("external_id") or str(row.get("item_id", ""))
    return [
        {
            "item": item,
            "sentence": f"sentence{claim['sentence'] + 1}",
            "claim": claim["claim"],
            "auto_evidence_reliable": list(answer["reliable"]),
            "human_evidence_metadata": [_manual_entry(e) for e in answer["manual_evidence"]],
        }
        for claim, answer in zip(stage2["content"].get("claims", []), stage2["gold"].get("claims", []))
    ]


def _plain(value) -> bool:
    """Strings, booleans, null and lists of them: what jsonb gives back as it was given."""
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, bool))


def record_renders_from_import(row: dict) -> bool:
    """Whether ``benchmark_record(row)`` of a row built from an import's parsed values is the
    record of the row read back from the database. The record copies released values as they are
    only for a sentence without claims (its ``revised_claims``, any JSON: numbers and objects
    come back from jsonb changed, e.g. ``1e+19`` as an integer, keys reordered); every other
    field is rebuilt from checked strings, booleans and lists."""
    stage2 = (row.get("stages") or {}).get(2)
    if not stage2:
        return True
    kept = (stage2["gold"].get("released") or {}).get("sentences") or {}
    return all(_plain(entry.get("revised_claims", [])) for entry in kept.values())


def _step3_fields(step1_gold: dict, stage2: dict, stage3: dict) -> dict:
    """``revised_decontext`` and ``sentence_factuality_label`` per sentence, ``revised_response``
    and ``response_factuality``: the step-3 gold, the labels derived from steps 1–2 (or, for an
    imported gold record, the released ones)."""
    gold = stage3["gold"]
    released = _decode(gold.get("released") or {})
    derived = step3.derived_labels(step1_gold, stage2["content"], stage2["gold"])
    labels = released.get("labels") or derived
    sentences = [
        {
            "revised_decontext": ((released.get("sentences") or {}).get(str(s)) or {}).get(
                "revised_decontext", answer["revised"] or ""
            ),
            "sentence_factuality_label": labels["sentences"][s],
        }
        for s, answer in enumerate(gold["sentences"])
    ]
    return {
        "sentences": sentences,
        "revised_response": gold["response"] or "",
        "response_factuality": labels["response"],
    }


def benchmark_record(row: dict) -> dict:
    """One consolidated item in the released Factcheck-Bench shape: step-1 fields, step-2 fields
    when step 2 has a gold record (``row["stages"][2]``), step-3 fields when step 3 has one;
    empty where a step is not consolidated yet. Beside the released fields: ``id``, the item's
    id (its external id, else the workbench's), which a re-import keeps."""
    stages = row.get("stages") or {}
    stage2, stage3 = stages.get(2), stages.get(3)
    step2_fields = _step2_sentences(row["gold"], stage2) if stage2 else None
    step3_fields = _step3_fields(row["gold"], stage2, stage3) if stage2 and stage3 else None
    sentences = {}
    for index, (text, gold) in enumerate(zip(row["content"]["sentences"], row["gold"]["sentences"]), start=1):
        claims = gold["claims"]
        later = (
            step2_fields[index - 1]
            if step2_fields
            else {key: list(value) for key, value in LATER_STEP_FIELDS.items() if isinstance(value, list)}
        )
        revision = (
            step3_fields["sentences"][index - 1]
            if step3_fields
            else {
                "sentence_factuality_label": LATER_STEP_FIELDS["sentence_factuality_label"],
                "revised_decontext": LATER_STEP_FIELDS["revised_decontext"],
            }
        )
        sentences[f"sentence{index}"] = {
            "text": text,
            "decontext": gold["decontext"],
            "sentence_factuality_label": revision["sentence_factuality_label"],
            "revised_decontext": revision["revised_decontext"],
            "sentence_checkworthiness": gold["checkworthy"],
            "most_importance_sentence": gold["importance"],
            "claims": [c["text"] for c in claims],
            "claim_checkworthiness": [c["category"] for c in claims],
            **{key: later[key] for key in LATER_STEP_FIELDS if key in later},
            "if_most_important_claim": [c["importance"] for c in claims],
        }
    return {
        # not a released field: the item's id (as the items API and the other exports name it),
        # read back as the item's id by a re-import
        "id": row.get("external_id") or str(row.get("item_id", "")),
        "prompt": row["prompt"],
        "response": row["response"],
        "revised_response": step3_fields["revised_response"] if step3_fields else "",
        "response_factuality": step3_fields["response_factuality"] if step3_fields else None,
        "sentences": sentences,
    }
