"""Comparing two lists of claims: alignment by text similarity, edit distance, word overlap.

Used to line up two annotators' decompositions of a sentence for consolidation and agreement.
The two measures are the paper's (pipeline.text_measures), re-exported here for the kinds.
"""

from functools import cache

from pipeline.text_measures import (  # noqa: F401 (the kinds' names)
    normalised_edit_distance,
    word_overlap,
)

# Claims of one sentence about the same subject share many characters: at 0.5, "Marie Curie was
# a chemist." paired with "Marie Curie was born in Poland." (0.56). Rewordings of one claim
# score higher ("won two Nobel Prizes" / "was awarded the Nobel Prize twice": 0.63).
MIN_SIMILARITY = 0.6


def normalise(text: str) -> str:
    return " ".join((text or "").split())


@cache
def _fuzz():
    from rapidfuzz import fuzz  # rapidfuzz: web workers start without it

    return fuzz


def similarity(a: str, b: str) -> float:
    """0..1, insensitive to word order and case (token-sort ratio)."""
    return _fuzz().token_sort_ratio(normalise(a).lower(), normalise(b).lower()) / 100


def align(
    pivot: list[str], other: list[str], min_similarity: float = MIN_SIMILARITY
) -> list[tuple[int | None, int | None]]:
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
