"""Leasing a concrete (device, slot) for the duration of a GPU job.

Snakemake only counts ``resources: gpu=1``; it never says *which* device a job gets. Each GPU job
therefore takes an exclusive ``flock`` on one lock file per (device, slot). The kernel drops the lock
when the last descriptor closes, including on SIGKILL, so a crashed job never leaves a stale lease;
the lock file itself stays behind and only records the last holder for ``geko status``.

The lock directory is private: created 0700, and checked on every use to be a real directory (not
a symlink) owned by this user and writable by nobody else. Lock files are opened with O_NOFOLLOW
and refused when they have another name (a hard link), which writing the holder would change.
Otherwise another user of a shared machine could plant a symlink where a lock file will be and
make geko truncate the file it points to, or hold every slot to stall our jobs.
"""

from __future__ import annotations

import contextlib
import logging
import errno
import fcntl
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import locks, path_errors
from .errors import GekoError
from .log_setup import LOGGER

log = logging.getLogger(LOGGER)

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


class LeaseTimeout(GekoError, TimeoutError):
    pass


class UnsafeLockError(GekoError):
    """The lock directory or a lock file could be tampered with by someone else."""


def default_lock_dir() -> Path:
    """Host-global so that two workflows on one host never share a device slot."""
    return Path(tempfile.gettempdir()) / f"geko-device-locks-{os.getuid()}"


def _lock_path(lock_dir: Path, namespace: str, device: int, slot: int) -> Path:
    return lock_dir / f"{namespace}-dev{device}-slot{slot}.lock"


def _unsafe_reason(info: os.stat_result) -> str | None:
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.getuid():
        return f"is owned by uid {info.st_uid}, not by this user (uid {os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def check_lock_dir(lock_dir: Path) -> Path:
    """Refuse a lock directory that another user could tamper with, naming it and why."""
    try:
        info = os.lstat(lock_dir)
    except OSError as exc:
        raise UnsafeLockError(f"lock directory {lock_dir}: cannot be inspected: {exc}") from None
    reason = _unsafe_reason(info)
    if reason:
        raise UnsafeLockError(f"lock directory {lock_dir} {reason}; refusing to use it for device "
                              "leases (remove it, or set lock_dir to a directory only you can write)")
    return lock_dir


def _named(what: str, path: Path, exc: OSError) -> path_errors.PathError:
    """The system's refusal of a lock file or directory, in one line naming it: a full disk
    makes ``os.write`` fail with an error that names no file."""
    return type(path_errors.from_os_error(exc, path))(
        f"{what} {path_errors.describe(exc, path)}")


def private_lock_dir(lock_dir: Path) -> Path:
    """``lock_dir``, created 0700 when missing (its parents as usual), then checked."""
    try:
        lock_dir.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(lock_dir, 0o700)
    except OSError as exc:
        raise _named("lock directory", lock_dir, exc) from None
    return check_lock_dir(lock_dir)


def _open_lock_file(path: Path, create: bool) -> int | None:
    """A descriptor of the regular lock file ``path``, never through a symlink; None when
    ``create`` is false and the file does not exist."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeLockError(f"lock file {path} is a symlink; refusing to open it "
                                  "(its target is left untouched)") from None
        raise
    try:
        check_lock_file(fd, path)
    except UnsafeLockError:
        os.close(fd)
        raise
    return fd


def check_lock_file(fd: int, path) -> None:
    """Refuse an open lock file geko would overwrite (it records its holder there) that is no
    regular file of this user's, or that has another name: a hard link to it elsewhere (a
    file of the user's, planted or by mistake) would be overwritten too."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        raise UnsafeLockError(f"lock file {path} is not a regular file owned by this user; "
                              "refusing to use it")
    if info.st_nlink != 1:
        raise UnsafeLockError(f"lock file {path} has {info.st_nlink} hard links (another name "
                              "for the same file); refusing to write into it, which would "
                              "change that file too (remove the lock file; it is recreated)")


