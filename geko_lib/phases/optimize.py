"""optimizations/<cfg>.yaml -> optimizations/build_<cfg>/3_LibraryLogic on a leased device
slot, supervised: a job whose log stops growing for stall_timeout seconds is killed. A job that
fails its last attempt (1 + tune_retries, or 1 with retry off) is skipped: an empty
3_LibraryLogic, its name in optimizations/failed_jobs.log (geko_lib.failures). A job its
surroundings stopped (a full disk: errors.EnvironmentFailure) is no such failure: it ends the
run with its one line, counts toward neither the failure streak nor retirement, and a rerun
tunes it again. While it runs its line is in optimizations/running_jobs.log
(geko_lib.tuning.running_jobs)."""
import logging
from pathlib import Path

from .. import failures, jobs
from ..campaign import layout
from ..errors import EnvironmentFailure
from ..tuning import build_dir, running_jobs
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)


def attempts(config) -> int:
    return 1 + (config["tune_retries"] if config["retry"] else 0)


def skip(build: Path, name: str, why: str) -> None:
    """The job ends without a library: an empty 3_LibraryLogic, so the campaign goes on."""
    (build / build_dir.LOGIC_DIR).mkdir(parents=True, exist_ok=True)
    log.warning("%s skipped: %s (listed in %s)", name, why, layout.TUNING_FAILED)


def run(job):
    config, name = job.config, job.wildcards.cfg
    build = Path(job.output[0]).parent
    streak = failures.FailureStreak(build.parent, config["max_consecutive_failures"],
                                    layout.TUNING_FAILED)
    if failures.retired(layout.TUNING_DIR, name, config["retire_after"]):
        build.mkdir(parents=True, exist_ok=True)  # its name stays in failed_jobs.log
        return skip(build, name, f"retired after {config['retire_after']} failed runs")
    streak.check()
    build_dir.prepare_build_dir(build, name, Path(job.input[0]))

    def work():
        with jobs.on_lease(config, n_slots=config["n_slots"]) as (platform, lease), \
                running_jobs.entry(layout.TUNING_DIR, name, lease.device, lease.slot, job.log[0]):
            platform.optimize(Path(job.input[0]), build, lease.device)

    try:
        try:
            jobs.supervise(work, job.log[0], config["stall_timeout"])
        finally:  # a job killed by the stall watchdog could not remove its line itself
            running_jobs.forget(layout.TUNING_DIR, name)
    except EnvironmentFailure:
        raise  # the job's work did not fail: nothing is counted, a rerun resumes
    except jobs.USER_ERRORS as exc:
        build_dir.bump_failcount(build)
        streak.failed()
        failures.edit_failed_log(layout.TUNING_DIR, name, exc)
        if job.resources.attempt < attempts(config):
            raise  # Snakemake runs the next attempt
        failures.record_run(layout.TUNING_DIR, name, failed=True)
        return skip(build, name, f"failed {attempts(config)} attempt(s): {exc}")
    streak.succeeded()
    failures.edit_failed_log(layout.TUNING_DIR, name)
    failures.record_run(layout.TUNING_DIR, name, failed=False)  # the count it ran at
