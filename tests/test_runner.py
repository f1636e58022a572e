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
