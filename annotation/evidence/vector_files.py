"""Reading a vector index's files (annotation.evidence.vector_index) without letting them grow the
resident memory of the searching process.

Every page of a mapped file that a process touches counts in its VmRSS (as RssFile) until it is
unmapped, although it is page cache shared by every process of the machine. A searching process
that maps a corpus's files therefore grows, query after query, towards their size (gigabytes at
a million passages, benchmarks/README.md "Evidence at scale"). So:

- ``RowFile``: the float32 vectors and the int64 ids are read with ``os.preadv`` at the rows'
  offsets, through the page cache (shared, never counted in this process's RSS): only the
  candidates' rows are copied, 1.5 KiB each.
- ``MappedLists``: faiss reads the IVF index with ``IO_FLAG_MMAP`` as ``OnDiskInvertedLists``, a
  read-only shared mapping of the whole file; the pages its searches touch are dropped from this
  process's page tables (``madvise(MADV_DONTNEED)``: on a file-backed shared mapping that unmaps
  them, the page cache keeps them) once the lists probed since the last release may add up to
  ``VECTOR_INDEX_MAPPED_MAX`` MiB.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import numpy as np  # imported by vector_index only where an index is opened (not at web start)

# The kernel maps up to 64 KiB of cached pages around each fault ("fault-around"), MADV_RANDOM or not.
FAULT_AROUND = 64 * 1024
# preadv reads at most this much a call on Linux.
READ_MAX = 0x7FFFF000


class RowFile:
    """Fixed-width rows (``width`` values of ``dtype``) of the first ``rows`` of a file, read at their
    offsets. Indexing as an array: an int (a row), a slice of step 1 or an array of row numbers
    (any order, repeats allowed); ``np.asarray`` reads them all (tests, small corpora)."""

    def __init__(self, path: Path, dtype, width: int, rows: int):
        self.dtype = np.dtype(dtype)
        self.width = width
        self.rows = rows
        self.row_bytes = self.dtype.itemsize * width
        self.shape = (rows, width) if width > 1 else (rows,)
        # {row: values} of the rows a search just read (its results: read again next; a few hundred rows)
        self.recent: dict[int, np.ndarray] = {}
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        if hasattr(os, "posix_fadvise"):  # no readahead (read_ahead_kb may be MiBs) around a row read cold
            os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)

    def __len__(self) -> int:
        return self.rows

    def __del__(self, _close=os.close):  # (os may be gone at interpreter exit)
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            _close(fd)

    def _shaped(self, flat: np.ndarray, count: int) -> np.ndarray:
        return flat.reshape((count, self.width) if self.width > 1 else (count,))

    def _read_into(self, buffer: memoryview, first: int) -> None:
        offset, done = first * self.row_bytes, 0
        while done < len(buffer):
            got = os.preadv(self._fd, [buffer[done : done + READ_MAX]], offset + done)
            if got <= 0:
                raise OSError(f"short read at byte {offset + done} of a vector index file")
            done += got

    def read(self, first: int, count: int) -> np.ndarray:
        """Rows ``first`` to ``first + count - 1`` (clipped to the file's rows)."""
        count = max(0, min(count, self.rows - first))
        out = np.empty(count * self.width, dtype=self.dtype)
        self._read_into(memoryview(out.view(np.uint8)), first)
        return self._shaped(out, count)

    def take(self, rows) -> np.ndarray:
        """The given rows, in the given order: one read per run of consecutive rows."""
        rows = np.asarray(rows, dtype=np.int64).ravel()
        if not rows.size:
            return self._shaped(np.empty(0, dtype=self.dtype), 0)
        if rows.min() < 0 or rows.max() >= self.rows:
            raise IndexError(f"rows {rows.min()}..{rows.max()} outside 0..{self.rows - 1}")
        unique, inverse = np.unique(rows, return_inverse=True)
        out = np.empty(len(unique) * self.width, dtype=self.dtype)
        buffer = memoryview(out.view(np.uint8))
        breaks = np.flatnonzero(np.diff(unique) != 1) + 1
        for start, end in zip(np.concatenate(([0], breaks)), np.concatenate((breaks, [len(unique)]))):
            self._read_into(buffer[start * self.row_bytes : end * self.row_bytes], int(unique[start]))
        return self._shaped(out, len(unique))[inverse.ravel()]

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.rows)
            if step != 1:
                return self.take(np.arange(start, stop, step))
            return self.read(start, stop - start)
        if isinstance(key, (int, np.integer)):  # one read, none of take's sorting
            row = int(key) + (self.rows if key < 0 else 0)
            if not 0 <= row < self.rows:
                raise IndexError(f"row {key} outside 0..{self.rows - 1}")
            known = self.recent.get(row)
            return known if known is not None else self.read(row, 1)[0]
        return self.take(key)

    def __array__(self, dtype=None, copy=None):
        whole = self.read(0, self.rows)
        return whole if dtype is None else whole.astype(dtype)


