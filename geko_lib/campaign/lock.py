"""Resume with a plain rerun: Snakemake's workdir lock, judged by whether its holder still runs.

Snakemake locks a workdir (``.snakemake/locks/*.lock``) for the length of a run; a run killed by
SIGKILL (or a SIGINT that interrupts its cleanup) leaves the lock behind, and every later run
stops with a LockException until ``--unlock``. The lock files name no process, so the holder is
found the way ``geko status`` finds running campaigns: a snakemake process (or one of its job
scripts) working in the workdir. A lock whose holder is gone is stale and is cleared (and
reported); a lock held by a live campaign refuses the new start before anything in the workdir
changes.

Two ``geko`` commands started in one workdir at the same instant both find no snakemake running
yet; the command lock (:func:`hold`: an exclusive ``flock`` on ``.snakemake/geko_command.lock``,
held until the command ends and released by the kernel if it is killed) lets one through and
gives the other the same one-line refusal, before either changes anything.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from ..devices import UnsafeLockError, check_lock_file
from ..errors import GekoError
from .snakemake_records import snakemake_locks, snakemake_processes


class CampaignRunning(GekoError):
    """Another campaign is running in the workdir."""


COMMAND_LOCK = Path(".snakemake", "geko_command.lock")


def lock_dir(workdir) -> Path:
    return Path(workdir) / ".snakemake" / "locks"


def running_message(workdir, who: str = "") -> str:
    """The one line that refuses a start beside a running campaign."""
    return (f"{workdir}: a campaign is running there{f' ({who})' if who else ''}: wait for it "
            f"to finish, or stop it, then rerun; `geko status {workdir}` shows where it stands")


@contextlib.contextmanager
def hold(workdir):
    """The ``geko`` command's hold on ``workdir`` for as long as the block runs; a second
    command holding it already is refused (:class:`CampaignRunning`)."""
    path = Path(workdir) / COMMAND_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
            raise UnsafeLockError(f"lock file {path} is a symlink; refusing to open it (its "
                                  "target is left untouched)") from None
        raise
    try:
        check_lock_file(fd, path)  # it is rewritten below: never a hard link to another file
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            raise CampaignRunning(running_message(workdir, f"geko pid {holder}" if holder
                                                  else "another geko command")) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield path
    finally:
        os.close(fd)


def command_running(workdir) -> bool:
    """Whether a ``geko`` command holds ``workdir`` now (its lock taken)."""
    path = Path(workdir) / COMMAND_LOCK
    if not path.is_file():
        return False
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def live_holders(workdir) -> list[dict] | None:
    """The snakemake processes working in ``workdir`` (None where processes cannot be seen)."""
    workdir = Path(workdir)
    return snakemake_processes(workdir) if workdir.is_dir() else []


def refuse_if_running(workdir) -> None:
    """Refuse while a campaign runs in ``workdir`` (whether or not it holds the lock yet)."""
    holders = live_holders(workdir) or []
    if holders:
        pids = ", ".join(str(p["pid"]) for p in holders)
        raise CampaignRunning(running_message(workdir, f"snakemake pid {pids}"))


def clear_stale(workdir) -> list[str]:
    """Remove the locks of a run that is gone; the names removed (none: no lock, or a holder
    that still runs, or no way to tell, where Snakemake's own refusal stands)."""
    workdir = Path(workdir)
    names = snakemake_locks(workdir)
    if not names or live_holders(workdir) != []:
        return []
    for name in names:
        (lock_dir(workdir) / name).unlink(missing_ok=True)
    return names


def prepare(workdir) -> list[str]:
    """Before a campaign starts in ``workdir``: refuse if one runs there, clear a stale lock.
    Returns the stale lock files removed (for the caller to report)."""
    refuse_if_running(workdir)
    return clear_stale(workdir)
