"""Claim-category, sentence-checkworthiness and importance hints (Factcheck-Bench step 1).

Labels are exactly the released data's (docs/released-files.md): claim category ``factual | opinion |
not_a_claim | other``; sentence checkworthiness ``yes | no``; sentence and claim importance
``yes | intermediate | no``. Every hint records the backend (and model) that produced it.

* Claim category — LLM backend: one short classification call per claim (all claims of an
  item concurrently), answer parsed strictly (exactly one label); an unparseable answer or a
  failed call falls back to the offline label and is marked. Offline backend: questions,
  "as an AI language model", greetings and other remarks about the conversation are
  ``not_a_claim``; first-person views, recommendations and evaluative words ("I think",
  "in my opinion", "should", "best") are ``opinion``; everything else is ``factual``.
* Sentence checkworthiness is derived from its claims: ``yes`` when one of them is factual,
  so the two hints never contradict each other and no extra call is needed.
* Importance (offline only, it needs no model): the factual sentences that share the most
  content words with the prompt answer it most directly (``yes``); other checkworthy sentences
  are ``intermediate``; the rest ``no``. A claim inherits its sentence's importance unless it
  is not factual (``no``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from pipeline.llm import LLM, OFFLINE, ChatResult, LLMConfig, Provenance, run_chats, usable
from pipeline.parsing import ParseError, parse_label

logger = logging.getLogger(__name__)

CLAIM_CATEGORIES = ("factual", "opinion", "not_a_claim", "other")
CHECKWORTHY_LABELS = ("yes", "no")
IMPORTANCE_LABELS = ("yes", "intermediate", "no")


@dataclass
class Hint(Provenance):
    """One suggested label and where it came from."""

    label: str


# --------------------------------------------------------------------------------------------
# Offline claim category
# --------------------------------------------------------------------------------------------

_NOT_A_CLAIM = re.compile(
    r"\?\s*[\"'”’)]*$"  # a question
    r"|\bas an? (?:ai|artificial intelligence)(?: language)? model\b|\bas a language model\b"
    r"|^(?:sure|certainly|of course|absolutely|hello|hi|hey|thanks?|thank you|great question)\b"
    r"|\bi hope (?:this|that) helps\b|\blet me know\b|\bfeel free to\b"
    r"|^(?:here(?:'s| is| are)|below (?:is|are))\b.{0,150}:\s*(?:\d+\.)?$"
    r"|^[^.!?]{0,80}\b(?:include|includes|following|as follows)\s*:\s*(?:\d+\.)?$"
    r"|\b(?:anything|something) else (?:you|i)\b|\bmy (?:knowledge cutoff|training data)\b"
    r"|\bi(?:'m| am) (?:sorry|not able|unable)\b"
    r"|\bi (?:do not|don't|cannot|can't) (?:have|provide|access|browse)\b",
    re.IGNORECASE,
)
_OPINION_MARKERS = re.compile(
    r"\b(?:i|we) (?:think|believe|feel|suggest|recommend|prefer|love|like)\b"
    r"|\bin (?:my|our) (?:opinion|view|experience)\b|\bpersonally\b"
    r"|\b(?:should|ought to)\b|\bit is (?:recommended|advisable)\b",
    re.IGNORECASE,
)
# Lower case only: "Best Paper Award" is a name, "best-known" a fact about fame.
_EVALUATIVE_WORDS = re.compile(r"\b(?:best|worst|greatest|amazing|awesome|terrible|beautiful|wonderful)\b(?!-)")


def offline_category(text: str) -> str:
    """Heuristic category for a claim (or sentence); see the module docstring."""
    stripped = text.strip()
    if not stripped or _NOT_A_CLAIM.search(stripped):
        return "not_a_claim"
    if _OPINION_MARKERS.search(stripped) or _EVALUATIVE_WORDS.search(stripped):
        return "opinion"
    return "factual"


# --------------------------------------------------------------------------------------------
# LLM claim category
# --------------------------------------------------------------------------------------------

CATEGORY_PROMPT = """\
Classify a claim taken from a chatbot's answer for fact-checking. Answer with exactly one \
label and nothing else:
factual - states something about the world that could be verified as true or false;
opinion - a subjective judgement, preference, recommendation or speculation;
not_a_claim - a question, a greeting, or a remark about the conversation or the assistant;
other - anything else, e.g. an instruction or a step of a procedure.

Claim: I think Apple is a good company.
Label: opinion
Claim: The Stanford Prison Experiment was conducted in the basement of Jordan Hall.
Label: factual
Claim: Is there anything else you would like to know?
Label: not_a_claim
Claim: Preheat the oven to 200 degrees before baking.
Label: other

Claim: {claim}
Label:"""


def parse_category(answer: str | None) -> str:
    """Exactly one category label (case, quotes, "Label:" and "not a claim" spelling tolerated)."""
    return parse_label(answer, CLAIM_CATEGORIES, "_")


def _category_from_llm(claim: str, result: ChatResult, model: str) -> Hint:
    error = result.error
    if error is None:
        try:
            return Hint(parse_category(result.text), backend=LLM, model=model)
        except ParseError as exc:
            error = f"unparseable answer: {exc}"
    logger.warning("claim category falls back to the offline rule (%s): %.80s", error, claim)
    return Hint(offline_category(claim), backend=OFFLINE, fallback=True, error=error)


def claim_category_hints(claims: list[str], config: LLMConfig | None = None) -> list[Hint]:
    """One category hint per claim, in order; LLM when configured, else offline."""
    if not usable(config) or not claims:
        return [Hint(offline_category(claim), backend=OFFLINE) for claim in claims]
    conversations = [[{"role": "user", "content": CATEGORY_PROMPT.format(claim=c)}] for c in claims]
    results = run_chats(config, conversations)
    return [_category_from_llm(c, r, config.model) for c, r in zip(claims, results)]


# --------------------------------------------------------------------------------------------
# Sentence checkworthiness and importance
# --------------------------------------------------------------------------------------------


def sentence_checkworthiness(claim_hints: list[Hint]) -> Hint:
    """``yes`` when one of the sentence's claims is factual; provenance from those hints."""
    label = "yes" if any(h.label == "factual" for h in claim_hints) else "no"
    backends = {h.backend for h in claim_hints} or {OFFLINE}
    backend = LLM if LLM in backends else OFFLINE
    model = next((h.model for h in claim_hints if h.model), None)
    return Hint(label, backend=backend, model=model, fallback=any(h.fallback for h in claim_hints))


_STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being has
    have had do does did can could will would should may might must it its this that these
    those there here what which who whom whose when where why how i you he she we they me him
    her us them my your his our their as if than then so not no yes about into over also
    such any some all each most more many much very just only please tell give list name""".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_YES_SHARE_OF_BEST = 0.5


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}


def importance_hints(prompt: str, sentences: list[str], checkworthy: list[str]) -> list[Hint]:
    """Sentence importance from overlap with the prompt; see the module docstring."""
    prompt_words = _content_words(prompt)
    overlaps = [len(_content_words(s) & prompt_words) for s in sentences]
    best = max((o for o, cw in zip(overlaps, checkworthy) if cw == "yes"), default=0)
    labels = []
    for overlap, worthy in zip(overlaps, checkworthy):
        if worthy != "yes":
            labels.append("no")
        elif best and overlap >= _YES_SHARE_OF_BEST * best:
            labels.append("yes")
        else:
            labels.append("intermediate")
    return [Hint(label, backend=OFFLINE) for label in labels]


def claim_importance(sentence_importance: str, category: str) -> str:
    return sentence_importance if category == "factual" else "no"
