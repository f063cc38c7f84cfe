"""What the benchmarks share: the repository on the path, the PostgreSQL server they create
their own databases on, and reading a process tree's memory from /proc.

Each benchmark makes and drops a database of its own on ``PG_SERVER`` (never ``workbench``),
so that a run never touches a developer's data.
"""
from __future__ import annotations

import socket
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

PG_SERVER = "postgres://postgres@127.0.0.1:5432"


def admin_sql(statement: str) -> None:
    """One statement on the server's ``postgres`` database (CREATE/DROP DATABASE)."""
    import psycopg  # only the benchmarks that make databases need it

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def children_of(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def status_kib(pid: int, key: str) -> int:
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak_rss(pid: int) -> None:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass
