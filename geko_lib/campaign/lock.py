"""Resume with a plain rerun: Snakemake's workdir lock, judged by whether its holder still runs.

Snakemake locks a workdir (``.snakemake/locks/*.lock``) for the length of a run; a run killed by
SIGKILL (or a SIGINT that interrupts its cleanup) leaves the lock behind, and every later run
stops with a LockException until ``--unlock``. The lock files name no process, so the holder is
found the way ``geko status`` finds running campaigns: a snakemake process (or one of its job
scripts) working in the workdir. A lock whose holder is gone is stale and is cleared (and
reported); a lock held by a live campaign refuses the new start before anything in the workdir
changes.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import GekoError
from .snakemake_records import snakemake_locks, snakemake_processes


class CampaignRunning(GekoError):
    """Another campaign is running in the workdir."""


def lock_dir(workdir) -> Path:
    return Path(workdir) / ".snakemake" / "locks"


def live_holders(workdir) -> list[dict] | None:
    """The snakemake processes working in ``workdir`` (None where processes cannot be seen)."""
    workdir = Path(workdir)
    return snakemake_processes(workdir) if workdir.is_dir() else []


def refuse_if_running(workdir) -> None:
    """Refuse while a campaign runs in ``workdir`` (whether or not it holds the lock yet)."""
    holders = live_holders(workdir) or []
    if holders:
        pids = ", ".join(str(p["pid"]) for p in holders)
        raise CampaignRunning(f"{workdir}: a campaign is running there (snakemake pid {pids}): "
                              "wait for it to finish, or stop it, then rerun; `geko status "
                              f"{workdir}` shows where it stands")


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
