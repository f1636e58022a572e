"""What the ``geko`` command prints: which platform made the numbers, and at the end of a run
what it measured and where every output went.

Every line starts with ``geko: `` so it stands apart from Snakemake's own output. On the sim
platform the first line and the last say that the numbers are model predictions. A successful
run ends with the original's closing line (``Search workflow completed successfully!`` /
``Optimization workflow completed successfully!``); the ``snakemake --profile ...`` route ends
with the same headline (:func:`workflow_headline`, from the Snakefile's ``onsuccess``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pandas as pd

from .campaign import combine, headline, layout
from .campaign.analysis import summary_lines
from .campaign.start import COMMAND_ENV

PREFIX = "geko: "
MODEL_NOTICE = ("platform sim: an analytic GPU model, no GPU is used; every time, GFLOP/s and "
                "uplift of this run is a model prediction, not a measurement")
MODEL_REMINDER = "these numbers are model predictions of the sim platform, not measurements"
COMPLETED = {"search": "Search workflow completed successfully!",
             "tune": "Optimization workflow completed successfully!"}

# workdir-relative outputs a summary names, with what each holds
BENCH_OUTPUTS = ((layout.BASELINE, "per-GEMM timings (us, gflops, kernel)"),
                 (layout.SUMMARY, "GEMM contribution analysis"),
                 (layout.GEMMS, "unique GEMMs"))
RUN_OUTPUTS = ((layout.FINAL_LIBS, "kept kernels as library logic, ready for integration"),
               (layout.FINAL_RESULTS, "the kept GEMMs"),
               (layout.RAW_RESULTS, "every GEMM compared: reference vs tuned"),
               (layout.METRICS, "uplift statistics (mean, geomean, time-weighted)"),
               (layout.SUMMARY, "GEMM contribution analysis"),
               (layout.GEMMS, "unique GEMMs"),
               (layout.WINNERS, "best kernel per GEMM (search)"),
               (layout.SEARCH_DIR, "per-GEMM search .yaml/.out files, failed_jobs.log (search)"),
               (layout.TUNING_DIR, "tuning YAMLs and .sh, build_*/ dirs (tune)"),
               (layout.LIBS, "the libraries the comparison benchmarked"),
               (layout.TENSILE, "the compiled library (tensile/library/)"),
               (str(Path(layout.BENCH_INPUT).parent), "*_bench.yaml / *_verify.yaml inputs and outputs"),
               (str(Path(layout.EXPORT_OVERRIDE).parent), "hipBLASLt override and TunableOp files"),
               (str(Path(layout.REPORT_TABLE).parent), "figures and tables of the HTML report"),
               (layout.LOG_DIR, "one log per job"))


def say(text: str = "") -> None:
    print(f"{PREFIX}{text}" if text else PREFIX.rstrip(), flush=True)


def is_model(config: dict) -> bool:
    from . import platforms

    return not platforms.capabilities(config).measured


def platform_notice(config: dict, why: str = "") -> str:
    """The first line: which platform makes the numbers (and why, where the command chose)."""
    if is_model(config):
        return MODEL_NOTICE + (f" (platform chosen because: {why})" if why else "")
    from . import platforms

    where = platforms.checkout_path(config) \
        if config["platform"] == platforms.CHECKOUT.platform else ""
    return f"platform {config['platform']}, arch {config['arch']}" + \
        (f", hipBLASLt {where}" if where else "") + (f" ({why})" if why else "")


# --- the bench table -------------------------------------------------------------------------

def bench_table(workdir: Path) -> pd.DataFrame:
    """GEMM, calls, us, GFLOP/s and share of GEMM time of the baseline, largest share first."""
    from . import jobs, platforms, workload
    from .bench_formats import summary

    rows = workload.read(workdir / layout.WORKLOAD, support=platforms.gemm_support(None))
    baseline = jobs.read_table(workdir / layout.BASELINE)
    table, _ = summary.summarize(rows, baseline, keep_thr=0.0)
    problems = [_problem_name(row) for row in table.to_dict("records")]
    return pd.DataFrame({"GEMM": problems, "calls": table["call_count"].astype(int),
                         "us": table["us"].astype(float), "GFLOP/s": table["gflops"].astype(float),
                         "share of time %": table[summary.PCT].astype(float)})


def _problem_name(row: dict) -> str:
    from .gemm import GemmProblem

    return GemmProblem.from_row(row).name


# GEMMs the bench table on the terminal lists (the largest share of GEMM time first); the
# rest are counted in one line, all of them are in baseline/workload.csv
BENCH_TABLE_ROWS = 30


def format_bench_table(table: pd.DataFrame) -> list[str]:
    width = max([len("GEMM"), *(len(g) for g in table["GEMM"])])
    lines = [f"{'GEMM':<{width}}  {'calls':>7}  {'us':>11}  {'GFLOP/s':>11}  {'share':>7}"]
    for row in table.to_dict("records"):
        lines.append(f"{row['GEMM']:<{width}}  {row['calls']:>7d}  {row['us']:>11.3f}  "
                     f"{row['GFLOP/s']:>11.1f}  {_share(row['share of time %']):>6}%")
    return lines


def _share(percent: float) -> str:
    """A share of GEMM time: two decimals, or two digits where that would show 0.00 (one of
    100k GEMMs)."""
    return f"{percent:.2f}" if percent >= 0.005 or percent == 0 else f"{percent:.1e}"


# --- the end of a run ------------------------------------------------------------------------

def snakemake_log(workdir: Path) -> Path | None:
    """Snakemake's log of the latest run (it writes one per run under .snakemake/log/)."""
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"),
                  key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else None


