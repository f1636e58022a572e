"""Tune mode (``geko.optim``): configure tuning YAMLs, run them over devices, analyze what the
tuned libraries gained (raw_results.csv, final_results.csv, metrics.json)."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pandas as pd

from .. import config_schema, failures, files, gpu_jobs, jobs, original_columns, platforms, runner
from ..campaign import analysis, integrity, layout, rules
from ..errors import GekoError
from ..schemas import GemmConfig
from ..tuning import build_dir as build_dirs
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


def job_log(tuning_dir, name: str) -> Path:
    """The log of the API's tuning job ``name``: where the workflow puts its own, relative to
    the directory holding ``tuning_dir`` (``<workdir>/logs/optimize/<name>.log`` for the
    default ``<workdir>/optimizations``); the stall watchdog watches it grow."""
    return Path(tuning_dir).parent / rules.rule_log("optimize", name)


def _reused(build: Path, expected: dict) -> bool:
    """Whether a completed build was made for ``expected`` and is whole (the API's own reuse:
    the workflow's comes from Snakemake); a completed one that was not starts over."""
    if build_dirs.build_state(build) != "completed":
        return False
    logic = build / build_dirs.LOGIC_DIR
    reason = integrity.problem(logic, expected)
    if reason is None:
        return True
    # an edited tuning YAML, another platform or library, a library edited by hand: its GA
    # checkpoint belongs to that other run too, so the build starts over
    log.info("%s: tuned again: %s", logic, reason)
    shutil.rmtree(build)
    return False


def _tuned(plat, tuning_yaml: Path, settings: dict, attempt: runner.Attempt) -> Path | None:
    """One attempt of the tuning job of ``tuning_yaml`` (geko_lib.gpu_jobs, as the workflow's
    optimize phase runs it) on the slot the runner leased, its lines in its own log, and its
    library stamped with what it was made for; a completed build made for the same is reused.
    None where the job was skipped."""
    build = tuning_yaml.parent / f"build_{tuning_yaml.stem}"
    expected = made_for(plat, tuning_yaml)
    if _reused(build, expected):
        return build / build_dirs.LOGIC_DIR
    job = gpu_jobs.TuningJob(tuning_yaml=tuning_yaml, build=build, tuning_dir=tuning_yaml.parent,
                             log=job_log(tuning_yaml.parent, tuning_yaml.stem), config=settings,
                             attempt=attempt.number)
    with runner.job_log(job.log, jobs.LEVELS[settings["verbosity"]]):
        done = gpu_jobs.tune(job, gpu_jobs.on_given(plat, attempt), attempt.interrupted)
    # a skipped job's empty library dir too, as the workflow stamps its output: it is no
    # completed build (build_dirs.build_state), so a rerun tunes the job again
    integrity.stamp(build / build_dirs.LOGIC_DIR, expected, inputs={})
    return done


def job_settings(config: dict, retry: bool, n_slots: int) -> dict:
    """The tuning jobs' settings of an API call: its keyword config over the config schema's
    defaults (stall_timeout, tune_retries, retire_after, max_consecutive_failures, verbosity),
    with ``retry`` and ``n_slots``."""
    return config_schema.merged(config_schema.schema_defaults(),
                                dict(config, retry=retry, n_slots=n_slots))


def run(hipblaslt_path=None, tuning_dir="workdir/optimizations", devices=(0,), retry: bool = True,
        n_slots: int = 4, *, platform=None, **config) -> list[Path]:
    """Every tuning YAML of ``tuning_dir`` run on ``devices`` (``n_slots`` jobs per device, 4 as
    the original: concurrent jobs on a device overlap compilation with timing), each under a
    lease of its device slot (``lock_dir=``, as a campaign's jobs: geko_lib.runner), each into
    ``build_<name>/3_LibraryLogic`` by the workflow's tuning job (geko_lib.gpu_jobs: supervised
    by the stall watchdog, which watches its log :func:`job_log`; retried ``tune_retries`` times
    unless ``retry`` is off; then skipped, with an empty 3_LibraryLogic, its name in
    ``tuning_dir/failed_jobs.log`` and its build dir's ``.failcount``; retired after
    ``retire_after`` failed runs; no more started after ``max_consecutive_failures`` failed in a
    row); a completed build is not run again when its stamp says it was made from the same
    tuning YAML, platform and library and its files are whole (otherwise it starts over), and a
    failed one resumes from its checkpoint. The campaign's bar ("Optimization in progress")
    counts the jobs, and ``tuning_dir/running_jobs.log`` lists those running. A job that could
    not run at all (a full disk, the failure cap) raises its error once every job has ended.
    Returns the logic dirs of the jobs that finished."""
    plat = platforms.resolve(hipblaslt_path, platform, **config)
    yamls = tuning_files(tuning_dir)
    if not yamls:
        raise GekoError(f"{tuning_dir}: no tuning YAML (<name>_<i>.yaml) to run")
    settings, raised = job_settings(config, retry, n_slots), {}

    def work(tuning_yaml: Path, attempt: runner.Attempt) -> Path | None:
        # the error of a job whose every attempt raised: it did not run (a skipped job, whose
        # last attempt ended it, returns None)
        raised.pop(tuning_yaml.stem, None)
        try:
            return _tuned(plat, tuning_yaml, settings, attempt)
        except GekoError as exc:
            raised[tuning_yaml.stem] = exc
            raise

    with runner.Bar(len(yamls), "tune") as bar:
        done, _ = runner.run(
            yamls, work, name_of=lambda tuning_yaml: tuning_yaml.stem, namespace=plat.name,
            devices=devices, n_slots=n_slots, lock_dir=config.get("lock_dir"),
            attempts=gpu_jobs.attempts(settings), bar=bar)
    _tell_skipped(done.count(None) - len(raised), tuning_dir)
    if raised:
        raise next(iter(raised.values()))
    return [d for d in done if d is not None]


def _tell_skipped(n_skipped: int, tuning_dir) -> None:
    """The API's closing line on the jobs its run skipped (each job said why in its log)."""
    if n_skipped:
        log.warning("%d tuning job(s) failed and are skipped: see %s", n_skipped,
                    Path(tuning_dir) / failures.FAILED_JOBS)


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
