import multiprocessing as mp
import os
import signal
import time

import pytest

from geko_lib import devices


def _hold(lock_dir, log_path, hold_s):
    with devices.lease([0, 1], n_slots=2, lock_dir=lock_dir, namespace="t", poll=0.005) as lease:
        start = time.monotonic()
        time.sleep(hold_s)
        end = time.monotonic()
    with open(log_path, "a") as handle:  # one short line per write: atomic with O_APPEND
        handle.write(f"{lease.device} {lease.slot} {start:.6f} {end:.6f}\n")


def test_200_concurrent_leases_never_share_a_slot(tmp_path):
    log_path = tmp_path / "leases.log"
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_hold, args=(tmp_path / "locks", log_path, 0.01))
             for _ in range(200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    records = [line.split() for line in log_path.read_text().splitlines()]
    assert len(records) == 200
    by_slot = {}
    for dev, slot, start, end in records:
        by_slot.setdefault((int(dev), int(slot)), []).append((float(start), float(end)))
    assert set(by_slot) <= {(0, 0), (0, 1), (1, 0), (1, 1)}
    for intervals in by_slot.values():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:]):
            assert start >= end, "two holders of one (device, slot) overlapped"


def _hold_forever(lock_dir, ready):
    with devices.lease([0], lock_dir=lock_dir, namespace="t"):
        ready.set()
        time.sleep(600)


def test_killed_holder_releases_its_lease(tmp_path):
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(tmp_path, ready))
    holder.start()
    assert ready.wait(10)
    assert devices.busy([0], lock_dir=tmp_path, namespace="t") == [(0, 0)]
    with pytest.raises(devices.LeaseTimeout):
        with devices.lease([0], lock_dir=tmp_path, namespace="t", timeout=0.2):
            pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(10)
    with devices.lease([0], lock_dir=tmp_path, namespace="t", timeout=5) as lease:
        assert (lease.device, lease.slot) == (0, 0)
    assert devices.busy([0], lock_dir=tmp_path, namespace="t") == []


def test_one_slot_per_device_before_a_second(tmp_path):
    with devices.lease([3, 5], n_slots=2, lock_dir=tmp_path) as first:
        with devices.lease([3, 5], n_slots=2, lock_dir=tmp_path) as second:
            assert {first.device, second.device} == {3, 5}
            assert first.env["CUDA_VISIBLE_DEVICES"] == str(first.device)


def test_cluster_allocation_decides(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6")
    with devices.lease([0, 1], lock_dir=tmp_path) as lease:
        assert lease.device == 6 and lease.fd is None
    assert not list(tmp_path.iterdir())


def test_no_devices_is_an_error(tmp_path):
    with pytest.raises(ValueError):
        with devices.lease([], lock_dir=tmp_path):
            pass
