"""A child forked while another thread holds a lock does not keep it (geko_lib/locks.py): the
Python API's runner forks its tuning jobs from worker threads while other workers hold device
leases and the running-jobs log's lock. Before, such a child waited forever on the running-jobs
lock its own inherited descriptor held (a README API test hung on it), and a device stayed
leased until an unrelated child exited."""

import multiprocessing as mp
import threading
import time

import pytest

from geko_lib import devices
from geko_lib.tuning import running_jobs

# the tests fork from a process with a second thread on purpose: that is the case under test
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")


def _fork(target, *args):
    child = mp.get_context("fork").Process(target=target, args=args)
    child.start()
    return child


def test_a_child_forked_while_another_thread_rewrites_the_running_jobs_log_takes_its_lock(
        tmp_path):
    inside, release = threading.Event(), threading.Event()

    def slow_change(entries):
        inside.set()
        release.wait(10)

    holder = threading.Thread(target=running_jobs._rewrite, args=(tmp_path, slow_change))
    holder.start()
    assert inside.wait(10)
    child = _fork(running_jobs.forget, tmp_path, "job")  # forked inside the other's lock
    release.set()
    holder.join(10)
    child.join(20)
    stuck = child.is_alive()
    if stuck:
        child.kill()
    assert not stuck and child.exitcode == 0


def _sleep(seconds):
    time.sleep(seconds)


def test_a_device_lease_is_free_when_its_thread_lets_go_though_a_child_forked_meanwhile_runs(
        tmp_path):
    leased, release = threading.Event(), threading.Event()

    def job():
        with devices.lease([0], lock_dir=tmp_path / "locks", allocation=False):
            leased.set()
            release.wait(10)

    holder = threading.Thread(target=job)
    holder.start()
    assert leased.wait(10)
    child = _fork(_sleep, 30)  # another job's child, forked while device 0 is leased
    try:
        release.set()
        holder.join(10)
        with devices.lease([0], lock_dir=tmp_path / "locks", allocation=False, timeout=5) as got:
            assert got.device == 0
    finally:
        child.kill()
        child.join()
