"""Claim decomposition and decontextualisation, one result per sentence (Factcheck-Bench step 1).

Two backends:

* **llm** — the Factcheck-Bench approach (Wang et al., prompt in the paper's appendix): the
  model sees the whole response as context plus one sentence, and answers with the sentence
  made self-contained and the list of atomic, decontextualised facts. One call per sentence,
  all sentences of an item concurrently. An answer that cannot be parsed, or a call that still
  fails after the client's retries, falls back to the sentence itself as the only claim; the
  result says so (``fallback``, ``error``) and a warning is logged, so the annotator knows the
  suggestion is not the model's.
* **offline** — deterministic heuristics (used when no LLM is configured):
  decontextualisation replaces the pronoun opening a sentence or following its introductory
  phrase ("In 1990, he ..."): He/She/His/Her → the last person named as a subject or as the
  complement of "is/was"; It/They/Its/Their/This/These → the last subject noun phrase;
  "It is difficult ..." and "This/These + noun" are left alone. Claims come from splitting
  the decontextualised sentence at semicolons; at coordinated clauses with their own subject
  (", and/but/while/whereas/so" + subject + verb); at coordinated predicates sharing the
  subject ("X was born in 1898 and served on ..." → "X served on ..."); and at short
  enumerations after "include(s)/such as/consist of/:" ("A includes X, Y, and Z." →
  "A includes X." ...). A pronoun opening such a claim is resolved like a sentence's.
  Anything the rules do not recognise stays one claim.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from pipeline.english import (
    bare,
    capitalise,
    has_verb,
    is_independent_clause,
    is_proper_name,
    leading_name,
    possessive,
    starts_with_predicate,
    strip_intro,
    subject_of,
)
from pipeline.llm import LLM, OFFLINE, ChatResult, LLMConfig, Provenance, run_chats, usable
from pipeline.parsing import ParseError, parse_string_list, strip_code_fence

logger = logging.getLogger(__name__)


@dataclass
class SentenceDecomposition(Provenance):
    """Suggested decomposition of one sentence."""

    sentence: str
    decontext: str
    claims: list[str]


# --------------------------------------------------------------------------------------------
# LLM backend
# --------------------------------------------------------------------------------------------

SYSTEM_PROMPT = "You are good at breaking documents down into decontextualised atomic facts."

# Few-shot prompt in the format of the Factcheck-Bench paper (context, "The sentence is:",
# "Atomic facts for this sentence are:" + a JSON list), with a decontextualised-sentence line
# added so one call fills both step-1 fields. The examples are written for this project.
FEW_SHOT_PROMPT = """\
Depending on the context, rewrite the sentence so that it can be understood on its own \
(replace pronouns and vague references such as "he", "it", "this", "the company" with what \
they refer to), then break it down into atomic facts. An atomic fact is a short, independent \
statement that conveys exactly one piece of information from the sentence and can be checked \
on its own. Do not add information that is not in the sentence. Keep an opinion, a question or \
a remark about the conversation as one item, unchanged.
Answer in exactly this format:
Decontextualised sentence: <the sentence, standing alone>
Atomic facts for this sentence are: <a JSON list of strings>

Context: Marie Curie was a physicist and chemist. She was born in Warsaw in 1867 and moved to \
Paris in 1891. She received two Nobel Prizes.
The sentence is: She was born in Warsaw in 1867 and moved to Paris in 1891.
Decontextualised sentence: Marie Curie was born in Warsaw in 1867 and moved to Paris in 1891.
Atomic facts for this sentence are: ["Marie Curie was born in Warsaw.", "Marie Curie was born \
in 1867.", "Marie Curie moved to Paris in 1891."]

Context: The Danube is the second-longest river in Europe. It flows through ten countries, \
including Austria, Hungary and Romania, and empties into the Black Sea.
The sentence is: It flows through ten countries, including Austria, Hungary and Romania, and \
empties into the Black Sea.
Decontextualised sentence: The Danube flows through ten countries, including Austria, Hungary \
and Romania, and empties into the Black Sea.
Atomic facts for this sentence are: ["The Danube flows through ten countries.", "The Danube \
flows through Austria.", "The Danube flows through Hungary.", "The Danube flows through \
Romania.", "The Danube empties into the Black Sea."]

