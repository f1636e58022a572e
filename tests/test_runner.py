"""geko_lib.runner, the API's GPU job runner: results in the jobs' order, each attempt under a
lease, a job failed on every attempt one failure entry (its last reason), a bug ends the run
without starting the jobs still waiting."""

import threading
import time

import pytest

from geko_lib import runner
from geko_lib.errors import GekoError
from geko_lib.interrupt import Interrupted


def _run(tmp_path, items, work, **kw):
    return runner.run(items, work, name_of=str, namespace="t", lock_dir=tmp_path / "locks", **kw)


def test_results_come_in_the_jobs_order_and_failures_name_the_job_and_why(tmp_path):
    tries: dict[str, int] = {}
    lock = threading.Lock()

    def work(item, lease):
        with lock:
            tries[item] = tries.get(item, 0) + 1
        if item == "bad" or (item == "flaky" and tries[item] == 1):
            raise GekoError(f"{item} failed try {tries[item]}")
        return (item, lease.device)

    results, failed = _run(tmp_path, ["a", "bad", "flaky", "b"], work, devices=[0, 1],
                           attempts=2)
    assert [r and r[0] for r in results] == ["a", None, "flaky", "b"]
    assert {r[1] for r in results if r} <= {0, 1}
    assert failed == [{"gemm": "bad", "error": "bad failed try 2"}]
    assert tries == {"a": 1, "bad": 2, "flaky": 2, "b": 1}


def test_one_attempt_is_final(tmp_path):
    def work(item, lease):
        raise GekoError("no")

    assert _run(tmp_path, ["x"], work, devices=[0]) == ([None], [{"gemm": "x", "error": "no"}])


def test_a_bug_ends_the_run_and_starts_no_waiting_job(tmp_path):
    started = []

    def work(item, lease):
        started.append(item)
        raise KeyError(item)  # not a user-facing error

    with pytest.raises(KeyError):
        _run(tmp_path, list("abcdef"), work, devices=[0])
    assert started == ["a"]


def test_no_devices_is_refused(tmp_path):
    with pytest.raises(GekoError, match="no devices"):
        _run(tmp_path, ["x"], lambda item, lease: item, devices=[])


def test_ctrl_c_starts_no_waiting_job_and_retries_none(tmp_path):
    """Ctrl-C while a job runs (its tool, interrupted too, fails it): the run ends with the
    interrupt once that job has ended, trying it no second time and starting no other."""
    import _thread

    started, ended, running = [], [], threading.Event()

    def work(item, lease):
        started.append(item)
        running.set()
        try:
            threading.Event().wait(0.5)  # the tool runs a moment, then dies of the interrupt
            raise GekoError(f"{item}: interrupted")
        finally:
            ended.append(item)

    def interrupt():
        running.wait(30)
        _thread.interrupt_main()

    before = threading.active_count()
    interrupter = threading.Thread(target=interrupt, daemon=True)
    interrupter.start()
    with pytest.raises(Interrupted):  # the API's end of a Ctrl-C: one line, exit 130
        _run(tmp_path, list("abc"), work, devices=[0], attempts=2)
    assert ended == ["a"]  # the run ended after its running job, whenever Ctrl-C came
    interrupter.join(30)
    assert started == ["a"]
    _assert_threads_end(before)  # nothing of the run goes on behind it


def _assert_threads_end(count: int, within_s: float = 5.0) -> None:
    """A worker whose job has ended leaves a moment later (the pool's own loop)."""
    deadline = time.monotonic() + within_s
    while threading.active_count() > count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == count


def test_a_jobs_log_gets_its_own_lines_and_its_childs_at_its_level(tmp_path):
    """runner.job_log: the API job's log file (which the stall watchdog of jobs.supervise
    watches) gets the lines of its thread and of the child it forks, the child's at the job
    log's level whatever the caller's logger lets through (a quiet caller's job would otherwise
    look stalled), while the caller's own handler gets only what its level lets through and
    another thread's lines stay out."""
    import logging

    from geko_lib import jobs
    from geko_lib.log_setup import LOGGER

    logger, job_file, caller_file = logging.getLogger(LOGGER), tmp_path / "job.log", \
        tmp_path / "caller.log"
    caller = logging.FileHandler(caller_file)
    level, logger.level = logger.level, logging.WARNING
    logger.addHandler(caller)

    def child():
        logger.info("child progress")
        logger.warning("child warning")

    def job():
        with runner.job_log(job_file, logging.INFO):
            logger.warning("job warning")
            jobs.supervise(child, job_file, stall_timeout=60, poll=0.05)

    try:
        thread = threading.Thread(target=job)
        thread.start()
        logger.warning("another job's warning")
        thread.join(30)
    finally:
        logger.removeHandler(caller)
        caller.close()
        logger.setLevel(level)
    lines = [line.split("] ", 1)[1] for line in job_file.read_text().splitlines()]
    assert "another job's warning" not in lines
    assert [line for line in lines if line != "another job's warning"] == [
        "job warning", "child progress", "child warning"]
    assert "child progress" not in caller_file.read_text()
    assert "child warning" in caller_file.read_text()


def test_a_process_that_initialized_cuda_runs_its_job_unsupervised(tmp_path, monkeypatch,
                                                                 caplog):
    """A forked child cannot use the CUDA its parent initialized (the API's caller may have
    timed GEMMs in process): jobs.supervise then runs the job in process and says so."""
    import sys
    import types

    from geko_lib import jobs

    cuda = types.SimpleNamespace(is_initialized=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    ran = []
    with caplog.at_level("WARNING", logger="GEKO"):
        jobs.supervise(lambda: ran.append(True), tmp_path / "a.log", stall_timeout=60)
    assert ran == [True] and "stall watchdog off for this job" in caplog.text
