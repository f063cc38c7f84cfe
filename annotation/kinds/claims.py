"""Comparing two lists of claims: alignment by text similarity, edit distance, word overlap.

Used to line up two annotators' decompositions of a sentence for consolidation and agreement.
"""
import re

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

# Claims of one sentence about the same subject share many characters: at 0.5, "Marie Curie was
# a chemist." paired with "Marie Curie was born in Poland." (0.56). Rewordings of one claim
# score higher ("won two Nobel Prizes" / "was awarded the Nobel Prize twice": 0.63).
MIN_SIMILARITY = 0.6
_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    return " ".join((text or "").split())


def similarity(a: str, b: str) -> float:
    """0..1, insensitive to word order and case (token-sort ratio)."""
    return fuzz.token_sort_ratio(normalise(a).lower(), normalise(b).lower()) / 100


def normalised_edit_distance(a: str, b: str) -> float:
    """Levenshtein distance over the longer length: 0 for equal texts, 1 for nothing in common."""
    return Levenshtein.normalized_distance(normalise(a), normalise(b))


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the lower-cased word sets (1 when both are empty)."""
    words_a, words_b = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not words_a and not words_b:
        return 1.0
    return len(words_a & words_b) / len(words_a | words_b)


def align(pivot: list[str], other: list[str], min_similarity: float = MIN_SIMILARITY) -> list[tuple[int | None, int | None]]:
    """Pair claims of two lists, most similar pairs first, each claim at most once.

    Returns rows ``(pivot index | None, other index | None)`` in the pivot's order, with the
    other list's unpaired claims placed after the row of their predecessor in that list.
    """
    candidates = sorted(
        ((similarity(a, b), i, j) for i, a in enumerate(pivot) for j, b in enumerate(other)),
        key=lambda c: (-c[0], c[1], c[2]),
    )
    pair_of_pivot: dict[int, int] = {}
    paired_other: set[int] = set()
    for score, i, j in candidates:
        if score < min_similarity:
            break
        if i not in pair_of_pivot and j not in paired_other:
            pair_of_pivot[i] = j
            paired_other.add(j)
    rows: list[tuple[int | None, int | None]] = [(i, pair_of_pivot.get(i)) for i in range(len(pivot))]
    for j in range(len(other)):
        if j in paired_other:
            continue
        position = 0
        for index, (_, other_index) in enumerate(rows):
            if other_index is not None and other_index < j:
                position = index + 1
        rows.insert(position, (None, j))
    return rows
