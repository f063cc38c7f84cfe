"""The vectorised ranking (``retrieval.lexical_scores`` with numbered terms, one matrix product
for the cosines, rapidfuzz's cut-off for near-duplicates) against the per-passage definition it
replaced, kept here word for word as the reference: same scores, same order."""

import math
import random
import re

import numpy as np
import pytest

from pipeline import retrieval
from pipeline.retrieval import Candidate, rank_candidates

# -- the reference: retrieval.py's ranking before the vectorised path (issue 23) ----------------

_TOKEN = re.compile(r"\w\w+")


def _reference_terms(text: str) -> list[str]:
    stop = retrieval._stopwords()
    words = [w for w in _TOKEN.findall(text.lower()) if w not in stop]
    return retrieval._stemmer().stemWords(words)


def reference_lexical_scores(query, passages):
    query_terms = _reference_terms(query or "")
    if not passages or not query_terms:
        return [0.0] * len(passages)
    wanted = set(query_terms)
    lengths, found = [], []
    for passage in passages:
        terms = _reference_terms(passage)
        lengths.append(len(terms))
        tf_of = {}
        for term in terms:
            if term in wanted:
                tf_of[term] = tf_of.get(term, 0) + 1
        found.append(tf_of)
    average = sum(lengths) / len(lengths)
    if average == 0:
        return [0.0] * len(passages)
    size = len(passages)
    idf = {}
    for term in wanted:
        df = sum(1 for tf in found if term in tf)
        idf[term] = math.log(1 + (size - df + 0.5) / (df + 0.5))
    scores = []
    for length, tf_of in zip(lengths, found):
        norm = retrieval.BM25_K1 * ((1 - retrieval.BM25_B) + retrieval.BM25_B * length / average)
        score = 0.0
        for term in query_terms:
            tf = tf_of.get(term)
            if tf:
                score += idf[term] * tf / (norm + tf)
        scores.append(score)
    return scores


def reference_rank(claim, candidates, *, claim_vector=None, top_k=5, max_per_source=2, lexical_weight=0.5):
    from rapidfuzz import fuzz

    unique = {}
    for candidate in candidates:
        key = " ".join(candidate.text.split())
        if key and key not in unique:
            unique[key] = candidate
    pool = list(unique.values())
    if not pool:
        return []
    scores = reference_lexical_scores(claim, [c.text for c in pool])
    high = max(scores, default=0.0)
    lexical = [s / high if high > 0 else 0.0 for s in scores]
    scored = []
    for candidate, lex in zip(pool, lexical):
        dense = None
        if claim_vector is not None and candidate.vector is not None:
            dense = float(np.dot(candidate.vector, claim_vector))
        fused = lex if dense is None else lexical_weight * lex + (1 - lexical_weight) * max(dense, 0.0)
        scored.append((fused, lex, dense, candidate))
    scored.sort(key=lambda row: -row[0])
    kept, per_source = [], {}
    for row in scored:
        candidate = row[3]
        source_key = candidate.url or candidate.title
        if source_key and per_source.get(source_key, 0) >= max_per_source:
            continue
        if any(fuzz.token_set_ratio(candidate.text, other[3].text) >= 90 for other in kept):
            continue
        kept.append(row)
        if source_key:
            per_source[source_key] = per_source.get(source_key, 0) + 1
        if len(kept) == top_k:
            break
    return [
        (c.text, round(fused, 6), round(lex, 6), None if dense is None else round(dense, 6))
        for fused, lex, dense, c in kept
    ]


# -- random pools -------------------------------------------------------------------------------

WORDS = (
    "The tower Towers towering of in Paris paris PARIS 1889 built builds building it's O'Brien a an is was "
    "café naïve x 12 3.5 e-mail Curie's prizes prize Nobel running runs ran generously generous "
    "ΣΟΦΙΑ σοφια straße STRASSE under_score the. (of) Eiffel, [Seine] mayor's mayors — 2020s"
).split()


def passage(rng, words=WORDS):
    return " ".join(rng.choice(words) for _ in range(rng.randint(0, 90)))


