"""What every workflow job shares: logging to the job's log file, clean failure messages, and
running on a leased device of the configured platform. Scripts stay pure I/O around geko_lib."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

import pandas as pd
import yaml

from .campaign import state as campaign_state, integrity
from . import devices, files, interrupt, log_setup, path_errors, platforms, progress
from .errors import EnvironmentFailure, GekoError
from .gemm import GemmProblem
from .campaign.snakemake_records import incomplete_outputs
from .log_setup import LOGGER
# the workflow's phases read their tables and bench rows through jobs
from .bench_formats.rows import problems_in_rows  # noqa: F401
from .campaign.integrity import read_table  # noqa: F401

log = logging.getLogger(LOGGER)


class JobFailed(GekoError, RuntimeError):
    """A supervised job failed or stalled; the log says why."""


class StallError(JobFailed):
    """A supervised job stopped writing its log for longer than the stall timeout."""


class JobStoppedByEnvironment(JobFailed, EnvironmentFailure):
    """A supervised job ended by its surroundings (a full disk): not a failure of its work."""


# a user-facing failure ends the job with its message; anything else is a bug and keeps its
# traceback
USER_ERRORS = (GekoError,)
# a supervised job's exit status when its surroundings stopped it (errors.EnvironmentFailure):
# the parent tells it from a failure of the job's own work (EX_TEMPFAIL of sysexits.h)
ENVIRONMENT_EXIT = 75


LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)  # config key verbosity 0, 1, 2


class _NotLibraryWarning(logging.Filter):
    """Python warnings of libraries (pandas, matplotlib, ...) belong in the job log only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != "py.warnings"


def setup_logging(log_path, verbosity: int, own_thread: bool = False) -> None:
    """The job log gets every line at ``verbosity``; the terminal (shared by parallel jobs,
    where table rows of several jobs would interleave) gets the job's own warnings and errors.
    Without a log file the terminal gets everything. ``own_thread``: only this thread's lines,
    for a job in a process that goes on (Snakemake's: its scheduler logs from other threads
    through the same root logger)."""
    handlers = []
    terminal = logging.StreamHandler(sys.stderr)
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(log_setup.JobLog(log_path, mode="w"))
        terminal.setLevel(logging.WARNING)
        terminal.addFilter(_NotLibraryWarning())
        progress.draw_terminal_bars(False)  # parallel jobs' bars would garble the terminal
    handlers.append(terminal)
    if own_thread:
        ident = threading.get_ident()
        for handler in handlers:
            handler.addFilter(lambda record: record.thread == ident)
    logging.basicConfig(level=LEVELS[verbosity], force=True,
                        handlers=[log_setup.attach(h) for h in handlers])
    logging.captureWarnings(True)


@contextlib.contextmanager
def logging_restored():
    """The process's logging (the root logger's handlers and level, warnings capture, the
    terminal bars) as it was, after a job that set up its own (setup_logging) in a process that
    goes on: Snakemake's, for an in-process job."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    bars = progress.terminal_bars_drawn()
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.captureWarnings(False)
        progress.draw_terminal_bars(bars)


def run(main, job, companions: bool = False, own_thread: bool = False) -> None:
    """Run ``main(job)`` with logging to the job log, its inputs' stamps checked and its outputs
    stamped (``companions``: the files it writes beside them too). A user error, or the
    system's refusal of a path (``path_errors``), is said once, one clear line (in the job log,
    or on stderr where that log cannot be written) instead of a traceback, and raised: the
    workflow script's entry (phases.run_script) turns it into exit 1, an in-process caller
    gets it. ``own_thread``: the job's log takes this thread's lines only (setup_logging)."""
    try:
        with path_errors.translated():  # a job log that cannot be written
            setup_logging(job.log[0] if job.log else None, job.config["verbosity"], own_thread)
    except USER_ERRORS as exc:
        print(f"geko: error: {exc}", file=sys.stderr)
        raise
    log.debug("rule %s: input %s, output %s", job.rule, list(job.input), list(job.output))
    try:
        # a full disk, a read-only workdir: one line naming it; the job runs in its workdir,
        # whose outputs it writes only inside it (a symlink out made while the run goes on)
        with path_errors.translated(), files.confined_to(Path.cwd()):
            campaign = check_inputs(job)
            before = _beside_outputs(job)
            main(job)
            stamp_outputs(job, campaign, before, companions)
    except USER_ERRORS as exc:
        log.error("%s", exc)
        raise


def _paths(named) -> list[str]:
    return [str(p) for p in named]


def check_inputs(job) -> dict:
    """The campaign's identity, once every input this job reads from the workdir has been
    proved whole and current by its stamp (a damaged or stale one is refused, naming it)."""
    campaign = campaign_state.identity(job.config)
    root = Path.cwd()
    for name in _paths(job.input):
        path = Path(name)
        if path.is_absolute() or not path.exists():
            continue  # the workload source lives outside the workdir: run_state covers it
        expected = integrity.expected_provenance(campaign, job.config["mode"], name)
        # an input without a stamp is no declared output (the audit before the DAG is built
        # removes unstamped outputs), e.g. a file a checkpoint wrote beside its output
        if integrity.find_stamp(path, root) is not None:
            integrity.require(path, expected, root)
    return campaign


def _beside_outputs(job) -> dict[Path, int]:
    """The files beside the job's file outputs, with their mtimes, before the job runs."""
    found = {}
    for name in _paths(job.output):
        parent = Path(name).parent
        if Path(name).is_dir() or not parent.is_dir():
            continue
        for path in parent.iterdir():
            if path.is_file() and not path.name.startswith(".") and \
                    not integrity.is_stamp(path):
                found[path] = path.stat().st_mtime_ns
    return found


