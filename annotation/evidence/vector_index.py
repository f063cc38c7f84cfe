"""The embedded passages of a corpus as an index on disk, shared by the processes of a machine.

The embedding worker writes it as it embeds (``sync`` after each batch); searching processes
open it read-only (``reader``) and read the rows they need at their offsets
(``annotation.evidence.vector_files``), so their memory does not grow with the corpus: the files
sit in the OS page cache, shared by every process of the machine, and never count in a
searching process's resident memory beyond the pages it reads now.

One directory per corpus and embedding model, ``VECTOR_INDEX_DIR/corpus-<id>/<model>/``:

- ``meta.json``: the model, the number of rows, how many of them the ANN index covers, the
  highest passage id (``through``) and a generation; rewritten atomically (rename) last, so a
  reader sees either the old or the new state, never a half-written one;
- ``vectors-<g>.f32`` / ``ids-<g>.i64``: the float32 vectors and passage ids, in passage id
  order, appended as the worker embeds (readers read only the rows the meta names);
- ``ann-<g>-<n>.faiss``: once a corpus has more than ``VECTOR_INDEX_EXACT_MAX`` rows, a faiss
  IVF index with 8-bit scalar quantisation over the first rows (labels are row numbers), read
  with ``IO_FLAG_MMAP`` (its pages dropped from the process's page tables as searches touch
  them). Rows past it (the tail) are scanned exactly until the worker adds them. ANN hits are
  re-scored with the exact vectors.

Below ``VECTOR_INDEX_EXACT_MAX`` rows the search is exact (a scan of the mapped vectors is as
fast as the ANN index there). The vectors in PostgreSQL (``Passage.embedding``) stay the source
of truth: a missing, corrupt or stale index is rebuilt from them, with a log line.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from annotation import dispatch
from annotation.models import Corpus, Passage

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

DIMENSIONS = 384
EXACT_MAX = 20_000
NPROBE = 16
# The ANN index takes the tail in once it is this long (adding is cheap; rewriting the file is not).
TAIL_MAX = 20_000
# Retrained (new centroids) when the corpus grew this many times since the last training.
RETRAIN_GROWTH = 4
# Rows read from PostgreSQL at a time when (re)building.
READ_BATCH = 20_000
# Searching processes rebuild a missing or corrupt index themselves up to this many rows, else
# they queue the rebuild and search lexically meanwhile.
REBUILD_INLINE_MAX = 20_000
# What a searching process may map of an ANN index's lists before it drops them from its page
# tables (vector_files.MappedLists; the page cache keeps them), MiB.
MAPPED_MAX_MIB = 64
# Every this many ids are held in memory to find a passage's row (one read of a block of ids).
ID_STRIDE = 512


class IndexUnusable(Exception):
    """The index on disk is missing, corrupt or stale: rebuild it."""


def setting(name: str, default):
    return getattr(settings, name, None) or default


def root() -> Path:
    configured = getattr(settings, "VECTOR_INDEX_DIR", None)
    return Path(configured) if configured else Path(settings.DATA_DIR) / "vector_index"


def model_key() -> str:
    """The embedding model the vectors come from: an index of another model's vectors is not used."""
    # with onnxruntime or torch: kept out of web start-up
    from pipeline.embedding_backends import MODEL_NAME, chosen_backend

    return f"{MODEL_NAME}-{chosen_backend()}"


def corpus_dir(corpus_id: int) -> Path:
    return root() / f"corpus-{int(corpus_id)}"


def index_dir(corpus_id: int, model: str | None = None) -> Path:
    return corpus_dir(corpus_id) / (model or model_key())


def remove(corpus_id: int) -> None:
    """Delete every index of the corpus (its vectors are made again, or it is gone)."""
    shutil.rmtree(corpus_dir(corpus_id), ignore_errors=True)


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


