"""Offline sentence and segment splitting for LLM responses.

NLTK's pretrained Punkt models are downloadable data, which this project cannot fetch (it
runs offline: no download at run time). An *untrained* ``PunktSentenceTokenizer`` knows no
abbreviations and no sentence starters, so it breaks "the U.S. Department" and "Dr. Arts" and glues
"World War I. It was". We therefore ship the parameters Punkt would otherwise have learnt
(``ABBREVIATIONS``, ``COLLOCATIONS`` and ``SENTENCE_STARTERS`` below, plain Python constants) and add the
layout rules Punkt ignores because it sees text as one line: paragraphs, unpunctuated
heading/bullet lines, and numbered-list markers.

Pipeline of ``split_sentences``:

1. layout blocks: a blank line ends a block unless the paragraph before it ends with ``:``
   (an introduction belongs with what follows, e.g. an equation); inside a paragraph a line
   break ends a block when the next line is a list item (``1. ``, ``2) ``, ``- ``, ``* ``,
   ``• ``: a marker followed by a space, as in Markdown) or when the line before it has no
   closing punctuation and the next line starts with a capital letter (headings, bullets).
   The marker of such a line-start list item is layout, not text, and is dropped (as in the
   released Factcheck-Bench sentences); an inline "1." inside running text is kept;
2. Punkt with the shipped parameters inside each block;
3. clean-up: a presentational lead-in ("Here are some of them: ...") becomes a sentence of
   its own, and a numbered-list marker that Punkt left at the end of a sentence ("albums: 1.",
   "...Boombayah.”2.") or alone ("3.") moves to the start of the item it numbers.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

SEGMENT_SEPARATOR = "*****"
"""FELM's segment separator: annotators' segment boundaries are marked with it in the text."""

SEGMENT_METHODS = ("auto", "separator", "sentence")

# Common English abbreviations, lower case and without the final period (Punkt's storage
# format: "U.S." is stored as "u.s"). Only words that are rarely a sentence's last word belong
# here; a listed abbreviation still ends a sentence when a SENTENCE_STARTERS word follows it.
ABBREVIATIONS = frozenset(
    {
        # personal titles and ranks
        "mr",
        "mrs",
        "ms",
        "messrs",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "rev",
        "hon",
        "gen",
        "col",
        "lt",
        "maj",
        "sgt",
        "capt",
        "cmdr",
        "adm",
        "gov",
        "sen",
        "rep",
        "pres",
        "fr",
        "sec",
        # degrees
        "ph.d",
        "m.d",
        "b.a",
        "m.a",
        "b.sc",
        "m.sc",
        "ll.b",
        "d.phil",
        # companies and organisations
        "inc",
        "ltd",
        "co",
        "corp",
        "llc",
        "plc",
        "bros",
        "dept",
        "univ",
        "assn",
        "est",
        # Latin and scholarly
        "e.g",
        "i.e",
        "etc",
        "vs",
        "v",
        "cf",
        "al",
        "ca",
        "approx",
        "viz",
        "ibid",
        "op",
        "vol",
        "vols",
        "no",
        "nos",
        "pp",
        "ed",
        "eds",
        "fig",
        "figs",
        "ch",
        "art",
        "para",
        # places and addresses
        "u.s",
        "u.s.a",
        "u.k",
        "u.n",
        "e.u",
        "d.c",
        "n.y",
        "l.a",
        "ave",
        "blvd",
        "rd",
        "hwy",
        # months
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        # times
        "a.m",
        "p.m",
    }
)

# Words that are written in lower case inside a sentence, so a capitalised occurrence after a
# period starts a new sentence. Punkt learns this "orthographic context" from training text;
# we state it for common function words, which is what training on any English text yields.
# It lets "World War I. It was" and "Cardi B. Please note" split, and "etc. The" too.
SENTENCE_STARTERS = frozenset(
    {
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "he",
        "she",
        "they",
        "we",
        "you",
        "his",
        "her",
        "their",
        "our",
        "my",
        "your",
        "there",
        "here",
        "however",
        "therefore",
        "thus",
        "hence",
        "also",
        "additionally",
        "moreover",
        "furthermore",
        "overall",
        "finally",
        "meanwhile",
        "instead",
        "in",
        "on",
        "at",
        "for",
        "as",
        "after",
        "before",
        "during",
        "since",
        "when",
        "while",
        "if",
        "although",
        "though",
        "but",
        "and",
        "or",
        "so",
        "yet",
        "please",
        "note",
        "today",
        "some",
        "many",
        "most",
        "other",
        "each",
        "every",
        "all",
        "both",
        "one",
        "another",
        "what",
        "which",
        "how",
        "why",
        "where",
        "to",
        "by",
        "with",
        "from",
        "according",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "should",
        "would",
        "will",
        "may",
        "might",
        "do",
        "does",
        "did",
        "not",
        "unfortunately",
        "generally",
        "currently",
        "similarly",
    }
)

# Pairs Punkt keeps together even though the first looks like a sentence end: "c. 980" and
# "ca. 1500" (circa before a number). "c" is not an abbreviation on its own: "vitamin C. It" ends.
COLLOCATIONS = frozenset({("c", "##number##"), ("ca", "##number##")})

# Punkt's orthographic flags (nltk.tokenize.punkt._ORTHO_*): seen capitalised at a sentence
# start, seen in lower case mid-sentence.
_ORTHO_BEG_UC = 1 << 1
_ORTHO_MID_LC = 1 << 5

_CLOSING_PUNCTUATION = re.compile(r"[.!?:;,][\"'”’)\]]*$")
_LIST_ITEM_LINE = re.compile(r"^(?:\d{1,3}[.)]|[-*•])\s+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_MARKER_ONLY = re.compile(r"^\d{1,3}\.$")
# A list marker left at the end of a sentence: glued to a word's full stop or closing quote
# ('first.2.', '"Boombayah.”2.'), after a full stop and a space ("in 1981. 2."), or after the
# colon of an introduction ("albums: 1.", only "1." so "The total was: 4." stays).
# A decimal number ("version 3.5.") is not a marker, nor a number after an abbreviation of one
# letter ("died c. 930.").
_TRAILING_MARKER = re.compile(r"(?:(?<=[.!?][\"'”’)\]])\s*|(?<=\D[.!?])|(?<=\w\w[.!?])\s+)(\d{1,3}\.)$|(?<=:)\s+(1\.)$")
# "Here are some of them: Best Paper Award ..." -> the lead-in is a (non-claim) sentence.
_LEAD_IN = re.compile(r"^(?:Here(?:'s| is| are)|Below (?:is|are))\b[^:]{0,150}:(?=\s+\S)")


# Punkt's work grows faster than a block's length (on a long enough block a regular expression
# of NLTK's times out): it reads a long block through a window of at most this many
# characters, so a document's cost stays linear.
MAX_PUNKT_CHARS = 20_000


def _punkt(tokenizer: PunktSentenceTokenizer, block: str, limit: int = MAX_PUNKT_CHARS) -> list[str]:
    """Punkt's sentences of ``block``, read ``limit`` characters at a time: the window's last
    sentence may be cut off, so the next window starts where it starts."""
    sentences: list[str] = []
    while len(block) > limit:
        spans = list(tokenizer.span_tokenize(block[:limit]))
        last_start = spans[-1][0] if spans else 0
        if last_start < limit // 2:  # no sentence end in the window's second half: cut at a space
            cut = block.rfind(" ", limit // 2, limit)
            cut = cut if cut > 0 else limit
            sentences.extend(tokenizer.tokenize(block[:cut]))
            block = block[cut:]
        else:
            sentences.extend(block[start:end] for start, end in spans[:-1])
            block = block[last_start:]
    sentences.extend(tokenizer.tokenize(block))
    return sentences


@lru_cache(maxsize=1)
def _tokenizer() -> PunktSentenceTokenizer:
    # nltk pulls in scikit-learn and SciPy (heavy): load it on first split, not in web workers
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    params.collocations = set(COLLOCATIONS)
    params.ortho_context = defaultdict(int)
    for word in SENTENCE_STARTERS:
        params.ortho_context[word] = _ORTHO_BEG_UC | _ORTHO_MID_LC
    return PunktSentenceTokenizer(params)


def _layout_blocks(text: str) -> list[str]:
    """Split text where its layout (not its punctuation) ends a sentence; see module doc."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paragraphs = [p.strip() for p in _BLANK_LINE.split(text) if p.strip()]
    blocks: list[list[str]] = []
    previous_line = None
    for index, paragraph in enumerate(paragraphs):
        continues_previous = index > 0 and paragraphs[index - 1].endswith(":")
        for line_no, raw_line in enumerate(paragraph.split("\n")):
            line = raw_line.strip()
            if not line:
                continue
            first_line_of_new_paragraph = line_no == 0 and not continues_previous
            starts_block = previous_line is None or first_line_of_new_paragraph
            if starts_block or _line_starts_block(previous_line, line):
                blocks.append([])
            previous_line = line
            blocks[-1].append(_LIST_ITEM_LINE.sub("", line, count=1))
    return [" ".join(lines) for lines in blocks]


