"""What the benchmarks share: the repository on the path; the PostgreSQL server they create their
own databases on and the Django set-up against it; timing; memory read from getrusage and /proc;
starting and stopping gunicorn (and other child servers); printing result tables.

Each benchmark makes and drops a database of its own on ``PG_SERVER`` (never ``workbench``),
so that a run never touches a developer's data.
"""

from __future__ import annotations

import http.client
import os
import resource
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

PG_SERVER = "postgres://postgres@127.0.0.1:5432"


# -- database and Django ------------------------------------------------------------------------


def admin_sql(statement: str) -> None:
    """One statement on the server's ``postgres`` database (CREATE/DROP DATABASE)."""
    import psycopg  # only the benchmarks that make databases need it

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def create_database(db_name: str) -> None:
    """A fresh, empty database (an old one of that name is dropped first)."""
    drop_database(db_name)
    admin_sql(f'CREATE DATABASE "{db_name}"')


def drop_database(db_name: str) -> None:
    admin_sql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')


def bench_environment(db_name: str, data_dir: Path | str | None = None) -> dict[str, str]:
    """The settings a benchmark's Django reads (here and in the servers it starts): its own
    database, DEBUG off (DEBUG would keep every query in memory), quiet logs."""
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{PG_SERVER}/{db_name}",
        "DJANGO_DEBUG": "false",
        # a throwaway database: a throwaway key
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,testserver",
        "LOG_LEVEL": "WARNING",
    }
    if data_dir is not None:
        env["DJANGO_DATA_DIR"] = str(data_dir)
    return env


def configure_environment(db_name: str, data_dir: Path | str | None = None) -> None:
    """``bench_environment`` in this process, without a broker (tasks run in-process); must run
    before any Django import."""
    os.environ.update(bench_environment(db_name, data_dir))
    os.environ.pop("CELERY_BROKER_URL", None)


def django_setup() -> None:
    import django

    django.setup()


def migrate() -> float:
    """Migrate the configured database; the seconds it took."""
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    return time.perf_counter() - started


# -- timing -------------------------------------------------------------------------------------


def timed(function: Callable[[], object], repeats: int = 1) -> tuple[object, list[float]]:
    """The last result of ``repeats`` calls and the wall seconds of each."""
    seconds, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - started)
    return result, seconds


def wall_and_cpu(function: Callable[[], object]) -> tuple[object, float, float]:
    """The result of one call, its wall seconds and this process's CPU seconds (the rest of the
    wall time is another process's work, I/O or waiting for a CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def describe(seconds: list[float]) -> str:
    """One time, or the best and the median of several."""
    if len(seconds) == 1:
        return f"{seconds[0]:.3f} s"
    return f"best {min(seconds):.3f} s, median {statistics.median(seconds):.3f} s of {len(seconds)}"


def percentile(values: Iterable[float], share: float) -> float:
    """The nearest-rank percentile (``share`` 0.95: p95)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def load_average() -> float:
    """The machine's 1-minute load average: other work on it inflates wall times."""
    return os.getloadavg()[0]


# -- memory -------------------------------------------------------------------------------------


def maxrss_mib() -> float:
    """This process's peak resident set (getrusage; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_of(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def status_kib(pid: int | str, key: str) -> int:
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 once the process is gone; ``pid``
    may be "self"."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mib(pid: int) -> float:
    """Resident memory of a process and its children (a gunicorn master and its workers)."""
    return sum(status_kib(p, "VmRSS") for p in [pid, *children_of(pid)]) / 1024


def reset_peak_rss(pid: int) -> None:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    except OSError:
        pass


# -- servers ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gunicorn_command(port: int, *options: str) -> list[str]:
    """gunicorn serving the app on loopback ``port`` with the settings and hooks the Makefile and
    docker-compose load (config/gunicorn.py: worker recycling, heap trimming); ``options`` such
    as --workers 4."""
    return [
        str(Path(sys.executable).with_name("gunicorn")),
        "config.wsgi",
        "--config",
        "config/gunicorn.py",
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        *options,
    ]


def start_process(command: Sequence[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    """A child server in the repository, its output to ``log``, in a session of its own so that
    stopping it reaches its workers and nothing else."""
    with log.open("wb") as output:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            list(command),
            cwd=REPO_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_processes(*processes: subprocess.Popen | None, timeout: float = 30) -> None:
    """SIGTERM to each running one, then SIGKILL to the session of any still running."""
    for process in processes:
        if process and process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        if process:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # its own session: only its workers
                process.wait(timeout=10)


def http_status(port: int, path: str, headers: dict | None = None, timeout: float = 30) -> int:
    """The status of a GET on loopback ``port``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def wait_until_answers(
    port: int,
    process: subprocess.Popen,
    log: Path,
    path: str = "/accounts/login/",
    headers: dict | None = None,
    timeout: float = 60,
    answers: int = 1,
) -> None:
    """Until the server has answered ``path`` with 200 ``answers`` times (one per worker and
    more: the clock starts on a running server); its log's end if it exits first."""
    deadline = time.monotonic() + timeout
    answered = 0
    while answered < answers:
        if process.poll() is not None:
            raise RuntimeError(f"{Path(process.args[0]).name} exited: {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{Path(process.args[0]).name} did not answer in time")
        try:
            if http_status(port, path, headers, timeout=5) == 200:
                answered += 1
                continue
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.2)


class Gunicorn:
    """A gunicorn server on loopback (``options``: the worker configuration); stopped on exit,
    whatever happens."""

    def __init__(self, options: list[str], log: Path, env: dict | None = None):
        self.port = free_port()
        self.options, self.log = options, log
        self.env = {**os.environ, "DJANGO_ALLOWED_HOSTS": "127.0.0.1"} if env is None else env
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Gunicorn:
        self.process = start_process(gunicorn_command(self.port, *self.options), self.log, self.env)
        return self

    def wait_ready(
        self,
        path: str = "/accounts/login/",
        headers: dict | None = None,
        timeout: float = 60,
        answers: int = 1,
    ) -> None:
        wait_until_answers(self.port, self.process, self.log, path, headers, timeout, answers)

    def __exit__(self, *exc) -> None:
        stop_processes(self.process)


# -- printing -----------------------------------------------------------------------------------


def print_table(header: Sequence[str], rows: Iterable[Sequence[object]], markdown: bool = False) -> None:
    """Rows under a header: columns padded to their widest cell, or a Markdown table (for
    pasting into benchmarks/README.md)."""
    cells = [[str(cell) for cell in row] for row in rows]
    if markdown:
        for row in [list(header), ["---"] * len(header), *cells]:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(str(row[i])) for row in [header, *cells]) for i in range(len(header))]
    for row in [list(header), *cells]:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
