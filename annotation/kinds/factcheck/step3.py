"""Factcheck-Bench step 3 (paper §2 (8), Appendix D.7, Figure 13): merge the verified claims
back into the response: each sentence revised, then the whole response.

Content (``build_content``, from the gold records of steps 1 and 2): ``{"sentences": [{"text",
"decontext", "checkworthy", "claims": [{"text", "verdict", "corrected"}]}]}`` in response order;
``verdict`` is how the claim came out of step 2: ``true | false | unknown | deleted`` (false with
an empty correction) or ``unverified`` (step 2 did not check it: not factual, or its sentence
is not checkworthy). The released field is ``revised_decontext``: the revision starts from the
decontextualised sentence.

Suggestion (``pipeline.revision``): ``{"sentences": [{"revised"}], "response"}``: a sentence
none of whose claims changed is kept as it is; the others say what the corrected claims say
(LLM with the revision prompt, or offline the corrected claims joined in order); the response
is the revised sentences joined.

Payload: ``{"sentences": [{"revised"}], "response"}``. A revised sentence may be empty (the
sentence only repeated another, or said nothing true that is left); the response may not. In a
consolidation draft ``None`` marks a field the annotators disagree on and the consolidator has
not settled yet.
"""

from collections.abc import Hashable, Iterable, Iterator
from statistics import mean
from typing import Any

from .. import claims as claim_text
from ..base import AgreementItem, MergeResult, PayloadError, field_error

TRUE, FALSE, UNKNOWN, DELETED, UNVERIFIED = "true", "false", "unknown", "deleted", "unverified"
GUIDELINE = (
    "Minimal edits: change only what a correction requires. Add no new information. Remove duplicates. "
    "Keep the original order."
)


# -- content ------------------------------------------------------------------------------------


def claim_verdict(answer: dict | None) -> str:
    if answer is None:
        return UNVERIFIED
    edit = answer.get("needs_edit")
    if edit == "yes":
        return FALSE if (answer.get("correction") or "").strip() else DELETED
    return UNKNOWN if edit == "not_enough_evidence" else TRUE


def build_content(step1_content: dict, step1_gold: dict, step2_content: dict, step2_gold: dict) -> dict:
    verified = {
        (c["sentence"], c["claim"]): answer
        for c, answer in zip(step2_content.get("claims", []), step2_gold.get("claims", []))
    }
    sentences = []
    for s, (text, gold) in enumerate(zip(step1_content.get("sentences", []), step1_gold.get("sentences", []))):
        claims = []
        for j, claim in enumerate(gold.get("claims", [])):
            answer = verified.get((s, j))
            verdict = claim_verdict(answer)
            corrected = (answer.get("correction") or "") if verdict in (FALSE, DELETED) else claim["text"]
            claims.append({"text": claim["text"], "verdict": verdict, "corrected": corrected})
        sentences.append(
            {
                "text": text,
                "decontext": gold.get("decontext") or text,
                "checkworthy": gold.get("checkworthy") == "yes",
                "claims": claims,
            }
        )
    return {"sentences": sentences}


def join_sentences(revised: Iterable[str | None]) -> str:
    return " ".join(" ".join(r.split()) for r in revised if r and r.strip())


def suggest(content: dict, settings: dict, question: str) -> dict:
    """The machine revision of each sentence and of the response, with its provenance."""
    from pipeline.llm import LLMConfig  # loads the openai client: only where an LLM is called

    # loads NLTK and scikit-learn: kept out of web start-up
    from pipeline.revision import ClaimOutcome, SentenceToRevise, suggest_revisions

    revision = settings.get("revision") or {}
    sentences = [
        SentenceToRevise(s["decontext"], s["checkworthy"], [ClaimOutcome(**c) for c in s["claims"]])
        for s in content["sentences"]
    ]
    revisions = suggest_revisions(
        sentences,
        LLMConfig.from_env(settings.get("llm")),
        question=question,
        with_question=bool(revision.get("with_question")),
    )
    suggestion = {
        "sentences": [{"revised": r.text} for r in revisions],
        "response": join_sentences(r.text for r in revisions),
    }
    backends = sorted({r.backend for r in revisions})
    provenance = {
        "revision": {
            "backends": backends,
            "model": next((r.model for r in revisions if r.model), None),
            "fallbacks": [i for i, r in enumerate(revisions) if r.fallback],
            "with_question": bool(revision.get("with_question")),
        }
    }
    return {"suggestion": suggestion, "provenance": provenance}