def _line_starts_block(previous_line: str, line: str) -> bool:
    if _LIST_ITEM_LINE.match(line):
        return True
    return line[0].isupper() and not _CLOSING_PUNCTUATION.search(previous_line)


def _split_lead_in(sentence: str) -> list[str]:
    match = _LEAD_IN.match(sentence)
    if not match:
        return [sentence]
    return [match.group(0), sentence[match.end() :].strip()]


def _attach_list_markers(sentences: list[str]) -> list[str]:
    """Move numbered-list markers ("2.") from where Punkt left them to the item they number."""
    result: list[str] = []
    carried_marker = ""
    for index, sentence in enumerate(sentences):
        has_next = index + 1 < len(sentences)
        if carried_marker:
            sentence = f"{carried_marker} {sentence}"
            carried_marker = ""
        if has_next and _MARKER_ONLY.match(sentence):
            carried_marker = sentence
            continue
        trailing = _TRAILING_MARKER.search(sentence) if has_next else None
        if trailing:
            carried_marker = trailing.group(1) or trailing.group(2)
            sentence = sentence[: trailing.start()].rstrip()
        if sentence:
            result.append(sentence)
    return result


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences offline (Punkt with shipped parameters + layout rules).

    Sentences are whitespace-stripped, non-empty and in text order; see the module docstring
    for the rules.
    """
    if not text or not text.strip():
        return []
    tokenizer = _tokenizer()
    sentences: list[str] = []
    for block in _layout_blocks(text):
        block_sentences: list[str] = []
        for sentence in _punkt(tokenizer, block):
            block_sentences.extend(_split_lead_in(sentence.strip()))
        sentences.extend(_attach_list_markers(block_sentences))
    return [s for s in sentences if s]


def segment_response(text: str, method: str = "auto") -> list[str]:
    """Split a response into annotation segments.

    ``separator`` splits on FELM's ``*****`` marker, ``sentence`` uses :func:`split_sentences`,
    ``auto`` uses the separator when the text contains it (FELM-style input), else sentences.
    """
    if method not in SEGMENT_METHODS:
        raise ValueError(f"unknown segmentation method {method!r}; expected one of {SEGMENT_METHODS}")
    if not text or not text.strip():
        return []
    if method == "separator" or (method == "auto" and SEGMENT_SEPARATOR in text):
        return [part.strip() for part in text.split(SEGMENT_SEPARATOR) if part.strip()]
    return split_sentences(text)