@contextmanager
def _locked(directory: Path):
    """One writer at a time per index (several embedding workers may serve one corpus)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_meta(directory: Path, model: str) -> dict:
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except FileNotFoundError as exc:
        raise IndexUnusable("no index yet") from exc
    except (OSError, ValueError) as exc:
        raise IndexUnusable(f"meta.json unreadable: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("model") != model or meta.get("dim") != DIMENSIONS:
        raise IndexUnusable("meta.json of another model or shape")
    rows, generation = meta.get("rows"), meta.get("generation")
    if not isinstance(rows, int) or not isinstance(generation, int) or rows < 0:
        raise IndexUnusable("meta.json incomplete")
    for name, width in (f"vectors-{generation}.f32", DIMENSIONS * 4), (f"ids-{generation}.i64", 8):
        path = directory / name
        if not path.exists() or path.stat().st_size < rows * width:
            raise IndexUnusable(f"{name} missing or shorter than {rows} rows")
    return meta


def _ann_name(meta: dict) -> str | None:
    return meta.get("ann") or None


def _faiss():
    import faiss  # heavy (and spawns OpenMP threads): only where an index is built or searched

    return faiss


def open_for_prewarm(corpus) -> Reader | None:
    """Open the corpus's index for this process ahead of its first search (``annotation.evidence.prewarm``),
    if there is a usable one on disk: None when there is none, or it is missing, corrupt or stale
    (its first search rebuilds it or queues the rebuild, as without prewarming). A search that
    asks for it meanwhile waits for this opening instead of opening a second copy (``reader``)."""
    model = model_key()
    directory = index_dir(corpus.id, model)
    stamp = _stamp(directory)
    with _lock:
        cached = _fresh_reader(corpus, model, stamp)
        if cached is not None or corpus.id in _opening:
            return cached
        opening = _opening[corpus.id] = threading.Event()
    try:
        try:
            opened = _open_checked(corpus, directory, model, stamp)
        except (IndexUnusable, OSError) as exc:
            logger.info("vector index prewarm: corpus %s not opened (%s)", corpus.id, exc)
            return None
        with _lock:
            return _readers.setdefault(corpus.id, opened)
    finally:
        with _lock:
            _opening.pop(corpus.id, None)
        opening.set()


def _build_ann(vectors: np.ndarray, path: Path) -> None:
    """An IVF index with 8-bit scalar quantisation of ``vectors`` (labels: row numbers)."""
    import numpy as np  # numpy: web workers start without it

    faiss = _faiss()
    rows = len(vectors)
    nlist = int(min(65_536, max(16, 4 * np.sqrt(rows))))
    quantizer = faiss.IndexFlatIP(DIMENSIONS)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, DIMENSIONS, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    sample = min(rows, max(50 * nlist, 50_000))
    chosen = np.sort(np.random.default_rng(0).choice(rows, sample, replace=False)) if sample < rows else slice(None)
    index.train(np.ascontiguousarray(vectors[chosen]))
    for start in range(0, rows, 100_000):
        block = np.ascontiguousarray(vectors[start : start + 100_000])
        index.add_with_ids(block, np.arange(start, start + len(block), dtype=np.int64))
    _write_index(index, path)


def _write_index(index, path: Path) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    _faiss().write_index(index, str(tmp))
    os.replace(tmp, path)


def _extend_ann(old: Path, vectors: np.ndarray, start: int, path: Path) -> None:
    import numpy as np  # numpy: web workers start without it

    faiss = _faiss()
    index = faiss.read_index(str(old))
    for first in range(start, len(vectors), 100_000):
        block = np.ascontiguousarray(vectors[first : first + 100_000])
        index.add_with_ids(block, np.arange(first, first + len(block), dtype=np.int64))
    _write_index(index, path)


def _stored_vectors(corpus_id: int, after: int, through: int):
    """(ids, vectors) blocks of the corpus's stored embeddings with after < id <= through, in id order."""
    import numpy as np  # numpy: web workers start without it

    while True:
        rows = list(
            Passage.objects.filter(corpus_id=corpus_id, embedding__isnull=False, id__gt=after, id__lte=through)
            .order_by("id")
            .values_list("id", "embedding")[:READ_BATCH]
        )
        if not rows:
            return
        ids = np.fromiter((pid for pid, _ in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(bytes(v) for _, v in rows), dtype=np.float32).reshape(len(rows), -1)
        if vectors.shape[1] != DIMENSIONS:
            raise ValueError(f"corpus {corpus_id}: stored vectors have {vectors.shape[1]} dimensions")
        yield ids, vectors
        after = int(ids[-1])


def sync(corpus_id: int, through: int | None = None, *, rebuild: bool = False) -> dict:
    """Bring the corpus's index up to its stored vectors with id <= ``through`` (default: the
    corpus's ``embedded_through``): append what is new, fold a long tail into the ANN index,
    and rebuild from PostgreSQL whatever is missing, corrupt or stale (``rebuild``: whatever
    is there, which a reader could not open). Returns the meta."""

    row = Corpus.objects.filter(pk=corpus_id).values_list("embedded_through", "imported_at").first() or (0, None)
    through = row[0] if through is None else through
    owner = _owner(row[1])
    model = model_key()
    directory = index_dir(corpus_id, model)
    with _locked(directory):
        try:
            if rebuild:
                raise IndexUnusable("a reader could not open it")
            meta = _read_meta(directory, model)
            if meta.get("corpus") != owner:
                raise IndexUnusable("it is another corpus's (a database reset reused the id)")
            if meta["through"] > through:  # re-embedded since (clear_embeddings reset the progress)
                raise IndexUnusable(f"covers passages through {meta['through']}, the corpus only through {through}")
            if (ann := _ann_name(meta)) and not (directory / ann).exists():
                raise IndexUnusable(f"{ann} missing")
            _check_first_row(corpus_id, directory, meta)
        except IndexUnusable as exc:
            if str(exc) != "no index yet":
                logger.warning(
                    "vector index of corpus %s (%s): %s; rebuilding it from the database",
                    corpus_id,
                    model,
                    exc,
                )
            meta = _fresh(directory, model, owner)
        return _append(corpus_id, directory, meta, through)


def _check_first_row(corpus_id: int, directory: Path, meta: dict) -> None:
    """Re-embedding goes in id order, so vectors made again (another model, or cleared and made
    again on another machine) show in the first row: one row read a sync."""
    import numpy as np  # numpy: web workers start without it

    if not meta["rows"]:
        return
    generation = meta["generation"]
    first_id = int(np.memmap(directory / f"ids-{generation}.i64", dtype=np.int64, mode="r", shape=(1,))[0])
    first = np.memmap(directory / f"vectors-{generation}.f32", dtype=np.float32, mode="r", shape=(1, DIMENSIONS))[0]
    stored = Passage.objects.filter(id=first_id).values_list("embedding", flat=True).first()
    if stored is None or bytes(stored) != first.tobytes():
        raise IndexUnusable("its vectors are no longer the stored ones (re-embedded)")


def _owner(imported_at) -> str:
    """Which corpus an index belongs to beyond its id: when it was imported."""
    return str(imported_at)


def _fresh(directory: Path, model: str, owner: str = "None") -> dict:
    generation = 1
    for old in directory.glob("*-*.*"):  # the old generation's files; readers keep theirs open
        try:
            generation = max(generation, int(old.name.split("-")[1].split(".")[0]) + 1)
        except (IndexError, ValueError):
            pass
        old.unlink(missing_ok=True)
    for name in (f"vectors-{generation}.f32", f"ids-{generation}.i64"):
        (directory / name).write_bytes(b"")
    meta = {
        "model": model,
        "corpus": owner,
        "dim": DIMENSIONS,
        "generation": generation,
        "rows": 0,
        "through": 0,
        "ann": None,
        "ann_rows": 0,
        "trained_rows": 0,
    }
    _write_json(directory / "meta.json", meta)
    return meta


def _append(corpus_id: int, directory: Path, meta: dict, through: int, source=None) -> dict:
    """``source``: (ids, vectors) blocks after the index's last id (default: PostgreSQL's)."""
    import numpy as np  # numpy: web workers start without it

    generation, rows = meta["generation"], meta["rows"]
    vectors_path, ids_path = (
        directory / f"vectors-{generation}.f32",
        directory / f"ids-{generation}.i64",
    )
    last = meta["through"]
    if rows:
        last = max(last, int(np.memmap(ids_path, dtype=np.int64, mode="r", shape=(rows,))[-1]))
    with open(vectors_path, "r+b") as vectors_file, open(ids_path, "r+b") as ids_file:
        # Cut off what a writer that died between appending and the meta left behind.
        vectors_file.truncate(rows * DIMENSIONS * 4)
        ids_file.truncate(rows * 8)
        vectors_file.seek(0, os.SEEK_END)
        ids_file.seek(0, os.SEEK_END)
        for ids, vectors in source if source is not None else _stored_vectors(corpus_id, last, through):
            vectors_file.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
            ids_file.write(ids.tobytes())
            rows += len(ids)
        vectors_file.flush()
        ids_file.flush()
        os.fsync(vectors_file.fileno())
        os.fsync(ids_file.fileno())
    meta = dict(meta, rows=rows, through=max(through, meta["through"]))
    exact_max = int(setting("VECTOR_INDEX_EXACT_MAX", EXACT_MAX))
    tail = rows - meta["ann_rows"]
    if rows > exact_max and (not meta["ann"] or tail > int(setting("VECTOR_INDEX_TAIL_MAX", TAIL_MAX))):
        vectors = np.memmap(vectors_path, dtype=np.float32, mode="r", shape=(rows, DIMENSIONS))
        name = f"ann-{generation}-{rows}.faiss"
        if not meta["ann"] or rows > RETRAIN_GROWTH * meta["trained_rows"]:
            _build_ann(vectors, directory / name)
            meta["trained_rows"] = rows
        else:
            _extend_ann(directory / meta["ann"], vectors, meta["ann_rows"], directory / name)
        old, meta["ann"], meta["ann_rows"] = meta["ann"], name, rows
        _write_json(directory / "meta.json", meta)
        if old:
            (directory / old).unlink(missing_ok=True)  # readers that mapped it keep their mapping
    else:
        _write_json(directory / "meta.json", meta)
    return meta


@dataclass
class Reader:
    """A corpus's index, open read-only in this process: the vectors and ids read at their rows
    (``vector_files.RowFile``), the ANN index mapped by faiss and released as it is searched, the
    rows past it (at most ``VECTOR_INDEX_TAIL_MAX``, or a corpus of ``VECTOR_INDEX_EXACT_MAX``)
    mapped for the exact scan. What the process keeps resident is bounded, whatever the corpus's
    size: benchmarks/README.md "Evidence at scale"."""

    corpus_id: int
    meta: dict
    stamp: tuple
    ids: object  # vector_files.RowFile (int64) or an empty array
    vectors: object  # vector_files.RowFile (float32 rows) or an empty array
    ann: object | None
    exact: np.ndarray | None = field(default=None, repr=False)  # rows ann_rows.. mapped
    id_sample: np.ndarray | None = field(default=None, repr=False)  # every ID_STRIDE-th id
    mapped_lists: object | None = field(default=None, repr=False)  # vector_files.MappedLists
    # {passage id: row} of the last search's results: their vectors are read next (row_of)
    recent: dict = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> int:
        return self.meta["rows"]

    def row_of(self, passage_ids: np.ndarray) -> np.ndarray:
        """The row of each passage id, -1 where the index has none."""
        import numpy as np  # numpy: web workers start without it

        from annotation.evidence.vector_files import rows_of  # loads numpy: web workers start without it

        passage_ids = np.asarray(passage_ids, dtype=np.int64)
        if not self.rows:
            return np.full(len(passage_ids), -1, dtype=np.int64)
        recent = self.recent
        found = np.fromiter((recent.get(pid, -2) for pid in passage_ids.tolist()), np.int64, len(passage_ids))
        if (unknown := found == -2).any():
            found[unknown] = rows_of(self.ids, self.id_sample, ID_STRIDE, passage_ids[unknown])
        return found

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """(passage id, cosine) of the ``k`` nearest passages to each query, best first."""
        import numpy as np  # numpy: web workers start without it

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if not self.rows or k < 1:
            return [[] for _ in queries]
        ann_rows = self.meta["ann_rows"] if self.ann is not None else 0
        candidates = [np.empty(0, dtype=np.int64) for _ in queries]
        if ann_rows:
            faiss = _faiss()
            faiss.omp_set_num_threads(1)  # one query batch is a millisecond: threads only wait on a busy machine
            nprobe = int(setting("VECTOR_INDEX_NPROBE", NPROBE))
            self.ann.nprobe = nprobe
            _, found = self.ann.search(queries, min(ann_rows, 2 * k))
            candidates = [row[row >= 0] for row in found]
            if self.mapped_lists is not None:
                self.mapped_lists.searched(len(queries), nprobe)
        if ann_rows < self.rows:  # the tail, or all of a small corpus: exact
            scores = queries @ self.exact.T
            for number, row in enumerate(scores):
                best = _top(row, 2 * k) + ann_rows
                candidates[number] = np.concatenate([candidates[number], best])
        every = np.unique(np.concatenate(candidates))  # the queries of a claim share many
        vectors = self.vectors.take(every)  # read at their offsets, re-scored in float32
        chosen, orders, kept = [], [], {}
        for query, rows in zip(queries, candidates):
            at = np.searchsorted(every, np.unique(rows))
            exact = vectors[at] @ query
            order = np.lexsort((every[at], -exact))[:k]
            chosen.append(every[at][order])
            orders.append(exact[order])
            kept.update(zip(chosen[-1].tolist(), vectors[at][order]))
        rows = np.concatenate(chosen)
        ids = self.ids.take(rows)
        self.recent = dict(zip(ids.tolist(), rows.tolist()))  # their vectors are asked for next
        self.vectors.recent = kept
        results, at = [], 0
        for rows, scores in zip(chosen, orders):
            results.append([(int(ids[at + i]), float(score)) for i, score in enumerate(scores)])
            at += len(rows)
        return results


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    import numpy as np  # numpy: web workers start without it

    k = min(k, len(scores))
    if k < 1:
        return np.empty(0, dtype=np.int64)
    return np.argpartition(scores, len(scores) - k)[-k:].astype(np.int64)


_readers: dict[int, Reader] = {}
# {corpus id: set once the prewarm's opening of its index ended}: a search waits for it
_opening: dict[int, threading.Event] = {}
_lock = threading.Lock()
# The longest a search waits for the prewarm's opening of an index, seconds: far more than one takes.
PREWARM_WAIT_SECONDS = 10


def _fresh_reader(corpus, model: str, stamp: tuple) -> Reader | None:
    """This process's open reader of the corpus if it is still current (``_lock`` held), else None
    (and a stale one forgotten)."""
    cached = _readers.get(corpus.id)
    if (
        cached is not None
        and cached.stamp == stamp
        and stamp
        and cached.meta["model"] == model
        and cached.meta["through"] <= corpus.embedded_through
    ):
        return cached
    _readers.pop(corpus.id, None)
    return None


def _stamp(directory: Path) -> tuple:
    try:
        stat = (directory / "meta.json").stat()
    except FileNotFoundError:
        return ()
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _open(corpus_id: int, directory: Path, model: str, stamp: tuple) -> Reader:
    import numpy as np  # numpy: web workers start without it

    from annotation.evidence.vector_files import (  # loads numpy: web workers start without it
        MappedLists,
        RowFile,
        id_sample,
    )

    meta = _read_meta(directory, model)
    rows, generation = meta["rows"], meta["generation"]
    ann = mapped_lists = None
    if name := _ann_name(meta):
        faiss = _faiss()
        try:
            ann = faiss.read_index(str(directory / name), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError as exc:
            raise IndexUnusable(f"{name} unreadable: {str(exc).splitlines()[0][:200]}") from exc
        if ann.ntotal != meta["ann_rows"] or ann.d != DIMENSIONS:
            raise IndexUnusable(f"{name} holds {ann.ntotal} rows, meta.json says {meta['ann_rows']}")
        budget = int(setting("VECTOR_INDEX_MAPPED_MAX", MAPPED_MAX_MIB)) * 2**20
        mapped_lists = MappedLists(ann, faiss, directory / name, budget)
    if not rows:
        empty = np.empty(0, dtype=np.int64)
        return Reader(corpus_id, meta, stamp, empty, np.empty((0, DIMENSIONS), dtype=np.float32), None)
    vectors_path = directory / f"vectors-{generation}.f32"
    ids = RowFile(directory / f"ids-{generation}.i64", np.int64, 1, rows)
    vectors = RowFile(vectors_path, np.float32, DIMENSIONS, rows)
    exact_from = meta["ann_rows"] if ann is not None else 0
    exact = None
    if exact_from < rows:  # scanned whole at every search: mapped (at most the tail or a small corpus)
        exact = np.memmap(
            vectors_path,
            dtype=np.float32,
            mode="r",
            offset=exact_from * DIMENSIONS * 4,
            shape=(rows - exact_from, DIMENSIONS),
        )
    return Reader(corpus_id, meta, stamp, ids, vectors, ann, exact, id_sample(ids, ID_STRIDE), mapped_lists)


def _open_checked(corpus, directory: Path, model: str, stamp: tuple) -> Reader:
    if not stamp:
        raise IndexUnusable("no index yet")
    opened = _open(corpus.id, directory, model, stamp)
    if opened.meta["through"] > corpus.embedded_through:
        raise IndexUnusable("stale: the corpus was re-embedded since")
    if opened.meta.get("corpus") != _owner(getattr(corpus, "imported_at", None)):
        raise IndexUnusable("it is another corpus's (a database reset reused the id)")
    return opened


def reader(corpus) -> Reader | None:
    """This process's read-only view of the corpus's index, reopened when the worker changed it
    (a stat of meta.json a search). None when there is none to search yet: a missing, corrupt
    or stale index is rebuilt here when small, else its rebuild is queued (with a log line) and
    retrieval is lexical meanwhile."""
    model = model_key()
    directory = index_dir(corpus.id, model)
    stamp = _stamp(directory)
    with _lock:
        cached = _fresh_reader(corpus, model, stamp)
        opening = _opening.get(corpus.id) if cached is None else None
    if opening is not None:  # the prewarm is opening it right now: its reader, not a second opening
        began = time.perf_counter()
        opening.wait(PREWARM_WAIT_SECONDS)
        logger.info(
            "vector index of corpus %s: waited %.0f ms for the prewarm's opening",
            corpus.id,
            1000 * (time.perf_counter() - began),
        )
        with _lock:
            cached = _fresh_reader(corpus, model, stamp)
    if cached is not None:
        return cached
    if not corpus.embedded_through:
        return None
    try:
        opened = _open_checked(corpus, directory, model, stamp)
    except IndexUnusable as exc:
        if corpus.embedded > int(setting("VECTOR_INDEX_REBUILD_INLINE_MAX", REBUILD_INLINE_MAX)):
            logger.warning(
                "vector index of corpus %s: %s; rebuild queued, dense search skipped meanwhile",
                corpus.id,
                exc,
            )
            _queue_rebuild(corpus.id)
            return None
        logger.warning("vector index of corpus %s: %s; rebuilding it here", corpus.id, exc)
        sync(corpus.id, corpus.embedded_through, rebuild=str(exc) != "no index yet")
        stamp = _stamp(directory)
        try:
            opened = _open(corpus.id, directory, model, stamp)
        except IndexUnusable as again:  # written by another process meanwhile, or the disk is failing
            logger.error("vector index of corpus %s still unusable after a rebuild: %s", corpus.id, again)
            return None
    with _lock:
        _readers[corpus.id] = opened
    _queued.discard(corpus.id)
    return opened


_queued: set[int] = set()


def _queue_rebuild(corpus_id: int) -> None:
    if corpus_id in _queued:
        return
    _queued.add(corpus_id)
    dispatch.send("build_vector_index", corpus_id)


def forget(corpus_id: int) -> None:
    with _lock:
        _readers.pop(corpus_id, None)
    _queued.discard(corpus_id)
