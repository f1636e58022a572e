"""The Python API's GPU work takes the same device leases as a campaign's jobs (jobs.on_lease:
same lock directory, the platform's namespace, the same slots): geko.search.run and
geko.optim.run wait while a campaign job holds every slot of their device, and a campaign job
waits while an API run holds it. Deterministic: the waiting side is seen polling the locks (the
lease's sleep between tries), never guessed from a timing."""

import threading
import time
import types
from pathlib import Path

import pandas as pd
import pytest

from geko_lib import devices, jobs, optim, search
from geko_lib.campaign import state
from geko_lib.platforms import sim
from geko_lib.schemas import GemmConfig, GemmType
from geko_lib.tuning import ga

BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "f32_r")
GEMMS = pd.DataFrame([{"transA": "T", "transB": "N", "batch_count": 1, "m": 256, "n": 128,
                       "k": 64, "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                       "d_type": "bf16_r", "compute_type": "c_f32_r", "us": 5.0}])
WAIT = 30  # seconds: a bound on a wait that ends at once when the code is right


@pytest.fixture
def polling(monkeypatch):
    """An event set when a lease finds every slot it may take busy and polls again."""
    busy = threading.Event()

    def sleep(seconds):
        busy.set()
        time.sleep(seconds)

    monkeypatch.setattr(devices, "time", types.SimpleNamespace(
        sleep=sleep, monotonic=time.monotonic, time=time.time))
    return busy


def campaign_config(tmp_path, n_slots=1, lock_dir=None) -> dict:
    """A campaign's config on sim device 0; its lock_dir the test's (``""``: the host's)."""
    return state.with_defaults({
        "platform": "sim", "arch": "gfx950", "devices": [0], "n_slots": n_slots,
        "lock_dir": str(tmp_path / "locks") if lock_dir is None else lock_dir})


def in_thread(fn) -> tuple[threading.Thread, list]:
    """``fn()`` in a thread; its result (or exception) lands in the returned list."""
    result = []

    def target():
        try:
            result.append(fn())
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            result.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, result


def hold_every_slot(config, n_slots, release: threading.Event, held: threading.Event):
    """A campaign's GPU jobs holding every slot of the device until ``release``."""
    def job(stack=()):
        if len(stack) == n_slots:
            held.set()
            release.wait(WAIT)
            return
        with jobs.on_lease(config, n_slots=n_slots) as (_, lease):
            job((*stack, lease))
    return in_thread(job)


def started_after(monkeypatch, name, release: threading.Event, record: Path):
    """Patches the sim platform's ``name`` to record, each call, whether ``release`` was set;
    returns what was recorded so far. The record is a file: a tuning job runs in a child
    process (its stall watchdog's), where ``release`` is as it was when the child started."""
    real = getattr(sim.SimPlatform, name)

    def recording(self, *args, **kwargs):
        with open(record, "a") as handle:
            handle.write(f"{release.is_set()}\n")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sim.SimPlatform, name, recording)
    return lambda: [line == "True" for line in record.read_text().split()] \
        if record.exists() else []


def waits_for_held_slots(tmp_path, monkeypatch, polling, n_slots, phase, api_run,
                         lock_dir=None):
    """``api_run()`` started while campaign jobs hold ``n_slots`` slots of device 0: it polls
    the locks, saying so once, and its platform ``phase`` runs only once they are released.
    Returns its result."""
    said = []
    monkeypatch.setattr(jobs.log, "info", lambda text, *args: said.append(text % args))
    release, held = threading.Event(), threading.Event()
    holder, _ = hold_every_slot(campaign_config(tmp_path, n_slots, lock_dir), n_slots, release,
                                held)
    assert held.wait(WAIT)
    seen = started_after(monkeypatch, phase, release, tmp_path / f"{phase}_calls")
    api, result = in_thread(api_run)
    assert polling.wait(WAIT), f"the API's {phase} did not wait for the leased device"
    assert api.is_alive() and seen() == []
    release.set()
    api.join(WAIT)
    holder.join(WAIT)
    assert seen() == [True]
    waited = [line for line in said if "is held by another job" in line]
    assert waited == [f"every slot of sim devices [0] is held by another job (locks in "
                      f"{tmp_path / 'locks'}): waiting"]
    return result[0]


@pytest.mark.parametrize("lock_dir", ["given", "default"])
def test_search_run_waits_while_a_campaign_job_holds_its_device(tmp_path, monkeypatch, polling,
                                                                 lock_dir):
    """With ``lock_dir=`` as the campaign's, or neither naming one (both take the host's)."""
    given, campaigns = {"lock_dir": str(tmp_path / "locks")}, None
    if lock_dir == "default":  # the host's lock directory, here the test's own
        monkeypatch.setattr(devices, "default_lock_dir", lambda: tmp_path / "locks")
        given, campaigns = {}, ""
    winners = waits_for_held_slots(tmp_path, monkeypatch, polling, 1, "search", lambda: search.run(
        configs=search.configure(GEMMS), output_dir=tmp_path / "search", devices=[0],
        platform="sim", **given), lock_dir=campaigns)
    assert isinstance(winners, pd.DataFrame) and len(winners) == 1


def test_optim_run_waits_while_campaign_jobs_hold_every_slot(tmp_path, monkeypatch, polling):
    monkeypatch.setattr(ga.GAConfig, "n_gen", 2)
    out = tmp_path / "optimizations"
    optim.configure(gemm_configs=[GemmConfig(BBS_TN, [[256, 128, 1, 64]])], output_dir=out,
                    arch="gfx950", platform="sim")
    logic = waits_for_held_slots(tmp_path, monkeypatch, polling, 2, "optimize", lambda: optim.run(
        tuning_dir=out, devices=[0], n_slots=2, platform="sim", lock_dir=str(tmp_path / "locks")))
    assert len(logic) == 1


def test_a_campaign_job_waits_while_search_run_holds_the_device(tmp_path, monkeypatch,
                                                               polling):
    searching, finish = threading.Event(), threading.Event()
    real = sim.SimPlatform.search

    def blocking(self, *args, **kwargs):
        searching.set()
        finish.wait(WAIT)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sim.SimPlatform, "search", blocking)
    api, result = in_thread(lambda: search.run(
        configs=search.configure(GEMMS), output_dir=tmp_path / "search", devices=[0],
        platform="sim", lock_dir=str(tmp_path / "locks")))
    assert searching.wait(WAIT)
    leased_while_searching = []

    def campaign_job():
        with jobs.on_lease(campaign_config(tmp_path)) as (_, lease):
            leased_while_searching.append(not finish.is_set())
            return lease.device

    job, got = in_thread(campaign_job)
    assert polling.wait(WAIT), "the campaign job did not wait for the API's lease"
    assert job.is_alive()
    finish.set()
    api.join(WAIT)
    job.join(WAIT)
    assert got == [0] and leased_while_searching == [False]
    assert isinstance(result[0], pd.DataFrame)


def test_inside_a_cluster_allocation_search_run_still_deals_its_devices_by_lease(
        tmp_path, monkeypatch):
    """A workflow job on a cluster node takes the device its allocation names; an API run there
    deals several chunks over the devices it was given, so it takes their locks still."""
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6")
    used, real = [], sim.SimPlatform.search
    together = threading.Barrier(2, timeout=WAIT)  # both chunks searched at once

    def recording(self, problems, out_dir, device, **kwargs):
        used.append(device)
        together.wait()
        return real(self, problems, out_dir, device, **kwargs)

    monkeypatch.setattr(sim.SimPlatform, "search", recording)
    two = pd.concat([GEMMS, GEMMS.assign(m=512)], ignore_index=True)
    search.run(configs=search.configure(two), output_dir=tmp_path / "search", devices=[0, 1],
               max_chunk_size=1, platform="sim", lock_dir=str(tmp_path / "locks"))
    assert sorted(used) == [0, 1]
    assert sorted(p.name for p in (tmp_path / "locks").iterdir()) == [
        "sim-dev0-slot0.lock", "sim-dev1-slot0.lock"]
