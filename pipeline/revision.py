"""Factcheck-Bench step 3 revision suggestions: each sentence of a response rewritten so that it
says what the verified claims say (§2 (8), Appendix D.7).

A sentence none of whose claims changed keeps its words (minimal edits: nothing to revise). For
the others:

* LLM backend: the revision prompt below (the original sentence and its claims with their
  corrections; the user's question too when ``with_question``), answered with the revised
  sentence alone.
* Offline backend: the claims joined in order, each as corrected (a true or unverified claim as
  it was, a deleted claim left out), duplicates dropped.

A failed or empty model answer falls back to the offline revision and says why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.llm import LLM, OFFLINE, LLMConfig, Provenance, run_chats, usable

logger = logging.getLogger(__name__)

# How each claim came out of step 2.
TRUE, FALSE, UNKNOWN, DELETED, UNVERIFIED = "true", "false", "unknown", "deleted", "unverified"

REVISION_PROMPT = """\
You correct a sentence of an answer using fact-checked claims. Rewrite the sentence with minimal \
edits so that it states the corrected claims: change only what a correction requires, add no new \
information, drop what a deleted claim said, keep the original order, and repeat nothing. Answer \
with the revised sentence only.
{question}
Original sentence: {sentence}
Claims (original -> corrected):
{claims}
Revised sentence:"""


@dataclass
class ClaimOutcome:
    text: str
    verdict: str  # true | false | unknown | deleted | unverified
    corrected: str = ""


@dataclass
class SentenceToRevise:
    text: str
    checkworthy: bool
    claims: list[ClaimOutcome] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.checkworthy and any(c.verdict in (FALSE, DELETED) for c in self.claims)


@dataclass
class Revision(Provenance):
    text: str


def _words(text: str) -> str:
    return " ".join(text.split())


def offline_revision(sentence: SentenceToRevise) -> str:
    """The sentence itself when nothing in it changed, else its claims as corrected, in order."""
    if not sentence.changed:
        return sentence.text
    kept: list[str] = []
    for claim in sentence.claims:
        if claim.verdict == DELETED:
            continue
        text = _words(claim.corrected if claim.verdict == FALSE else claim.text)
        if text and text.lower() not in (k.lower() for k in kept):
            kept.append(text)
    return " ".join(kept)


def _claim_lines(sentence: SentenceToRevise) -> str:
    lines = []
    for claim in sentence.claims:
        if claim.verdict == FALSE:
            lines.append(f"- {claim.text} -> {claim.corrected}")
        elif claim.verdict == DELETED:
            lines.append(f"- {claim.text} -> (deleted)")
        else:
            lines.append(f"- {claim.text} -> (unchanged)")
    return "\n".join(lines)


def suggest_revisions(
    sentences: Sequence[SentenceToRevise],
    config: LLMConfig | None = None,
    *,
    question: str = "",
    with_question: bool = False,
) -> list[Revision]:
    """One revision per sentence, in order; the model is asked only about changed sentences."""
    out = [Revision(text=offline_revision(s), backend=OFFLINE) for s in sentences]
    changed = [i for i, s in enumerate(sentences) if s.changed]
    if not usable(config) or not changed:
        return out
    asked = f"Question: {question}\n" if with_question and question.strip() else ""
    conversations = [
        [
            {
                "role": "user",
                "content": REVISION_PROMPT.format(
                    question=asked, sentence=sentences[i].text, claims=_claim_lines(sentences[i])
                ),
            }
        ]
        for i in changed
    ]
    for i, result in zip(changed, run_chats(config, conversations)):
        text = _words((result.text or "").strip().strip('"'))
        if result.error is None and text:
            out[i] = Revision(text=text, backend=LLM, model=config.model)
            continue
        error = result.error or "empty answer"
        logger.warning("revision falls back to the offline backend (%s)", error)
        out[i] = Revision(text=out[i].text, backend=OFFLINE, fallback=True, error=error)
    return out
