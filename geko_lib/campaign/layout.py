"""The campaign's workdir layout: every phase's paths, declared once.

The Snakemake rules (through ``workflow/rules/common.smk``), the workflow scripts and
``geko status`` take their paths from here, so a file moves in one place. Paths are relative to
the workdir (rules run there); patterns carry Snakemake wildcards (``{cfg}``, ``{chunk}``,
``{lib}``, ``{part}``) and are filled with :func:`fill` or ``str.format``.

The layout follows the original tool's "Workflow Output Structure" (docs/FORMATS.md):

    run_state.json, <log>.yaml (updated benchmark rows), <log>.out (their bench output),
    summary.csv, gemms.csv, winners.csv (search)
    search/<GEMM>.yaml, search/<GEMM>.out, search/failed_jobs.log           (search)
    optimizations/<TYPE>_<n>.yaml, <TYPE>_<n>.sh, build_<TYPE>_<n>/3_LibraryLogic,
                  failed_jobs.log                                           (tune)
    libs/, tensile/library/, benchmarks/<lib>_bench.yaml, _verify.yaml, results/, final_libs/

plus geko's own bookkeeping (workload.yaml, baseline/, search/chunks/, search/data/, logs/).
:class:`Layout` answers questions about one workdir (which chunks, configs, libraries exist).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# --- workload and baseline --------------------------------------------------------------------
WORKLOAD = "workload.yaml"
BASELINE_PART = "baseline/parts/{part}.csv"
BASELINE = "baseline/workload.csv"
SUMMARY = "summary.csv"
GEMMS = "gemms.csv"
RUN_STATE = "run_state.json"
BENCH_LOG = "{stem}.yaml"  # the updated benchmark log (stem: benchmark_stem)
BENCH_OUT = "{stem}.out"  # its results in hipblaslt-bench's layout
CONFIG_COPY = "geko_config.yaml"  # the config the `geko` command ran with
# the original names the updated benchmark log after the workload log; list and inline
# workloads have no log of their own and get the original's synthetic name
SYNTHETIC_STEM = "synthetic_workload"

# --- dense search -----------------------------------------------------------------------------
SEARCH_DIR = "search"
SEARCH_CHUNKS = "search/chunks"
SEARCH_CHUNK = "search/chunks/{chunk}.yaml"
SEARCH_DATA = "search/data/{chunk}.csv"
SEARCH_CHUNK_FAILED = "search/data/{chunk}.failed.yaml"  # GEMMs of the chunk that failed
# one device's share of the chunks (dealt as the baseline deals GEMMs): its chunks' candidates
# and failed GEMMs in one table each, what the winners read; each chunk's own files above are
# stamped as the share's job finishes it, the units a rerun resumes from
SEARCH_SHARE = "search/parts/{search_share}.csv"
SEARCH_SHARE_FAILED = "search/parts/{search_share}.failed.yaml"
SEARCH_GEMM = "search/{gemm}"  # + .yaml (its bench rows) / .out (every candidate's result)
SEARCH_FAILED = "search/failed_jobs.log"
SEARCH_PROCESSED = "search/processed.csv"  # the GEMMs searched (search.write_processed)
WINNERS = "winners.csv"
CHUNK_GLOB = "gemms_*.yaml"

# --- tune ---------------------------------------------------------------------------------------
TUNING_DIR = "optimizations"
TUNING_MANIFEST = "optimizations/tuning_configs.txt"  # the configure checkpoint: one name a line
TUNING_YAML = "optimizations/{cfg}.yaml"
TUNING_SCRIPT = "optimizations/{cfg}.sh"
BUILD_DIR = "optimizations/build_{cfg}"
BUILD_LOGIC = "optimizations/build_{cfg}/3_LibraryLogic"
BUILD_FAILED = "optimizations/build_{cfg}/.failed"  # the job's last attempt failed: skipped
TUNING_FAILED = "optimizations/failed_jobs.log"
TUNING_JOB_CONFIG = "optimizations/job_config.json"  # what the .sh scripts run with (JSON: not
# one more *.yaml beside the tuning YAMLs)

# --- library, comparison, shipping ----------------------------------------------------------
LIBS = "libs"
LIB_LOGIC = "libs/{lib}.yaml"
TENSILE = "tensile"
BENCH_INPUT = "benchmarks/{lib}_bench.yaml"
VERIFY_INPUT = "benchmarks/{lib}_verify.yaml"
BENCH_REFERENCE = "benchmarks/{lib}_bench-reference.csv"
BENCH_TUNED = "benchmarks/{lib}_bench-tuned.csv"
VERIFY_TUNED = "benchmarks/{lib}_verify-tuned.csv"
# one library's comparison failed (its benchmark or its check): why, one line; gone once it works
BENCH_FAILED = "benchmarks/{lib}_failed.log"
# the comparison of one device's share of the libraries (libs dealt as the baseline deals GEMMs):
# its libraries' tables in one; each library's own files above are what a rerun resumes from
BENCH_SHARE_REFERENCE = "benchmarks/parts/{share}-reference.csv"
BENCH_SHARE_TUNED = "benchmarks/parts/{share}-tuned.csv"
BENCH_SHARE_VERIFY = "benchmarks/parts/{share}-verify.csv"
# the default kernel's time of the GEMMs no library holds (their job failed), keep_thr 0 only:
# a fan-out of one job ({rest} = uncompared) where there are such GEMMs, of none where not
BENCH_UNCOMPARED = "benchmarks/{rest}-reference.csv"
UNCOMPARED = "uncompared"
RAW_RESULTS = "results/raw_results.csv"
FINAL_RESULTS = "results/final_results.csv"
DASHBOARD = "results/dashboard_data.csv"  # the kept GEMMs' tuned side, original's names
METRICS = "results/metrics.json"
FINAL_LIBS = "final_libs"
FULL_LIBS = "full_libs"
EXPORT_OVERRIDE = "exports/hipblaslt_tuning_override.txt"
EXPORT_TUNABLEOP = "exports/tunableop_results.csv"
EXPORT_AITER = "exports/aiter_bf16_tuned_gemm.csv"  # rocm: aiter's tuned-GEMM table (vLLM, SGLang)
EXPORT_INDEX = "exports/library_index.json"  # whose solution indices the exports hold
PRUNED_LIBS = "pruned_libs"
COMBINED_LIBS = "combined_libs"  # target combine: the fastest of several campaigns' kernels
COMBINED_RESULTS = "results/combined_results.csv"
PRUNE_REPORT = "results/prune_report.csv"
REPORT_TABLE = "report/results_table.html"
INTEGRATE_COMMAND = "integrate/rebuild_command.txt"

# --- job logs (one per job: rule name, plus the wildcard value for fan-out rules) ------------
LOG_DIR = "logs"


def job_log(rule: str, name: str | None = None) -> str:
    """``logs/<rule>.log``, or ``logs/<rule>/<name>.log`` for one job of a fan-out rule."""
    return f"{LOG_DIR}/{rule}/{name}.log" if name else f"{LOG_DIR}/{rule}.log"


def fill(pattern: str, **wildcards) -> str:
    return pattern.format(**wildcards)


def benchmark_stem(kind: str, value: str) -> str:
    """The stem of the updated benchmark log ``<stem>.yaml`` / ``<stem>.out``: the workload
    log's own stem, or ``synthetic_workload`` for list and inline workloads (the original)."""
    stem = Path(value).stem if kind == "log" and value else SYNTHETIC_STEM
    # a log named like one of geko's own files (workload.yaml) must not overwrite it
    taken = {Path(p).stem for p in (WORKLOAD, CONFIG_COPY)}
    return f"{stem}_bench" if stem in taken else stem