def id_sample(ids: RowFile, stride: int) -> np.ndarray:
    """Every ``stride``-th id (the first of each block of rows), read in blocks of a million rows."""
    parts = [ids.read(first, 1 << 20)[::stride] for first in range(0, ids.rows, 1 << 20)]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def rows_of(ids: RowFile, sample: np.ndarray, stride: int, passage_ids: np.ndarray) -> np.ndarray:
    """The row of each passage id in ``ids`` (ascending), -1 where there is none: the sample
    (every ``stride``-th id, in memory) names the block, one read of the block finds the row."""
    found = np.full(len(passage_ids), -1, dtype=np.int64)
    if not ids.rows or not len(passage_ids):
        return found
    blocks = np.maximum(np.searchsorted(sample, passage_ids, side="right") - 1, 0)
    for block in np.unique(blocks):
        first = int(block) * stride
        chunk = ids.read(first, stride)
        mask = blocks == block
        wanted = passage_ids[mask]
        at = np.minimum(np.searchsorted(chunk, wanted), len(chunk) - 1)
        found[mask] = np.where(chunk[at] == wanted, first + at, -1)
    return found


_libc = None


def _madvise(address: int, length: int, advice: int) -> bool:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return _libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(length), advice) == 0


def _mapping_of(address: int, path: Path) -> int | None:
    """The length of this process's mapping of ``path`` starting at ``address``, if there is one."""
    name = str(path)
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                start, end = (int(part, 16) for part in fields[0].split("-"))
                if start == address and len(fields) == 6 and fields[5].strip() == name:
                    return end - start
    except OSError:
        return None
    return None


class MappedLists:
    """faiss's mapping of an IVF file read with IO_FLAG_MMAP, released as the searches touch it."""

    def __init__(self, index, faiss, path: Path, budget_bytes: int):
        self.address = self.length = None
        self.budget = budget_bytes
        self.touched = 0
        ivf = faiss.extract_index_ivf(index)
        lists = faiss.downcast_InvertedLists(ivf.invlists)
        if not isinstance(lists, faiss.OnDiskInvertedLists) or not lists.totsize:
            return  # read into memory (another faiss): nothing mapped to release
        address = faiss.rev_swig_ptr(lists.ptr, 1).ctypes.data
        # Only ever madvise what /proc/self/maps shows as this file's mapping (DONTNEED on
        # anonymous memory would zero it).
        length = _mapping_of(address, Path(path).resolve())
        if length is None or length < lists.totsize:
            return
        self.address, self.length = address, length
        self.per_probe = lists.totsize / max(1, ivf.nlist) + 2 * FAULT_AROUND
        _madvise(address, length, mmap.MADV_RANDOM)  # no readaround on a cold fault

    def searched(self, queries: int, nprobe: int) -> None:
        """After a search of ``queries`` vectors: release the mapping once what the searches since
        the last release may have mapped reaches the budget."""
        if self.address is None:
            return
        self.touched += queries * nprobe * self.per_probe
        if self.touched >= self.budget:
            self.release()

    def release(self) -> None:
        if self.address is not None:
            _madvise(self.address, self.length, mmap.MADV_DONTNEED)
            self.touched = 0
