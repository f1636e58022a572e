"""Running benchmarks (``geko.bench.bench``): one bench file on a device, and the comparison of
a library against the platform's default choice (reference, tuned, verify)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from ..optim import analysis
from .. import files, jobs, original_columns, platforms
from ..campaign import integrity
from ..errors import GekoError
from ..gemm import GemmProblem
from ..library.collection import load_dir
from ..library.logic import problems_of
from .utils import format_benchmark_output, parse_benchmark_output
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

SOURCE_DIGEST = "geko_source.sha256"  # what libraries a created library was made from


def _covers(frame: pd.DataFrame, problems) -> bool:
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
    problems = jobs.problems_in_rows(bench_file)
    if cache and output_file.is_file():
        cached = parse_benchmark_output(output_file)
        if _covers(cached, problems):
            log.info("%s: reusing the cached results of %s", bench_file, output_file)
            return cached
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    frame = plat.bench(problems, output_file.parent, device, library=custom_lib_dir,
                       duration=duration)
    files.write_text(output_file, format_benchmark_output(frame, plat))
    return original_columns.add(frame, None if custom_lib_dir else plat.lib_source)


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


def _write(frame: pd.DataFrame, path: Path, plat) -> pd.DataFrame:
    files.write_text(path, format_benchmark_output(frame, plat))
    return frame


def compare(hipblaslt_path=None, lib_dir=None, custom_lib_dir="build", benchmark_dir="benchmarks",
            device: int = 0, duration: float = 0.5, verify: bool = True, beta: bool = False,
            cache: bool = True, up_thr: float = 1.03, err_thr: float = 0.03,
            log_summary=None, *, platform=None, **config) -> pd.DataFrame:
    """Every library of ``lib_dir`` against the platform's default choice: the libraries are
    created into ``custom_lib_dir``; per library ``<stem>_bench.yaml`` (and ``_verify.yaml``)
    rows in ``benchmark_dir`` are timed with the default (``<stem>_bench-reference.out``) and
    with the created library (``<stem>_bench-tuned.out``) and, with ``verify``, checked
    (``<stem>_verify-tuned.csv``). Returns one row per GEMM: ``*_reference``/``*_tuned``
    columns, ``ratio`` (reference us / tuned us), ``error_tuned``, ``valid``, ``kept`` under
    ``up_thr``/``err_thr``, ``winner`` and ``lib``; ``log_summary`` (summary.csv) adds the
    time weights."""
    if lib_dir is None:
        raise TypeError("compare() needs lib_dir")
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    libs = load_dir(lib_dir)
    if not libs:
        raise GekoError(f"{lib_dir}: no library (*.yaml) to compare")
    benchmark_dir = Path(benchmark_dir)
    created = create_once(plat, lib_dir, custom_lib_dir, cache)
    reference, tuned, checked = [], [], []
    for name, lib in sorted(libs.items()):
        stem = Path(name).stem
        lib.create_bench_input(benchmark_dir, verify=verify, duration=duration, beta=beta)
        problems = problems_of(lib)
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
    weights = jobs.read_table(log_summary) if log_summary is not None else None
    return analysis.compare(pd.concat(reference, ignore_index=True),
                            pd.concat(tuned, ignore_index=True),
                            pd.concat(checked, ignore_index=True) if verify else None,
                            up_thr, err_thr, weights=weights)
