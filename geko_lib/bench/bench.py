"""Running benchmarks (``geko.bench.bench``): one bench file on a device, and the comparison of
a library against the platform's default choice (reference, tuned, verify)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from ..campaign import analysis
from .. import files, original_columns, platforms
from ..campaign import integrity
from ..errors import GekoError
from ..gemm import GemmProblem
from ..library.collection import load_dir
from ..library.logic import problems_of
from ..bench_formats import rows as bench_rows
from .utils import format_benchmark_output, parse_benchmark_output
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

SOURCE_DIGEST = "geko_source.sha256"  # what libraries a created library was made from


def covers(frame: pd.DataFrame, problems) -> bool:
    """The cached output holds one result for every GEMM asked for, and nothing else."""
    got = sorted(GemmProblem.from_row(r).name for r in frame.to_dict("records"))
    return got == sorted(p.name for p in problems)


def run(hipblaslt_path=None, bench_file=None, output_file=None, custom_lib_dir=None,
        device: int = 0, cache: bool = False, *, platform=None, duration: float | None = None,
        **config) -> pd.DataFrame:
    """Benchmark the GEMMs of one hipblaslt-bench YAML on ``device``: the platform's default
    solution, or the library created in ``custom_lib_dir``. The results go to ``output_file``
    in hipblaslt-bench's output format and are returned as a table. With ``cache`` an existing
    output that holds exactly the file's GEMMs is parsed instead of rerun."""
    if bench_file is None or output_file is None:
        raise TypeError("run() needs bench_file and output_file")
    output_file = Path(output_file)
    problems = bench_rows.problems_in_rows(bench_file)
    if cache and output_file.is_file():
        cached = parse_benchmark_output(output_file)
        if covers(cached, problems):
            log.info("%s: reusing the cached results of %s", bench_file, output_file)
            return cached
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    frame = plat.bench(problems, output_file.parent, device, library=custom_lib_dir,
                       duration=duration)
    files.write_text(output_file, format_benchmark_output(frame, plat))
    return original_columns.add(frame, None if custom_lib_dir else plat.lib_source)


def standard_benchmark(hipblaslt_path=None, bench_file=None, output_file=None,
                       custom_lib_dir=None, device: int = 0, duration: float = 0.5,
                       initial_iters: int = 10, initial_cold_iters: int = 2, *, platform=None,
                       **config) -> pd.DataFrame:
    """The original's ``--bench`` measurement: a probe pass of ``initial_iters`` /
    ``initial_cold_iters`` iterations gives each GEMM's latency, then every GEMM runs its cold
    and its timed phase for ``duration`` seconds each. That two-pass measurement is how every
    platform times a budget (``run(..., duration=...)``), so this is ``run`` with a duration;
    the probe's iteration counts are the platforms' own (10 and 2, the original's defaults)."""
    from ..platforms.rocm.bench import PROBE_COLD_ITERS, PROBE_ITERS

    if (initial_iters, initial_cold_iters) != (PROBE_ITERS, PROBE_COLD_ITERS):
        raise GekoError(f"standard_benchmark: the probe pass runs {PROBE_ITERS} iterations and "
                        f"{PROBE_COLD_ITERS} cold ones on every platform; got "
                        f"{initial_iters}/{initial_cold_iters}")
    if not duration or duration <= 0:
        raise GekoError(f"standard_benchmark: duration must be > 0 seconds, got {duration}")
    return run(hipblaslt_path, bench_file, output_file, custom_lib_dir, device, cache=False,
               platform=platform, duration=duration, **config)


def _libs_digest(lib_dir) -> str:
    """The library-logic files a library is created from, by name and content."""
    return integrity.listing_sha256({p.name: integrity.file_sha256(p)
                                     for p in sorted(Path(lib_dir).glob("*.yaml"))})


def create_once(plat, lib_dir, custom_lib_dir, cache: bool) -> Path:
    """The library created from lib_dir in custom_lib_dir; with ``cache`` one made from the
    same library files (by content) is reused."""
    custom_lib_dir = Path(custom_lib_dir)
    digest, stamp = _libs_digest(lib_dir), custom_lib_dir / SOURCE_DIGEST
    if cache and stamp.is_file() and stamp.read_text().strip() == digest:
        return custom_lib_dir
    plat.create_library(Path(lib_dir), custom_lib_dir)
    files.write_text(stamp, digest + "\n")
    return custom_lib_dir


