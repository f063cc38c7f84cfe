"""Machine pre-annotation of a D-FActScore paragraph (Chiang & Lee, "Merging Facts, Crafting Fallacies").

``preannotate(name, response, facts, candidates, settings)`` returns the stage-1 content (facts with
their spans in the response, the candidate pages cut into passages) and a suggestion: facts grouped
by the individual a reader would see, each group linked to a candidate page, support per
(fact, page), and a label per fact against its group's page. Every part has an LLM backend (the
papers' prompts, answers parsed strictly) and an offline one; a model answer that does not follow
the format falls back to the offline backend for that part, and provenance says so.

Offline backends, and why:

* facts: the project's decomposer (``pipeline.decompose``) over the response's sentences;
* similarity of a fact to a page: the best of the page's passages. Lexical part: idf-weighted
  word containment, the share of the fact's content words (Snowball stems, stop words and the
  name's own words left out, each weighted by its idf over all passages) that the passage holds;
  containment rather than TF-IDF cosine because a ten-word fact against a hundred-word passage
  has a low cosine even when the passage states it word for word, so a threshold such as 0.5
  would mean nothing. With embeddings (all-MiniLM-L6-v2, as step 2 ranks evidence; the name's
  words blanked first, since they are in every page and most facts): the mean of the cosine and
  the containment — the cosine alone says "same topic" (a rowing club in Tartu is close to any
  rower's page), the words alone miss paraphrase. Embeddings off or not loadable: containment;
* support: similarity ≥ ``support_threshold``, the score kept as a hint (with the LLM verifier
  the score is still this similarity, a hint of where to look, and ``supported`` its verdict);
* grouping: every fact is anchored to the candidate it is most similar to (when at least
  ``support_threshold``), facts with the same anchor form one individual, and the facts similar
  to no candidate join the largest group (the paragraph's main subject); no anchor at all: one
  individual. Pages are the only evidence of who is who here, so their people are the anchors;
* linking (both backends): per group, the candidate supporting most of its facts (the paper's
  argmax; ties: the higher summed score, then the earlier candidate; none supports: null), or a
  one-to-one assignment of groups to candidates by the Hungarian algorithm when
  ``linking == "hungarian"`` (a group left without a supporting page: null);
* labels: ``supported`` when the group's linked page supports the fact, else ``not_supported``;
  ``irrelevant`` only when the fact names neither the name (any of its words) nor a person by
  pronoun and no candidate page supports it — a guess for humans to check;
* spans (click-to-fact): a decomposed fact gets the span of its sentence; an imported one the
  span of its own words when the response holds them, else of the sentence it matches best
  (rapidfuzz token-set ratio ≥ 60), else null.

Provenance: ``facts`` / ``grouping`` / ``support`` are ``"llm:<model>"``, ``"offline"`` or (facts)
``"import"``; ``similarity`` names the offline measure; ``notes`` lists every fallback and why.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz, utils

from pipeline.decompose import offline_decompose
from pipeline.llm import LLMConfig, run_chats, usable
from pipeline.parsing import ParseError, parse_label, strip_code_fence
from pipeline.retrieval import embed
from pipeline.segmenter import split_sentences

logger = logging.getLogger(__name__)

PASSAGE_WORDS = 100
TOP_PASSAGES = 5  # FActScore's verifier sees the page's 5 most similar passages
DEFAULTS = {"linking": "argmax", "support_threshold": 0.5}
IMPORT, OFFLINE = "import", "offline"
LEXICAL_WEIGHT = 0.5  # with embeddings: this share of a similarity is word containment
SPAN_MIN_RATIO = 60  # rapidfuzz token-set ratio for an imported fact to own a sentence's span

EmbedFn = Callable[[Sequence[str]], np.ndarray]


# --------------------------------------------------------------------------------------------
# Prompts (FActScore's atomic-fact and verification prompts; the D-FActScore grouping prompt)
# --------------------------------------------------------------------------------------------

FACTS_INSTRUCTION = "Please breakdown the following sentence into independent facts: "
# FActScore shows demonstrations in this exact format before the sentence; these are invented.
FACTS_DEMONSTRATIONS = """\
Please breakdown the following sentence into independent facts: Oskar Lind is a Swedish oboist who \
joined the Gothenburg Symphony in 1994.
- Oskar Lind is Swedish.
- Oskar Lind is an oboist.
- Oskar Lind joined the Gothenburg Symphony.
- Oskar Lind joined the Gothenburg Symphony in 1994.