def report_in(extra: list[str]) -> str | None:
    """The file of a ``--report FILE`` passed to snakemake after ``--`` (relative: workdir)."""
    for i, arg in enumerate(extra):
        if arg == "--report" and i + 1 < len(extra):
            return extra[i + 1]
        if arg.startswith("--report="):
            return arg.split("=", 1)[1]
    return None


def tuning_yamls(workdir: Path) -> list[Path]:
    """The tuning YAMLs the configure step wrote, in the original's order."""
    campaign = layout.Layout(workdir)
    return [campaign.path(layout.TUNING_YAML, cfg=name) for name in campaign.tuning_configs()]


def benchmark_log_outputs(config: dict) -> tuple[tuple[str, str], ...]:
    """The updated benchmark log ``<stem>.yaml`` and its bench output ``<stem>.out``."""
    kind = "log" if config.get("workload_log") else "other"
    stem = layout.benchmark_stem(kind, config.get("workload_log", ""))
    return ((layout.fill(layout.BENCH_LOG, stem=stem), "updated benchmark log (bench rows)"),
            (layout.fill(layout.BENCH_OUT, stem=stem), "its benchmark output"))


def _outputs(workdir: Path, outputs) -> list[str]:
    present = [(name, what) for name, what in outputs if (workdir / name).exists()]
    width = max((len(name) for name, _ in present), default=0)
    return [f"  {name:<{width}}  {what}" for name, what in present]


def until_names(until) -> tuple[str, ...]:
    """The rules of an ``--until`` (geko's one, or snakemake's several), as a tuple."""
    return (until,) if isinstance(until, str) else tuple(until or ())


def run_summary(workdir: Path, config: dict, *, target: str, until, code: int,
                report: Path | None = None, passed_report: str | None = None,
                log_file: Path | None = None) -> None:
    """The lines after snakemake: what was made and where, or where to look after a failure.
    ``until``: the rule (or rules) the run was told to stop after, None for a whole run. At
    ``-v 0`` a run that succeeded says only that its numbers are the model's (the original's
    closing lines are INFO lines, which -v 0 does not show)."""
    names = until_names(until)
    if code == 0 and config.get("verbosity", 1) == 0:
        if is_model(config):
            say(MODEL_REMINDER)
        return
    say()
    if code != 0:
        say(f"the run failed (snakemake exit code {code}): the cause is printed above; every "
            f"job's log is kept in {workdir / layout.LOG_DIR} (Snakemake's output: "
            f"{workdir / 'logs' / 'snakemake.log'})")
    elif "configure" in names:
        _configure_summary(workdir)
    elif names:  # stopped early as asked: what there is so far, not a finished run's summary
        _stopped_summary(workdir, config, names)
    elif target == "bench":
        _bench_summary(workdir, config)
    elif target == "combine":
        _combine_summary(workdir)
    else:
        _final_summary(workdir, config)
    for path in (report, (workdir / passed_report) if passed_report else None):
        if code == 0 and path is not None:
            say(f"report written to {Path(path).resolve()}" if Path(path).is_file()
                else f"no report was written to {path}")
    log_file = log_file or snakemake_log(workdir)
    if log_file is not None:
        say(f"Snakemake's log: {log_file}")
    if code == 0:
        closing = "Configuration phase completed successfully!" if "configure" in names \
            else None if names \
            else COMPLETED.get(config["mode"]) if target in ("final_libs", "combine") else None
        if closing:
            say(closing)
    if is_model(config):
        say(MODEL_REMINDER)


# what a run stopped early may have written so far, in the order the workflow writes it
STOPPED_OUTPUTS = ((layout.WORKLOAD, "the workload as geko read it"), *BENCH_OUTPUTS,
                   *(entry for entry in RUN_OUTPUTS if entry not in BENCH_OUTPUTS))


