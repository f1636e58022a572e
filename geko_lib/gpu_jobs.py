"""The GPU job of a tuning build, written once for both doors.

A tuning job tunes one tuning YAML into ``build_<cfg>/3_LibraryLogic`` on a leased device slot,
supervised (``jobs.supervise``): a job whose log stops growing for ``stall_timeout`` seconds is
killed and counts as failed. Its policy, the same whichever door it came in by:

- every failed attempt bumps the build dir's ``.failcount``, adds to the tuning jobs' failure
  streak (``failures.FailureStreak``) and lists the job in ``failed_jobs.log`` with the reason
  the job logged; an attempt before the last raises, and the door runs the next (Snakemake for
  the workflow, ``geko_lib.runner`` for the API), resuming the GA from its checkpoint;
- the last failed attempt (1 + ``tune_retries``, or 1 with ``retry`` off) is a failed run of
  the job (``failures.record_run``) and the job is *skipped*: an empty ``3_LibraryLogic``, so
  the campaign goes on;
- a job retired (failed ``retire_after`` runs) is skipped without running; once
  ``max_consecutive_failures`` jobs failed in a row no more start (``failures.TuningAborted``);
- a job its surroundings stopped (a full disk: ``errors.EnvironmentFailure``) is no such
  failure: it is raised, counts toward neither the streak nor retirement, and a rerun tunes it
  again;
- while it runs its line is in ``running_jobs.log`` (``tuning.running_jobs``).

The workflow's optimize phase (``phases/optimize.py``) and the API's ``optim.run`` are the
doors: each says where the job's files are (:class:`TuningJob`) and how it gets its platform
and device slot. tests/test_api_workflow_parity.py runs a failing and a stalling job through
both and finds the same files, log lines and counts.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

from . import failures, jobs
from .errors import EnvironmentFailure
from .log_setup import LOGGER
from .tuning import build_dir, running_jobs

log = logging.getLogger(LOGGER)


@dataclass(frozen=True)
class TuningJob:
    """One attempt of a tuning job: its tuning YAML, its build dir, the directory of the
    tuning jobs' shared files (``failed_jobs.log``, ``running_jobs.log``, the failed-run counts
    and the failure streak), the log the stall watchdog watches, the campaign's settings
    (``stall_timeout``, ``retry``, ``tune_retries``, ``retire_after``,
    ``max_consecutive_failures``) and the attempt (1 first)."""

    tuning_yaml: Path
    build: Path
    tuning_dir: Path
    log: Path
    config: dict
    attempt: int = 1

    @property
    def name(self) -> str:
        return Path(self.tuning_yaml).stem

    @property
    def failed_log(self) -> Path:
        return Path(self.tuning_dir) / failures.FAILED_JOBS


def attempts(config: dict) -> int:
    """How many attempts a tuning job gets: 1 + ``tune_retries``, 1 with ``retry`` off."""
    return 1 + (config["tune_retries"] if config["retry"] else 0)


def skip(job: TuningJob, why: str) -> None:
    """The job ends without a library: an empty 3_LibraryLogic, so the campaign goes on."""
    (Path(job.build) / build_dir.LOGIC_DIR).mkdir(parents=True, exist_ok=True)
    log.warning("%s skipped: %s (listed in %s)", job.name, why, job.failed_log)


def tune(job: TuningJob, on_device: Callable[[], ContextManager],
         interrupted: Callable[[], bool] | None = None) -> Path | None:
    """Run one attempt of ``job`` under the tuning jobs' policy (this module's docstring).
    ``on_device()`` is entered in the supervised child and yields (platform, a lease with
    ``device`` and ``slot``); ``interrupted()`` says the caller's run was interrupted (the API's
    Ctrl-C: jobs.supervise). Returns the logic dir, or None where the job was skipped."""
    config, tuning_dir = job.config, Path(job.tuning_dir)
    streak = failures.FailureStreak(tuning_dir, config["max_consecutive_failures"],
                                    job.failed_log)
    if failures.retired(tuning_dir, job.name, config["retire_after"]):
        Path(job.build).mkdir(parents=True, exist_ok=True)  # its name stays in failed_jobs.log
        return skip(job, f"retired after {config['retire_after']} failed runs")
    streak.check()
    build_dir.prepare_build_dir(Path(job.build), job.name, Path(job.tuning_yaml))
    try:
        _supervised(job, on_device, interrupted)
    except EnvironmentFailure:
        raise  # the job's work did not fail: nothing is counted, a rerun resumes
    except jobs.USER_ERRORS as exc:
        _count_failed_attempt(job, streak, exc)
        if job.attempt < attempts(config):
            raise  # the door runs the next attempt
        failures.record_run(tuning_dir, job.name, failed=True)
        return skip(job, f"failed {attempts(config)} attempt(s): {exc}")
    streak.succeeded()
    failures.edit_failed_log(tuning_dir, job.name)
    failures.record_run(tuning_dir, job.name, failed=False)  # the count it ran at
    return Path(job.build) / build_dir.LOGIC_DIR


def _supervised(job: TuningJob, on_device, interrupted) -> None:
    """The platform's optimize in a supervised child, its running_jobs.log line around it."""
    def work():
        with on_device() as (platform, lease), running_jobs.entry(
                job.tuning_dir, job.name, lease.device, lease.slot, job.log):
            platform.optimize(Path(job.tuning_yaml), Path(job.build), lease.device)

    try:
        jobs.supervise(work, job.log, job.config["stall_timeout"], interrupted=interrupted)
    finally:  # a job killed by the stall watchdog could not remove its line itself
        running_jobs.forget(job.tuning_dir, job.name)


def _count_failed_attempt(job: TuningJob, streak: failures.FailureStreak, exc) -> None:
    build_dir.bump_failcount(Path(job.build))
    streak.failed()
    failures.edit_failed_log(Path(job.tuning_dir), job.name, exc)


def on_given(platform, lease) -> Callable[[], ContextManager]:
    """``on_device`` for a door that leased the slot before the job (the API's runner)."""
    return lambda: contextlib.nullcontext((platform, lease))