# -- payloads -------------------------------------------------------------------------------------


def empty_payload(content: dict, suggestion: dict | None) -> dict:
    """Pre-filled with the machine revision (texts are starting points to edit, as step 1's)."""
    suggested = (suggestion or {}).get("sentences") or []
    sentences = [
        {"revised": suggested[i]["revised"] if i < len(suggested) else s["decontext"]}
        for i, s in enumerate(content.get("sentences", []))
    ]
    response = (suggestion or {}).get("response")
    return {
        "sentences": sentences,
        "response": response if response is not None else join_sentences(s["revised"] for s in sentences),
    }


def _text(value: Any, path: str, complete: bool, errors: list[dict], *, allow_empty: bool) -> str | None:
    if value is None:
        if complete:
            errors.append(field_error(path, "is required: take an annotator's revision or write one"))
        return None
    if not isinstance(value, str):
        errors.append(field_error(path, "must be a string"))
        return None
    if complete and not allow_empty and not value.strip():
        errors.append(field_error(path, "must not be empty"))
    return value


def validate_payload(content: dict, payload: Any, *, complete: bool) -> dict:
    sentences = content.get("sentences", [])
    if not isinstance(payload, dict) or not isinstance(payload.get("sentences"), list):
        raise PayloadError([field_error("sentences", "must be a list with one object per sentence")])
    if len(payload["sentences"]) != len(sentences):
        raise PayloadError(
            [
                field_error(
                    "sentences",
                    f"has {len(payload['sentences'])} entries, the item has {len(sentences)} sentences",
                )
            ]
        )
    errors: list[dict] = []
    out = []
    for i, raw in enumerate(payload["sentences"]):
        if not isinstance(raw, dict):
            errors.append(field_error(f"sentences[{i}]", "must be an object with revised"))
            out.append({"revised": None})
            continue
        out.append(
            {
                "revised": _text(
                    raw.get("revised"),
                    f"sentences[{i}].revised",
                    complete,
                    errors,
                    allow_empty=True,
                )
            }
        )
    response = _text(payload.get("response"), "response", complete, errors, allow_empty=False)
    if errors:
        raise PayloadError(errors)
    return {"sentences": out, "response": response}


# -- consolidation ------------------------------------------------------------------------------


def merge(content: dict, payloads: list[dict]) -> MergeResult:
    """Revisions the annotators agree on (up to whitespace) are copied; the others start as
    None (undecided) and are listed as disagreed."""
    sentences, disagreed = [], []
    for i in range(len(content.get("sentences", []))):
        versions = [claim_text.normalise(p["sentences"][i]["revised"] or "") for p in payloads]
        if all(v == versions[0] for v in versions):
            sentences.append({"revised": versions[0]})
        else:
            sentences.append({"revised": None})
            disagreed.append(f"sentences[{i}].revised")
    responses = [claim_text.normalise(p.get("response") or "") for p in payloads]
    response = responses[0] if all(r == responses[0] for r in responses) else None
    if response is None:
        disagreed.append("response")
    return MergeResult({"sentences": sentences, "response": response}, disagreed)


# -- agreement ----------------------------------------------------------------------------------

AGREEMENT_FIELDS: dict[str, str] = {}  # revisions are texts: compared by extra_agreement


