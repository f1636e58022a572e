"""The Python API's GPU job runner: the jobs of one rule (search.run's chunks, optim.run's
tuning YAMLs) run in this process, one worker thread per (device, slot), each job under a device
lease (devices.leased) taken exactly as a workflow job takes its own: the same lock directory,
the platform's namespace, the same slots. So an API run waits while a campaign's job holds the
device it needs, and a campaign's job waits while an API run holds it.

A job is attempted ``attempts`` times (each attempt under a lease of its own, so a retry may get
another device); a job whose every attempt failed with a user-facing error (``GekoError``) is
one entry of the run's failures (``failures.failed_item``), which the caller writes with the one
failure writer (``failures.write_failure_files``). Any other error is a bug: it ends the run
(the jobs running finish, no waiting job starts), as Ctrl-C does (no failed job is tried again
either: its tool was interrupted too).

A job is handed its :class:`Attempt` (its leased device and slot, which attempt it is, whether
the run was interrupted), so a job with an attempt policy of its own (geko_lib.gpu_jobs' tuning
job) applies it as under Snakemake. The API's jobs log to the GEKO logger; :func:`job_log` also
writes one job's lines to a log file of its own, which a supervised job's stall watchdog
watches.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import failures, interrupt, log_setup
from .campaign import progress as campaign_progress
from .devices import leased
from .errors import GekoError
from .log_setup import LOGGER

log = logging.getLogger(LOGGER)


@dataclass(frozen=True)
class Attempt:
    """What a job is handed for one attempt: the (device, slot) leased for it, its number (1
    first) of ``of``, and ``interrupted()``, true once Ctrl-C stopped the run (a worker thread
    gets no KeyboardInterrupt: a job waiting on a child process asks this)."""

    device: int
    slot: int
    number: int
    of: int
    interrupted: Callable[[], bool]


def run(items: Sequence, work: Callable, *, name_of: Callable, namespace: str, devices,
        n_slots: int = 1, lock_dir=None, attempts: int = 1, bar: "Bar | None" = None
        ) -> tuple[list, list[dict]]:
    """``work(item, attempt)`` (an :class:`Attempt`) for every item, ``len(devices) * n_slots``
    at a time; ``bar`` counts the jobs as they end (a job that counts finer units updates its
    own bar). Returns (the result of every item in order, None where it failed; the failure
    entries, in order)."""
    devices = [int(d) for d in devices]
    if not devices:
        raise GekoError("no devices to run on (devices=[])")
    return _Run(items, work, name_of, dict(namespace=namespace, device_ids=devices,
                                           n_slots=max(1, int(n_slots)), lock_dir=lock_dir),
                attempts, bar).go()


class _Run:
    """One call of :func:`run`: its jobs on a pool of worker threads."""

    def __init__(self, items, work, name_of, lease_args: dict, attempts: int, bar):
        self.items, self.work, self.name_of, self.bar = items, work, name_of, bar
        self.lease_args, self.attempts = lease_args, attempts
        self.failed: dict[int, dict] = {}
        # a bug in one job, or Ctrl-C: no waiting job starts and no failed job is tried again
        self.stop = threading.Event()
        self.interrupted = threading.Event()  # Ctrl-C: the jobs running end now, uncounted
        # jobs running now: the run returns only once none is, even where Ctrl-C came while
        # the pool was starting a worker (one the pool then does not know of, and does not join)
        self.running, self.busy = threading.Condition(), 0
        self.pool = ThreadPoolExecutor(
            max_workers=len(lease_args["device_ids"]) * lease_args["n_slots"])

    def go(self) -> tuple[list, list[dict]]:
        try:
            futures = [self.pool.submit(self.one, index) for index in range(len(self.items))]
            pending = set(futures)
            while pending:  # woken each 0.2 s, so Ctrl-C reaches this thread while jobs run
                pending = wait(pending, timeout=0.2).not_done
            results = [future.result() for future in futures]
        except KeyboardInterrupt:
            self.interrupted.set()  # before end_api_run kills their tools: no failure of theirs
            interrupt.end_api_run(self.end_jobs)
        finally:  # the jobs running end (a tool Ctrl-C reached ends at once), then the run does
            self.end_jobs()
        return results, [self.failed[i] for i in sorted(self.failed) if results[i] is None]

    def one(self, index: int):
        with self.running:
            if self.stop.is_set():
                return None
            self.busy += 1
        try:
            result = self.attempted(self.items[index], index)
        except BaseException:
            self.stop.set()
            raise
        finally:
            with self.running:
                self.busy -= 1
                self.running.notify_all()
        if self.bar is not None:
            self.bar.done(1, int(result is None))
        return result

    def end_jobs(self) -> None:
        with self.running:
            self.stop.set()
        self.pool.shutdown(cancel_futures=True)
        with self.running:
            self.running.wait_for(lambda: self.busy == 0)

    def attempted(self, item, index: int):
        name = self.name_of(item)
        for number in range(1, self.attempts + 1):
            if self.stop.is_set():
                return None
            # the API's own lines stay the original's: the lease lines go to DEBUG here; inside
            # a cluster allocation the jobs still share its devices by their locks
            with leased(**self.lease_args, level=logging.DEBUG, allocation=False) as lease:
                try:
                    return self.work(item, Attempt(lease.device, lease.slot, number,
                                                   self.attempts, self.interrupted.is_set))
                except GekoError as exc:
                    log.warning("%s failed on device %d (attempt %d of %d): %s",
                                name, lease.device, number, self.attempts, exc)
                    self.failed[index] = failures.failed_item(name, exc)
        return None


# --- one job's log file -----------------------------------------------------------------------

_job = threading.local()  # the job log handler of the job this thread runs (job_log)


class _OneJob(logging.Filter):
    """The lines of one job: those of the thread that runs it and of every process it forks
    (a supervised job's child, whose only thread is that job's)."""

    def __init__(self, thread: int, pid: int):
        super().__init__()
        self.thread, self.pid = thread, pid

    def filter(self, record: logging.LogRecord) -> bool:
        return record.process != self.pid or record.thread == self.thread


@contextlib.contextmanager
def job_log(path, level: int = logging.INFO):
    """The GEKO lines of the job this thread runs also in ``path`` (rewritten at each attempt,
    as a workflow job's log is), at ``level``: its own and those of a child it forks, which
    logs at ``level`` whatever the caller's logger lets through, so a stall watchdog watching
    ``path`` sees the job's progress. The caller's handlers get what they got before."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = log_setup.attach(log_setup.JobLog(path, mode="w"))
    handler.setLevel(level)
    handler.addFilter(_OneJob(threading.get_ident(), os.getpid()))
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    _job.handler = handler
    try:
        yield path
    finally:
        _job.handler = None
        logger.removeHandler(handler)
        handler.close()


def _job_child_logs_its_job() -> None:
    """In a child forked inside :func:`job_log` (jobs.supervise's): the GEKO logger lets the
    job log's level through, and the caller's handlers keep only what its level let through."""
    handler = getattr(_job, "handler", None)
    logger = logging.getLogger(LOGGER)
    shown = logger.getEffectiveLevel()
    if handler is None or shown <= handler.level:
        return
    current = logger
    while current is not None:
        for other in current.handlers:
            if other is not handler:
                other.addFilter(lambda record, shown=shown: record.levelno >= shown)
        current = current.parent if current.propagate else None
    logger.setLevel(handler.level)


os.register_at_fork(after_in_child=_job_child_logs_its_job)


class Bar:
    """The original's bar over a phase's work, as a campaign draws it (campaign.progress: its
    label, and the completed and failed counts after the timing brackets), updated as jobs end
    in several threads; ``phase`` is one of campaign.progress.LABELS."""

    def __init__(self, total: int, phase: str):
        from tqdm import tqdm

        self.lock, self.completed, self.failed = threading.Lock(), 0, 0
        self.bar = tqdm(total=total, desc=campaign_progress.LABELS[phase],
                        bar_format=campaign_progress.BAR.format(done=0, failed=0))

    def done(self, n: int, n_failed: int) -> None:
        """``n`` more units ended, ``n_failed`` of them failed."""
        with self.lock:
            self.completed += n - n_failed
            self.failed += n_failed
            self.bar.bar_format = campaign_progress.BAR.format(done=self.completed,
                                                               failed=self.failed)
            self.bar.update(n)

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
