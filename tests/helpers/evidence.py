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


def add_embedded_passages(corpus, vectors, text=None, title=None, embedded=None):
    """Passages after the corpus's last one, the first ``embedded`` (all by default) with these
    vectors as the worker stores them; the corpus's counters updated and its full-text search
    filled (PostgreSQL; nothing on SQLite). ``text``/``title`` map a passage's number to its text
    and title. Returns the new passages' ids in order; the vector index is left to the caller."""
    from annotation.evidence.corpora import _fill_search_vectors
    from annotation.models import Corpus, Passage

    start = Passage.objects.filter(corpus=corpus).count()
    embedded = len(vectors) if embedded is None else embedded
    text = text or (lambda n: f"passage number {n}")
    title = title or (lambda n: f"t{n}")
    Passage.objects.bulk_create(
        [
            Passage(
                corpus=corpus,
                document=start + i,
                position=0,
                title=title(start + i),
                text=text(start + i),
                embedding=v.tobytes() if i < embedded else None,
            )
            for i, v in enumerate(vectors)
        ]
    )
    ids = list(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True))[start:]
    through = ids[embedded - 1] if embedded else corpus.embedded_through
    Corpus.objects.filter(pk=corpus.pk).update(
        embedded=start + embedded, embedded_through=through, passages=start + len(vectors)
    )
    _fill_search_vectors(corpus.id)
    corpus.refresh_from_db()
    return ids
