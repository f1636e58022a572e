"""Exclusive ``flock``s held for a block, which a forked child lets go of.

An flock belongs to the open file, and a forked child shares this process's open files: a child
forked while another thread holds a lock (a device lease, the running-jobs log, a failure
count) would keep that lock after the thread lets go, until the child exits, and a child that
then asks for the same lock waits on its own copy forever. The Python API's runner forks its
tuning jobs from worker threads while other workers hold such locks (the watchdog,
``jobs.supervise``), so every held descriptor is registered here and a forked child drops its
copies at once (the parent still holds the locks). Children started by exec (Snakemake's jobs,
``subprocess``) never run Python's fork hooks; exec closes their copies anyway.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

_HELD: set[int] = set()  # descriptors holding a lock of this process now


@contextlib.contextmanager
def held(fd: int):
    """``fd`` (locked by the caller) dropped by any child forked while the block runs."""
    _HELD.add(fd)
    try:
        yield fd
    finally:
        _HELD.discard(fd)


@contextlib.contextmanager
def exclusive(path, mode: str = "a"):
    """``path`` opened with ``mode`` and locked exclusively (waiting for it) for the block; the
    open file is yielded. The kernel drops the lock if this process dies."""
    with open(Path(path), mode) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        with held(handle.fileno()):
            yield handle


def _drop_inherited() -> None:
    """In a forked child: every inherited lock descriptor pointed at /dev/null. Not closed, so
    the number stays taken: the parent thread's open file, copied into the child and never
    closed there, cannot later close a file the child opened under that number."""
    if not _HELD:
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for fd in tuple(_HELD):
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    finally:
        os.close(null)
    _HELD.clear()


os.register_at_fork(after_in_child=_drop_inherited)
