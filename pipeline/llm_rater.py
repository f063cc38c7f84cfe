"""The LLM rater's plain parts: a model answering a project's items as an annotator would, and
what such a run will cost before it starts.

The rater runs the pre-annotation pipeline's own LLM functions (decomposition, claim category,
stance, revision) with the LLM backend only: where the pipeline would quietly fall back to its
offline rules (a failed call, an unparseable answer), the rater gives no answer for that unit
and says why, so an offline heuristic is never scored as the model. Per step:

- Factcheck-Bench step 1: each sentence decomposed (one call per sentence), then the category of
  every claim in one batch: the model's own claims, from which the sentence's checkworthiness
  follows as the pipeline derives it (subtask 1), and the gold record's claims (subtask 2: the
  same claims the annotators labelled). Importance is not asked: the pipeline has no model for it.
- step 2: the stance of every retrieved passage towards its claim (one call per passage; the
  step's passages are kept, nothing is retrieved again).
- step 3: the revision of each sentence whose claims changed (one call per such sentence).
- D-FActScore: the pipeline's own pre-annotation of a paragraph (one grouping call, one support
  call per fact and candidate page); a paragraph where any part fell back gets no answer.
- FELM: one call per response listing its numbered segments, the model answering with the
  numbers of the segments that contain an error or ``ALL_CORRECT``, as FELM's own evaluation
  asks (Chen et al. 2023, segment-level prompts of the released code, in our words).

Estimate (``estimate``): the calls are planned from the items' texts as the run will make them;
prompt tokens are the characters of the exact prompts / 4 and completion tokens the characters
of a typical answer / 4 (``COMPLETION_CHARS``), a rule of thumb for English with BPE tokenizers
(chat-format overhead, a few tokens per message, is not counted). Time: a run takes its
batches one after another, a batch's calls ``concurrency`` at a time, each taking the assumed
seconds per call. Cost: tokens / 1,000 × the prices the user types in.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from pipeline.checkworthiness import CATEGORY_PROMPT, claim_category_hints, sentence_checkworthiness
from pipeline.decompose import build_messages, decompose_response
from pipeline.dfactscore import (
    TOP_PASSAGES,
    grouping_messages,
    preannotate,
    split_page,
    support_messages,
)
from pipeline.evidence import STANCE_PROMPT, StanceRequest, stance_hints
from pipeline.llm import LLMConfig, run_chats, shared_client, usable
from pipeline.parsing import ParseError, strip_code_fence
from pipeline.revision import REVISION_PROMPT, SentenceToRevise, _claim_lines, suggest_revisions

CHARS_PER_TOKEN = 4
DEFAULT_SECONDS_PER_CALL = 2.0
# FELM responses rated together: each is one call, so items are batched to keep calls in flight.
FELM_BATCH = 16

DECOMPOSITION, CLAIM_CATEGORY, STANCE, REVISION, FELM_SEGMENTS, GROUPING, SUPPORT, PROBE = (
    "decomposition",
    "claim_category",
    "stance",
    "revision",
    "felm_segments",
    "grouping",
    "support",
    "probe",
)
CALL_KINDS = {
    DECOMPOSITION: "Step 1: decomposition of a sentence",
    CLAIM_CATEGORY: "Step 1: category of a claim",
    STANCE: "Step 2: stance of a passage",
    REVISION: "Step 3: revision of a sentence",
    FELM_SEGMENTS: "FELM: errors among a response's segments",
    GROUPING: "D-FActScore: grouping of a paragraph's facts by individual",
    SUPPORT: "D-FActScore: support of a fact by a candidate page",
    PROBE: "One call checking the endpoint answers",
}
# A typical answer's length in characters (see the module docstring): the decomposition repeats
# its sentence about twice (decontextualised, then as facts) after two label lines; a label is
# a word; a revision is about its sentence; FELM's answer is a few segment numbers.
COMPLETION_CHARS = {CLAIM_CATEGORY: 8, STANCE: 18, SUPPORT: 5, PROBE: 2}
DECOMPOSITION_LABEL_CHARS = 64
FELM_ANSWER_CHARS = 8
PROBE_MESSAGES = [{"role": "user", "content": "Reply with OK."}]


# -- FELM: which segments contain an error ------------------------------------------------------

FELM_PROMPT = """\
Below are a question and an answer to it, split into numbered segments; joined in order the \
segments form the whole answer. Decide for each segment whether it contains a factual error.
Answer in exactly this format:
Answer: <the numbers of the segments that contain an error, separated by commas>
If no segment contains an error, answer:
Answer: ALL_CORRECT

