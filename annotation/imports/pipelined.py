"""What lets an import's Python and PostgreSQL work at the same time: the lines read and checked
on a thread of their own while the importing thread waits for the database, and the foreign keys
of the rows written checked by each statement (while the reader parses on) instead of all at
the COMMIT (after everything else)."""

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from annotation.imports.reading import Reading


@contextmanager
def read_ahead(entries: Iterator, reading: Reading, batch_size: int):
    """``entries`` read and checked on a thread of their own, each given with the reader's
    (lines, bytes) after it, so that parsing the next lines runs while this thread waits for the
    database to take the last batch (psycopg and sqlite3 release the GIL while they wait). A
    10,000-line FELM import spends about as long in each. An exception of the reader is raised
    here, at the entry where it happened; leaving the block early stops the reader."""
    # handed over 200 entries at a time (a tenth of a batch), at most a batch ahead of the
    # writer: memory stays at about two batches whatever the file's size
    size = max(1, min(200, batch_size // 10))
    chunks: queue.Queue = queue.Queue(maxsize=max(1, batch_size // size))
    stop = threading.Event()

    def put(chunk) -> bool:
        while not stop.is_set():
            try:
                chunks.put(chunk, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        chunk: list = []
        try:
            for entry in entries:
                chunk.append((entry, reading.lines, reading.bytes))
                if len(chunk) >= size:
                    if not put(chunk):
                        return
                    chunk = []
            put(chunk)
            put(None)
        except BaseException as exc:  # handed to the importing thread, raised there
            put(chunk)
            put(exc)
        finally:
            entries.close()

    def received():
        while True:
            chunk = chunks.get()
            if chunk is None:
                return
            if isinstance(chunk, BaseException):
                raise chunk
            yield from chunk

    reader = threading.Thread(target=read, name="import-reader", daemon=True)
    reader.start()
    try:
        yield received()
    finally:
        stop.set()
        reader.join()


def constraints_checked_per_statement() -> bool:
    """On PostgreSQL, the foreign keys of the rows this import writes (item→project, stage→item,
    assignment→stage and →user: 60,000 checks at 10,000 FELM items) are checked at the end of each
    statement instead of all at the COMMIT: the same checks, but while the reader parses the
    next lines, not after everything else."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    return True


def constraints_deferred_again() -> None:
    """Back to Django's initially deferred foreign keys for the rest of an enclosing transaction."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
