"""The vector side of corpus_scale.py (its steps 3 and 4): generated unit vectors with neighbourhoods as
embeddings have, written to Passage.embedding with COPY; the index files' sizes; one fold of a 20,000-row tail
into the ANN index timed; ANN recall@50 against an exact scan.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

DIM = 384


def fold_seconds(directory: Path, meta: dict, vectors, tmp: Path) -> float | None:
    """Time to fold the last 20,000 vectors into the ANN index (the worker's periodic step)."""
    from annotation.evidence import vector_index

    if not meta["ann"]:
        return None
    began = time.perf_counter()
    vector_index._extend_ann(directory / meta["ann"], vectors, max(0, meta["rows"] - 20_000), tmp / "fold.faiss")
    seconds = time.perf_counter() - began
    (tmp / "fold.faiss").unlink()
    return seconds


def synthetic_vectors(count: int, seed: int = 0, block: int = 50_000):
    """Blocks of unit vectors around subtopics of broad topics (see the module's docstring)."""
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


def write_vectors(corpus_id: int) -> float:
    """Every passage of the corpus gets a generated vector (COPY into a scratch table, then one
    UPDATE); seconds taken."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM annotation_passage WHERE corpus_id = %s ORDER BY id", [corpus_id])
        ids = [row[0] for row in cursor.fetchall()]
        cursor.execute("CREATE UNLOGGED TABLE bench_vectors (id bigint PRIMARY KEY, embedding bytea)")
        raw = cursor.connection  # psycopg 3
        at = 0
        for block in synthetic_vectors(len(ids)):
            with raw.cursor().copy("COPY bench_vectors (id, embedding) FROM STDIN") as copy:
                for vector in block:
                    copy.write_row((ids[at], vector.tobytes()))
                    at += 1
        cursor.execute("UPDATE annotation_passage p SET embedding = v.embedding FROM bench_vectors v WHERE p.id = v.id")
        cursor.execute("DROP TABLE bench_vectors")
    return time.perf_counter() - started


def index_sizes(directory: Path) -> dict:
    sizes = {}
    for path in directory.iterdir():
        kind = "IVF-SQ8 (faiss)" if path.name.startswith("ann-") else path.name.split("-")[0]
        if path.name.startswith(("ann-", "vectors-", "ids-")):
            sizes[kind] = sizes.get(kind, 0) + path.stat().st_size
    return sizes


def print_recall(meta, directory, vectors, corpus) -> None:
    import numpy as np

    from annotation.evidence import vector_index

    if not meta["ann"]:
        return
    qrng = np.random.default_rng(11)
    queries = np.asarray(vectors[np.sort(qrng.choice(meta["rows"], 200, replace=False))])
    queries = queries + qrng.standard_normal(queries.shape).astype(np.float32) * 0.05
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    scores = np.empty((len(queries), 0), dtype=np.float32)
    best = np.empty((len(queries), 0), dtype=np.int64)
    for start in range(0, meta["rows"], 200_000):  # exact: every vector, in blocks
        block = queries @ np.asarray(vectors[start : start + 200_000]).T
        scores = np.concatenate([scores, block], axis=1)
        best = np.concatenate(
            [best, np.arange(start, start + block.shape[1])[None, :].repeat(len(queries), 0)],
            axis=1,
        )
        keep = np.argpartition(-scores, 49, axis=1)[:, :50]
        scores, best = np.take_along_axis(scores, keep, 1), np.take_along_axis(best, keep, 1)
    ids = np.memmap(directory / f"ids-{meta['generation']}.i64", dtype=np.int64, mode="r", shape=(meta["rows"],))
    truth = [set(ids[row].tolist()) for row in best]
    reader = vector_index.reader(corpus)
    from django.conf import settings

    recall = {}
    for nprobe in (8, 16, 32):
        settings.VECTOR_INDEX_NPROBE = nprobe
        found = reader.search(queries, 50)
        recall[nprobe] = statistics.mean(len({p for p, _ in f} & t) / 50 for f, t in zip(found, truth))
    settings.VECTOR_INDEX_NPROBE = None
    print(
        "4. ANN recall@50 of the exact top 50 (200 queries near the data): "
        + ", ".join(f"nprobe {k}: {v:.3f}" for k, v in recall.items()),
        flush=True,
    )


def mapped_mib(directory: Path) -> dict:
    """Rss (MiB) of this process's mappings of the index files under ``directory``, by file kind
    (/proc/self/smaps): which mapping the RssFile growth is."""
    kinds, kind = {"vectors": 0.0, "ids": 0.0, "ivf": 0.0}, None
    root = str(directory)
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                path = fields[5] if len(fields) == 6 else ""
                name = Path(path).name
                kind = None
                if path.startswith(root):
                    kind = "ivf" if name.startswith("ann-") else name.split("-")[0]
            elif kind in kinds and fields[0] == "Rss:":
                kinds[kind] += int(fields[1]) / 1024
    return kinds
