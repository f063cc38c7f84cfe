"""corpus_scale.py's searching process at a size its import does not reach in a session on a loaded
machine: retrieval + ranking per claim over a large corpus on PostgreSQL.

Usage:
  .venv/bin/python benchmarks/corpus_bulk.py --database NAME --corpus-file corpus.jsonl --work-dir DIR

The corpus file is corpus_scale.py's generated JSONL (its --work-dir keeps it). Its documents are cut
into windows of 5 sentences every 2 (as the import cuts them, with a split at ". " instead of the
sentence splitter: the generated sentences all end so), COPY-ed into a scratch table and inserted
into annotation_passage with their search vectors in one statement, the GIN index dropped meanwhile
and built after, then VACUUM ANALYZE and the frequent terms as the import computes them. This is NOT
the import: its time to searchable is corpus_scale.py's step 1. The database is not emptied (run
it on corpus_scale's database, or one migrated otherwise); the corpus is added beside what is there.

Vectors are generated, not embedded (corpus_vectors.synthetic_vectors): written straight into the
index files with the passages' ids (PostgreSQL's Passage.embedding stays empty: searching reads the
candidates' vectors from the mapped index) and the IVF-SQ8 index built as the worker builds it.
Then corpus_scale.py's searching process runs on the corpus (query vectors are embedded by the
model, so dense hits are not related to the text: the timing is what is measured).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_scale import run_searching_process  # noqa: E402
from corpus_vectors import DIM, index_sizes, synthetic_vectors  # noqa: E402
from harness import configure_environment, django_setup, load_average  # noqa: E402

_SENTENCE_END = re.compile(r"(?<=\.) (?=\S)")


def windows(text: str, size: int = 5, stride: int = 2) -> list[str]:
    sentences = _SENTENCE_END.split(text)
    if len(sentences) <= size:
        return [" ".join(sentences)]
    starts = list(range(0, len(sentences) - size + 1, stride))
    if starts[-1] + size < len(sentences):
        starts.append(len(sentences) - size)
    return [" ".join(sentences[s : s + size]) for s in starts]


def documents_of(source: Path):
    """The file's documents, and again from the start when it runs out (a shorter file, or one
    cut short: a broken last line ends a pass), each further pass's texts made distinct by a
    sentence naming the pass (its words are frequent, so left out of full-text queries)."""
    cycle = 0
    while True:
        found = 0
        with source.open() as lines:
            for line in lines:
                try:
                    document = json.loads(line)
                except ValueError:
                    break
                found += 1
                if cycle:
                    document["text"] = f"{document['text']} Copy {cycle}."
                yield document
        if not found:
            return
        cycle += 1


def load_passages(corpus_id: int, source: Path, limit: int, drop_gin: bool) -> tuple[int, int]:
    """(documents, passages) COPY-ed and inserted with their search vectors."""
    from django.db import connection

    documents = passages = 0
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE UNLOGGED TABLE bench_passages (document int, position int, title text, url text, text text)"
        )
        with cursor.connection.cursor().copy(
            "COPY bench_passages (document, position, title, url, text) FROM STDIN"
        ) as copy:
            for number, document in enumerate(documents_of(source)):
                if passages >= limit:
                    break
                documents += 1
                for position, text in enumerate(windows(document["text"])):
                    copy.write_row((number, position, document.get("title", ""), document.get("url", ""), text))
                    passages += 1
        if drop_gin:
            cursor.execute("DROP INDEX IF EXISTS passage_search_gin")
        cursor.execute(
            "INSERT INTO annotation_passage (corpus_id, document, position, title, url, text, search) "
            "SELECT %s, document, position, title, url, text, to_tsvector('english', title || ' ' || text) "
            "FROM bench_passages ORDER BY document, position",
            [corpus_id],
        )
        cursor.execute("DROP TABLE bench_passages")
    return documents, passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--corpus-file", required=True)
    parser.add_argument("--work-dir", required=True, help="DATA_DIR (the index) goes under it, and is kept")
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--keep-gin", action="store_true", help="insert into the GIN index, not build it after")
    args = parser.parse_args()
    data_dir = Path(args.work_dir) / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    configure_environment(args.database, data_dir)
    django_setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.services.projects import create_project

    admin = get_user_model().objects.create_user(f"bulk-{time.time_ns()}", password="x" * 12, is_staff=True)
    project = create_project(name=f"Corpus bulk {time.time_ns()}", kind="factcheck", created_by=admin)
    corpus = bulk_corpus(project, Path(args.corpus_file), args.passages, keep_gin=args.keep_gin)
    print(
        f"   searching process again: corpus_scale.py --database {args.database} --search-child {corpus.id} "
        f"--data-dir {data_dir}",
        flush=True,
    )
    connection.close()
    print(run_searching_process(args.database, corpus.id, args.claims, data_dir), flush=True)


def bulk_corpus(project, source: Path, limit: int, keep_gin: bool = False):
    """A ready corpus of ``project``: up to ``limit`` passages of ``source`` loaded with their
    search vectors (GIN index, VACUUM ANALYZE, frequent terms), generated vectors in its index
    files and the IVF-SQ8 index built (this module's docstring); each step's time printed."""
    import numpy as np
    from django.conf import settings
    from django.db import connection

    from annotation.evidence import vector_index
    from annotation.evidence.corpora import FREQUENT_TERM_MIN_PASSAGES, tidy_passages
    from annotation.models import Corpus, CorpusState

    corpus = Corpus.objects.create(name="bulk", state=CorpusState.READY)
    corpus.projects.set([project])

    began = time.perf_counter()
    documents, passages = load_passages(corpus.id, source, limit, not keep_gin)
    loaded = time.perf_counter() - began
    print(
        f"1. {passages} passages of {documents} documents COPY-ed with their search vectors in {loaded:.0f} s; "
        f"load {load_average():.1f}",
        flush=True,
    )
    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX IF NOT EXISTS passage_search_gin ON annotation_passage USING gin (search)")
    indexed = time.perf_counter() - began
    began = time.perf_counter()
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
        cursor.execute("SELECT min(id), max(id) FROM annotation_passage WHERE corpus_id = %s", [corpus.id])
        first, last = cursor.fetchone()
        cursor.execute("SELECT pg_total_relation_size('annotation_passage'), pg_relation_size('passage_search_gin')")
        table_bytes, gin_bytes = cursor.fetchone()
    assert last - first + 1 == passages, "passage ids are not consecutive"
    Corpus.objects.filter(pk=corpus.pk).update(
        documents=documents,
        passages=passages,
        embedded=passages,
        embedded_through=last,
        frequent_terms=frequent,
    )
    print(
        f"2. GIN index built in {indexed:.0f} s, VACUUM ANALYZE + frequent terms {time.perf_counter() - began:.0f} "
        f"s ({len(frequent)} frequent); table {table_bytes / 2**20:.0f} MiB (all corpora in it, no vectors), GIN "
        f"{gin_bytes / 2**20:.0f} MiB; load {load_average():.1f}",
        flush=True,
    )

    model = vector_index.model_key()
    directory = vector_index.index_dir(corpus.id, model)
    began = time.perf_counter()
    blocks = (
        (np.arange(first + start, first + start + len(block), dtype=np.int64), block)
        for start, block in zip(range(0, passages, 50_000), synthetic_vectors(passages))
    )
    with vector_index._locked(directory):
        meta = vector_index._fresh(directory, model)
        settings.VECTOR_INDEX_EXACT_MAX = 10**12  # append first, then time the IVF build on its own
        meta = vector_index._append(corpus.id, directory, meta, last, source=blocks)
        appended = time.perf_counter() - began
        settings.VECTOR_INDEX_EXACT_MAX = 20_000
        began = time.perf_counter()
        meta = vector_index._append(corpus.id, directory, meta, last, source=iter(()))
        built = time.perf_counter() - began
    assert meta["rows"] == passages and (meta["ann"] or passages <= vector_index.EXACT_MAX), meta
    sizes = index_sizes(directory)
    print(
        f"3. {passages} generated vectors (not embedded, {DIM} dimensions) appended to the index files in "
        f"{appended:.0f} s; IVF-SQ8 built in {built:.0f} s; files: "
        + ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in sorted(sizes.items()))
        + f"; load {load_average():.1f}",
        flush=True,
    )
    return Corpus.objects.get(pk=corpus.pk)


if __name__ == "__main__":
    main()
