"""A failing GEMM is retried, then logged and skipped; the campaign finishes for the rest.

The original tool's behaviour (its runner and dense search): a failed job is retried, what still
fails is written to ``failed_jobs.log`` and left out, and a shape that keeps failing is retired.
In the workflow:

- **search**: a chunk job whose search fails searches each of its GEMMs alone (the retry); the
  GEMMs that still fail are recorded in the chunk's ``search/data/<chunk>.failed.yaml`` and left
  out of its candidates; the winners rule lists them in ``search/failed_jobs.log``.
- **tune**: a tuning job is attempted ``1 + tune_retries`` times (Snakemake's retries, or the
  API runner's, resuming the GA from its checkpoint: geko_lib.gpu_jobs); after the last failure
  it ends as *skipped*: an empty ``3_LibraryLogic`` and its name in
  ``optimizations/failed_jobs.log``.
- ``retry: false`` (``geko --no_retry``) turns both retries off: the first failure is final.
- **later runs**: a plain rerun tries a job whose last run failed again (a search chunk is
  searched whole again), as the original's reruns do; with ``retire_after: N`` (off by
  default, as in the original) a job that failed N runs is *retired* and reruns leave it alone
  (delete its output, or ``--forcerun`` it, to try again). With ``retry: false`` reruns leave
  every earlier failed job alone too. Failed runs are counted per job in
  ``<phase>/.failed_runs.json`` (with the count each job last ran at); the rule's ``params``
  carry :func:`rerun_token`, which changes after a failed run until the job is retired (never,
  with retry off), so Snakemake's params trigger reruns exactly those jobs.
- **in a row**: with ``max_consecutive_failures: N`` a tune campaign starts no more tuning jobs
  once N failed one after another (:class:`FailureStreak`): a degrading node fails them all.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Callable, Sequence

from . import locks
from .errors import GekoError
from .log_setup import LOGGER

log = logging.getLogger(LOGGER)

COUNTS_FILE = ".failed_runs.json"


# --- failed runs per job, across runs ------------------------------------------------------------

@contextlib.contextmanager
def _locked_entries(phase_dir: Path):
    phase_dir = Path(phase_dir)
    phase_dir.mkdir(parents=True, exist_ok=True)
    with locks.exclusive(phase_dir / f"{COUNTS_FILE}.lock"):
        entries = read_entries(phase_dir)
        yield entries
        path = phase_dir / COUNTS_FILE
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
        tmp.replace(path)


def read_entries(phase_dir: Path) -> dict[str, dict]:
    """job name -> {failed_runs, ran_at}: runs that ended with the job failed, and that count
    when the job last ran (a bare count is an older file's; unreadable counts read as none)."""
    try:
        data = json.loads((Path(phase_dir) / COUNTS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    entries = {}
    for name, value in data.items():
        if isinstance(value, int):
            value = {"failed_runs": value}
        if isinstance(value, dict) and isinstance(value.get("failed_runs"), int):
            entries[str(name)] = value
    return entries


def read_counts(phase_dir: Path) -> dict[str, int]:
    """job name -> runs that ended with the job failed."""
    return {name: entry["failed_runs"] for name, entry in read_entries(phase_dir).items()}


def record_run(phase_dir: Path, name: str, failed: bool) -> int:
    """Count one more failed run of ``name`` (a run that ended well leaves its count as it is,
    so the rerun token stays what Snakemake recorded), and the count it ran at; returns the
    count."""
    with _locked_entries(phase_dir) as entries:
        entry = entries.setdefault(name, {"failed_runs": 0})
        entry["ran_at"] = entry["failed_runs"]
        if failed:
            entry["failed_runs"] += 1
        return entry["failed_runs"]


def rerun_token(phase_dir: Path, name: str, retire_after: int, retry: bool = True) -> str:
    """What the job's ``params`` carry: it changes after each failed run, so a plain rerun tries
    the job again, and stops changing once the job has failed ``retire_after`` runs (retired;
    0 = never retired). With ``retry`` off it stays what the job last ran with: reruns leave
    earlier failed jobs alone."""
    entry = read_entries(phase_dir).get(name, {"failed_runs": 0})
    runs = entry["failed_runs"] if retry else entry.get("ran_at", entry["failed_runs"])
    if retire_after > 0:
        runs = min(runs, retire_after - 1)
    return f"failed runs {runs}"


def retired(phase_dir: Path, name: str, retire_after: int) -> bool:
    return retire_after > 0 and read_counts(phase_dir).get(name, 0) >= retire_after


# --- one job's GEMMs: whole, then one by one ------------------------------------------------------

def run_with_retry(run: Callable[[Sequence], object], items: Sequence, name_of: Callable,
                   retry: bool) -> tuple[list, list[dict]]:
    """``run(items)`` once; where it fails with a user-facing error (a tool failed, a GEMM it
    cannot run) and ``retry`` is on, ``run([item])`` for each item alone. Returns (the results
    of the runs that worked, [{gemm, error}] of the items that failed). Errors that are not
    ``GekoError`` are bugs and propagate."""
    try:
        return [run(items)], []
    except GekoError as exc:
        if not retry or len(items) <= 1:
            log.warning("%d GEMM(s) failed, skipped: %s", len(items), exc)
            return [], [failed_item(name_of(i), exc) for i in items]
        log.warning("%d GEMMs failed together (%s); retrying each alone", len(items), exc)
    results, failed = [], []
    for item in items:
        try:
            results.append(run([item]))
        except GekoError as exc:
            log.warning("%s failed again, skipped: %s", name_of(item), exc)
            failed.append(failed_item(name_of(item), exc))
    return results, failed


def failed_item(name: str, error) -> dict:
    """One failed item (a GEMM of the search, a tuning job of tune) and why: what
    ``failed_jobs.log`` lists (its key is ``gemm`` for either, as the chunks' failed.yaml files
    have it)."""
    return {"gemm": name, "error": str(error)}


def failed_log_text(entries: Sequence[dict]) -> str:
    """``failed_jobs.log``: one failed item per line (as the original), then why."""
    return "".join(f"{e['gemm']}  # {e['error'].splitlines()[0] if e['error'] else ''}\n"
                   for e in entries)


FAILED_JOBS = "failed_jobs.log"  # one failed GEMM a line, then why (the original's)
FAILED_GEMMS = "failed_gemms.yaml"  # their hipblaslt-bench rows, to rerun by hand


def with_rows(failed: Sequence[dict], rows: Sequence[dict], name_of: Callable) -> list[dict]:
    """The failed entries of run_with_retry with each GEMM's bench rows (``rows``)."""
    by_name: dict[str, list[dict]] = {}
    for row in rows:
        by_name.setdefault(name_of(row), []).append(row)
    return [dict(entry, rows=by_name.get(entry["gemm"], [])) for entry in failed]


def write_failure_files(directory: Path, failed: Sequence[dict],
                        what: str = "GEMM(s) failed the dense search") -> None:
    """``failed_jobs.log`` of a phase's items that failed (:func:`failed_item`), and for the
    GEMMs of a search (entries of :func:`with_rows`) ``failed_gemms.yaml``, in ``directory``: the
    same files whichever door ran the phase (the workflow's winners, the API's search.run and
    optim.run); a run without failures leaves neither behind."""
    from . import files
    from .library.logic import dump_rows

    directory = Path(directory)
    for name in (FAILED_JOBS, FAILED_GEMMS):
        (directory / name).unlink(missing_ok=True)
    if not failed:
        return
    files.write_text(directory / FAILED_JOBS, failed_log_text(failed))
    rows = [row for item in failed for row in item.get("rows", ())]
    if rows:
        dump_rows(rows, directory / FAILED_GEMMS)
    log.warning("%d %s and are skipped: see %s", len(failed), what, directory / FAILED_JOBS)


def failed_names(text: str) -> list[str]:
    """The items of a ``failed_jobs.log`` (the first word of each line)."""
    return [item["gemm"] for item in failed_items(text)]


def failed_items(text: str) -> list[dict]:
    """The entries of a ``failed_jobs.log`` (:func:`failed_item`, its line read back)."""
    items = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, why = line.partition("#")
            items.append(failed_item(name.split()[0], why.strip()))
    return items


def edit_failed_log(directory: Path, name: str, error=None) -> None:
    """List ``name`` in ``directory``'s ``failed_jobs.log`` with why it failed (``error``), or
    with ``error`` None take it off (a job that worked); under a lock, as parallel jobs of the
    workflow edit it one at a time (a tuning job after each attempt). The file goes when it
    would list nothing."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FAILED_JOBS
    with locks.exclusive(directory / f".{FAILED_JOBS}.lock"):
        items = failed_items(path.read_text()) if path.exists() else []
        items = [item for item in items if item["gemm"] != name]
        if error is not None:
            items.append(failed_item(name, error))
        if items:
            from . import files

            files.write_text(path, failed_log_text(items))
        else:
            path.unlink(missing_ok=True)


# --- tuning jobs failing in a row ---------------------------------------------------------------

class TuningAborted(GekoError, RuntimeError):
    """Too many tuning jobs failed in a row: the campaign stops starting new ones."""


class FailureStreak:
    """Consecutive failed tuning jobs across the campaign (a shared file under a lock); a
    degrading node shows up as a run of failures, and burning hours on it helps nobody.
    ``failed_log`` is where the failed jobs are listed (named when the cap stops the tuning)."""

    def __init__(self, directory: Path, cap: int, failed_log):
        self.path, self.cap = Path(directory) / ".failure_streak", int(cap)
        self.failed_log = failed_log

    def _update(self, change) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locks.exclusive(self.path, "a+") as handle:
            handle.seek(0)
            text = handle.read().strip()
            value = change(int(text) if text.isdigit() else 0)
            handle.seek(0)
            handle.truncate()
            handle.write(f"{value}\n")
            return value

    def check(self) -> None:
        streak = self._update(lambda v: v)
        if self.cap and streak >= self.cap:
            raise TuningAborted(f"{streak} consecutive tuning jobs failed (max_consecutive_"
                               f"failures={self.cap}): not starting more; see {self.failed_log}")

    def succeeded(self) -> None:
        self._update(lambda v: 0)

    def failed(self) -> int:
        return self._update(lambda v: v + 1)
