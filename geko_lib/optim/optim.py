"""Tune mode (``geko.optim``): configure tuning YAMLs, run them over devices, analyze what the
tuned libraries gained (raw_results.csv, final_results.csv, metrics.json)."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pandas as pd

from .. import failures, files, original_columns, platforms, runner
from ..campaign import analysis, integrity, layout
from ..errors import GekoError
from ..schemas import GemmConfig
from ..tuning import build_dir as build_dirs, running_jobs
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

def configure(hipblaslt_path=None, gemm_configs=None, output_dir="workdir/optimizations",
              arch: str = "gfx950", backend: str = "ductile", search_space: str | None = None,
              *, platform=None, **options) -> list[Path]:
    """Tuning YAMLs (``<output_dir>/<GEMM type>_<i>.yaml``) for one GemmConfig or a list of
    them, on ``arch``; ``backend`` ductile (the GA) or tensile (exhaustive); ``search_space``
    and the generator's other keys (``options``) as the original's configure takes them."""
    if gemm_configs is None:
        raise TypeError("configure() needs gemm_configs")
    configs = [gemm_configs] if isinstance(gemm_configs, GemmConfig) else list(gemm_configs)
    plat = platforms.resolve(hipblaslt_path, platform, arch=arch)
    settings = dict(options, backend=backend)
    if search_space is not None:
        settings["search_space"] = search_space
    return configure_phase(plat, configs, output_dir, arch, settings)


def configure_phase(plat, configs: list[GemmConfig], output_dir, arch: str,
                    settings: dict) -> list[Path]:
    """The configuration phase with the original's INFO lines, for both doors (the API's
    :func:`configure`, the workflow's configure phase): "Starting configuration phase...",
    "Found N unique GEMMs after filtering" (the sizes of all types), one "<GemmType> with N
    sizes" per type, "Generated N configuration files in '<dir>'" and "Configuration phase
    completed successfully!"."""
    log.info("Starting configuration phase...", stacklevel=2)
    log.info("Found %d unique GEMMs after filtering", sum(len(c.sizes) for c in configs),
             stacklevel=2)
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for config in configs:
        # the original's line, logged as its caller's (optim:configure, as the original)
        log.info("%r with %d sizes", config.gemm_type, len(config.sizes), stacklevel=2)
        paths += plat.configure(config, Path(output_dir), arch, settings)
    log.info("Generated %d configuration files in '%s'", len(paths), output_dir,
             stacklevel=2)
    log.info("Configuration phase completed successfully!", stacklevel=2)
    return paths


def tuning_files(tuning_dir) -> list[Path]:
    """The tuning YAMLs of a directory in index order (``<name>_<i>.yaml``), as the original
    lists them: names holding "config" are not tuning files."""
    def index(path: Path) -> tuple:
        match = re.search(r"_(\d+)$", path.stem)
        return (path.stem.rsplit("_", 1)[0], int(match.group(1)) if match else -1)

    found = [p for p in Path(tuning_dir).glob("*.yaml") if "config" not in p.name.lower()]
    return sorted(found, key=index)


def made_for(plat, tuning_yaml: Path) -> dict:
    """What a build's library depends on: the platform, its library version and the tuning
    YAML's content (recorded in the logic dir's stamp)."""
    return {"platform": plat.name, "library_version": getattr(plat, "library_version", None),
            "tuning_yaml_sha256": integrity.content_sha256(tuning_yaml)}


def _optimize_one(plat, tuning_yaml: Path, device: int, slot: int) -> Path:
    build = tuning_yaml.parent / f"build_{tuning_yaml.stem}"
    logic, expected = build / build_dirs.LOGIC_DIR, made_for(plat, tuning_yaml)
    if build_dirs.build_state(build) == "completed":
        reason = integrity.problem(logic, expected)
        if reason is None:
            return logic
        # an edited tuning YAML, another platform or library, a library edited by hand: its
        # GA checkpoint belongs to that other run too, so the build starts over
        log.info("%s: tuned again: %s", logic, reason)
        shutil.rmtree(build)
    # the workflow's own preparation: a failed or interrupted build keeps its checkpoint
    build_dirs.prepare_build_dir(build, tuning_yaml.stem, tuning_yaml)
    try:
        # its line in running_jobs.log names the build dir: the API's jobs log to the GEKO
        # logger, the tuner's own log (rocm) lies in that dir
        with running_jobs.entry(tuning_yaml.parent, tuning_yaml.stem, device, slot, build):
            done = plat.optimize(tuning_yaml, build, device)
        integrity.stamp(done, expected, inputs={})
        return done
    except GekoError:
        build_dirs.bump_failcount(build)
        raise


