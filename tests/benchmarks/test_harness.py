"""benchmarks/harness.py: starting a Celery worker and waiting for it, CPU per process group."""

import os
import subprocess
import sys
import time
import uuid

import pytest

from benchmarks import harness
from tests.helpers.stack import skip_without_service

SPIN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n"


def spinner(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=seconds)])


def test_the_worker_command_serves_only_its_queue_under_its_name():
    command = harness.celery_worker_command("bench-q", "bench-1@host")
    assert command[command.index("-Q") + 1] == "bench-q"
    assert command[command.index("--hostname") + 1] == "bench-1@host"
    assert "--pool=solo" in command and "--without-mingle" in command


def test_the_cpu_sampler_counts_a_group_s_cpu_and_a_process_started_while_it_runs():
    early = spinner(0.6)
    late: list[subprocess.Popen] = []
    try:
        sampler = harness.CpuSampler(
            {"early": lambda: [early.pid], "late": lambda: [p.pid for p in late], "idle": lambda: []}, interval=0.05
        )
        with sampler:
            late.append(spinner(0.6))
            early.wait(timeout=30)
            late[0].wait(timeout=30)
            time.sleep(0.1)
    finally:
        for process in [early, *late]:
            process.kill()
    # a process that ends between two samples loses its last interval; the late one counts from its start
    assert 0.3 < sampler.seconds["early"] < 1.0
    assert 0.3 < sampler.seconds["late"] < 1.0
    assert sampler.seconds["idle"] == 0
    names = [row[0] for row in sampler.rows()]
    assert names[:3] == ["early", "late", "idle"] and names[-2].startswith("everything else")
    assert sampler.machine_busy >= sampler.seconds["early"] + sampler.seconds["late"] - 0.2


def test_tree_pids_and_pids_matching_find_a_child_by_its_command_line():
    marker = f"harness-{uuid.uuid4().hex}"
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(30)  # {marker}"])
    try:
        time.sleep(0.2)
        assert harness.pids_matching(marker) == [child.pid]
        assert child.pid in harness.tree_pids(os.getpid())
    finally:
        child.kill()
        child.wait()


@pytest.mark.worker
def test_start_worker_returns_a_worker_that_answers_a_ping(tmp_path):
    broker = os.environ.get("CELERY_BROKER_URL")
    if not broker:
        skip_without_service("CELERY_BROKER_URL is not set")
    env = {**os.environ, "CELERY_TASK_DEFAULT_QUEUE": f"test-{uuid.uuid4().hex[:8]}"}
    process, hostname = harness.start_worker(env, tmp_path / "worker.log", name="harness-test", timeout=120)
    try:
        assert process.poll() is None
        assert harness.worker_answers_ping(broker, hostname)
        assert not harness.worker_answers_ping(broker, "nobody@nowhere", timeout=0.5)
    finally:
        harness.stop_processes(process)


@pytest.mark.worker
def test_waiting_for_a_worker_that_exits_raises_with_its_log(tmp_path):
    broker = os.environ.get("CELERY_BROKER_URL")
    if not broker:
        skip_without_service("CELERY_BROKER_URL is not set")
    log = tmp_path / "worker.log"
    process = harness.start_process([sys.executable, "-c", "print('no such worker'); raise SystemExit(3)"], log)
    with pytest.raises(RuntimeError, match="no such worker"):
        harness.wait_until_worker_ready(process, log, broker, "nobody@nowhere", timeout=30)


def test_pinging_a_worker_leaves_the_process_s_current_celery_app_alone():
    """A bare app made current would take over dispatch's ``current_app`` for the rest of a test
    run (a task queued later would go to it, not to the project's app)."""
    from celery import current_app

    before = current_app._get_current_object()
    assert harness.worker_answers_ping("memory://", "nobody@nowhere", timeout=0.1) is False
    assert current_app._get_current_object() is before