def _stopped_summary(workdir: Path, config: dict, names, argv=None) -> None:
    """A run told to stop after some rules (snakemake's ``--until``): where it stopped, how
    to go on, and what it wrote so far (the geko command's; ``argv``: the snakemake route's
    command line, whose continuation is itself without --until)."""
    going_on = "to go on, rerun the same geko command without -- --until" if argv is None \
        else f"continue: {continuation(argv)}"
    say(f"stopped after {', '.join(names)} (--until), as asked; {going_on}")
    present = _outputs(workdir, benchmark_log_outputs(config) + STOPPED_OUTPUTS)
    if present:
        say(f"written so far in {workdir}:")
    for line in present:
        print(line, flush=True)


def final_library_line(mode: str, final) -> str:
    """The original's last line of a run, which scripts around it look for: its search calls
    the library "remapped", its tune "optimized"."""
    kind = "remapped" if mode == "search" else "optimized"
    return f"Final {kind} library available in: '{final}'"


def say_line(text: str) -> None:
    print(text, flush=True)


def workflow_headline(workdir, config: dict, targets=(), until=(), argv=()) -> None:
    """The closing lines of a ``snakemake --profile ...`` run (its ``onsuccess``), as the geko
    command ends: after ``--until configure`` the tuning YAMLs to review and the command that
    continues; after target ``combine`` the combined library's headline; else the headline,
    the faster GEMMs, the final library, the report and the sim note. The geko command prints
    its own (``COMMAND_ENV``). ``argv``: snakemake's command line, whose continuation after
    ``--until`` is itself without it."""
    workdir = Path(workdir)
    if os.environ.get(COMMAND_ENV):
        return
    until = until_names(until)
    if config.get("verbosity", 1) == 0:  # as the geko command: the INFO lines are not shown
        if is_model(config):
            say(MODEL_REMINDER)
        return
    if until:
        if "configure" in until:
            _configure_summary(workdir, snakemake_route=True, argv=argv)
        else:
            _stopped_summary(workdir, config, until, argv=argv)
        if is_model(config):
            say(MODEL_REMINDER)
        return
    if "combine" in targets:
        _combine_summary(workdir)
    elif not _final_headline(workdir):
        return
    if config.get("mode") in COMPLETED:
        say(COMPLETED[config["mode"]])
    if is_model(config):
        say(MODEL_REMINDER)


def _final_headline(workdir: Path) -> bool:
    """The snakemake route's lines of a finished campaign; False where it has none."""
    if not (workdir / layout.METRICS).is_file():
        return False
    try:
        m = json.loads((workdir / layout.METRICS).read_text())
        say(headline.text(m))
    except (OSError, ValueError, KeyError, TypeError):
        return False  # a damaged metrics.json is the next run's audit's to recompute
    for line in faster_lines(workdir):
        say_line(line)
    if (workdir / layout.FINAL_LIBS).is_dir():
        say(f"final library: '{workdir / layout.FINAL_LIBS}'")
    report = workdir / "report.html"
    say(f"report: {report}" if report.is_file() else
        "report: rerun with --report report.html (written into the workdir)")
    return True


def bench_table_lines(table: pd.DataFrame, workdir: Path, rows: int | None = None) -> list[str]:
    """The bench table as the terminal shows it: the ``rows`` GEMMs with the largest share of
    GEMM time, then how many more there are and where every GEMM's timing is: the baseline's
    table (summary.csv has timings only with keep_thr > 0, and then only the GEMMs it keeps)."""
    rows = BENCH_TABLE_ROWS if rows is None else rows
    shown = table.head(rows)
    lines = [f"  {line}" for line in format_bench_table(shown)]
    rest = table.iloc[len(shown):]
    if len(rest):
        lines.append(f"{PREFIX}... and {len(rest):,} more GEMMs "
                     f"({rest['share of time %'].sum():.2f}% of GEMM time): every GEMM's timing "
                     f"is in {workdir / layout.BASELINE}")
    return lines


def _bench_summary(workdir: Path, config: dict) -> None:
    table = bench_table(workdir)
    say(f"baseline of {len(table):,} GEMMs, largest share of GEMM time first:")
    for line in bench_table_lines(table, workdir):
        print(line, flush=True)
    say(f"written to {workdir}:")
    for line in _outputs(workdir, benchmark_log_outputs(config) + BENCH_OUTPUTS):
        print(line, flush=True)


