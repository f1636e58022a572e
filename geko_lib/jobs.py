"""What every workflow job shares: logging to the job's log file, clean failure messages, and
running on a leased device of the configured platform. Scripts stay pure I/O around geko_lib."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from . import devices, platforms
from .errors import GekoError
from .gemm import GemmProblem

log = logging.getLogger("geko")


class JobFailed(GekoError, RuntimeError):
    """A supervised job failed or stalled; the log says why."""


class StallError(JobFailed):
    """A supervised job stopped writing its log for longer than the stall timeout."""


# a user-facing failure ends the job with its message; anything else is a bug and keeps its
# traceback
USER_ERRORS = (GekoError,)


LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)  # config key verbosity 0, 1, 2


class _NotLibraryWarning(logging.Filter):
    """Python warnings of libraries (pandas, matplotlib, ...) belong in the job log only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != "py.warnings"


def setup_logging(log_path, verbosity: int) -> None:
    """The job log gets every line at ``verbosity``; the terminal (shared by parallel jobs,
    where table rows of several jobs would interleave) gets the job's own warnings and errors.
    Without a log file the terminal gets everything."""
    handlers = []
    terminal = logging.StreamHandler(sys.stderr)
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
        terminal.setLevel(logging.WARNING)
        terminal.addFilter(_NotLibraryWarning())
    handlers.append(terminal)
    logging.basicConfig(level=LEVELS[verbosity], handlers=handlers, force=True,
                        format="GEKO:%(levelname)s [%(name)s] %(message)s")
    logging.captureWarnings(True)


def run(main, smk) -> None:
    """Run ``main(smk)`` with logging to the job log; user errors end the job with one clear
    line (exit 1) instead of a traceback."""
    setup_logging(smk.log[0] if smk.log else None, smk.config["verbosity"])
    log.debug("rule %s: input %s, output %s", smk.rule, list(smk.input), list(smk.output))
    try:
        main(smk)
    except USER_ERRORS as exc:
        log.error("%s", exc)
        sys.exit(1)


@contextlib.contextmanager
def on_device(config: dict, n_slots: int = 1):
    """(platform, device id) for the duration of a GPU job; ``n_slots`` jobs may share a device
    (tuning jobs overlap compilation with another job's timing). The log's ``leased`` and
    ``freed`` lines carry epoch seconds taken inside the lock, so lease intervals can be
    audited from the job logs (bench/bench_fanout.py)."""
    platform = platforms.get(config)
    with devices.lease(config["devices"], n_slots=n_slots, lock_dir=config.get("lock_dir") or None,
                       namespace=platform.name) as lease:
        what = (platform.name, lease.device, lease.slot)
        log.info("leased %s device %d slot %d at %.3f", *what, time.time())
        try:
            yield platform, lease.device
        finally:
            log.info("freed %s device %d slot %d at %.3f", *what, time.time())


def read_table(path) -> pd.DataFrame:
    """A results / summary CSV with identity columns typed as the workflow writes them."""
    return pd.read_csv(path, dtype={"transA": str, "transB": str}, keep_default_na=False,
                       na_values=[""])


def problems_in_rows(path) -> list[GemmProblem]:
    """Unique problems of a YAML file of hipblaslt-bench rows, in order."""
    rows = yaml.safe_load(Path(path).read_text()) or []
    return list(dict.fromkeys(GemmProblem.from_row(row) for row in rows))


def supervise(fn, log_path, stall_timeout: float, poll: float = 0.5) -> None:
    """Run ``fn()`` in a child process; kill it (and count it as failed) when ``log_path``
    stops growing for ``stall_timeout`` seconds. Tuning jobs can hang (a wedged GPU, a
    deadlocked compiler); a log that stops growing is the only sign that generalizes."""
    ctx = mp.get_context("fork")
    child = ctx.Process(target=_supervised_child, args=(fn,), daemon=False)
    child.start()
    path = Path(log_path)
    size, changed = -1, time.monotonic()
    while child.is_alive():
        child.join(poll)
        current = path.stat().st_size if path.exists() else 0
        if current != size:
            size, changed = current, time.monotonic()
        elif time.monotonic() - changed > stall_timeout:
            os.killpg(child.pid, signal.SIGKILL)
            child.join()
            raise StallError(f"no progress in {path} for {stall_timeout:.0f} s: job killed")
    if child.exitcode != 0:
        raise JobFailed(f"job failed (exit code {child.exitcode}); see {path}")


def _supervised_child(fn) -> None:
    os.setpgid(0, 0)  # its own process group, so a kill takes its children too
    try:
        fn()
    except USER_ERRORS as exc:
        log.error("%s", exc)
        raise SystemExit(1)