def pool(rng, size, vectors=True):
    texts = [passage(rng) for _ in range(size)]
    out = []
    for number in range(size):
        text = texts[number]
        roll = rng.random()
        if roll < 0.1 and number:  # a window of an earlier passage: a near-duplicate
            words = texts[rng.randrange(number)].split()
            text = " ".join(words[rng.randint(0, 3) :] + words[:2])
        elif roll < 0.15 and number:  # the same passage found again, spaced differently
            text = "  " + texts[rng.randrange(number)].replace(" ", "\n", 1)
        vector = None
        if vectors and rng.random() < 0.9:
            vector = rng_unit(rng)
        out.append(
            Candidate(
                text=text,
                url=f"https://example.org/{rng.randrange(size // 3 + 1)}" if rng.random() < 0.8 else "",
                title=rng.choice(["", "A page"]),
                passage_id=number,
                vector=vector,
            )
        )
    return out


def rng_unit(rng):
    v = np.array([rng.gauss(0, 1) for _ in range(16)], dtype=np.float32)
    return v / np.linalg.norm(v)


ASCII_WORDS = [w for w in WORDS if w.isascii()] + ["a.b", "x-y-z", "_", "__init__", "3", "I'm", "\tTab\n", "e.g."]


@pytest.mark.parametrize(
    "words",
    [WORDS, ASCII_WORDS, ASCII_WORDS + ["\u212a"]],  # the Kelvin sign: ASCII "k" once lower-cased
    ids=["unicode", "ascii", "kelvin"],
)
def test_lexical_scores_are_the_per_passage_definitions_to_the_last_bit(words):
    rng = random.Random(11)
    for _ in range(300):
        passages = [passage(rng, words) for _ in range(rng.randint(1, 60))]
        query = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        assert retrieval.lexical_scores(query, passages) == reference_lexical_scores(query, passages), query
    assert retrieval.lexical_scores("tower", []) == []
    assert retrieval.lexical_scores("", ["the tower"]) == [0.0]
    assert retrieval.lexical_scores("tower", ["the of", ""]) == [0.0, 0.0]  # no term in any passage


def test_lexical_scores_survive_the_term_maps_being_emptied(monkeypatch):
    monkeypatch.setattr(retrieval, "_STEM_CACHE_SIZE", 5)  # emptied on nearly every call
    rng = random.Random(2)
    for _ in range(50):
        passages = [passage(rng) for _ in range(rng.randint(1, 20))]
        query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
        assert retrieval.lexical_scores(query, passages) == reference_lexical_scores(query, passages)


@pytest.mark.parametrize("seed", range(6))
def test_ranking_is_the_per_candidate_definitions_on_pools_of_hundreds(seed):
    rng = random.Random(seed)
    candidates = pool(rng, rng.choice([50, 200, 400]), vectors=seed != 5)
    claim = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 15)))
    claim_vector = None if seed == 4 else rng_unit(rng)
    for top_k, per_source in ((5, 2), (10, 2), (20, 50)):
        got = rank_candidates(claim, candidates, claim_vector=claim_vector, top_k=top_k, max_per_source=per_source)
        want = reference_rank(claim, candidates, claim_vector=claim_vector, top_k=top_k, max_per_source=per_source)
        assert [p.text for p in got] == [w[0] for w in want]
        assert [p.rank for p in got] == list(range(1, len(want) + 1))
        for ranked, (_, fused, lex, dense) in zip(got, want):
            assert ranked.score == pytest.approx(fused, abs=2e-6)
            assert ranked.lexical_score == lex
            assert (ranked.embedding_score is None) == (dense is None)
            if dense is not None:
                assert ranked.embedding_score == pytest.approx(dense, abs=2e-6)


def test_near_duplicates_of_any_kept_passage_are_dropped_not_only_of_the_first():
    base = "The Eiffel Tower in Paris was built in 1889 for the World Fair by Gustave Eiffel's company"
    other = "Marie Curie won two Nobel prizes, in physics in 1903 and in chemistry in 1911"
    candidates = [
        Candidate(text=base, url="a"),
        Candidate(text=other, url="b"),
        Candidate(text=other + " too", url="c"),  # a near-duplicate of the second kept passage
    ]
    ranked = rank_candidates("Eiffel Tower Curie Nobel 1889 1903", candidates)
    assert [p.url for p in ranked] == ["a", "b"] or [p.url for p in ranked] == ["b", "a"]