def _bench_inputs(libs, benchmark_dir: Path, verify: bool, duration: float, beta: bool):
    """(file name, stem, problems) of every library, its bench (and verify) rows written."""
    for name, lib in sorted(libs.items()):
        lib.create_bench_input(benchmark_dir, verify=verify, duration=duration, beta=beta)
        yield name, Path(name).stem, problems_of(lib)


def time_uncompared(problems, timed, lib_source: str) -> pd.DataFrame:
    """The default kernel's time of ``problems`` (analysis.uncompared_problems), as the reference
    run of a comparison times it, so the whole workload's GEMM time is known where no baseline
    timed it (keep_thr 0). ``timed(group)`` is the platform's bench of a group of problems (the
    workflow's job runs each group supervised: a stall is a failure). Where the group fails, the
    GEMMs are timed one by one, and one the tool fails on alone is left out, by name (its share
    of the time stays unknown: analysis.n_untimed)."""
    frames = []
    try:
        if problems:
            frames.append(timed(problems))
    except GekoError as exc:
        if len(problems) == 1:  # timed alone already
            _untimed(problems[0], exc)
        else:
            log.warning("timing the %d uncompared GEMM(s) together failed (%s): one at a time",
                        len(problems), exc)
            frames = [frame for frame in map(lambda p: _timed_alone(timed, p), problems)
                      if frame is not None]
    if not frames:
        return pd.DataFrame(columns=[*analysis.KEYS, "us"])
    return original_columns.add(pd.concat(frames, ignore_index=True), lib_source)


def _timed_alone(timed, problem: GemmProblem) -> pd.DataFrame | None:
    try:
        return timed([problem])
    except GekoError as exc:
        _untimed(problem, exc)
        return None


def _untimed(problem: GemmProblem, exc: Exception) -> None:
    log.warning("%s: no reference timing (%s); its share of the workload's GEMM time stays "
                "unknown", problem.name, exc)


def _write(frame: pd.DataFrame, path: Path, plat) -> pd.DataFrame:
    files.write_text(path, format_benchmark_output(frame, plat))
    return frame


def compare(*args, **kwargs) -> pd.DataFrame:
    """Every library of ``lib_dir`` against the platform's default choice: the libraries are
    created into ``custom_lib_dir``; per library ``<stem>_bench.yaml`` (and ``_verify.yaml``)
    rows in ``benchmark_dir`` are timed with the default (``<stem>_bench-reference.out``) and
    with the created library (``<stem>_bench-tuned.out``) and, with ``verify``, checked
    (``<stem>_verify-tuned.csv``). Returns one row per GEMM: ``*_reference``/``*_tuned``
    columns, ``ratio`` (reference us / tuned us), ``error_tuned``, ``valid``, ``kept`` under
    ``up_thr``/``err_thr``, ``winner`` and ``lib``; ``log_summary`` (summary.csv) adds the
    time weights, each GEMM's share of the whole workload's time (:func:`compare_workload`,
    whose arguments these are)."""
    return compare_workload(*args, **kwargs)[0]