def stamp_outputs(job, campaign: dict, before: dict[Path, int], companions: bool = False
                  ) -> None:
    """Stamp every output of the finished job (digest, rows, provenance, input digests), and
    with ``companions`` the files it wrote beside them (a checkpoint's tuning YAMLs beside its
    manifest)."""
    inputs = integrity.input_digests(_paths(job.input), Path.cwd())
    rule = job.rule
    outputs = [name for name in _paths(job.output) if Path(name).exists()]
    for name in outputs:
        expected = integrity.expected_provenance(campaign, job.config["mode"], name)
        integrity.stamp(name, expected, inputs, rule=rule, outputs=outputs)
    file_outputs = [name for name in outputs if Path(name).is_file()]
    _drop_orphaned_stamps(file_outputs)
    # only a rule whose side files later jobs read (the configure checkpoint's tuning YAMLs and
    # scripts beside its manifest: the rule table's companions) stamps them; other jobs' side
    # files (a platform's tool rows and logs) are read by nobody, and parallel jobs write them
    # into one directory, where one job would stamp another's half-written file
    if not companions:
        return
    for path in _written_beside(file_outputs, before):
        expected = integrity.expected_provenance(campaign, job.config["mode"], path)
        integrity.stamp(path, expected, inputs, rule=rule, companion_of=file_outputs[0])


def _drop_orphaned_stamps(file_outputs: list[str]) -> None:
    """Sidecars beside the outputs whose file is gone (a checkpoint removed a tuning YAML it
    no longer writes): a stamp of nothing would make the next run recompute its owner."""
    for parent in {Path(name).parent for name in file_outputs}:
        for side in parent.glob("*" + integrity.STAMP_SUFFIX):
            if not side.with_name(side.name[:-len(integrity.STAMP_SUFFIX)]).exists():
                side.unlink(missing_ok=True)


def _stamped_by_another_job(path: Path, owner: str) -> bool:
    """A file beside this job's output that another job stamped: a declared output of a
    parallel job sharing the directory (its own valid sidecar), or another job's companion."""
    try:
        found = integrity.find_stamp(path)
    except integrity.IntegrityError:
        return False
    if found is None or found.where != integrity.sidecar(path):
        return False
    companion_of = found.record.get("companion_of")
    if companion_of:
        return companion_of != owner
    return integrity.damage(path, found) is None


def _written_beside(file_outputs: list[str], before: dict[Path, int]) -> list[Path]:
    """Files new or changed beside the outputs since the job started, not declared outputs and
    not stamped meanwhile by their own job (parallel jobs may share a directory)."""
    if not file_outputs:
        return []
    declared = {Path(name).resolve() for name in file_outputs}
    # outputs of jobs still running beside this one (Snakemake marks them incomplete until
    # they finish, after their own stamp) are theirs to stamp
    declared |= {Path(name).resolve() for name in incomplete_outputs(Path.cwd())}
    found = []
    for parent in {Path(name).parent for name in file_outputs}:
        for path in sorted(parent.iterdir()):
            if not path.is_file() or path.name.startswith(".") or integrity.is_stamp(path) \
                    or path.resolve() in declared:
                continue
            mtime = path.stat().st_mtime_ns
            if before.get(path) == mtime:
                continue
            if _stamped_by_another_job(path, file_outputs[0]):
                continue
            found.append(path)
    return found


@contextlib.contextmanager
def on_device(config: dict, n_slots: int = 1):
    """(platform, device id) for the duration of a GPU job; ``n_slots`` jobs may share a device
    (tuning jobs overlap compilation with another job's timing)."""
    with on_lease(config, n_slots) as (platform, lease):
        yield platform, lease.device