Context: Python was first released in 1991. In my opinion, it is the best language for \
beginners. I hope this helps!
The sentence is: In my opinion, it is the best language for beginners.
Decontextualised sentence: In my opinion, Python is the best language for beginners.
Atomic facts for this sentence are: ["In my opinion, Python is the best language for beginners."]

Context: {context}
The sentence is: {sentence}
"""

# Labels may come decorated as Markdown ("**Decontextualised sentence:** ...").
_DECONTEXT_LINE = re.compile(r"^[\s*_#-]*decontextuali[sz]ed sentence[*_]*\s*:[*_]*\s*(.+?)\s*$", re.I | re.M)
_FACTS_LABEL = re.compile(r"^[\s*_#-]*(?:atomic facts[^:\n]*|facts|claims)[*_]*\s*:[*_]*\s*", re.I | re.M)
_QUOTES = "\"'“”"


def build_messages(context: str, sentence: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": FEW_SHOT_PROMPT.format(context=context, sentence=sentence)},
    ]


def parse_decomposition(answer: str | None) -> tuple[str | None, list[str]]:
    """Split a model answer into (decontextualised sentence or None, claims).

    The decontextualised-sentence line is optional; the facts may come in any shape
    :func:`pipeline.parsing.parse_string_list` accepts. Raises ParseError.
    """
    if answer is None:
        raise ParseError("empty answer")
    decontext = None
    line = _DECONTEXT_LINE.search(answer)
    if line:
        decontext = line.group(1).strip(_QUOTES).strip() or None
        answer = answer[: line.start()] + answer[line.end() :]
    facts = _FACTS_LABEL.sub("", strip_code_fence(answer), count=1)
    return decontext, parse_string_list(facts)


def _from_llm_answer(offline: SentenceDecomposition, result: ChatResult, model: str) -> SentenceDecomposition:
    sentence = offline.sentence
    error = result.error
    if error is None:
        try:
            decontext, claims = parse_decomposition(result.text)
            return SentenceDecomposition(sentence, decontext or offline.decontext, claims, backend=LLM, model=model)
        except ParseError as exc:
            error = f"unparseable answer: {exc}"
    logger.warning("decomposition falls back to the sentence itself (%s): %.80s", error, sentence)
    return SentenceDecomposition(
        sentence,
        offline.decontext,
        [sentence],
        backend=LLM,
        model=model,
        fallback=True,
        error=error,
    )


# --------------------------------------------------------------------------------------------
# Offline backend: decontextualisation
# --------------------------------------------------------------------------------------------

_PERSON_PRONOUNS = {"he": False, "she": False, "his": True, "her": True}  # value: possessive
_THING_PRONOUNS = {
    "it": False,
    "they": False,
    "its": True,
    "their": True,
    "this": False,
    "these": False,
}
_NON_REFERRING_SUBJECTS = frozenset(
    set(_PERSON_PRONOUNS)
    | set(_THING_PRONOUNS)
    | {"here", "there", "that", "those", "i", "we", "you", "one", "which", "what", "who"}
)
_COPULAS = frozenset({"is", "was", "are", "were"})
_ARTICLES = frozenset({"the", "a", "an"})
_EXPLETIVE_IT = re.compile(
    r"^It(?:['’]s| is| was| seems| appears| remains| has been| will be| would be| may be| "
    r"might be| can be)\s+(?:not\s+|also\s+|very\s+|quite\s+)?(?:difficult|important|worth|"
    r"possible|impossible|likely|unlikely|unclear|clear|known|estimated|believed|said|reported|"
    r"thought|true|necessary|hard|easy|common|essential|interesting|notable|challenging|"
    r"recommended|advisable|crucial)\b"
)


class _DiscourseFocus:
    """What a sentence-initial pronoun most likely refers to, updated sentence by sentence."""

    def __init__(self) -> None:
        self.person: str | None = None
        self.topic: str | None = None

    def observe(self, sentence: str) -> None:
        clause = strip_intro(sentence)
        subject = subject_of(clause)
        if subject and bare(subject.split()[0]) not in _NON_REFERRING_SUBJECTS:
            self.topic = subject
            if is_proper_name(subject) and bare(subject.split()[0]) not in _ARTICLES:
                self.person = subject
                return
        complement = _copula_complement_name(clause)
        if complement:
            self.person = complement

    def resolve(self, sentence: str) -> str:
        """Replace the pronoun that opens ``sentence`` (after any introductory phrase)."""
        body = strip_intro(sentence)
        intro = sentence[: len(sentence) - len(body)]
        first, _, rest = body.partition(" ")
        key = first.lower()
        if not rest or key not in _PERSON_PRONOUNS | _THING_PRONOUNS:
            return sentence
        if key in ("this", "these") and (not starts_with_predicate(rest) or bare(rest.split()[0]) in _COPULAS):
            return sentence  # a determiner ("This idea ..."), or "This is ..." about a statement
        if key == "it" and _EXPLETIVE_IT.match(capitalise(body)):
            return sentence
        antecedent = self.person if key in _PERSON_PRONOUNS else self.topic
        if not antecedent:
            return sentence
        is_possessive = {**_PERSON_PRONOUNS, **_THING_PRONOUNS}[key]
        replacement = possessive(antecedent) if is_possessive else antecedent
        return f"{intro}{replacement if intro else capitalise(replacement)} {rest}"


def _copula_complement_name(clause: str) -> str | None:
    """ "In 1980, the oldest justice was Justice William O. Douglas." -> "Justice William O. Douglas"."""
    tokens = clause.split()
    for index, token in enumerate(tokens[:-1]):
        if bare(token) in _COPULAS:
            name = leading_name(" ".join(tokens[index + 1 :]))
            if name and bare(name.split()[0]) not in _ARTICLES:
                return name
    return None


def decontextualise(sentences: list[str]) -> list[str]:
    """Resolve each sentence's leading pronoun against the sentences before it."""
    return [d.decontext for d in offline_decompose(sentences)]


