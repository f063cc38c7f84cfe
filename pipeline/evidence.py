"""Search queries per claim and stance hints per (claim, passage) for Factcheck-Bench step 2.

* Queries — LLM backend: RARR-style question generation as in the released retrieval code (the
  model is shown a claim and asked what it would search to verify it, a few questions a
  claim), near-duplicate questions removed, the claim itself always first so retrieval never
  depends on the model alone. Offline backend: the claim plus a keyword query of its names and
  numbers (``retrieval.offline_queries``). A failed or unparseable answer falls back to the
  offline queries and says why.
* Stance — LLM backend only: one of the four released labels ``completely-support |
  partially-support | refute | irrelevant``, parsed strictly. There is no offline stance
  backend: a guess there would only anchor the annotators. Stance hints are shown beside the
  choices, never selected.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.checkworthiness import Hint
from pipeline.llm import LLM, OFFLINE, LLMConfig, Provenance, run_chats, usable
from pipeline.parsing import ParseError, parse_label, parse_string_list
from pipeline.retrieval import dedupe_queries, offline_queries

logger = logging.getLogger(__name__)

STANCE_LABELS = ("completely-support", "partially-support", "refute", "irrelevant")
MAX_QUESTIONS = 3

QUESTION_PROMPT = """\
You fact-check a statement by searching the web. Write up to {n} short search questions whose \
answers would show whether the statement is true. Ask about each checkable detail (names, \
dates, numbers, places). Answer with a JSON list of strings and nothing else.

Statement: The Eiffel Tower was completed in 1889 and is 330 metres tall.
Questions: ["When was the Eiffel Tower completed?", "How tall is the Eiffel Tower?"]

Statement: {claim}
Questions:"""

STANCE_PROMPT = """\
Does the evidence support the claim? Answer with exactly one label and nothing else:
completely-support - the evidence states everything the claim says;
partially-support - the evidence supports part of the claim and says nothing against the rest;
refute - the evidence contradicts the claim or part of it;
irrelevant - the evidence neither supports nor contradicts the claim.

Claim: {claim}
Evidence: {evidence}
Label:"""


@dataclass
class ClaimQueries(Provenance):
    """The queries for one claim and where they came from."""

    queries: list[str]


def _questions_from_answer(claim: str, answer: str | None) -> list[str]:
    questions = parse_string_list(answer)
    if not questions:
        raise ParseError("no questions")
    return dedupe_queries([claim, *questions[:MAX_QUESTIONS]])


def claim_queries(claims: Sequence[str], config: LLMConfig | None = None) -> list[ClaimQueries]:
    """Queries for each claim, in order (all claims' calls concurrently)."""
    if not usable(config) or not claims:
        return [ClaimQueries(offline_queries(claim), backend=OFFLINE) for claim in claims]
    conversations = [[{"role": "user", "content": QUESTION_PROMPT.format(n=MAX_QUESTIONS, claim=c)}] for c in claims]
    answers = run_chats(config, conversations)
    out = []
    for claim, result in zip(claims, answers):
        error = result.error
        if error is None:
            try:
                out.append(ClaimQueries(_questions_from_answer(claim, result.text), backend=LLM, model=config.model))
                continue
            except ParseError as exc:
                error = f"unparseable answer: {exc}"
        logger.warning("queries fall back to the offline backend (%s): %.80s", error, claim)
        out.append(ClaimQueries(offline_queries(claim), backend=OFFLINE, fallback=True, error=error))
    return out


def parse_stance(answer: str | None) -> str:
    """Exactly one stance label ("Label:", quotes, case and spaces for hyphens tolerated)."""
    return parse_label(answer, STANCE_LABELS, "-")


def verdict_from_stances(stances: Sequence[str]) -> str | None:
    """A claim's factuality (``true`` / ``false`` / ``not_enough_evidence``) from the stances of
    its passages, for a system that judges passages only (the machine pre-annotation, the LLM
    rater): passages that completely support or refute are the votes, the larger side wins, a
    tie or no vote (only partial support or irrelevant passages) is not enough evidence. None
    when no passage has a stance. Partial support does not vote: in Factcheck-Bench a claim is
    true only when evidence supports all of it."""
    known = [s for s in stances if s]
    if not known:
        return None
    support, refute = known.count("completely-support"), known.count("refute")
    if support == refute:
        return "not_enough_evidence"
    return "true" if support > refute else "false"


@dataclass
class StanceRequest:
    claim: str
    evidence: str
    max_evidence_chars: int = field(default=3000, repr=False)


def stance_hints(pairs: Sequence[StanceRequest], config: LLMConfig | None = None) -> list[Hint | None]:
    """A stance hint per (claim, passage); ``None`` offline, or where the model's answer was
    unusable (no hint is better than a wrong one the annotator might trust)."""
    if not usable(config) or not pairs:
        return [None] * len(pairs)
    conversations = [
        [
            {
                "role": "user",
                "content": STANCE_PROMPT.format(
                    claim=p.claim, evidence=" ".join(p.evidence.split())[: p.max_evidence_chars]
                ),
            }
        ]
        for p in pairs
    ]
    hints: list[Hint | None] = []
    for result in run_chats(config, conversations):
        if result.error is None:
            try:
                hints.append(Hint(parse_stance(result.text), backend=LLM, model=config.model))
                continue
            except ParseError as exc:
                logger.warning("stance answer unusable: %s", exc)
        hints.append(None)
    return hints