@contextlib.contextmanager
def on_lease(config: dict, n_slots: int = 1):
    """(platform, devices.Lease: device and slot) for the duration of a GPU job."""
    platform = platforms.get(config)
    with devices.leased(platform.name, config["devices"], n_slots,
                        config.get("lock_dir")) as lease:
        yield platform, lease


def supervise(fn, log_path, stall_timeout: float, poll: float = 0.5,
              interrupted: Callable[[], bool] | None = None) -> None:
    """Run ``fn()`` in a child process; kill it (and count it as failed) when ``log_path``
    stops growing for ``stall_timeout`` seconds. Tuning jobs can hang (a wedged GPU, a
    deadlocked compiler); a log that stops growing is the only sign that generalizes.
    ``interrupted()`` (the API's runner, whose worker threads get no KeyboardInterrupt) says
    the caller's run was interrupted: the child is killed and KeyboardInterrupt raised, so an
    interrupt is never counted as the job's failure. In a process that has initialized CUDA a
    forked child could not use it: there ``fn()`` runs here, unsupervised, and says so."""
    interrupted = interrupted or (lambda: False)
    if _fork_breaks_cuda():
        log.warning("stall watchdog off for this job: this process has initialized CUDA, "
                    "which a forked job cannot use")
        fn()
        return
    ctx = mp.get_context("fork")
    child = ctx.Process(target=_supervised_child, args=(fn,), daemon=False)
    child.start()
    try:
        _watch(child, Path(log_path), stall_timeout, poll, interrupted)
    except BaseException:
        # Ctrl-C or a SIGTERM of this job: the child, in its own group, got no signal, and a
        # live non-daemon child would keep this process (and Snakemake) waiting for it
        _kill_child(child)
        raise
    if child.exitcode != 0:
        _raise_failed(child.exitcode, Path(log_path), interrupted)


def _watch(child, path: Path, stall_timeout: float, poll: float, interrupted) -> None:
    """Wait for ``child``; raise StallError when ``path`` stopped growing for too long."""
    size, changed = -1, time.monotonic()
    while child.is_alive():
        child.join(poll)
        if interrupted():
            raise KeyboardInterrupt
        current = path.stat().st_size if path.exists() else 0
        if current != size:
            size, changed = current, time.monotonic()
        elif time.monotonic() - changed > stall_timeout:
            _kill_child(child)
            raise StallError(f"no progress in {path} for {stall_timeout:.0f} s: job killed")


def _raise_failed(exitcode: int, path: Path, interrupted) -> None:
    """Why a supervised child failed, as the job said it (its ERROR line), so failed_jobs.log
    can give the reason; a full disk may have kept the job from writing that line."""
    if interrupted():  # its tool was killed by the interrupt, which is no failure of the job
        raise KeyboardInterrupt
    if exitcode == ENVIRONMENT_EXIT:
        why = log_setup.first_error(path) or "stopped by its environment (a full disk or " \
            "quota: free some and rerun)"
        raise JobStoppedByEnvironment(f"{why}; see {path}")
    why = log_setup.first_error(path) or f"job failed (exit code {exitcode})"
    raise JobFailed(f"{why}; see {path}")


def _fork_breaks_cuda() -> bool:
    """Whether this process has initialized CUDA (torch's), which a forked child cannot use:
    the API's caller may have timed GEMMs in process before tuning; a workflow job has not."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 - a torch without CUDA, or half imported
        return False


def _kill_child(child) -> None:
    """SIGKILL a supervised child, its process group and whatever it started in other groups
    (a tool it runs in a session of its own)."""
    started = interrupt.descendants(child.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    interrupt.kill(started)
    child.join()


def _supervised_child(fn) -> None:
    os.setpgid(0, 0)  # its own process group, so a kill takes its children too
    _die_with_parent()
    code = 0
    try:
        with path_errors.translated():
            fn()
    except USER_ERRORS as exc:
        log.error("%s", exc)
        code = ENVIRONMENT_EXIT if isinstance(exc, EnvironmentFailure) else 1
    except BaseException:  # noqa: BLE001 - a bug: its traceback, as multiprocessing prints it
        traceback.print_exc()
        code = 1
    # ended here, without the exit hooks a normal exit runs: a child forked from a worker
    # thread (the API's runner) would run its parent's thread pool's hook, which joins that
    # very thread and fails
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _die_with_parent() -> None:
    """Linux: end this process when the job script supervising it dies (a campaign killed with
    SIGKILL), instead of tuning on as an orphan that holds the workdir: a rerun would see a
    live campaign there and refuse. Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