Please breakdown the following sentence into independent facts: She studied law in Leiden and later \
taught there for ten years.
- She studied law.
- She studied in Leiden.
- She later taught in Leiden.
- She taught in Leiden for ten years.

Please breakdown the following sentence into independent facts: His first novel, The Salt Road, won \
the Halden Prize.
- His first novel is The Salt Road.
- The Salt Road won the Halden Prize.

"""

GROUPING_PROMPT = """\
The following facts come from one paragraph about "{name}". Several people can share this name, \
and the paragraph may mix facts about different people. Group the facts by the person they \
describe, using only the facts themselves. Copy every fact exactly once, word for word, as a line \
starting with "- ", and write the line "- ===" between two groups. Write nothing else.

Example facts:
- Ada Moor is a painter.
- Ada Moor was born in Leeds.
- Ada Moor played football for Arsenal.
- Ada Moor exhibited her paintings in Leeds.
Example answer:
- Ada Moor is a painter.
- Ada Moor was born in Leeds.
- Ada Moor exhibited her paintings in Leeds.
- ===
- Ada Moor played football for Arsenal.

Facts:
{facts}
Answer:
"""

# FActScore's "retrieval + ChatGPT" verifier prompt.
SUPPORT_PROMPT = "Answer the question about {topic} based on the given context.\n\n{context}\n\nInput: {fact} True or False?\nOutput:"

_FACT_LINE = re.compile(r"^\s*-\s+(\S.*?)\s*$")
_SEPARATOR = re.compile(r"^\s*-\s*={3,}\s*$")


def facts_messages(sentence: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{FACTS_DEMONSTRATIONS}{FACTS_INSTRUCTION}{sentence}\n"}]


def grouping_messages(name: str, facts: Sequence[str]) -> list[dict[str, str]]:
    listed = "\n".join(f"- {' '.join(f.split())}" for f in facts)
    return [{"role": "user", "content": GROUPING_PROMPT.format(name=name, facts=listed)}]


def support_messages(topic: str, fact: str, passages: Sequence[str]) -> list[dict[str, str]]:
    context = "\n\n".join(f"Title: {topic}\nText: {p}" for p in passages)
    return [
        {
            "role": "user",
            "content": SUPPORT_PROMPT.format(topic=topic, context=context, fact=fact.strip()),
        }
    ]


def parse_fact_lines(answer: str | None) -> list[str]:
    """Facts from an answer made only of "- fact" lines; anything else raises ParseError."""
    if answer is None or not answer.strip():
        raise ParseError("empty answer")
    lines = [line for line in strip_code_fence(answer).splitlines() if line.strip()]
    facts = []
    for number, line in enumerate(lines, 1):
        match = _FACT_LINE.match(line)
        if not match or _SEPARATOR.match(line):
            raise ParseError(f"line {number} is not a '- fact' line: {line.strip()[:60]!r}")
        facts.append(match.group(1))
    return facts


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def parse_groups(answer: str | None, facts: Sequence[str]) -> list[list[int]]:
    """Fact indices per group from "- fact" lines separated by "- ===" lines.

    Every fact must appear exactly once (compared without case and extra spaces) and nothing
    else may be written; empty groups (doubled separators) are dropped. Raises ParseError.
    """
    if answer is None or not answer.strip():
        raise ParseError("empty answer")
    unused: dict[str, list[int]] = {}
    for index, fact in enumerate(facts):
        unused.setdefault(_key(fact), []).append(index)
    groups: list[list[int]] = [[]]
    for number, line in enumerate((text for text in strip_code_fence(answer).splitlines() if text.strip()), 1):
        if _SEPARATOR.match(line):
            groups.append([])
            continue
        match = _FACT_LINE.match(line)
        if not match:
            raise ParseError(f"line {number} is neither '- fact' nor '- ===': {line.strip()[:60]!r}")
        indices = unused.get(_key(match.group(1)))
        if not indices:
            raise ParseError(f"line {number} is not one of the facts (or repeats one): {match.group(1)[:60]!r}")
        groups[-1].append(indices.pop(0))
    missing = sorted(i for indices in unused.values() for i in indices)
    if missing:
        raise ParseError(f"facts left out: {missing}")
    return [g for g in groups if g]


# --------------------------------------------------------------------------------------------
# Text pieces: sentences with offsets, page passages, spans
# --------------------------------------------------------------------------------------------


def sentence_spans(response: str, sentences: Sequence[str]) -> list[list[int] | None]:
    """Char offsets of each sentence in ``response`` (the splitter may normalise spaces and drop
    list markers, so words are matched with any whitespace between them); None if not found."""
    spans: list[list[int] | None] = []
    cursor = 0
    for sentence in sentences:
        words = sentence.split()
        match = re.compile(r"\s+".join(map(re.escape, words))).search(response, cursor) if words else None
        if match:
            spans.append([match.start(), match.end()])
            cursor = match.end()
        else:
            spans.append(None)
    return spans


def split_page(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """A page's sentences packed into passages of about ``words`` words (a passage closes at
    the first sentence that takes it to ``words``; a longer sentence is a passage alone)."""
    passages, current, count = [], [], 0
    for sentence in split_sentences(text or ""):
        current.append(sentence)
        count += len(sentence.split())
        if count >= words:
            passages.append(" ".join(current))
            current, count = [], 0
    if current:
        passages.append(" ".join(current))
    return passages


def fact_span(
    fact: str, response: str, sentences: Sequence[str], spans: Sequence[list[int] | None]
) -> list[int] | None:
    """The fact's own words when the response holds them, else the best-matching sentence."""
    found = re.compile(r"\s+".join(map(re.escape, fact.split())), re.I).search(response) if fact.split() else None
    if found:
        return [found.start(), found.end()]
    best, best_ratio = None, SPAN_MIN_RATIO
    for sentence, span in zip(sentences, spans):
        ratio = fuzz.token_set_ratio(fact, sentence, processor=utils.default_process)
        if span is not None and ratio >= best_ratio and (best is None or ratio > best_ratio):
            best, best_ratio = span, ratio
    return list(best) if best else None


