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
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Sequence

from . import failures, interrupt
from .campaign import progress as campaign_progress
from .devices import leased
from .errors import GekoError
from .log_setup import LOGGER

log = logging.getLogger(LOGGER)


def run(items: Sequence, work: Callable, *, name_of: Callable, namespace: str, devices,
        n_slots: int = 1, lock_dir=None, attempts: int = 1, bar: "Bar | None" = None
        ) -> tuple[list, list[dict]]:
    """``work(item, lease)`` for every item, ``len(devices) * n_slots`` at a time; ``bar``
    counts the jobs as they end (a job that counts finer units updates its own bar). Returns
    (the result of every item in order, None where it failed; the failure entries, in order)."""
    devices = [int(d) for d in devices]
    if not devices:
        raise GekoError("no devices to run on (devices=[])")
    n_slots = max(1, int(n_slots))
    failed: dict[int, dict] = {}
    # a bug in one job, or Ctrl-C: no waiting job starts and no failed job is tried again
    stop = threading.Event()
    # jobs running now: the run returns only once none is, even where Ctrl-C came while the
    # pool was starting a worker (one the pool then does not know of, and does not join)
    running, busy = threading.Condition(), [0]

    def one(index: int):
        with running:
            if stop.is_set():
                return None
            busy[0] += 1
        try:
            result = attempted(items[index], index)
        except BaseException:
            stop.set()
            raise
        finally:
            with running:
                busy[0] -= 1
                running.notify_all()
        if bar is not None:
            bar.done(1, int(result is None))
        return result

    def end_jobs() -> None:
        with running:
            stop.set()
        pool.shutdown(cancel_futures=True)
        with running:
            running.wait_for(lambda: busy[0] == 0)

    def attempted(item, index: int):
        for attempt in range(1, attempts + 1):
            if stop.is_set():
                return None
            # the API's own lines stay the original's: the lease lines go to DEBUG here; inside
            # a cluster allocation the jobs still share its devices by their locks
            with leased(namespace, devices, n_slots, lock_dir, level=logging.DEBUG,
                             allocation=False) as lease:
                try:
                    return work(item, lease)
                except GekoError as exc:
                    log.warning("%s failed on device %d (attempt %d of %d): %s",
                                name_of(item), lease.device, attempt, attempts, exc)
                    failed[index] = failures.failed_item(name_of(item), exc)
        return None

    pool = ThreadPoolExecutor(max_workers=len(devices) * n_slots)
    try:
        futures = [pool.submit(one, index) for index in range(len(items))]
        pending = set(futures)
        while pending:  # woken each 0.2 s, so Ctrl-C reaches this thread while jobs run
            pending = wait(pending, timeout=0.2).not_done
        results = [future.result() for future in futures]
    except KeyboardInterrupt:
        interrupt.end_api_run(end_jobs)
    finally:  # the jobs running end (a tool Ctrl-C reached ends at once), then the run does
        end_jobs()
    return results, [failed[i] for i in sorted(failed) if results[i] is None]


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