def _flock_now(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _try_lock(path: Path) -> int | None:
    """Our locked descriptor of ``path`` (recording us as its holder), or None while another
    process holds it."""
    try:
        fd = _open_lock_file(path, create=True)
    except OSError as exc:  # a full disk, a lock directory removed meanwhile
        raise _named("lock file", path, exc) from None
    if not _flock_now(fd):
        os.close(fd)
        return None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} since={time.time():.3f}\n".encode())
    except OSError as exc:
        os.close(fd)  # the lock goes with it: no slot is held by a job that never ran
        raise _named("lock file", path, exc) from None
    return fd


def _is_held(path: Path) -> bool:
    """Whether some process holds the lock file ``path`` now (a missing file is free)."""
    fd = _open_lock_file(path, create=False)
    if fd is None:
        return False
    try:
        return not _flock_now(fd)
    finally:
        os.close(fd)


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
          poll: float = 0.05, timeout: float | None = None, allocation: bool = True,
          on_wait=None):
    """Hold an exclusive (device, slot) from ``devices`` until the block exits.

    Blocks (polling) while every slot is taken; ``timeout`` seconds later raises LeaseTimeout.
    With ``allocation`` a cluster allocation's device decides (a workflow job on a cluster node
    has its device to itself); the Python API's runner, which deals several jobs over the
    devices it was given from one process, always takes a lock. ``on_wait(lock_dir)`` is
    called once, when every slot was found taken (the caller says why it waits).
    """
    devices = [int(d) for d in devices]
    if not devices:
        raise ValueError("no devices configured")
    preset = allocated_device() if allocation else None
    if preset is not None:
        yield Lease(preset, 0, None)
        return
    lock_dir = private_lock_dir(Path(lock_dir) if lock_dir else default_lock_dir())
    start = time.monotonic()
    while True:
        for device, slot in _candidates(devices, n_slots):
            fd = _try_lock(_lock_path(lock_dir, namespace, device, slot))
            if fd is None:
                continue
            try:
                with locks.held(fd):
                    yield Lease(device, slot, fd)
            finally:
                os.close(fd)
            return
        if timeout is not None and time.monotonic() - start > timeout:
            raise LeaseTimeout(f"no free slot on devices {devices} after {timeout:.0f} s "
                               f"(locks in {lock_dir})")
        if on_wait is not None:
            on_wait(lock_dir)
            on_wait = None
        time.sleep(poll)


def busy(devices, *, n_slots: int = 1, lock_dir=None, namespace: str = "gpu") -> list[tuple[int, int]]:
    """(device, slot) pairs currently held by some process (none while the lock directory
    does not exist yet; an unsafe one is refused as in ``lease``)."""
    lock_dir = Path(lock_dir) if lock_dir else default_lock_dir()
    if not os.path.lexists(lock_dir):
        return []
    check_lock_dir(lock_dir)
    held = []
    return [(device, slot) for device, slot in _candidates([int(d) for d in devices], n_slots)
            if _is_held(_lock_path(lock_dir, namespace, device, slot))]


@contextlib.contextmanager
def leased(namespace: str, device_ids, n_slots: int = 1, lock_dir=None,
           level: int = logging.INFO, allocation: bool = True):
    """A (device, slot) of ``device_ids`` leased in the platform's ``namespace`` under
    ``lock_dir`` (the host's default when None): every GPU job holds one, a workflow job's or
    the API's (geko_lib.runner), so neither times a kernel on a device the other fills
    (``allocation``: as lease). The
    log's ``leased`` and ``freed`` lines carry epoch seconds taken inside the lock, so lease
    intervals can be audited from the job logs (bench/bench_fanout.py)."""
    def waiting(where) -> None:
        # at INFO whoever asks: a run that waits for another's device says so, not a silent stall
        log.info("every slot of %s devices %s is held by another job (locks in %s): waiting",
                 namespace, list(device_ids), where)

    with lease(device_ids, n_slots=n_slots, lock_dir=lock_dir or None,
               namespace=namespace, allocation=allocation, on_wait=waiting) as held:
        what = (namespace, held.device, held.slot)
        log.log(level, "leased %s device %d slot %d at %.3f", *what, time.time())
        try:
            yield held
        finally:
            log.log(level, "freed %s device %d slot %d at %.3f", *what, time.time())
