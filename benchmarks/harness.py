"""What the benchmarks share: the repository on the path; the database they create (on the
PostgreSQL server, or a SQLite file for a quick run) and the Django set-up against it; timing;
memory and CPU read from getrusage and /proc; starting and stopping gunicorn, Celery workers (and
other child servers); the figures a headline reports and the table they print in.

Each benchmark makes and drops a database of its own on ``PG_SERVER`` (never ``workbench``), or
a SQLite file when the name is a path, so that a run never touches a developer's data.
"""

from __future__ import annotations

import contextlib
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
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

PG_SERVER = "postgres://postgres@127.0.0.1:5432"
# one key a run, so that the servers it starts read the sessions it makes (a throwaway database)
_SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)


# -- database and Django ------------------------------------------------------------------------


def is_sqlite(db_name: str) -> bool:
    """A database named by a path is a SQLite file (the quick run); any other name is a database
    on ``PG_SERVER``."""
    return "/" in db_name


def database_url(db_name: str) -> str:
    return f"sqlite:///{db_name}" if is_sqlite(db_name) else f"{PG_SERVER}/{db_name}"


def admin_sql(statement: str) -> None:
    """One statement on the server's ``postgres`` database (CREATE/DROP DATABASE)."""
    import psycopg  # only the benchmarks that make databases need it

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(statement)


def create_database(db_name: str) -> None:
    """A fresh, empty database (an old one of that name is dropped first); a SQLite file is made
    by the first connection."""
    drop_database(db_name)
    if not is_sqlite(db_name):
        admin_sql(f'CREATE DATABASE "{db_name}"')


def drop_database(db_name: str) -> None:
    if is_sqlite(db_name):
        for suffix in ("", "-wal", "-shm"):
            Path(db_name + suffix).unlink(missing_ok=True)
        return
    admin_sql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')


def bench_environment(db_name: str, data_dir: Path | str | None = None) -> dict[str, str]:
    """The settings a benchmark's Django reads (here and in the servers it starts): its own
    database, DEBUG off (DEBUG would keep every query in memory), quiet logs."""
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(db_name),
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": _SECRET_KEY,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,testserver",
        "LOG_LEVEL": "WARNING",
    }
    if data_dir is not None:
        env["DJANGO_DATA_DIR"] = str(data_dir)
    return env


def configure_environment(db_name: str, data_dir: Path | str | None = None, cache_url: str | None = None) -> None:
    """``bench_environment`` in this process, without a broker (tasks run in-process); with
    ``cache_url`` (a Redis) the cache the servers it starts share with it, under a key prefix of
    the run's own. Must run before any Django import."""
    os.environ.update(bench_environment(db_name, data_dir))
    os.environ.pop("CELERY_BROKER_URL", None)
    if cache_url:
        os.environ.update({"CACHE_URL": cache_url, "CACHE_KEY_PREFIX": f"bench-{secrets.token_hex(4)}"})


def django_setup() -> None:
    import django

    django.setup()


def server_environment(db_name: str, data_dir: Path, broker: str | None, queue: str) -> dict[str, str]:
    """The environment of the servers a benchmark starts (gunicorn, Celery): ``bench_environment``
    and, with a ``broker``, a queue of the benchmark's own for every task (so a worker of another
    run or person never takes them); without one, tasks run in the web process, as the embedded
    default runs them."""
    env = {**os.environ, **bench_environment(db_name, data_dir), "DJANGO_ALLOWED_HOSTS": "127.0.0.1"}
    env.pop("CELERY_BROKER_URL", None)
    if broker:
        env.update({"CELERY_BROKER_URL": broker, "CELERY_TASK_DEFAULT_QUEUE": queue, "INTERACTIVE_QUEUE": queue})
    return env