def compare_workload(hipblaslt_path=None, lib_dir=None, custom_lib_dir="build",
                     benchmark_dir="benchmarks", device: int = 0, duration: float = 0.5,
                     verify: bool = True, beta: bool = False, cache: bool = True,
                     up_thr: float = 1.03, err_thr: float = 0.03, log_summary=None, *,
                     platform=None, **config) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """:func:`compare`'s table and, with ``log_summary``, every summary GEMM's share of the
    whole workload's time (analysis.workload_weights; None without it), as the workflow's
    analyze takes them: where no baseline timed the summary (keep_thr 0), the summary GEMMs
    no library holds (their job failed) have their default kernel timed
    (:func:`time_uncompared`, as the workflow's bench_uncompared job times them; its output
    ``<benchmark_dir>/uncompared-reference.out``), so they count at their unchanged time."""
    if lib_dir is None:
        raise TypeError("compare() needs lib_dir")
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    libs = load_dir(lib_dir)
    if not libs:
        raise GekoError(f"{lib_dir}: no library (*.yaml) to compare")
    benchmark_dir = Path(benchmark_dir)
    created = create_once(plat, lib_dir, custom_lib_dir, cache)
    reference, tuned, checked = [], [], []
    for name, stem, problems in _bench_inputs(libs, benchmark_dir, verify, duration, beta):
        reference.append(_write(plat.bench(problems, benchmark_dir, device, duration=duration),
                                benchmark_dir / f"{stem}_bench-reference.out", plat)
                         .assign(lib=name))
        tuned.append(_write(plat.bench(problems, benchmark_dir, device, library=created,
                                       duration=duration),
                            benchmark_dir / f"{stem}_bench-tuned.out", plat).assign(lib=name))
        if verify:  # errors, not timings: a table (the platform keeps its tool's own output)
            errors = plat.verify(problems, benchmark_dir, device, created).assign(lib=name)
            files.write_csv(benchmark_dir / f"{stem}_verify-tuned.csv", errors)
            checked.append(errors)
    reference = pd.concat(reference, ignore_index=True)
    weights = None
    if log_summary is not None:
        summary = integrity.read_table(log_summary)
        uncompared = None
        problems = [] if analysis.baseline_timed(summary) else analysis.uncompared_problems(summary, libs)
        if problems:  # as the workflow's bench_uncompared job, there only where there are some
            uncompared = _write(time_uncompared(
                problems, lambda group: plat.bench(group, benchmark_dir, device,
                                                   duration=duration), plat.lib_source),
                benchmark_dir / "uncompared-reference.out", plat)
        weights = analysis.workload_weights(summary, reference, uncompared)
    raw = analysis.compare(reference, pd.concat(tuned, ignore_index=True),
                           pd.concat(checked, ignore_index=True) if verify else None,
                           up_thr, err_thr, weights=weights)
    return raw, weights


def compare_pr(hipblaslt_path=None, lib_dir=None, base_lib_dir=None, tensile_dir="tensile",
               tensile_base_dir="tensile_base", benchmark_dir="benchmarks", verify: bool = True,
               cache: bool = False, duration: float = 0.5, beta: bool = False, device: int = 0,
               *, platform=None, **config) -> pd.DataFrame:
    """The libraries of ``lib_dir`` (a PR's) against those of ``base_lib_dir`` (before it), not
    against the default: both are created (``tensile_dir``, ``tensile_base_dir``), every GEMM of
    the PR libraries is timed with each (``<stem>_bench-base.out``, ``<stem>_bench-pr.out``)
    and, with ``verify``, the PR library checked (``<stem>_verify-pr.csv``). One row per GEMM
    with ``*_base`` / ``*_pr`` columns, ``ratio`` = us_base / us_pr (> 1: the PR is faster) and
    ``error_pr`` (a failed or missing check counts as an error of 1e6, where the original's
    ``fillna`` was a no-op)."""
    if lib_dir is None or base_lib_dir is None:
        raise TypeError("compare_pr() needs lib_dir and base_lib_dir")
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    libs, base_libs = load_dir(lib_dir), load_dir(base_lib_dir)
    for directory, found in ((lib_dir, libs), (base_lib_dir, base_libs)):
        if not found:
            raise GekoError(f"{directory}: no library (*.yaml) to compare")
    benchmark_dir = Path(benchmark_dir)
    pr = create_once(plat, lib_dir, tensile_dir, cache)
    base = create_once(plat, base_lib_dir, tensile_base_dir, cache)
    base_rows, pr_rows, checked = [], [], []
    for name, stem, problems in _bench_inputs(libs, benchmark_dir, verify, duration, beta):
        for library, side, out in ((base, "base", base_rows), (pr, "pr", pr_rows)):
            frame = plat.bench(problems, benchmark_dir, device, library=library,
                               duration=duration)
            out.append(_write(frame, benchmark_dir / f"{stem}_bench-{side}.out", plat)
                       .assign(lib=name))
        if verify:
            errors = plat.verify(problems, benchmark_dir, device, pr).assign(lib=name)
            files.write_csv(benchmark_dir / f"{stem}_verify-pr.csv", errors)
            checked.append(errors)
    joined = analysis.compare(pd.concat(base_rows, ignore_index=True),
                              pd.concat(pr_rows, ignore_index=True),
                              pd.concat(checked, ignore_index=True) if verify else None)
    joined = joined.drop(columns=["kept", "winner"], errors="ignore")
    return joined.rename(columns=lambda c: c.removesuffix("_reference") + "_base"
                         if c.endswith("_reference") else
                         c.removesuffix("_tuned") + "_pr" if c.endswith("_tuned") else c)
