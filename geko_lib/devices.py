"""Leasing a concrete (device, slot) for the duration of a GPU job.

Snakemake only counts ``resources: gpu=1``; it never says *which* device a job gets. Each GPU job
therefore takes an exclusive ``flock`` on one lock file per (device, slot). The kernel drops the lock
when the last descriptor closes, including on SIGKILL, so a crashed job never leaves a stale lease;
the lock file itself stays behind and only records the last holder for ``geko status``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

VISIBLE_DEVICES_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass(frozen=True)
class Lease:
    device: int
    slot: int
    fd: int | None  # the locked descriptor (None when the scheduler already chose the device)

    @property
    def env(self) -> dict[str, str]:
        """Environment that pins a child process to the leased device."""
        return {var: str(self.device) for var in VISIBLE_DEVICES_VARS}


class LeaseTimeout(TimeoutError):
    pass


def default_lock_dir() -> Path:
    """Host-global so that two workflows on one host never share a device slot."""
    return Path(tempfile.gettempdir()) / f"geko-device-locks-{os.getuid()}"


def _lock_path(lock_dir: Path, namespace: str, device: int, slot: int) -> Path:
    return lock_dir / f"{namespace}-dev{device}-slot{slot}.lock"


def _try_lock(path: Path, record: bool = True) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if record:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} since={time.time():.3f}\n".encode())
    return fd


def _candidates(devices, n_slots):
    """Fill one slot on every device before a second slot on any: spreads jobs over devices."""
    for slot in range(n_slots):
        for device in devices:
            yield device, slot


def allocated_device() -> int | None:
    """The device a cluster allocation already assigned (SLURM sets *_VISIBLE_DEVICES)."""
    if not os.environ.get("SLURM_JOB_ID"):
        return None
    for var in VISIBLE_DEVICES_VARS:
        value = os.environ.get(var, "").split(",")[0].strip()
        if value.isdigit():
            return int(value)
    return None


@contextlib.contextmanager
def lease(devices, *, n_slots: int = 1, lock_dir=None, namespace: str = "gpu",
          poll: float = 0.05, timeout: float | None = None):
    """Hold an exclusive (device, slot) from ``devices`` until the block exits.

    Blocks (polling) while every slot is taken; ``timeout`` seconds later raises LeaseTimeout.
    """
    devices = [int(d) for d in devices]
    if not devices:
        raise ValueError("no devices configured")
    preset = allocated_device()
    if preset is not None:
        yield Lease(preset, 0, None)
        return
    lock_dir = Path(lock_dir) if lock_dir else default_lock_dir()
    lock_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    while True:
        for device, slot in _candidates(devices, n_slots):
            fd = _try_lock(_lock_path(lock_dir, namespace, device, slot))
            if fd is None:
                continue
            try:
                yield Lease(device, slot, fd)
            finally:
                os.close(fd)
            return
        if timeout is not None and time.monotonic() - start > timeout:
            raise LeaseTimeout(f"no free slot on devices {devices} after {timeout:.0f} s "
                               f"(locks in {lock_dir})")
        time.sleep(poll)


def busy(devices, *, n_slots: int = 1, lock_dir=None, namespace: str = "gpu") -> list[tuple[int, int]]:
    """(device, slot) pairs currently held by some process."""
    lock_dir = Path(lock_dir) if lock_dir else default_lock_dir()
    held = []
    for device, slot in _candidates([int(d) for d in devices], n_slots):
        path = _lock_path(lock_dir, namespace, device, slot)
        if not path.exists():
            continue
        fd = _try_lock(path, record=False)
        if fd is None:
            held.append((device, slot))
        else:
            os.close(fd)
    return held