@dataclass
class Run:
    """What a headline runs against: the database (set up, migrated, Django configured in this
    process), a temporary directory, the broker for the servers it starts (None: tasks in-process),
    whether it is the quick run (small sizes, the plumbing only) and headline options."""

    db_name: str
    tmp: Path
    broker: str | None = None
    quick: bool = False
    options: dict = field(default_factory=dict)

    def server_env(self, name: str) -> dict[str, str]:
        data = self.tmp / f"data-{name}"
        data.mkdir(parents=True, exist_ok=True)
        return server_environment(self.db_name, data, self.broker, f"bench-{name}-{secrets.token_hex(4)}")


@contextlib.contextmanager
def bench_database(db_name: str, data_dir: Path | None = None, cache_url: str | None = None, keep: bool = False):
    """A benchmark run alone: its database created, Django set up against it (tasks in-process)
    and migrated; dropped at the end whatever happens (SIGTERM included) unless ``keep``."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    configure_environment(db_name, data_dir, cache_url)
    create_database(db_name)
    try:
        django_setup()
        migrate()
        yield
    finally:
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        if not keep:
            drop_database(db_name)


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


def status_mb() -> dict:
    """This process's resident memory by kind (MiB), from /proc/self/status."""
    return {key: status_kib("self", key) / 1024 for key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM")}


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


def celery_worker_command(queue: str, hostname: str, loglevel: str = "WARNING") -> list[str]:
    """One Celery worker of the app (``--pool=solo``: one task at a time, as a small deployment
    runs it) serving only ``queue``, named ``hostname`` (``name@host``), without the chatter
    between workers (gossip, mingle, heartbeats) that a benchmark's lone worker does not need."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--pool=solo",
        f"--loglevel={loglevel}",
        "-Q",
        queue,
        "--hostname",
        hostname,
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def worker_answers_ping(broker_url: str, hostname: str, timeout: float = 1.0) -> bool:
    """Whether the worker named ``hostname`` answers a remote-control ping on ``broker_url``:
    it has connected to the broker and consumes (a bare Celery app: no Django needed here)."""
    from celery import Celery  # only the benchmarks that start workers need it

    # not made the current app: in a test process that would take over from the project's own
    app = Celery(broker=broker_url, set_as_current=False)
    try:
        return bool(app.control.ping(destination=[hostname], timeout=timeout))
    finally:
        app.close()


def wait_until_worker_ready(
    process: subprocess.Popen, log: Path, broker_url: str, hostname: str, timeout: float = 60
) -> float:
    """Until the worker answers a ping (the clock of a benchmark starts on a consuming worker,
    not on one still importing Django); its log's end if it exits first. The seconds waited."""
    started = time.monotonic()
    while not worker_answers_ping(broker_url, hostname):
        if process.poll() is not None:
            raise RuntimeError(f"the Celery worker exited: {log.read_text()[-3000:]}")
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"the Celery worker did not answer a ping in {timeout:.0f} s: {log.read_text()[-3000:]}")
        time.sleep(0.2)
    return time.monotonic() - started


def start_worker(
    env: dict, log: Path, name: str = "bench", wait: bool = True, timeout: float = 60, loglevel: str = "WARNING"
):
    """A Celery worker (``celery_worker_command``) on the queue ``env["CELERY_TASK_DEFAULT_QUEUE"]``
    of the broker ``env["CELERY_BROKER_URL"]``, in a session of its own (``start_process``);
    with ``wait``, returned once it answers a ping. Returns (process, its hostname)."""
    hostname = f"{name}-{secrets.token_hex(3)}@{socket.gethostname()}"
    process = start_process(celery_worker_command(env["CELERY_TASK_DEFAULT_QUEUE"], hostname, loglevel), log, env)
    if wait:
        try:
            wait_until_worker_ready(process, log, env["CELERY_BROKER_URL"], hostname, timeout)
        except BaseException:
            stop_processes(process)
            raise
    return process, hostname


