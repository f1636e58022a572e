"""The GPU jobs of a campaign, each written once for both doors: a dense search's chunk, a
tuning build and the comparison of one device's libraries.

A search chunk (:class:`SearchChunk`, :func:`search`) searches its GEMMs on a device whole; where
that fails with a user-facing error and ``retry`` is on, each GEMM alone. It returns every
candidate, with the original's columns, and the GEMMs that failed with their bench rows. The
workflow's search_share phase and the API's ``search.run`` write them out, each in its own
layout; the API's chunks keep their candidates stamped for reuse (``search.reuse``), which the
job asks before it measures a part. The workflow runs one job per device over its share of
the chunks (:func:`search_share`, one device context for the phase), each chunk's candidates
stamped as it finishes: a rerun redoes only the chunks without a current stamp or with failed
GEMMs.

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

The comparison of a device's libraries (:class:`LibraryBench`, :func:`bench_libraries`) times
each library's GEMMs with the default kernels and with the created library, and checks the
created library's numbers, in one process on one leased device (one device context for the
phase). Each library's results are its own files, stamped once whole with what they were made
from; a rerun (after a kill, a GPU fault, or one library's failure) reuses every library whose
stamps are whole and current and redoes the rest. A library whose step fails with a user error
gets its failure file (``<lib>_failed.log``) and the others go on.

The workflow's phases (``phases/search_share.py``, ``phases/optimize.py``) and the API's
``search.run`` and ``optim.run`` are the doors: each says where a job's files are and how it
gets its platform and device. tests/test_api_workflow_parity.py runs a failing and a stalling
tuning job, and a search chunk with a failing GEMM, through both and finds the same files, log
lines and counts.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

import pandas as pd
import yaml

from . import failures, files, jobs, original_columns, progress as progress_bar
from .bench.utils import format_benchmark_output
from .bench_formats.text import out_beside
from .campaign import integrity, layout
from .errors import EnvironmentFailure
from .bench_formats.rows import unique_problems
from .gemm import GemmProblem
from .platforms import RESULT_COLUMNS
from .log_setup import LOGGER
from .tuning import build_dir, running_jobs

log = logging.getLogger(LOGGER)


# --- a dense search's chunk ---------------------------------------------------------------------

@dataclass(frozen=True)
class SearchChunk:
    """One chunk of a dense search: its name, its bench rows (search.configure's; a GEMM may have
    several), the search's duration per GEMM and whether a failed chunk is retried GEMM by
    GEMM."""

    name: str
    rows: tuple
    duration: float | None
    retry: bool

    def problems(self) -> list[GemmProblem]:
        return unique_problems(self.rows)

    def rows_of(self, problems) -> list[dict]:
        names = {p.name for p in problems}
        return [row for row in self.rows if gemm_name(row) in names]


def gemm_name(row: dict) -> str:
    return GemmProblem.from_row(row).name


class Reuse:
    """What a door keeps of a chunk's parts between runs: ``reused`` gives a part's candidates
    an earlier run measured for the same rows (or None: the part is measured), ``keep`` keeps a
    part's new ones. A part is the chunk (its name) or one retried GEMM (``<chunk>_retry<i>``).
    This one keeps nothing (the workflow's: Snakemake decides what reruns)."""

    def reused(self, label: str, rows: list[dict]) -> pd.DataFrame | None:
        return None

    def keep(self, label: str, rows: list[dict], frame: pd.DataFrame) -> None:
        pass


def search(chunk: SearchChunk, platform, device: int, out_dir: Path, reuse: Reuse | None = None,
           progress: Callable[[int], None] | None = None) -> tuple[pd.DataFrame, list[dict]]:
    """Search ``chunk`` on ``device`` (this module's docstring). ``out_dir`` is where the
    platform may leave its tool logs; ``progress`` counts the whole chunk's GEMMs as they finish
    (a retried GEMM counts when the job ends). Returns (every candidate, with the original's
    columns; the failed GEMMs: failures.with_rows)."""
    problems, reuse = chunk.problems(), reuse or Reuse()
    retries = iter(range(len(problems)))

    def searched(items: list[GemmProblem]) -> pd.DataFrame:
        whole = len(items) == len(problems)
        # a retried GEMM is a part of its own, so a rerun resumes from it too
        label = chunk.name if whole else f"{chunk.name}_retry{next(retries)}"
        rows = chunk.rows_of(items)
        frame = reuse.reused(label, rows)
        if frame is None:
            counted = whole and progress and progress_bar.accepts_progress(platform.search)
            frame = original_columns.add(
                platform.search(items, out_dir, device, duration=chunk.duration,
                                **({"progress": progress} if counted else {})),
                platform.lib_source)
            reuse.keep(label, rows, frame)
        return frame

    found, failed = failures.run_with_retry(searched, problems, lambda p: p.name, chunk.retry)
    frames = [frame for frame in found if len(frame)]
    candidates = pd.concat(frames, ignore_index=True) if frames else \
        original_columns.add(pd.DataFrame(columns=list(RESULT_COLUMNS)), platform.lib_source)
    return candidates, failures.with_rows(failed, chunk.rows, gemm_name)


@dataclass(frozen=True)
class ChunkFiles:
    """Where the workflow keeps one chunk of a device's share: its rows (search/chunks/), its
    candidates and its failed GEMMs (search/data/), the candidates stamped last."""

    source: Path

    @property
    def name(self) -> str:
        return self.source.stem

    @property
    def data(self) -> Path:
        return Path(layout.fill(layout.SEARCH_DATA, chunk=self.name))

    @property
    def failed(self) -> Path:
        return Path(layout.fill(layout.SEARCH_CHUNK_FAILED, chunk=self.name))


def search_share(chunks: list[tuple[SearchChunk, ChunkFiles]], platform, device: int,
                 expected: Callable[[Path], dict],
                 written: Callable[[SearchChunk, pd.DataFrame], None]):
    """Search every chunk of one device's share on ``device`` in this process; a chunk whose
    candidates are stamped whole, from its current rows, with no failed GEMM, is reused (a
    rerun after a kill redoes only the chunks without a stamp, after a failure only those with
    failed GEMMs). ``written`` writes a measured chunk's other files (the original's per-GEMM
    ones) before its stamp. Returns (every candidate, every failed GEMM with its rows)."""
    found, failed = [], []
    for chunk, where in chunks:
        candidates, gone = _stamped_chunk(where, expected, platform)
        if candidates is None:
            with progress_bar.Progress(len(chunk.problems()), f"search {chunk.name}",
                                       unit="GEMM") as bar:
                candidates, gone = search(chunk, platform, device, where.data.parent,
                                          progress=bar.update)
                bar.finish()
            written(chunk, candidates)
            files.write_text(where.failed, yaml.safe_dump(gone, sort_keys=False))
            files.write_csv(where.data, candidates)
            # the candidates last: their stamp says the chunk is done
            _stamp_in_order((where.failed, where.data), [where.source], expected,
                            "search_share")
        found.append(candidates)
        failed.extend(gone)
    return found, failed


def _stamped_chunk(where: ChunkFiles, expected, platform) -> tuple:
    """(candidates, failed) of a chunk an earlier run of the job finished whole from the same
    rows with no failed GEMM, else (None, None) with the reason logged."""
    reason = _reuse_problem(where.data, expected, "not searched")
    if reason is None and where.failed.is_file():
        gone = files.load_yaml(where.failed.read_text()) or []
        if not gone:
            log.info("%s: reused (stamped)", where.name)
            return original_columns.add(integrity.read_table(where.data),
                                        platform.lib_source), []
        reason = f"{len(gone)} GEMM(s) failed"
    log.info("%s: searched: %s", where.name, reason or f"{where.failed} missing")
    return None, None


# --- the stamps of a job's units (a search chunk, a library's step) ---------------------------

def _reuse_problem(path: Path, expected, missing: str) -> str | None:
    """Why an earlier run's ``path`` cannot be reused (``missing`` where there is none), None
    where its stamp is whole and current and its inputs unchanged. Inputs are recorded
    relative to the workdir, which a job runs in."""
    if not path.is_file():
        return missing
    return integrity.problem(path, expected(path), root=Path.cwd(), check_inputs=True)


def _stamp_in_order(paths, sources, expected, rule: str) -> None:
    """Stamp ``paths`` in their order with the digests of ``sources`` (relative to the
    workdir): a unit of a job is done once its last file's stamp is written."""
    inputs = integrity.input_digests(sources, Path.cwd())
    for path in paths:
        integrity.stamp(path, expected(path), inputs, rule=rule)


# --- a tuning build ------------------------------------------------------------------------------

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


# --- the comparison of one device's libraries ---------------------------------------------------

# a library's steps, in order: its table's layout pattern, and whether it uses the created library
BENCH_STEPS = {"reference": (layout.BENCH_REFERENCE, False), "tuned": (layout.BENCH_TUNED, True),
               "verify": (layout.VERIFY_TUNED, True)}


def lib_of(path, rows: str) -> str:
    """The library whose ``rows`` ("bench" or "verify") ``path`` is (benchmarks/<lib>_bench.yaml)."""
    pattern = layout.VERIFY_INPUT if rows == "verify" else layout.BENCH_INPUT
    head, tail = pattern.split("{lib}")
    name = Path(path).as_posix()
    if not (name.startswith(head) and name.endswith(tail)):
        raise ValueError(f"{path}: not a library's {rows} rows ({pattern})")
    return name[len(head):len(name) - len(tail)]


@dataclass(frozen=True)
class LibraryBench:
    """One library's comparison: its name (``libs/<lib>.yaml``), its bench rows, its verify
    rows (None: not checked), the created library and the comparison's duration per GEMM."""

    lib: str
    rows: Path
    verify_rows: Path | None
    library: Path
    duration: float | None

    def steps(self) -> list[str]:
        return [kind for kind in BENCH_STEPS if kind != "verify" or self.verify_rows]

    def table(self, kind: str) -> Path:
        return Path(layout.fill(BENCH_STEPS[kind][0], lib=self.lib))

    def inputs(self, kind: str) -> list[Path]:
        rows = self.verify_rows if kind == "verify" else self.rows
        return [rows, self.library] if BENCH_STEPS[kind][1] else [rows]

    @property
    def failed_file(self) -> Path:
        return Path(layout.fill(layout.BENCH_FAILED, lib=self.lib))


def bench_libraries(libs: list[LibraryBench], platform, device: int,
                    expected: Callable[[Path], dict]) -> tuple[dict, list[dict]]:
    """Compare every library of ``libs`` on ``device`` (this module's docstring); ``expected``
    gives the provenance a file must record. Returns ({step: [each library's table]}, the
    failed libraries: failures.failed_item). A full disk is raised: no library's fault."""
    tables: dict[str, list[pd.DataFrame]] = {kind: [] for kind in BENCH_STEPS}
    failed = []
    for lib in libs:
        try:
            found = {kind: bench_step(lib, kind, platform, device, expected)
                     for kind in lib.steps()}
        except EnvironmentFailure:
            raise
        except jobs.USER_ERRORS as exc:
            log.error("%s: %s", lib.lib, exc)
            failed.append(failures.failed_item(lib.lib, exc))
            files.write_text(lib.failed_file, failures.failed_log_text(failed[-1:]))
            continue
        lib.failed_file.unlink(missing_ok=True)
        for kind, frame in found.items():
            tables[kind].append(frame)
    return tables, failed


def bench_step(lib: LibraryBench, kind: str, platform, device: int, expected) -> pd.DataFrame:
    """One step's table: the stamped one where it is whole and made from the current inputs,
    else measured, written (its .out, then its table) and stamped."""
    table, out = lib.table(kind), out_beside(lib.table(kind))
    reason = _reuse_problem(table, expected, "not measured")
    if reason is None and out.is_file():
        log.info("%s: %s reused (stamped)", lib.lib, kind)
        return integrity.read_table(table)
    log.info("%s: %s: %s", lib.lib, kind, reason or f"{out} missing")
    frame = _measured(lib, kind, platform, device).assign(lib=f"{lib.lib}.yaml")
    files.write_text(out, format_benchmark_output(frame, platform))
    # the vendor's own solutions (the reference run) are found in its MatchTable
    frame = original_columns.add(frame, platform.lib_source if kind == "reference" else None)
    files.write_csv(table, frame)
    # the table last: its stamp says the step is done
    _stamp_in_order((out, table), lib.inputs(kind), expected, "bench_libs")
    return frame


def _measured(lib: LibraryBench, kind: str, platform, device: int) -> pd.DataFrame:
    from .bench_formats.rows import problems_in_rows

    problems = problems_in_rows(lib.verify_rows if kind == "verify" else lib.rows)
    out_dir = lib.table(kind).parent
    if kind == "verify":
        return progress_bar.run_with_progress(platform.verify, problems, f"verify {lib.lib}",
                                              out_dir, device, library=lib.library)
    return platform.bench(problems, out_dir, device, duration=lib.duration,
                          library=lib.library if kind == "tuned" else None)