# --------------------------------------------------------------------------------------------
# Offline backend: claim splitting
# --------------------------------------------------------------------------------------------

_CLAUSE_CONJUNCTION = re.compile(r",\s+(?:and|but|while|whereas|so|yet)\s+")
_PREDICATE_CONJUNCTION = re.compile(r"(?<![,;])\s+(?:and|but)\s+")
_LIST_TRIGGER = re.compile(
    r"(?:\b(?:includ(?:e|es|ed|ing)|such as|consist(?:s|ed)? of|compris(?:e|es|ed|ing)|namely)\b|:)\s+"
)
_FINAL_COORDINATOR = re.compile(r"^(?:and|or)\s+")
_LAST_AND_OR = re.compile(r"\s+(?:and|or)\s+(?!.*\s(?:and|or)\s)")
_END_PUNCTUATION = re.compile(r"[.!?]+[\"'”’)]*$")
_MAX_ITEM_WORDS = 6


def _split_semicolons(sentence: str) -> list[str]:
    parts = [p.strip() for p in sentence.split(";") if p.strip()]
    return parts if len(parts) > 1 and all(has_verb(p) for p in parts) else [sentence]


def _split_coordination(clause: str) -> list[str]:
    """Split "X did A, and Y did B" / "X did A and did B" into one clause per predicate."""
    candidates = sorted(
        [(m, True) for m in _CLAUSE_CONJUNCTION.finditer(clause)]
        + [(m, False) for m in _PREDICATE_CONJUNCTION.finditer(clause)],
        key=lambda pair: pair[0].start(),
    )
    for match, after_comma in candidates:
        left, right = clause[: match.start()].strip(), clause[match.end() :].strip()
        if not has_verb(left):
            continue
        if after_comma and is_independent_clause(right):
            return [left, *_split_coordination(right)]
        if starts_with_predicate(right):
            subject = subject_of(left)
            if subject:
                return [left, *_split_coordination(f"{subject} {right}")]
    return [clause]


