"""ANN recall@50 of the corpus vector index on real embeddings (issue 23): evidence_search.py --recall measures it
on generated vectors only.

Usage:
  .venv/bin/python benchmarks/quality/embedded_recall.py [--passages 25000] [--cache /tmp/recall.npz]

Passages: the released Factcheck-Bench evidence (``auto_evidence``, /work/shared/data or
``--data``) as retrieved (one passage each), cut into windows of two consecutive sentences, and,
to reach ``--passages``, natural-ish passages of two sentences drawn from different evidence
texts (real sentences, mixed topics). Queries: the benchmark's claims and questions (what step 2
searches with). Embedded with the project's backend (pipeline.embedding_backends, EMBEDDING_BACKEND,
all-MiniLM-L6-v2 int8 ONNX by default; ``--cache`` keeps the vectors for a rerun), written to a
vector index as the worker writes it (vector_index._append: the IVF-SQ8 index is built since the
corpus is above VECTOR_INDEX_EXACT_MAX), and searched through vector_index.Reader at nprobe 8 / 16 /
32 / 64 against an exact scan of every vector.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import REPO_ROOT, configure_environment, django_setup, load_average  # noqa: E402

DATA = REPO_ROOT.parent / "shared" / "data" / "factcheck-bench" / "factcheck-GPT-benchmark.jsonl"
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def texts(path: Path, passages: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """(passages, queries) from the released benchmark."""
    evidence, queries = [], []
    for line in path.open():
        item = json.loads(line)
        queries.append(item["prompt"])
        for sentence in item["sentences"].values():
            queries.extend(sentence.get("claims") or [])
            for found in sentence.get("auto_evidence") or []:
                evidence.extend(text.strip() for text in found if text and text.strip())
    evidence = list(dict.fromkeys(evidence))
    split = [[s for s in SENTENCE_END.split(text) if len(s) > 20] for text in evidence]
    windows = [" ".join(s[i : i + 2]) for s in split for i in range(max(0, len(s) - 1))]
    out = list(dict.fromkeys(evidence + windows))
    print(f"{len(evidence)} evidence passages and {len(out) - len(evidence)} two-sentence windows of them", flush=True)
    sentences = [(n, s) for n, parts in enumerate(split) for s in parts]
    while len(out) < passages:
        (a, first), (b, second) = rng.sample(sentences, 2)
        if a != b:
            out.append(f"{first} {second}")
    rng.shuffle(out)
    return out[:passages], list(dict.fromkeys(queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=25_000)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--cache", default=None, help="an .npz keeping the embeddings for a rerun")
    args = parser.parse_args()
    import logging

    logging.disable(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="embedded-recall-") as tmp:
        configure_environment("unused", Path(tmp))
        django_setup()
        run(args, Path(tmp))


def embedded(args, passages: list[str], queries: list[str]):
    import numpy as np

    from pipeline.embedding_backends import load

    cache = Path(args.cache) if args.cache else None
    if cache and cache.exists():
        stored = np.load(cache)
        if len(stored["passages"]) == len(passages) and len(stored["queries"]) == len(queries):
            print(f"embeddings read from {cache.name}", flush=True)
            return stored["passages"], stored["queries"]
    encoder = load()
    began, cpu = time.perf_counter(), time.process_time()
    vectors = encoder.encode(passages, batch_size=64, normalize_embeddings=True)
    seconds = time.perf_counter() - began
    print(
        f"embedded {len(passages)} passages with {getattr(encoder, 'backend', '?')} in {seconds:.0f} s "
        f"({len(passages) / seconds:.0f} passages/s, CPU {time.process_time() - cpu:.0f} s); load {load_average():.1f}",
        flush=True,
    )
    asked = encoder.encode(queries, batch_size=64, normalize_embeddings=True)
    if cache:
        np.savez(cache, passages=vectors, queries=asked)
    return vectors, asked


def run(args, tmp: Path) -> None:
    import numpy as np
    from django.conf import settings

    from annotation.evidence import vector_index

    passages, queries = texts(Path(args.data), args.passages, random.Random(3))
    print(
        f"{len(passages)} passages (median {statistics.median(len(p) for p in passages):.0f} characters), "
        f"{len(queries)} queries (claims and questions)",
        flush=True,
    )
    vectors, asked = embedded(args, passages, queries)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    asked = np.ascontiguousarray(asked, dtype=np.float32)
    model = vector_index.model_key()
    directory = vector_index.index_dir(1, model)
    ids = np.arange(1, len(vectors) + 1, dtype=np.int64)
    began = time.perf_counter()
    with vector_index._locked(directory):
        meta = vector_index._fresh(directory, model)
        meta = vector_index._append(1, directory, meta, len(vectors), source=iter([(ids, vectors)]))
    assert meta["ann"], "the corpus is too small for an ANN index (VECTOR_INDEX_EXACT_MAX)"
    reader = vector_index._open(1, directory, model, ())
    nlist = vector_index._faiss().extract_index_ivf(reader.ann).nlist
    print(f"IVF-SQ8 index: nlist {nlist}, built in {time.perf_counter() - began:.0f} s", flush=True)
    scores = asked @ vectors.T
    truth = [set((ids[np.argpartition(-row, 49)[:50]]).tolist()) for row in scores]
    fiftieth = np.sort(scores, axis=1)[:, -50]
    print(
        f"cosine of the 1st / 50th neighbour (median over queries): {np.median(scores.max(axis=1)):.2f} / "
        f"{np.median(fiftieth):.2f}; of a random passage {np.median(scores):.2f}",
        flush=True,
    )
    for nprobe in (8, 16, 32, 64, 128):
        settings.VECTOR_INDEX_NPROBE = nprobe
        began = time.process_time()
        found = reader.search(asked, 50)
        cpu = (time.process_time() - began) / len(asked)
        recalls = [len({pid for pid, _ in f} & t) / 50 for f, t in zip(found, truth)]
        print(
            f"nprobe {nprobe:>3}: recall@50 mean {statistics.mean(recalls):.3f}, 10th percentile "
            f"{np.percentile(recalls, 10):.2f}, worst {min(recalls):.2f}; CPU {1000 * cpu:.2f} ms a query; "
            f"load {load_average():.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
