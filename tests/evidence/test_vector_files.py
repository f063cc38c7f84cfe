"""Reading a vector index's files without growing the searching process's RSS
(annotation.evidence.vector_files): rows read at their offsets equal the mapped rows; faiss's
mapping of the IVF lists is released from the page tables and searches the same after."""

import os

import numpy as np
import pytest

from annotation.evidence.vector_files import MappedLists, RowFile, id_sample, rows_of

DIM = 384


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((1000, DIM)).astype(np.float32)
    ids = np.cumsum(rng.integers(1, 5, 1000)).astype(np.int64)  # ascending, with gaps
    vectors.tofile(tmp_path / "vectors.f32")
    ids.tofile(tmp_path / "ids.i64")
    return tmp_path, vectors, ids


def test_rows_read_at_offsets_equal_the_mapped_rows(files):
    path, vectors, ids = files
    mapped = np.memmap(path / "vectors.f32", dtype=np.float32, mode="r", shape=(1000, DIM))
    rows = RowFile(path / "vectors.f32", np.float32, DIM, 1000)
    assert len(rows) == 1000 and rows.shape == (1000, DIM)
    wanted = np.array([999, 3, 4, 5, 3, 0, 512, 511, 998])  # unordered, repeated, runs
    assert np.array_equal(rows.take(wanted), mapped[wanted])
    assert np.array_equal(rows[wanted], mapped[wanted])
    assert np.array_equal(rows[7], mapped[7]) and np.array_equal(rows[-1], mapped[-1])
    assert np.array_equal(rows[10:20], mapped[10:20]) and np.array_equal(rows[::100], mapped[::100])
    assert np.array_equal(np.asarray(rows), vectors)
    assert rows.take([]).shape == (0, DIM)
    id_rows = RowFile(path / "ids.i64", np.int64, 1, 1000)
    assert id_rows.shape == (1000,) and id_rows[5] == ids[5]
    assert np.array_equal(id_rows.take(wanted), ids[wanted])
    with pytest.raises(IndexError):
        rows.take([1000])


def test_only_the_rows_the_meta_names_are_read(files):
    path, vectors, _ = files
    rows = RowFile(path / "vectors.f32", np.float32, DIM, 600)  # the file holds more: a writer appending
    assert np.array_equal(np.asarray(rows), vectors[:600])
    with pytest.raises(IndexError):
        rows.take([600])


def test_a_file_cut_short_under_a_reader_is_an_error_not_garbage(files):
    path, _, _ = files
    rows = RowFile(path / "vectors.f32", np.float32, DIM, 1000)
    os.truncate(path / "vectors.f32", 500 * DIM * 4)
    assert rows.take([10]).shape == (1, DIM)
    with pytest.raises(OSError):
        rows.take([900])


@pytest.mark.parametrize("stride", [1, 4, 512])
def test_rows_of_passage_ids_through_a_sample(files, stride):
    path, _, ids = files
    id_rows = RowFile(path / "ids.i64", np.int64, 1, 1000)
    sample = id_sample(id_rows, stride)
    assert np.array_equal(sample, ids[::stride])
    missing = np.setdiff1d(np.arange(ids[-1] + 3), ids)[:20]
    wanted = np.concatenate([ids[[0, 999, 17, 600, 601]], missing, [-5, ids[-1] + 100]])
    found = rows_of(id_rows, sample, stride, wanted)
    assert list(found[:5]) == [0, 999, 17, 600, 601]
    assert (found[5:] == -1).all()


def _mapped_kib(path):
    """Rss (KiB) of this process's mappings of ``path``."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                inside = len(fields) == 6 and fields[5] == str(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_faiss_mapping_of_the_lists_is_released_and_searches_the_same(tmp_path):
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((20_000, DIM)).astype(np.float32)
    index = faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(DIM), DIM, 16, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.train(x[:5000])
    index.add(x)
    path = (tmp_path / "ann.faiss").resolve()
    faiss.write_index(index, str(path))
    mapped = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    mapped.nprobe = 16  # every list: most of the file touched
    lists = MappedLists(mapped, faiss, path, budget_bytes=1 << 40)
    assert lists.address is not None and lists.length >= path.stat().st_size
    before = mapped.search(x[:20], 10)
    assert _mapped_kib(path) > 4 * 1024
    lists.searched(20, 16)  # within the budget: kept
    assert _mapped_kib(path) > 4 * 1024
    lists.budget = 1
    lists.searched(1, 16)  # over it: released
    assert _mapped_kib(path) == 0 and lists.touched == 0
    after = mapped.search(x[:20], 10)  # faulted in again from the page cache
    assert np.array_equal(before[1], after[1]) and np.allclose(before[0], after[0])


def test_an_index_read_into_memory_has_nothing_to_release(tmp_path):
    faiss = pytest.importorskip("faiss")
    x = np.random.default_rng(3).standard_normal((2000, DIM)).astype(np.float32)
    index = faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(DIM), DIM, 4, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.train(x)
    index.add(x)
    lists = MappedLists(index, faiss, tmp_path / "none.faiss", budget_bytes=1)
    assert lists.address is None
    lists.searched(5, 4)
    lists.release()  # nothing to do, no error