def _list_items(tail: str) -> list[str] | None:
    """ "X, Y, and Z" / "X, Y and Z" / "X or Y" -> items, if a real enumeration of short phrases.

    The tail must end with one "and"/"or" element and contain no other coordinated element,
    colon or verb, so "1989, 1991, and 2002, and six FA Cups: 1993, ..." is left alone.
    """
    chunks = [c.strip() for c in tail.split(",")]
    last = _FINAL_COORDINATOR.sub("", chunks[-1])
    if last != chunks[-1]:  # serial comma: ", and Z"
        chunks[-1] = last
    elif _LAST_AND_OR.search(last):  # "Y and Z" is still one chunk
        chunks = chunks[:-1] + _LAST_AND_OR.split(last, maxsplit=1)
    else:
        return None
    if any(_FINAL_COORDINATOR.match(c) or ":" in c for c in chunks):
        return None
    if any(not c or len(c.split()) > _MAX_ITEM_WORDS or has_verb(c) for c in chunks):
        return None
    return chunks


def _split_list(clause: str) -> list[str]:
    """ "A includes X, Y, and Z." -> ["A includes X.", "A includes Y.", "A includes Z."]."""
    end = _END_PUNCTUATION.search(clause)
    body, final = (clause[: end.start()], end.group(0)) if end else (clause, ".")
    for trigger in _LIST_TRIGGER.finditer(body):
        items = _list_items(body[trigger.end() :])
        if items:
            prefix = body[: trigger.end()].rstrip().rstrip(":")
            return [f"{prefix} {item}{final}" for item in items]
    return [clause]


def _as_claim(text: str) -> str:
    text = text.strip().rstrip(",;:").strip()
    if text and not _END_PUNCTUATION.search(text):
        text += "."
    return capitalise(text)


def split_claims(sentence: str) -> list[str]:
    """Offline atomic-claim suggestion for one (decontextualised) sentence.

    A sentence the rules do not split is returned unchanged as the only claim.
    """
    clauses = [c for part in _split_semicolons(sentence) for c in _split_coordination(part)]
    parts = [c for clause in clauses for c in _split_list(clause)]
    if len(parts) < 2:
        return [sentence]
    return [claim for claim in map(_as_claim, parts) if claim]


def offline_decompose(sentences: list[str]) -> list[SentenceDecomposition]:
    """Offline backend: decontextualise each sentence, then split it into claims.

    A claim cut from the middle of a sentence may start with a pronoun of its own ("..., and
    she studied physics"); it is resolved like a sentence, against the focus so far.
    """
    focus = _DiscourseFocus()
    results = []
    for sentence in sentences:
        decontext = focus.resolve(sentence)
        focus.observe(decontext)
        claims = [focus.resolve(claim) for claim in split_claims(decontext)]
        results.append(SentenceDecomposition(sentence, decontext, claims, backend=OFFLINE))
    return results


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def decompose_response(
    sentences: list[str], config: LLMConfig | None = None, context: str | None = None
) -> list[SentenceDecomposition]:
    """Suggest decontext + claims for each sentence of one response, in order.

    Uses the LLM when ``config`` is configured, else the offline heuristics. ``context`` is
    what the model sees around each sentence (the full response; default: the sentences
    joined). Never raises for a bad model answer: see the module docstring on fallbacks.
    """
    offline = offline_decompose(sentences)
    if not usable(config) or not sentences:
        return offline
    context = context if context is not None else " ".join(sentences)
    results = run_chats(config, [build_messages(context, s) for s in sentences])
    return [_from_llm_answer(off, result, config.model) for off, result in zip(offline, results)]