Example:
Question: How many nuclear power plants are there in the world?
Segments:
1. About 440 nuclear power reactors operate worldwide.
2. Most of them are in Antarctica.
Answer: 2

Question: {question}
Segments:
{segments}"""

_ANSWER_LINE = re.compile(r"answer\s*:\s*(.*)", re.IGNORECASE)
_ALL_CORRECT = re.compile(r"^\W*all[\s_-]*correct\W*$", re.IGNORECASE)
_NUMBER_LIST = re.compile(r"^\s*\d+(?:\s*(?:,|;|and|\s)\s*\d+)*\s*\.?\s*$", re.IGNORECASE)


def felm_messages(question: str, segments: Sequence[str]) -> list[dict[str, str]]:
    listed = "\n".join(f"{number}. {' '.join(text.split())}" for number, text in enumerate(segments, start=1))
    return [
        {
            "role": "user",
            "content": FELM_PROMPT.format(question=" ".join((question or "").split()), segments=listed),
        }
    ]


def parse_felm_errors(answer: str | None, count: int) -> list[bool]:
    """Per segment, True when it is correct. Accepted: ``Answer: 1, 3`` (or the numbers alone)
    and ``Answer: ALL_CORRECT``; a number outside 1..count or anything else raises ParseError."""
    if answer is None or not answer.strip():
        raise ParseError("empty answer")
    body = strip_code_fence(answer)
    lines = [m.group(1).strip() for m in _ANSWER_LINE.finditer(body)]
    candidate = lines[-1] if lines else body.strip()
    if _ALL_CORRECT.match(candidate):
        return [True] * count
    if not _NUMBER_LIST.match(candidate):
        raise ParseError(f"neither segment numbers nor ALL_CORRECT: {answer.strip()[:60]!r}")
    wrong = {int(n) for n in re.findall(r"\d+", candidate)}
    outside = sorted(n for n in wrong if not 1 <= n <= count)
    if outside:
        raise ParseError(f"segment {outside[0]} does not exist (the response has {count})")
    return [number not in wrong for number in range(1, count + 1)]


# -- running the rater ---------------------------------------------------------------------------


@dataclass
class Rating:
    """One item-step rated: ``suggestion`` in the stored suggestion's shape (None in place of an
    answer the model did not give), ``errors`` saying which unit got none and why, ``calls`` made
    and ``answered`` (calls whose answer was used)."""

    suggestion: dict | None
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    answered: int = 0


def probe(config: LLMConfig) -> str | None:
    """Why the endpoint cannot be used (it refuses, is unreachable, has no such model), or None."""
    import openai  # the openai client: only where an LLM is called

    if not usable(config):
        return "no LLM endpoint is configured (base URL and model)"
    try:
        shared_client(config).chat(PROBE_MESSAGES)
    except openai.OpenAIError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def rate_factcheck_step1(
    response: str,
    sentences: Sequence[str],
    gold_claims: Sequence[Sequence[str]] | None,
    config: LLMConfig,
) -> Rating:
    """Sentence checkworthiness (from the model's own decomposition and claim categories) and
    the category of each gold claim (``gold_claims``: per sentence; None without a gold record:
    the suggestion then lists the model's own claims)."""
    decompositions = decompose_response(list(sentences), config, context=response)
    own = [claim for d in decompositions for claim in d.claims]
    gold = [claim for claims in (gold_claims or []) for claim in claims]
    hints = claim_category_hints(own + gold, config)
    rating = Rating({"sentences": []}, calls=len(decompositions) + len(hints))
    own_hints, gold_hints = hints[: len(own)], hints[len(own) :]
    for index, decomposition in enumerate(decompositions):
        mine, own_hints = (
            own_hints[: len(decomposition.claims)],
            own_hints[len(decomposition.claims) :],
        )
        checkworthy = None
        if decomposition.fallback:
            rating.errors.append(f"sentence {index + 1}: decomposition: {decomposition.error}")
        elif failed := [h for h in mine if h.fallback]:
            rating.errors.append(f"sentence {index + 1}: category of its claim: {failed[0].error}")
            rating.answered += 1 + len(mine) - len(failed)
        else:
            checkworthy = sentence_checkworthiness(mine).label
            rating.answered += 1 + len(mine)
        if gold_claims is None:
            claims = [
                {"text": text, "category": None if h.fallback else h.label, "importance": None}
                for text, h in zip(decomposition.claims, mine)
            ]
        else:
            texts = list(gold_claims[index]) if index < len(gold_claims) else []
            theirs, gold_hints = gold_hints[: len(texts)], gold_hints[len(texts) :]
            claims = []
            for number, (text, hint) in enumerate(zip(texts, theirs)):
                if hint.fallback:
                    rating.errors.append(f"sentence {index + 1}, gold claim {number + 1}: category: {hint.error}")
                else:
                    rating.answered += 1
                claims.append(
                    {
                        "text": text,
                        "category": None if hint.fallback else hint.label,
                        "importance": None,
                    }
                )
        rating.suggestion["sentences"].append(
            {
                "decontext": None if decomposition.fallback else decomposition.decontext,
                "importance": None,
                "checkworthy": checkworthy,
                "claims": claims,
            }
        )
    return rating


def rate_factcheck_step2(claims: Sequence[dict], config: LLMConfig) -> Rating:
    """The stance of each passage of each step-2 claim (``{"text", "evidence": [{"text"}]}``):
    ``{"claims": [{"stances": [label or None per passage]}]}``."""
    pairs = [(c, p) for c, claim in enumerate(claims) for p, _ in enumerate(claim.get("evidence") or [])]
    hints = stance_hints(
        [StanceRequest(claims[c]["text"], claims[c]["evidence"][p].get("text") or "") for c, p in pairs],
        config,
    )
    rating = Rating(
        {"claims": [{"stances": [None] * len(claim.get("evidence") or [])} for claim in claims]},
        calls=len(pairs),
    )
    for (c, p), hint in zip(pairs, hints):
        if hint is None:
            rating.errors.append(
                f"claim {c + 1}, passage {p + 1}: stance: the call failed or its answer was not one of the four labels"
            )
            continue
        rating.suggestion["claims"][c]["stances"][p] = hint.label
        rating.answered += 1
    return rating


def rate_factcheck_step3(
    sentences: Sequence[SentenceToRevise],
    config: LLMConfig,
    *,
    question: str = "",
    with_question: bool = False,
) -> Rating:
    """The revision of each sentence (a sentence none of whose claims changed is kept, as the
    pipeline keeps it, without a call) and the response they make: ``{"sentences": [{"revised"}],
    "response"}``; the response is None when a sentence got no revision."""
    revisions = suggest_revisions(sentences, config, question=question, with_question=with_question)
    rating = Rating({"sentences": []}, calls=sum(s.changed for s in sentences))
    for index, (sentence, revision) in enumerate(zip(sentences, revisions)):
        if revision.fallback:
            rating.errors.append(f"sentence {index + 1}: revision: {revision.error}")
        elif sentence.changed:
            rating.answered += 1
        rating.suggestion["sentences"].append({"revised": None if revision.fallback else revision.text})
    texts = [s["revised"] for s in rating.suggestion["sentences"]]
    rating.suggestion["response"] = None if None in texts else " ".join(" ".join(t.split()) for t in texts if t.strip())
    return rating


def rate_felm_items(items: Sequence[tuple[str, Sequence[str]]], config: LLMConfig) -> list[Rating]:
    """FELM segment labels for several (question, segments) items, their calls concurrently:
    ``{"segments": [{"label": True (correct) | False | None, "error_type": None, "comment": "",
    "refs": []}]}`` per item."""
    results = run_chats(config, [felm_messages(question, segments) for question, segments in items])
    ratings = []
    for (_, segments), result in zip(items, results):
        labels: list[bool | None] = [None] * len(segments)
        rating = Rating({}, calls=1)
        try:
            if result.error is not None:
                raise ParseError(result.error)
            labels = list(parse_felm_errors(result.text, len(segments)))
            rating.answered = 1
        except ParseError as exc:
            rating.errors.append(f"segments: {exc}" if result.error is None else f"segments: the call failed: {exc}")
        rating.suggestion = {
            "segments": [{"label": label, "error_type": None, "comment": "", "refs": []} for label in labels]
        }
        ratings.append(rating)
    return ratings


def rate_dfactscore(
    name: str,
    response: str,
    facts: Sequence[str],
    candidates: Sequence[dict],
    settings: dict,
    config: LLMConfig,
) -> Rating:
    """The pipeline's D-FActScore pre-annotation of one paragraph with the rater's model
    (``settings``: the project's pipeline settings, for embeddings and the D-FActScore options).
    Where its grouping or a support verdict fell back to the offline backend, the paragraph
    gets no answer (None): its labels would mix the model's and the heuristics' verdicts."""
    result = preannotate(name, response, list(facts), list(candidates), {**settings, "llm": asdict(config)})
    provenance = (result["suggestion"] or {}).get("provenance") or {}
    pairs = sum(1 for c in result["content"]["candidates"] if c["passages"]) * len(facts)
    rating = Rating(result["suggestion"], calls=(1 + pairs) if facts else 0)
    fallbacks = [note for note in provenance.get("notes") or [] if note.startswith(("grouping:", "support:"))]
    if fallbacks:
        rating.suggestion = None
        rating.errors.extend(fallbacks)
    else:
        rating.answered = rating.calls
    return rating


# -- planning and estimating -------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCall:
    kind: str
    prompt_chars: int
    completion_chars: int


# Calls made together (concurrently); a run makes its batches one after another.
Batch = list[PlannedCall]


def _chars(messages: Iterable[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def plan_factcheck_step1(
    response: str,
    sentences: Sequence[str],
    gold_claims: Sequence[Sequence[str]] | None,
    own_claims: Sequence[Sequence[str]] | None,
) -> list[Batch]:
    """The batches ``rate_factcheck_step1`` makes for one item. The model's own claims are not
    known before it answers: ``own_claims`` stands in for them (the item's stored machine
    suggestion; else its gold claims; else each sentence as its one claim)."""
    decompositions = [
        PlannedCall(
            DECOMPOSITION,
            _chars(build_messages(response, s)),
            DECOMPOSITION_LABEL_CHARS + 2 * len(s),
        )
        for s in sentences
    ]
    stand_in = (
        own_claims if own_claims is not None else gold_claims if gold_claims is not None else [[s] for s in sentences]
    )
    claims = [c for claims in stand_in for c in claims] + [c for claims in (gold_claims or []) for c in claims]
    categories = [
        PlannedCall(CLAIM_CATEGORY, len(CATEGORY_PROMPT.format(claim=c)), COMPLETION_CHARS[CLAIM_CATEGORY])
        for c in claims
    ]
    return [batch for batch in (decompositions, categories) if batch]


def plan_factcheck_step2(claims: Sequence[dict]) -> list[Batch]:
    calls = []
    for claim in claims:
        for passage in claim.get("evidence") or []:
            request = StanceRequest(claim["text"], passage.get("text") or "")
            evidence = " ".join(request.evidence.split())[: request.max_evidence_chars]
            calls.append(
                PlannedCall(
                    STANCE,
                    len(STANCE_PROMPT.format(claim=request.claim, evidence=evidence)),
                    COMPLETION_CHARS[STANCE],
                )
            )
    return [calls] if calls else []


def plan_factcheck_step3(
    sentences: Sequence[SentenceToRevise], *, question: str = "", with_question: bool = False
) -> list[Batch]:
    asked = f"Question: {question}\n" if with_question and question.strip() else ""
    calls = [
        PlannedCall(
            REVISION,
            len(REVISION_PROMPT.format(question=asked, sentence=s.text, claims=_claim_lines(s))),
            len(s.text),
        )
        for s in sentences
        if s.changed
    ]
    return [calls] if calls else []


def plan_dfactscore(name: str, facts: Sequence[str], candidates: Sequence[dict]) -> list[Batch]:
    """One batch: the grouping and every (fact, page) support call. Which of a page's passages a
    verifier sees depends on similarity; the page's first TOP_PASSAGES stand in for them."""
    if not facts:
        return []
    calls = [PlannedCall(GROUPING, _chars(grouping_messages(name, facts)), sum(len(f) + 3 for f in facts) + 6)]
    for candidate in candidates:
        passages = [p for p in candidate.get("passages") or [] if isinstance(p, str) and p.strip()]
        passages = (passages or split_page(candidate.get("text") or ""))[:TOP_PASSAGES]
        if passages:
            topic = candidate.get("title") or name
            calls += [
                PlannedCall(
                    SUPPORT,
                    _chars(support_messages(topic, fact, passages)),
                    COMPLETION_CHARS[SUPPORT],
                )
                for fact in facts
            ]
    return [calls]


def plan_felm(items: Sequence[tuple[str, Sequence[str]]]) -> list[Batch]:
    """FELM items are rated FELM_BATCH at a time: one batch per such group."""
    calls = [
        PlannedCall(
            FELM_SEGMENTS,
            _chars(felm_messages(question, segments)),
            FELM_ANSWER_CHARS + 2 * len(segments),
        )
        for question, segments in items
    ]
    return [calls[start : start + FELM_BATCH] for start in range(0, len(calls), FELM_BATCH)]


def tokens(chars: float) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def estimate(
    batches: Iterable[tuple[Batch, float]],
    *,
    concurrency: int,
    seconds_per_call: float = DEFAULT_SECONDS_PER_CALL,
    prompt_price_per_1k: float | None = None,
    completion_price_per_1k: float | None = None,
) -> dict:
    """Calls per kind, tokens, time and (with prices) cost of a run making ``batches`` after one
    probe call. Each batch comes with a weight: 1, or total / sampled where the items' plan was
    made for a sample of them."""
    concurrency = max(1, int(concurrency))
    calls: Counter = Counter()
    prompt_chars = completion_chars = rounds = 0.0
    for batch, weight in batches:
        for call in batch:
            calls[call.kind] += weight
            prompt_chars += call.prompt_chars * weight
            completion_chars += call.completion_chars * weight
        rounds += math.ceil(len(batch) / concurrency) * weight
    counts = {kind: round(n) for kind, n in calls.items()}
    counts[PROBE] = 1
    prompt_tokens = tokens(prompt_chars + _chars(PROBE_MESSAGES))
    completion_tokens = tokens(completion_chars + COMPLETION_CHARS[PROBE])
    cost = None
    if prompt_price_per_1k is not None or completion_price_per_1k is not None:
        cost = prompt_tokens / 1000 * (prompt_price_per_1k or 0) + completion_tokens / 1000 * (
            completion_price_per_1k or 0
        )
    return {
        "calls": {kind: counts[kind] for kind in CALL_KINDS if kind in counts},
        "calls_total": sum(counts.values()),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost": None if cost is None else round(cost, 4),
        "seconds": round((round(rounds) + 1) * seconds_per_call, 1),
        "assumptions": {
            "chars_per_token": CHARS_PER_TOKEN,
            "seconds_per_call": seconds_per_call,
            "concurrency": concurrency,
            "prompt_price_per_1k": prompt_price_per_1k,
            "completion_price_per_1k": completion_price_per_1k,
        },
    }
