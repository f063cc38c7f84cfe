"""Evidence corpora for the benchmarks: generated text, generated vectors, and a corpus loaded
ready to search (evidence_search.py, first_search.py, campaign_step2.py).

Text: documents of 13 sentences over a Zipf-weighted 30,000 pseudo-word vocabulary (about 90
words a passage of 5 sentences, as the released evidence: 87 on average). Vectors are generated,
NOT embedded (all-MiniLM-L6-v2 does 25-65 passages/s on these CPUs: a million is 5-9 hours):
unit vectors around 100 broad topics and passages/200 subtopics (noise 0.05 a dimension), so that
they have neighbourhoods as embeddings do. They are written into the corpus's index files as the
worker appends them and the IVF-SQ8 index is built as the worker builds it.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import statistics
import time
from pathlib import Path

DIM = 384
SYLLABLES = ("ka", "lo", "mi", "ner", "sto", "va", "rin", "del", "tor", "ash", "bel", "cu", "dra", "fen", "gal", "hu")
FILLER = "the of and in to was is for on with as by at from its their".split()
WORDS: list[str] = []
# Zipf weights summed once: ``choices(weights=...)`` sums all 30,000 on every call (hours at a
# million passages); with the sums given it draws the same words.
CUMULATIVE_WEIGHTS: list[float] = []
_SENTENCE_END = re.compile(r"(?<=\.) (?=\S)")


def vocabulary(rng: random.Random, size: int = 30_000) -> list[str]:
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def sentence(rng: random.Random) -> str:
    if not WORDS:
        WORDS.extend(vocabulary(random.Random(1)))
        CUMULATIVE_WEIGHTS.extend(itertools.accumulate(1 / rank for rank in range(1, len(WORDS) + 1)))
    content = rng.choices(WORDS, cum_weights=CUMULATIVE_WEIGHTS, k=rng.randint(8, 12))
    words = [
        content.pop() if content and rng.random() < 0.55 else rng.choice(FILLER) for _ in range(rng.randint(15, 21))
    ]
    return f"{rng.choice(WORDS[:2000]).capitalize()} {' '.join(words)} in {rng.randint(1000, 2020)}."


def write_corpus(path: Path, passages: int, rng: random.Random) -> int:
    """A JSONL corpus of about ``passages`` passages (documents of 13 sentences); its documents."""
    documents = max(1, passages // 5)
    with path.open("w") as file:
        for number in range(documents):
            text = " ".join(sentence(rng) for _ in range(13))
            file.write(
                json.dumps({"title": f"Document {number}", "url": f"https://corpus.example/{number}", "text": text})
            )
            file.write("\n")
    return documents


def synthetic_vectors(count: int, seed: int = 0, block: int = 50_000):
    """Blocks of unit vectors around subtopics of broad topics (the module's docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    broad = rng.standard_normal((100, DIM)).astype(np.float32)
    broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    subtopics = max(10, count // 200)
    sub = broad[rng.integers(0, 100, subtopics)] + rng.standard_normal((subtopics, DIM)).astype(np.float32) * 0.05
    sub /= np.linalg.norm(sub, axis=1, keepdims=True)
    for start in range(0, count, block):
        n = min(block, count - start)
        x = sub[rng.integers(0, subtopics, n)] + rng.standard_normal((n, DIM)).astype(np.float32) * 0.05
        yield (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


# -- loading ------------------------------------------------------------------------------------


def _windows(text: str, size: int = 5, stride: int = 2) -> list[str]:
    """The import's windows, split at ". " (the generated sentences all end so)."""
    sentences = _SENTENCE_END.split(text)
    if len(sentences) <= size:
        return [" ".join(sentences)]
    starts = list(range(0, len(sentences) - size + 1, stride))
    if starts[-1] + size < len(sentences):
        starts.append(len(sentences) - size)
    return [" ".join(sentences[s : s + size]) for s in starts]


def copy_passages(corpus, source: Path, limit: int) -> None:
    """PostgreSQL only, NOT the import (its time to searchable is ``imported_corpus``'s): the
    file's passages COPY-ed into a scratch table, inserted with their search vectors in one
    statement with the GIN index dropped meanwhile and built after, then VACUUM ANALYZE and the
    frequent terms as the import computes them."""
    from django.db import connection

    from annotation.evidence.corpora import FREQUENT_TERM_MIN_PASSAGES, tidy_passages
    from annotation.models import Corpus

    documents = passages = 0
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE UNLOGGED TABLE bench_passages (document int, position int, title text, url text, text text)"
        )
        with cursor.connection.cursor().copy("COPY bench_passages FROM STDIN") as copy, source.open() as lines:
            for number, line in enumerate(lines):
                if passages >= limit:
                    break
                document = json.loads(line)
                documents += 1
                for position, text in enumerate(_windows(document["text"])):
                    copy.write_row((number, position, document["title"], document["url"], text))
                    passages += 1
        cursor.execute("DROP INDEX IF EXISTS passage_search_gin")
        cursor.execute(
            "INSERT INTO annotation_passage (corpus_id, document, position, title, url, text, search) "
            "SELECT %s, document, position, title, url, text, to_tsvector('english', title || ' ' || text) "
            "FROM bench_passages ORDER BY document, position",
            [corpus.id],
        )
        cursor.execute("DROP TABLE bench_passages")
        cursor.execute("CREATE INDEX IF NOT EXISTS passage_search_gin ON annotation_passage USING gin (search)")
    tidy_passages()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT word FROM ts_stat(%s) WHERE ndoc > %s ORDER BY ndoc DESC",
            [
                f"SELECT search FROM annotation_passage WHERE corpus_id = {int(corpus.id)}",
                max(FREQUENT_TERM_MIN_PASSAGES, passages // 100),
            ],
        )
        frequent = [word for (word,) in cursor.fetchall()]
    Corpus.objects.filter(pk=corpus.pk).update(documents=documents, passages=passages, frequent_terms=frequent)


def imported_corpus(project, user, source: Path) -> tuple[object, float]:
    """The corpus through the real import (upload, check, passages, search vectors): (corpus,
    seconds until it is lexically searchable)."""
    from annotation.evidence import corpora

    started = time.perf_counter()
    with source.open("rb") as upload:  # no broker: the import runs as the corpus is created
        corpus = corpora.create_corpus(name="bench", user=user, upload=upload, projects=[project])
    corpus = corpora.run_corpus_import(corpus.id) or corpus  # a no-op when it has run
    return corpus, time.perf_counter() - started


def add_vectors(corpus) -> dict:
    """Generated vectors for every passage, appended to the corpus's index files as the worker
    appends them, the IVF-SQ8 index built over them (past VECTOR_INDEX_EXACT_MAX); the corpus
    marked ready and embedded. The index's meta, with the seconds of each step."""
    import numpy as np
    from django.conf import settings

    from annotation.evidence import vector_index
    from annotation.models import Corpus, Passage

    ids = np.fromiter(Passage.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True), np.int64)
    corpus = Corpus.objects.get(pk=corpus.pk)
    directory = vector_index.index_dir(corpus.id, vector_index.model_key())
    exact_max = settings.VECTOR_INDEX_EXACT_MAX
    blocks = ((ids[at : at + len(b)], b) for at, b in zip(range(0, len(ids), 50_000), synthetic_vectors(len(ids))))
    began = time.perf_counter()
    with vector_index._locked(directory):
        meta = vector_index._fresh(directory, vector_index.model_key(), vector_index._owner(corpus.imported_at))
        settings.VECTOR_INDEX_EXACT_MAX = 10**12  # append first, then time the IVF build on its own
        meta = vector_index._append(corpus.id, directory, meta, int(ids[-1]), source=blocks)
        appended = time.perf_counter() - began
        settings.VECTOR_INDEX_EXACT_MAX = exact_max
        began = time.perf_counter()
        meta = vector_index._append(corpus.id, directory, meta, int(ids[-1]), source=iter(()))
    Corpus.objects.filter(pk=corpus.pk).update(embedded=len(ids), embedded_through=int(ids[-1]), state="ready")
    return {**meta, "appended_s": appended, "built_s": time.perf_counter() - began, "directory": directory}


def index_mib(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.iterdir() if p.name.startswith(("ann-", "vectors-", "ids-"))) / 2**20


def ann_recall(meta: dict, corpus, queries: int = 200) -> dict[int, float]:
    """ANN recall@50 of the exact top 50 for query vectors near the data, at nprobe 8 / 16 / 32."""
    import numpy as np
    from django.conf import settings

    from annotation.evidence import vector_index

    directory = meta["directory"]
    vectors = np.memmap(directory / f"vectors-{meta['generation']}.f32", np.float32, "r", shape=(meta["rows"], DIM))
    ids = np.memmap(directory / f"ids-{meta['generation']}.i64", np.int64, "r", shape=(meta["rows"],))
    rng = np.random.default_rng(11)
    near = np.asarray(vectors[np.sort(rng.choice(meta["rows"], queries, replace=False))])
    near = near + rng.standard_normal(near.shape).astype(np.float32) * 0.05
    near = (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32)
    scores, rows = np.empty((queries, 0), np.float32), np.empty((queries, 0), np.int64)
    for start in range(0, meta["rows"], 200_000):  # exact: every vector, in blocks, the best 50 kept
        block = near @ np.asarray(vectors[start : start + 200_000]).T
        scores = np.concatenate([scores, block], axis=1)
        rows = np.concatenate([rows, np.arange(start, start + block.shape[1])[None, :].repeat(queries, 0)], axis=1)
        keep = np.argpartition(-scores, 49, axis=1)[:, :50]
        scores, rows = np.take_along_axis(scores, keep, 1), np.take_along_axis(rows, keep, 1)
    truth = [set(ids[row].tolist()) for row in rows]
    reader, recall = vector_index.reader(corpus), {}
    for nprobe in (8, 16, 32):
        settings.VECTOR_INDEX_NPROBE = nprobe
        recall[nprobe] = statistics.mean(
            len({p for p, _ in f} & t) / 50 for f, t in zip(reader.search(near, 50), truth)
        )
    settings.VECTOR_INDEX_NPROBE = None
    return recall


def bulk_corpus(project, source: Path, limit: int):
    """A ready corpus of ``project``: up to ``limit`` passages of ``source`` COPY-ed with their
    search vectors and generated vectors in its index (first_search.py's corpus)."""
    from annotation.models import Corpus, CorpusState

    corpus = Corpus.objects.create(name="bulk", state=CorpusState.READY)
    corpus.projects.set([project])
    copy_passages(corpus, source, limit)
    add_vectors(corpus)
    return Corpus.objects.get(pk=corpus.pk)