# -- CPU per process group ----------------------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_ticks(pid: int) -> int:
    """utime + stime of a process in clock ticks (/proc/PID/stat), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of the line, after "pid (comm)"


def database_cpu_seconds() -> float:
    """CPU seconds so far of the PostgreSQL backend serving this process's connection (a local
    server: /proc); NaN on SQLite, whose work is this process's own."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return float("nan")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return process_cpu_ticks(cursor.fetchone()[0]) / CLOCK_TICKS


def tree_pids(pid: int) -> list[int]:
    """A process and all its descendants."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children_of(current))
    return found


def pids_matching(*fragments: str) -> list[int]:
    """Processes whose command line contains every fragment (e.g. PostgreSQL backends of one
    database: their title names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(fragment in command for fragment in fragments):
                found.append(int(entry.name))
    return found


def machine_busy_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot (/proc/stat's first line)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values[:8]) - idle, sum(values[:8])


class CpuSampler:
    """CPU seconds spent by named groups of processes while it runs: ``groups`` maps a name to
    a function returning the group's pids now (processes come and go: each pid's ticks are
    counted from the first sample, a process that ends between two samples loses its last
    interval; one that starts while it runs counts from its start). The machine's busy time is read too, so the rest (other people's work on a
    shared machine) shows."""

    def __init__(self, groups: dict[str, Callable[[], Iterable[int]]], interval: float = 0.5):
        import threading

        self.groups, self.interval = groups, interval
        self.seconds = dict.fromkeys(groups, 0.0)
        self._last: dict[tuple[str, int], int] = {}
        self._first = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for name, pids in self.groups.items():
            for pid in set(pids()):
                ticks = process_cpu_ticks(pid)
                # a process that started during the run counts from its start
                previous = self._last.get((name, pid), None if self._first else 0)
                if previous is not None and ticks >= previous:
                    self.seconds[name] += (ticks - previous) / CLOCK_TICKS
                self._last[(name, pid)] = ticks
        self._first = False

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> CpuSampler:
        self._machine = machine_busy_ticks()
        self._wall = time.monotonic()
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        busy, total = machine_busy_ticks()
        self.wall = time.monotonic() - self._wall
        self.machine_busy = (busy - self._machine[0]) / CLOCK_TICKS
        self.machine_capacity = (total - self._machine[1]) / CLOCK_TICKS

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(group, CPU seconds, cores on average, share of the machine's busy time); the last
        rows: everything else that ran, and the machine."""
        busy = max(self.machine_busy, 1e-9)
        rest = self.machine_busy - sum(self.seconds.values())
        named = [*self.seconds.items(), ("everything else (other users' work)", rest)]
        rows = [(name, f"{cpu:.1f}", f"{cpu / self.wall:.2f}", f"{100 * cpu / busy:.0f} %") for name, cpu in named]
        machine = f"machine: busy of {self.machine_capacity:.0f} CPU-s in {self.wall:.0f} s"
        rows.append((machine, f"{self.machine_busy:.1f}", f"{self.machine_busy / self.wall:.2f}", "100 %"))
        return rows


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


@dataclass
class Figure:
    """One line of the suite's table: a measured ``value`` against its ``target`` (None: no target
    at this size), ``lower`` when smaller is better."""

    name: str
    value: float | None
    unit: str
    target: float | None = None
    lower: bool = True
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.value is None or self.target is None:
            return None
        return self.value <= self.target if self.lower else self.value >= self.target

    def cells(self) -> tuple[str, str, str, str]:
        def number(value: float) -> str:
            return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"

        value = "error" if self.value is None else f"{number(self.value)} {self.unit}"
        target = "–" if self.target is None else f"{'≤' if self.lower else '≥'} {number(self.target)} {self.unit}"
        met = {True: "met", False: "missed", None: "–"}[self.met]
        return self.name, value + (f" ({self.note})" if self.note else ""), target, met


def print_figures(figures: Iterable[Figure], markdown: bool = False) -> None:
    print_table(("figure", "value", "target", "met/missed"), [figure.cells() for figure in figures], markdown)