def run(hipblaslt_path=None, tuning_dir="workdir/optimizations", devices=(0,), retry: bool = True,
        n_slots: int = 4, *, platform=None, **config) -> list[Path]:
    """Every tuning YAML of ``tuning_dir`` run on ``devices`` (``n_slots`` jobs per device, 4 as
    the original: concurrent jobs on a device overlap compilation with timing), each under a
    lease of its device slot (``lock_dir=``, as a campaign's jobs: geko_lib.runner), each into
    ``build_<name>/3_LibraryLogic``; a completed build is not run again when its stamp says it
    was made from the same tuning YAML, platform and library and its files are whole
    (otherwise it starts over), and a failed one resumes from its checkpoint. A failed job is
    retried once (``retry``), then written to ``tuning_dir/failed_jobs.log`` (failures: the
    workflow's format) and skipped; the campaign's bar ("Optimization in progress") counts the
    jobs, and ``tuning_dir/running_jobs.log`` lists those running (tuning.running_jobs).
    Returns the logic dirs of the jobs that finished."""
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    yamls = tuning_files(tuning_dir)
    if not yamls:
        raise GekoError(f"{tuning_dir}: no tuning YAML (<name>_<i>.yaml) to run")
    with runner.Bar(len(yamls), "tune") as bar:
        done, failed = runner.run(
            yamls, lambda tuning_yaml, lease: _optimize_one(plat, tuning_yaml, lease.device,
                                                            lease.slot),
            name_of=lambda tuning_yaml: tuning_yaml.stem, namespace=plat.name, devices=devices,
            n_slots=n_slots, lock_dir=config.get("lock_dir"), attempts=2 if retry else 1,
            bar=bar)
    failures.write_failure_files(tuning_dir, failed, "tuning job(s) failed")
    return [d for d in done if d is not None]


def write_results(raw: pd.DataFrame, output_dir, up_thr: float, err_thr: float, platform,
                  config: dict, n_workload: int | None = None,
                  weights: pd.DataFrame | None = None) -> pd.DataFrame:
    """results/raw_results.csv, final_results.csv (the kept GEMMs), dashboard_data.csv (the
    kept GEMMs' tuned side, original_columns.dashboard) and metrics.json from a
    comparison (bench.compare's table), and the original's closing log lines. ``n_workload``:
    the GEMMs set out to compare (those without a row in ``raw`` failed); ``weights``
    (analysis.workload_weights): every GEMM's share of the whole workload's time, so a failed
    GEMM counts at its unchanged time. Returns the kept rows."""
    caps = platforms.capabilities(config)
    raw = analysis.enrich(raw, caps.ceilings)
    metrics = analysis.metrics(raw, up_thr, err_thr, platforms.describe(platform, config),
                               ceilings=caps.ceilings, n_workload=n_workload,
                               **analysis.failed_gemms(weights, raw))
    raw = original_columns.add(raw)
    output_dir = Path(output_dir)
    files.write_csv(output_dir / "raw_results.csv", raw)
    kept = raw[raw["kept"]]
    files.write_csv(output_dir / "final_results.csv", kept)
    files.write_csv(output_dir / Path(layout.DASHBOARD).name, original_columns.dashboard(kept))
    files.write_json(output_dir / "metrics.json", metrics)
    for line in analysis.summary_lines(metrics):
        # logged as the caller's: the API's lines read [optim:analyze], as the original's
        log.info("%s", line, stacklevel=2)
    return kept


def analyze(hipblaslt_path=None, lib_dir=None, output_dir="workdir/results", up_thr: float = 1.03,
            error_thr: float = 0.03, device: int = 0, verify: bool = True, log_summary=None,
            duration: float = 1.0, beta: bool = False, custom_lib_dir=None,
            benchmark_dir=None, *, platform=None, **config) -> pd.DataFrame:
    """Benchmark the libraries of ``lib_dir`` against the default (bench.compare: the created
    library in ``custom_lib_dir``, default ``<output_dir>/../build``; bench files and outputs
    in ``benchmark_dir``, default ``<output_dir>/../benchmarks``) and keep the GEMMs whose
    kernel changed, ran ``up_thr`` times faster and verified below ``error_thr``. Writes
    raw_results.csv, final_results.csv and metrics.json in output_dir; returns the kept rows
    (what ``library.from_dataframe`` ships). With ``log_summary`` (summary.csv) the figures
    are of its whole workload, as the workflow's: a summary GEMM no library holds (its job
    failed) counts as failed and not kept, at its default kernel's time (timed here where no
    baseline timed the summary, keep_thr 0)."""
    from ..bench.bench import compare_workload

    if lib_dir is None:
        raise TypeError("analyze() needs lib_dir")
    output_dir = Path(output_dir)
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    raw, weights = compare_workload(
        lib_dir=lib_dir, custom_lib_dir=custom_lib_dir or output_dir.parent / "build",
        benchmark_dir=benchmark_dir or output_dir.parent / "benchmarks", device=device,
        duration=duration, verify=verify, beta=beta, up_thr=up_thr, err_thr=error_thr,
        log_summary=log_summary, platform=plat)
    config = dict(config, platform=plat.name)
    # as the workflow's analyze: the summary's GEMMs without a result failed, and count as not
    # kept, at their share of the whole workload's time
    return write_results(raw, output_dir, up_thr, error_thr, plat, config,
                         n_workload=len(weights) if weights is not None else None,
                         weights=weights)