def agreement_units(payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
    return {}


def unit_values(content: dict, payloads: dict[Hashable, dict]) -> Iterator[tuple[dict, str, dict]]:
    """Each sentence's revision (sentence key as the export's) and the revised response, with
    spacing normalised as consolidation compares them."""
    revised: dict[int, dict] = {}
    responses: dict = {}
    for rater, payload in payloads.items():
        for index, sentence in enumerate(payload.get("sentences") or []):
            if sentence.get("revised") is not None:
                revised.setdefault(index, {})[rater] = claim_text.normalise(sentence["revised"])
        if payload.get("response") is not None:
            responses[rater] = claim_text.normalise(payload["response"])
    for index, values in sorted(revised.items()):
        yield {"sentence": f"sentence{index + 1}"}, "revised", values
    if responses:
        yield {}, "revised_response", responses


def _compare(pairs: list[tuple[str, str]]) -> dict:
    return {
        "pairs": len(pairs),
        "identical_share": mean(claim_text.normalise(a) == claim_text.normalise(b) for a, b in pairs)
        if pairs
        else None,
        "mean_normalised_edit_distance": mean(claim_text.normalised_edit_distance(a, b) for a, b in pairs)
        if pairs
        else None,
        "mean_word_overlap": mean(claim_text.word_overlap(a, b) for a, b in pairs) if pairs else None,
    }


def extra_agreement(items: Iterable[AgreementItem]) -> dict:
    """Revisions compared between the first two annotators of each item, and each annotator
    against the machine suggestion: normalised edit distance (0 = identical) and word overlap,
    for the revised sentences and for the revised responses."""
    between = {"sentences": [], "responses": []}
    machine: dict[str, dict[str, list]] = {}
    for item in items:
        raters = list(item.payloads)
        if len(raters) >= 2:
            a, b = (item.payloads[r] for r in raters[:2])
            between["sentences"] += [
                (x["revised"] or "", y["revised"] or "") for x, y in zip(a["sentences"], b["sentences"])
            ]
            between["responses"].append((a.get("response") or "", b.get("response") or ""))
        if item.suggestion:
            for rater, payload in item.payloads.items():
                mine = machine.setdefault(str(rater), {"sentences": [], "responses": []})
                mine["sentences"] += [
                    (x["revised"] or "", y["revised"])
                    for x, y in zip(payload["sentences"], item.suggestion.get("sentences", []))
                ]
                mine["responses"].append((payload.get("response") or "", item.suggestion.get("response") or ""))
    return {
        "revisions": {
            "between_annotators": {unit: _compare(pairs) for unit, pairs in between.items()},
            "against_suggestion": {
                rater: {unit: _compare(pairs) for unit, pairs in units.items()}
                for rater, units in sorted(machine.items())
            },
        }
    }


# -- scoring ------------------------------------------------------------------------------------


def suggestion_predictions(content: dict, suggestion: dict | None) -> Iterator[tuple[str, tuple, str]]:
    """The machine's revised response as a prediction of the ``revision`` task (subtask 5)."""
    response = (suggestion or {}).get("response")
    if isinstance(response, str):
        yield "revision", (), response


# -- derived labels -----------------------------------------------------------------------------

NA = "NA"


def derived_labels(step1_gold: dict, step2_content: dict, step2_gold: dict) -> dict:
    """Sentence and response factuality from the gold records, as the released file writes them
    (``True``/``False``/``"NA"``), never annotated again:

    - a sentence is ``"NA"`` when step 2 verified none of its claims (not checkworthy, or no
      factual claim), else true when every verified claim is true;
    - the response is ``"NA"`` when step 2 verified no claim, else false as soon as one verified
      claim needs an edit or lacks the evidence to decide it (``not_enough_evidence``): the
      paper's rule, which gives its 61 false responses of the released 94.
    """
    answers: dict[int, list[dict]] = {}
    for claim, answer in zip(step2_content.get("claims", []), step2_gold.get("claims", [])):
        answers.setdefault(claim["sentence"], []).append(answer)
    sentences = []
    for s in range(len(step1_gold.get("sentences", []))):
        verified = answers.get(s, [])
        sentences.append(NA if not verified else all(a.get("factuality") == "true" for a in verified))
    every = [a for group in answers.values() for a in group]
    response = NA if not every else not any(a.get("needs_edit") in ("yes", "not_enough_evidence") for a in every)
    return {"sentences": sentences, "response": response}
