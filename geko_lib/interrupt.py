"""Ctrl-C: a run stops, and everything it started with it, within seconds; one line says so.

A terminal sends SIGINT to its foreground process group: the ``geko`` command, Snakemake and the
job scripts alike (a supervised tuning child runs in its own group: its job script ends it,
``jobs.supervise``). Each part ends itself quietly: a job script exits 130 without a traceback
(``jobs.run``), Snakemake ends when its jobs have, and the ``geko`` command waits for Snakemake
(:func:`wind_down`), ending whatever is still alive after ``GRACE_S``. Finished jobs keep their
stamped outputs and an interrupted job's are removed as incomplete, so a plain rerun resumes and
ships what an uninterrupted run ships. The Python API's jobs are threads of the caller's
process: the runner (``geko_lib.runner``) starts no waiting job and calls :func:`end_api_run`,
which ends the tools the running ones started and raises :class:`Interrupted` (a
``SystemExit``: no traceback, exit status 130).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Callable, Iterable

import psutil

EXIT_CODE = 128 + signal.SIGINT  # the shell's status of a command ended by Ctrl-C
MESSAGE = "interrupted: finished jobs are kept; run the same command again to resume"
GRACE_S = 6.0  # for the parts to end themselves before what is left is killed (10 s promised)


class Interrupted(SystemExit):
    """The API's run was interrupted (Ctrl-C); its message was printed. Exits 130 untraced."""

    def __init__(self):
        super().__init__(EXIT_CODE)


def tell(stream=None) -> None:
    print(f"geko: {MESSAGE}", file=sys.stderr if stream is None else stream, flush=True)


_seen = threading.Event()


def watch() -> None:
    """Snakemake's process (the Snakefile calls it): note a Ctrl-C, which Snakemake then handles
    as before, so the ``onerror`` hook can say the run was interrupted (:func:`tell_if_seen`),
    and Snakemake's reports of the jobs it stopped are not printed (:func:`quiet_after_ctrl_c`)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        return  # where SIGINT is ignored (a background run) it stays so

    def noted(signum, frame):
        _seen.set()
        previous(signum, frame)

    signal.signal(signal.SIGINT, noted)
    logging.getLogger(SNAKEMAKE_LOGGER).addFilter(quiet_after_ctrl_c)


def tell_if_seen() -> None:
    if _seen.is_set():
        tell()


# Snakemake's logger: a filter on it (not on a handler) holds for every handler Snakemake gives
# it, the terminal's and .snakemake/log's alike, whichever it sets up after the Snakefile is read
SNAKEMAKE_LOGGER = "snakemake.logging"
# what Snakemake logs for a job that failed: the job's exception (event "error" of a
# RuleException: "CalledProcessError ... exit status 130") and its "Error in rule" block
# (event "job_error", with the job's log under show-failed-logs; "group_error" for a group)
_JOB_FAILURE_EVENTS = frozenset({"job_error", "group_error"})
_JOB_EXCEPTION = "RuleException"
# its closing error when any job failed, which after a Ctrl-C says no more than tell() does
_JOBS_UNFINISHED = "At least one job did not complete successfully"


def quiet_after_ctrl_c(record: logging.LogRecord) -> bool:
    """A ``logging`` filter for Snakemake's logger: once a Ctrl-C was seen, drop its reports of
    failed jobs. Every job still running was stopped by the Ctrl-C (they exit 130, each with an
    ``Error in rule`` block and its exception, two or more blocks where one line is due); none of
    them failed on its own, and a rerun redoes them all. Snakemake's other errors still show."""
    return not (_seen.is_set() and reports_failed_job(record))


def reports_failed_job(record: logging.LogRecord) -> bool:
    event = str(getattr(record, "event", None) or "")
    return (event in _JOB_FAILURE_EVENTS
            or getattr(record, "exception", None) == _JOB_EXCEPTION
            or _JOBS_UNFINISHED in str(record.msg))


def descendants(pid: int) -> list[psutil.Process]:
    """Every live process ``pid`` started, in any process group (a tuning child has its own)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def kill(processes: Iterable[psutil.Process]) -> None:
    """SIGKILL each process still alive (psutil checks that a pid was not reused)."""
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


def wind_down(child, drain: Callable[[], None], grace: float = GRACE_S) -> None:
    """After Ctrl-C: let ``child`` (a Popen that got the SIGINT too) end while ``drain()`` reads
    its output; after ``grace`` seconds, or at a second Ctrl-C, kill it and everything it
    started. Whatever it started that outlived it (a job's orphans) is killed too."""
    started = descendants(child.pid)  # now: a killed parent's children are no longer its own

    def end_all():
        kill([*descendants(child.pid), *started, psutil.Process(child.pid)])

    timer = threading.Timer(grace, lambda: _quietly(end_all))
    timer.daemon = True
    timer.start()
    try:
        drain()
        child.wait()
    except KeyboardInterrupt:  # pressed again: stop waiting
        _quietly(end_all)
        child.wait()
    finally:
        timer.cancel()
    kill(started)


def _quietly(action: Callable[[], None]) -> None:
    try:
        action()
    except psutil.Error:
        pass


def end_api_run(shutdown: Callable[[], None]) -> None:
    """The API's runner at Ctrl-C (its waiting jobs already told not to start): end the tools its
    running jobs started (one in a session of its own, as the rocm tuner, got no SIGINT), let
    ``shutdown()`` wait for those jobs, say it in one line and raise :class:`Interrupted`."""
    kill(descendants(psutil.Process().pid))
    shutdown()
    tell()
    raise Interrupted() from None