# --------------------------------------------------------------------------------------------
# Offline similarity of facts to passages
# --------------------------------------------------------------------------------------------

_WORD = re.compile(r"\w\w+")
_PERSON_WORDS = frozenset({"he", "she", "his", "her", "him", "hers", "they", "their", "them"})


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN  # the stop words step 2's BM25 leaves out

    return frozenset(STOPWORDS_EN)


def _stems(text: str, skip: frozenset[str]) -> set[str]:
    import Stemmer  # PyStemmer, Snowball in C (a stemmer object is not thread-safe: one per call)

    stop = _stop_words()
    words = [w for w in _WORD.findall(text.lower()) if w not in stop and w not in skip]
    return set(Stemmer.Stemmer("english").stemWords(words))


def lexical_similarity(facts: Sequence[str], passages: Sequence[str], name: str = "") -> np.ndarray:
    """facts × passages: idf-weighted share of each fact's content words found in the passage."""
    skip = frozenset(_WORD.findall(name.lower()))
    passage_terms = [_stems(p, skip) for p in passages]
    df: dict[str, int] = {}
    for terms in passage_terms:
        for term in terms:
            df[term] = df.get(term, 0) + 1
    total = len(passages)
    matrix = np.zeros((len(facts), total), dtype=np.float64)
    for row, fact in enumerate(facts):
        weights = {t: math.log(1 + (total + 1) / (df.get(t, 0) + 1)) for t in _stems(fact, skip)}
        norm = sum(weights.values())
        if not norm:
            continue
        for column, terms in enumerate(passage_terms):
            matrix[row, column] = sum(w for t, w in weights.items() if t in terms) / norm
    return matrix


def _without_name(text: str, name: str) -> str:
    """The text with the name's words blanked: every candidate page and most facts share them,
    and they would make every fact look about equally similar to every page."""
    words = _WORD.findall(name)
    if not words:
        return text
    names = [r"\s+".join(map(re.escape, words))] + [re.escape(w) for w in words]  # the whole name first
    return re.sub(r"\b(?:" + "|".join(names) + r")\b(?:['’]s)?", "the person", text, flags=re.I)


def _similarity(
    facts: list[str], passages: list[str], name: str, embed: EmbedFn | None
) -> tuple[np.ndarray, str, str | None]:
    """facts × passages similarity, which measure gave it, and why embeddings were not used."""
    if not facts or not passages:
        return np.zeros((len(facts), len(passages))), "lexical", None
    if embed is not None:
        try:
            vectors = np.asarray(embed([_without_name(t, name) for t in facts + passages]), dtype=np.float64)
            cosine = np.clip(vectors[: len(facts)] @ vectors[len(facts) :].T, 0.0, 1.0)
            lexical = lexical_similarity(facts, passages, name)
            return (
                LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * cosine,
                "embeddings+lexical",
                None,
            )
        except Exception as error:  # noqa: BLE001 - any failure of the model falls back to words
            logger.warning("embeddings unavailable for D-FActScore support (%s); lexical similarity", error)
            return (
                lexical_similarity(facts, passages, name),
                "lexical",
                f"embeddings unavailable: {type(error).__name__}: {error}",
            )
    return lexical_similarity(facts, passages, name), "lexical", None


