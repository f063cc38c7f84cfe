"""The two text measures of the Factcheck-Bench paper (Wang et al.), as the paper defines them.

The paper compares a response with its revision (and decompositions, system revisions) by:

- **word overlap**: both texts split on whitespace, case and punctuation kept as they are; of
  the longer token list (the first text's at equal length), the share of tokens that also occur
  in the shorter list, each occurrence counted. 1 for two empty texts.
- **normalised edit distance**: the character Levenshtein distance of the two texts as given (no
  whitespace or case normalisation) divided by the length of the longer text. 0 for two empty
  texts.

On the released file's 61 false responses (response against its gold revision) these give the
paper's 0.715 and 0.354 (tests/research/test_text_measures.py). Every figure the app names "word overlap"
or "normalised edit distance" comes from here; docs/measures.md has the definitions.
"""

from functools import cache


@cache
def _levenshtein():
    from rapidfuzz.distance import Levenshtein  # rapidfuzz: web workers start without it

    return Levenshtein


def word_overlap(a: str, b: str) -> float:
    tokens_a, tokens_b = (a or "").split(), (b or "").split()
    longer, shorter = (tokens_a, tokens_b) if len(tokens_a) >= len(tokens_b) else (tokens_b, tokens_a)
    if not longer:
        return 1.0
    present = set(shorter)
    return sum(token in present for token in longer) / len(longer)


def normalised_edit_distance(a: str, b: str) -> float:
    a, b = a or "", b or ""
    longer = max(len(a), len(b))
    return _levenshtein().distance(a, b) / longer if longer else 0.0