# --- one workdir ------------------------------------------------------------------------------

_CFG = re.compile(r"^[A-Z0-9]+_[NT]{2}_\d+$")


def _trailing_number(name: str) -> tuple:
    """``BBS_TN_10`` after ``BBS_TN_2`` (the original orders configs by their number)."""
    head, _, number = name.rpartition("_")
    return (head, int(number)) if number.isdigit() else (name, -1)


@dataclass(frozen=True)
class Layout:
    """Paths of one workdir, and what its checkpoints have written so far."""

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    def path(self, pattern: str, **wildcards) -> Path:
        return self.root / fill(pattern, **wildcards)

    # checkpoint products: what the fan-out rules fan out over
    def baseline_parts(self, n_devices: int) -> list[str]:
        """The baseline's parts for the GEMMs the ingest checkpoint wrote (one per device, no
        more than there are GEMMs: bench_formats.summary.part_names); none before it ran."""
        from .. import platforms, workload
        from ..bench_formats.summary import part_names

        path = self.root / WORKLOAD
        if not path.is_file():
            return []
        return self.merged_baseline_parts() or \
            part_names(len(workload.problems(
                workload.read(path, support=platforms.gemm_support(None)))), n_devices)

    def merged_baseline_parts(self) -> list[str]:
        """The parts the stamped baseline table was merged from, where all are still there: a
        finished baseline does not depend on how many devices timed it, so a continuation with
        another ``-d`` keeps it (its parts are otherwise named for the device count)."""
        from . import integrity

        table = self.root / BASELINE
        try:
            found = integrity.find_stamp(table) if table.is_file() else None
        except integrity.IntegrityError:
            return []  # the audit names and removes it
        pattern = re.compile(re.escape(BASELINE_PART).replace(r"\{part\}", r"([^/]+)") + "$")
        names = [m.group(1) for m in map(pattern.match, (found.record.get("inputs") or {})
                                         if found else ()) if m]
        if not names or not all(self.path(BASELINE_PART, part=n).is_file() for n in names):
            return []
        return sorted(names)

    def search_chunks(self) -> list[str]:
        chunk_dir = self.root / SEARCH_CHUNKS
        return sorted(p.stem for p in chunk_dir.glob(CHUNK_GLOB)) if chunk_dir.is_dir() else []

    def search_shares(self, n_devices: int) -> list[str]:
        """The search's jobs: one per device over its share of the chunks, no more than there
        are chunks (``part_<i>_of_<n>``, as the baseline's parts); none before the chunks."""
        from ..bench_formats.summary import part_names

        return part_names(len(self.search_chunks()), n_devices)

    def share_chunks(self, share: str) -> list[str]:
        """The chunks of ``share``: every n-th of search/chunks/ starting at i."""
        from ..bench_formats.summary import part_problems

        return part_problems(self.search_chunks(), share)

    def tuning_configs(self) -> list[str]:
        """The configs the configure checkpoint wrote (its manifest), in the original's order;
        without a manifest (configure not finished) none."""
        manifest = self.root / TUNING_MANIFEST
        if not manifest.is_file():
            return []
        names = [line.strip() for line in manifest.read_text().splitlines()]
        return sorted((n for n in names if _CFG.match(n)), key=_trailing_number)

    def lib_stems(self) -> list[str]:
        libs = self.root / LIBS
        return sorted(p.stem for p in libs.glob("*.yaml")) if libs.is_dir() else []

    def lib_shares(self, n_devices: int) -> list[str]:
        """The comparison's shares of libs/ (one per device, no more than there are
        libraries: ``part_<i>_of_<n>``, as the baseline's parts); none before libs/ is made."""
        from ..bench_formats.summary import part_names

        return part_names(len(self.lib_stems()), n_devices)

    def share_libs(self, share: str) -> list[str]:
        """The libraries of ``share``: every n-th of libs/ starting at i (part_<i>_of_<n>)."""
        from ..bench_formats.summary import part_problems

        return part_problems(self.lib_stems(), share)

    def uncompared(self) -> list[str]:
        """``[UNCOMPARED]`` where summary.csv has a GEMM that no library of libs/ holds (its
        job failed: bench_uncompared times it), else none; none before libs/ is made."""
        from ..library.collection import load_dir
        from . import analysis, integrity

        summary, libs = self.root / SUMMARY, self.root / LIBS
        if not summary.is_file() or not libs.is_dir():
            return []
        found = analysis.uncompared_problems(integrity.read_table(summary), load_dir(libs))
        return [UNCOMPARED] if found else []

    def failed_jobs(self, mode: str) -> list[str]:
        """The entries of the phase's failed_jobs.log (GEMMs of the search, configs of tune)."""
        path = self.root / (TUNING_FAILED if mode == "tune" else SEARCH_FAILED)
        if not path.is_file():
            return []
        return [line.split()[0] for line in path.read_text().splitlines()
                if line.strip() and not line.startswith("#")]


def manifest_text(names: list[str]) -> str:
    """The configure checkpoint's manifest (one config name a line, in the original's order)."""
    return "".join(f"{n}\n" for n in sorted(names, key=_trailing_number))


__all__ = [n for n in dir() if n.isupper()] + ["Layout", "job_log", "fill", "benchmark_stem",
                                               "manifest_text"]