# --------------------------------------------------------------------------------------------
# Grouping, linking, labels
# --------------------------------------------------------------------------------------------


def offline_groups(best: np.ndarray, threshold: float) -> list[list[int]]:
    """Groups of facts by anchor candidate (see the module docstring); ``best`` is facts × candidates."""
    facts = best.shape[0]
    if facts == 0:
        return []
    by_anchor: dict[int, list[int]] = {}
    loose = []
    for fact in range(facts):
        if best.shape[1] and best[fact].max() >= threshold:
            by_anchor.setdefault(int(best[fact].argmax()), []).append(fact)
        else:
            loose.append(fact)
    groups = sorted(by_anchor.values(), key=lambda g: g[0])
    if not groups:
        return [list(range(facts))]
    largest = max(groups, key=len)  # max keeps the first of equal sizes
    largest.extend(loose)
    largest.sort()
    return sorted(groups, key=lambda g: g[0])


def link_groups(
    groups: Sequence[Sequence[int]],
    support: Sequence[Sequence[dict]],
    candidates: int,
    method: str = "argmax",
) -> list[int | None]:
    """Candidate index per group (None: no candidate supports any of its facts)."""
    counts = np.zeros((len(groups), candidates))
    scores = np.zeros((len(groups), candidates))
    for g, group in enumerate(groups):
        for fact in group:
            for entry in support[fact]:
                counts[g, entry["candidate"]] += entry["supported"]
                scores[g, entry["candidate"]] += entry["score"]
    if not candidates or not len(groups):
        return [None] * len(groups)
    if method == "hungarian":
        # heavy: loaded only where this is computed
        from scipy.optimize import (
            linear_sum_assignment,  # scipy: heavy, only where this is computed
        )

        # Counts first; summed scores only break ties (each below 1 per fact, so scaled under 1).
        weight = counts + scores / (scores.sum() + 1.0)
        rows, columns = linear_sum_assignment(weight, maximize=True)
        links: list[int | None] = [None] * len(groups)
        for g, c in zip(rows, columns):
            links[g] = int(c) if counts[g, c] > 0 else None
        return links
    links = []
    for g in range(len(groups)):
        if counts[g].max() <= 0:
            links.append(None)
            continue
        tied = [c for c in range(candidates) if counts[g, c] == counts[g].max()]
        links.append(max(tied, key=lambda c: (scores[g, c], -c)))
    return links


def mentions_person(fact: str, name: str) -> bool:
    words = set(re.findall(r"\w+", fact.lower()))
    return bool(words & (set(_WORD.findall(name.lower())) | _PERSON_WORDS))


def fact_labels(
    facts: Sequence[str],
    name: str,
    groups: Sequence[Sequence[int]],
    links: Sequence[int | None],
    support: Sequence[Sequence[dict]],
) -> list[str]:
    group_of = {fact: g for g, group in enumerate(groups) for fact in group}
    labels = []
    for index, fact in enumerate(facts):
        link = links[group_of[index]] if index in group_of else None
        by_candidate = {entry["candidate"]: entry for entry in support[index]}
        if link is not None and by_candidate[link]["supported"]:
            labels.append("supported")
        elif not mentions_person(fact, name) and not any(e["supported"] for e in support[index]):
            labels.append("irrelevant")
        else:
            labels.append("not_supported")
    return labels


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


@dataclass
class _Facts:
    texts: list[str]
    sentence: list[int | None]  # the response sentence each fact came from (None: imported)
    source: str
    notes: list[str] = field(default_factory=list)


def _decompose(sentences: list[str], config: LLMConfig | None) -> _Facts:
    offline = offline_decompose(sentences)
    if not usable(config):
        return _Facts(
            [c for d in offline for c in d.claims],
            [i for i, d in enumerate(offline) for _ in d.claims],
            OFFLINE,
        )
    texts, origin, notes = [], [], []
    for index, (result, fallback) in enumerate(zip(run_chats(config, [facts_messages(s) for s in sentences]), offline)):
        error = result.error
        if error is None:
            try:
                claims = parse_fact_lines(result.text)
            except ParseError as exc:
                error = f"unparseable answer: {exc}"
        if error is not None:
            notes.append(f"facts of sentence {index}: offline decomposition ({error})")
            claims = fallback.claims
        texts.extend(claims)
        origin.extend([index] * len(claims))
    return _Facts(texts, origin, f"llm:{config.model}", notes)


