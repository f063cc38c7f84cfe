"""Evidence data shared by the tests: a small encyclopedia of documents and its upload, and
the Encyclopedia corpus built from it."""

import io
import json

from annotation.evidence.corpora import create_corpus

DOCUMENTS = [
    {
        "title": "Eiffel Tower",
        "url": "https://w.example/eiffel",
        "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by Gustave Eiffel's company. "
        "Construction was completed in March 1889. It was the entrance arch to the 1889 World's Fair. "
        "The tower is 330 metres tall. It was the tallest man-made structure in the world until 1930. "
        "About seven million people visit it every year.",
    },
    {
        "title": "Marie Curie",
        "url": "https://w.example/curie",
        "text": "Marie Curie was a physicist and chemist. She won the Nobel Prize in Physics in 1903. "
        "She won the Nobel Prize in Chemistry in 1911.",
    },
    {"title": "Bananas", "url": "", "text": "Bananas are rich in potassium."},
]


def upload(lines, name="corpus.jsonl", prefix=b""):
    data = prefix + "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()
    file = io.BytesIO(data)
    file.name, file.size = name, len(data)
    return file


def encyclopedia(project, user):
    """The Encyclopedia corpus of DOCUMENTS (an upload with a byte-order mark) for ``project``."""
    corpus = create_corpus(
        name="Encyclopedia",
        user=user,
        upload=upload(DOCUMENTS, prefix=b"\xef\xbb\xbf"),
        projects=[project],
        passage_sentences=3,
        passage_stride=2,
    )
    return corpus


def clustered_vectors(n, dimensions, seed=0, centres=20):
    """Unit vectors around a few topics, as embeddings of passages on a few subjects are."""
    import numpy as np  # as the code under test: numpy only where vectors are made

    rng = np.random.default_rng(seed)
    middle = rng.standard_normal((centres, dimensions)).astype(np.float32)
    x = middle[rng.integers(0, centres, n)] + rng.standard_normal((n, dimensions)).astype(np.float32) * 0.06
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