def continuation(argv) -> str:
    """The snakemake command line of ``argv`` without ``--until`` and its targets: the command
    that continues a run stopped there."""
    argv = [str(word) for word in argv]
    if not argv:
        return "the same snakemake command without --until"
    program = "snakemake" if Path(argv[0]).name == "snakemake" else \
        f"{shlex.quote(sys.executable)} -m snakemake"
    kept, skipping = [], False
    for word in argv[1:]:
        if word == "--until":
            skipping = True
            continue
        if skipping and not word.startswith("-"):
            continue
        skipping = False
        if not word.startswith("--until="):
            kept.append(word)
    return f"{program} {shlex.join(kept)}"


def _configure_summary(workdir: Path, snakemake_route: bool = False, argv=()) -> None:
    """The original's configuration-phase lines (the GEMM count, the files generated), then
    each tuning YAML for review and how to continue: the geko command where the workdir is a
    geko campaign (its geko_config.yaml); on the snakemake route, snakemake's own command
    without ``--until``."""
    yamls = tuning_yamls(workdir)
    if (workdir / layout.GEMMS).is_file():
        say(f"Found {len(pd.read_csv(workdir / layout.GEMMS))} unique GEMMs after filtering")
    say(f"Generated {len(yamls)} configuration files in '{workdir / layout.TUNING_DIR}' "
        "(for review):")
    for path in yamls:
        script = path.with_suffix(Path(layout.TUNING_SCRIPT).suffix)
        print(f"  {path}" + (f"  (run alone: {script.name})" if script.is_file() else ""),
              flush=True)
    if not snakemake_route or (workdir / layout.CONFIG_COPY).is_file():
        say(f"continue (optimize.py): geko --tune --workdir {workdir} [-d LIST] [-n N] "
            "[--up_thr X] [--err_thr X] [--no_retry]")
    if snakemake_route:
        say(f"continue: {continuation(argv)}")


def _combine_summary(workdir: Path) -> None:
    results = workdir / layout.COMBINED_RESULTS
    if not results.is_file():
        return
    say(f"combined library: {combine.summary(pd.read_csv(results))} in: "
        f"'{workdir / layout.COMBINED_LIBS}'; per GEMM timings in {results}")


# kept GEMMs a finished run names, the most GEMM time saved first (all: final_results.csv)
FASTER_ROWS = 5


def faster_lines(workdir: Path) -> list[str]:
    """The kept GEMMs that saved the most of the workload's GEMM time: each one's time before
    and after, its speed-up and its share of GEMM time saved."""
    path = workdir / layout.FINAL_RESULTS
    try:
        kept = pd.read_csv(path)
    except (OSError, ValueError):
        return []
    needed = {"kept", "weighted_us_saved", "us_reference", "us_tuned",
              "weighted_uplift_contribution_pct"}
    if kept.empty or not needed <= set(kept.columns):
        return []
    kept = kept[kept["kept"].astype(bool)]
    top = kept.sort_values("weighted_us_saved", ascending=False).head(FASTER_ROWS)
    if top.empty:
        return []
    names = [_problem_name(row) for row in top.to_dict("records")]
    width = max(len(name) for name in names)
    lines = [f"{PREFIX}faster GEMMs, most GEMM time saved first ({len(top)} of {len(kept)}; "
             f"all in {path}):"]
    for name, row in zip(names, top.to_dict("records")):
        lines.append(f"  {name:<{width}}  {row['us_reference']:>10.3f} -> "
                     f"{row['us_tuned']:>10.3f} us  {row['us_reference'] / row['us_tuned']:.2f}x"
                     f"  {_share(row['weighted_uplift_contribution_pct'])}% of GEMM time saved")
    return lines


def _final_summary(workdir: Path, config: dict) -> None:
    metrics = workdir / layout.METRICS
    if metrics.is_file():
        m = json.loads(metrics.read_text())
        say(headline.text(m))
        for line in summary_lines(m):
            say(line)
    for line in faster_lines(workdir):
        print(line, flush=True)
    final = workdir / layout.FINAL_LIBS
    shipped = len(list(final.glob("*.yaml"))) if final.is_dir() else 0
    if shipped:
        say(f"{final_library_line(config['mode'], final)} ({shipped} library file(s))")
    elif final.is_dir():
        say(f"no library to load: no kernel was kept, '{final}' holds none")
    failed = layout.Layout(workdir).failed_jobs(config["mode"])
    if failed:
        log_name = layout.TUNING_FAILED if config["mode"] == "tune" else layout.SEARCH_FAILED
        say(f"{len(failed)} failed and skipped (the rest finished): {', '.join(failed[:5])}"
            f"{' ...' if len(failed) > 5 else ''}; see {workdir / log_name}")
    say(f"outputs in {workdir}:")
    for line in _outputs(workdir, benchmark_log_outputs(config) + RUN_OUTPUTS):
        print(line, flush=True)