def _candidates(candidates: Sequence[dict]) -> list[dict]:
    pages = []
    for candidate in candidates:
        text = candidate.get("text") or ""
        passages = [p for p in (candidate.get("passages") or []) if isinstance(p, str) and p.strip()]
        pages.append(
            {
                "title": candidate.get("title") or "",
                "url": candidate.get("url") or "",
                "text": text,
                "passages": passages or split_page(text),
            }
        )
    return pages


def _default_embed(texts: Sequence[str]) -> np.ndarray:
    return embed(texts)


def preannotate(
    name: str,
    response: str,
    facts: list[str] | None,
    candidates: list[dict],
    settings: dict,
    *,
    embed: EmbedFn | None = None,
) -> dict:
    """``{"content": stage-1 content, "suggestion": machine pre-annotation}`` of one paragraph.

    ``facts`` given (imported) are kept as they are; ``settings`` is the project's
    pipeline_settings (``llm`` endpoint, ``embeddings`` on/off, ``dfactscore`` options).
    ``embed`` replaces the embedding model (tests). Never raises for a model's misbehaviour.
    """
    settings = settings or {}
    options = {**DEFAULTS, **(settings.get("dfactscore") or {})}
    threshold = float(options["support_threshold"])
    config = LLMConfig.from_env(settings.get("llm"))
    llm = usable(config)
    if embed is None and settings.get("embeddings", True):
        embed = _default_embed

    sentences = split_sentences(response or "")
    spans = sentence_spans(response or "", sentences)
    if facts is not None:
        found = _Facts([f for f in facts], [None] * len(facts), IMPORT)
    else:
        found = _decompose(sentences, config)
    texts, notes = found.texts, list(found.notes)
    pages = _candidates(candidates)

    passages = [p for page in pages for p in page["passages"]]
    owner = np.array([c for c, page in enumerate(pages) for _ in page["passages"]], dtype=int)
    matrix, measure, problem = _similarity(texts, passages, name, embed)
    if problem:
        notes.append(problem)
    best = np.zeros((len(texts), len(pages)))
    for c in range(len(pages)):
        if (owner == c).any():
            best[:, c] = matrix[:, owner == c].max(axis=1)

    support = [
        [
            {
                "candidate": c,
                "score": round(float(best[f, c]), 4),
                "supported": bool(best[f, c] >= threshold),
            }
            for c in range(len(pages))
        ]
        for f in range(len(texts))
    ]
    groups = offline_groups(best, threshold)
    provenance = {
        "facts": found.source,
        "grouping": OFFLINE,
        "support": OFFLINE,
        "similarity": measure,
    }

    if llm and texts:
        pairs = [(f, c) for f in range(len(texts)) for c in range(len(pages)) if (owner == c).any()]
        conversations = [grouping_messages(name, texts)]
        for f, c in pairs:
            columns = np.flatnonzero(owner == c)
            top = columns[np.argsort(-matrix[f, columns], kind="stable")[:TOP_PASSAGES]]
            conversations.append(support_messages(pages[c]["title"] or name, texts[f], [passages[i] for i in top]))
        grouping, *verdicts = run_chats(config, conversations)
        try:
            if grouping.error:
                raise ParseError(grouping.error)
            groups = sorted(parse_groups(grouping.text, texts), key=min)
            provenance["grouping"] = f"llm:{config.model}"
        except ParseError as exc:
            notes.append(f"grouping: offline heuristic ({exc})")
        failed = 0
        for (f, c), result in zip(pairs, verdicts):
            try:
                if result.error:
                    raise ParseError(result.error)
                support[f][c]["supported"] = parse_label(result.text, ("true", "false"), " ") == "true"
            except ParseError as exc:
                failed += 1
                if failed == 1:
                    notes.append(f"support: first unusable verdict ({exc})")
        if failed:
            notes.append(f"support: {failed} of {len(pairs)} verdicts offline (similarity ≥ {threshold})")
        provenance["support"] = f"llm:{config.model}"

    links = link_groups(groups, support, len(pages), options["linking"])
    labels = fact_labels(texts, name, groups, links, support)
    fact_entries = []
    for text, origin in zip(texts, found.sentence):
        span = spans[origin] if origin is not None else fact_span(text, response or "", sentences, spans)
        fact_entries.append({"text": text, "span": list(span) if span else None})
    provenance["notes"] = notes
    return {
        "content": {"name": name, "facts": fact_entries, "candidates": pages},
        "suggestion": {
            "groups": groups,
            "links": links,
            "support": support,
            "labels": labels,
            "provenance": provenance,
        },
    }
