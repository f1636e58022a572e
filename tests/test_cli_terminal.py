"""What a user of the real `geko` command sees on the terminal, and the two-step
configure/optimize flow: real snakemake runs on the sim platform in temp dirs."""
import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from .conftest import WORKLOADS
from .test_cli import GEKO

pytestmark = pytest.mark.slow
MODEL_FIRST = "geko: platform sim: an analytic GPU model"
MODEL_LAST = "geko: these numbers are model predictions of the sim platform, not measurements"


def geko(*args, cwd):
    # geko's --cores, before any `--`: after it, snakemake's --cores is refused
    at = args.index("--") if "--" in args else len(args)
    return subprocess.run([*GEKO, *args[:at], "--cores", "2", *args[at:]], cwd=cwd,
                          capture_output=True, text=True)


def ok(proc):
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def printed_path(stdout: str, prefix: str) -> Path:
    line = next(line for line in stdout.splitlines() if line.startswith(prefix))
    return Path(line[len(prefix):].strip())


def test_bench_prints_the_table_it_measured_and_where_it_wrote_it(tmp_path):
    proc = ok(geko("--bench", "--workload-log", str(WORKLOADS / "mixed_types.yaml"),
                   "--workdir", "run", cwd=tmp_path))
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(MODEL_FIRST) and lines[-1] == MODEL_LAST
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["GEMM", "calls"])
    assert lines[header].split() == ["GEMM", "calls", "us", "GFLOP/s", "share"]
    rows = [line.split() for line in lines[header + 1:header + 7]]
    baseline = pd.read_csv(tmp_path / "run" / "baseline" / "workload.csv")
    assert len(rows) == len(baseline) == 6
    by_us = {round(float(u), 3) for u in baseline["us"]}
    assert {float(r[2]) for r in rows} == by_us  # the measured times, one row per GEMM
    shares = [float(r[4].rstrip("%")) for r in rows]
    assert shares == sorted(shares, reverse=True) and abs(sum(shares) - 100.0) < 0.05
    assert rows[0][0] == "XSS_TN_M8192_N8192_B1_K1024"  # 10 calls x the largest time
    assert f"geko: written to {tmp_path / 'run'}:" in proc.stdout
    assert "baseline/workload.csv" in proc.stdout and "summary.csv" in proc.stdout


def test_a_long_bench_names_the_file_with_every_gemms_timing(tmp_path):
    """Past 30 GEMMs the table ends with a line naming where the rest are: a file holding
    every GEMM's time (it named summary.csv, which --bench's default keep_thr 0 writes without
    timings, as the original's summary.csv at keep_thr 0)."""
    sizes = "".join(f"  - [{256 * (i + 1)}, 512, 1, 1024]\n" for i in range(35))
    (tmp_path / "sizes.yaml").write_text("TRANSA: N\nTRANSB: T\nDataType: B\nDestDataType: B\n"
                                         f"ComputeDataType: S\nSizes:\n{sizes}")
    proc = ok(geko("--bench", "--list", "sizes.yaml", "--workdir", "run", cwd=tmp_path))
    more = next(line for line in proc.stdout.splitlines() if "more GEMMs" in line)
    named = Path(re.fullmatch(r"geko: \.\.\. and 5 more GEMMs \([\d.]+% of GEMM time\): "
                              r"every GEMM's timing is in (.+)", more)[1])
    table = pd.read_csv(named)
    assert len(table) == 35 and (table["us"] > 0).all()


def test_snakemakes_own_log_goes_under_the_workdir(tmp_path):
    proc = ok(geko("--bench", "--inline", "256", "256", "1", "256", "B", "B", "S", "N", "T",
                   "--workdir", "run", cwd=tmp_path))
    log = printed_path(proc.stdout, "geko: Snakemake's log:")
    assert log.is_file() and log.parent == tmp_path / "run" / ".snakemake" / "log"
    assert not (tmp_path / ".snakemake").exists()  # nothing in the current directory


@pytest.fixture(scope="module")
def search_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("search")
    proc = ok(geko("--search", "--workload-log", str(WORKLOADS / "mixed_types.yaml"),
                   "--keep_thr", "0", "-d", "0,1", "--workdir", "run", "--report",
                   cwd=root))
    return root / "run", proc


def test_the_run_summary_names_the_outputs_and_says_model(search_run):
    workdir, proc = search_run
    out = proc.stdout
    assert out.splitlines()[0].startswith(MODEL_FIRST) and out.splitlines()[-1] == MODEL_LAST
    assert f"geko: Final remapped library available in: '{workdir / 'final_libs'}'" in out
    for name in ("final_libs", "results/final_results.csv", "results/raw_results.csv",
                 "results/metrics.json", "summary.csv", "winners.csv", "search", "logs"):
        assert re.search(rf"^  {re.escape(name)} +\S", out, re.M), name
        assert (workdir / name).exists()


def test_the_two_uplift_lines_say_what_they_average(search_run):
    workdir, proc = search_run
    metrics = json.loads((workdir / "results" / "metrics.json").read_text())
    kept = metrics["uplift_kept"]
    average = next(line for line in proc.stdout.splitlines() if "Average GEMM uplift" in line)
    assert average.startswith(f"geko: Average GEMM uplift of {kept['mean']:.4f}% for a total "
                              f"of {kept['n']} GEMMs (arithmetic mean of the kept GEMMs'")
    weighted = next(line for line in proc.stdout.splitlines() if "Weighted GEMM uplift" in line)
    assert f"{metrics['e2e']['e2e_uplift_pct']:.4f}% (share of the workload's total GEMM " \
           "time saved" in weighted
    headline = f"geko: {kept['n']} of {metrics['counts']['n_attempted']} GEMMs kept"
    assert headline in proc.stdout and "% of the roofline floor" in proc.stdout


def test_report_prints_the_file_it_wrote_and_leads_with_the_headline(search_run):
    workdir, proc = search_run
    report = printed_path(proc.stdout, "geko: report written to")
    assert report == workdir / "report.html" and report.is_file()
    metrics = json.loads((workdir / "results" / "metrics.json").read_text())
    description = re.search(r'var workflow_desc = "(.*?)";\n', report.read_text()).group(1)
    kept = description.index(f"GEMMs kept: {metrics['counts']['n_kept']}")
    assert kept < description.index("Time-weighted uplift") < description.index("of the floor")
    assert kept < description.index("geko campaign on")  # the headline comes first
    assert "model predictions of the sim platform" in description


def test_job_info_and_library_warnings_stay_in_the_job_logs(search_run):
    workdir, proc = search_run
    terminal = proc.stdout + proc.stderr
    # no job's INFO line reaches the terminal (the driver's command line is DEBUG)
    assert not [line for line in terminal.splitlines() if line.startswith("GEKO:INFO")]
    exports_log = (workdir / "logs" / "exports.log").read_text()
    assert "UserWarning: GCN_ARCH_NAME" in exports_log  # a library warning of that job
    assert "GCN_ARCH_NAME" not in terminal
    assert any("GEKO:INFO" in p.read_text() and "leased sim device" in p.read_text()
               for p in (workdir / "logs" / "search").glob("*.log"))  # INFO: in the job logs


def test_two_step_configure_review_optimize(tmp_path):
    (tmp_path / "sizes.yaml").write_text(
        "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
        'ARCH: "gfx942"\nSizes:\n  - [128, 128, 1, 128]\n')
    # step 1, configure.py's flags: -a, -w, --keep_thr, --device
    first = ok(geko("--tune", "--list", "sizes.yaml", "-a", "gfx942", "-w", "run",
                    "--keep_thr", "0", "--device", "0", "--until", "configure", cwd=tmp_path))
    workdir = tmp_path / "run"
    yamls = sorted((workdir / "optimizations").glob("*_[0-9].yaml"))
    assert [p.name for p in yamls] == ["BBS_TN_0.yaml"]
    assert f"  {yamls[0]}" in first.stdout  # listed for review
    assert f"geko --tune --workdir {workdir}" in first.stdout  # how to continue
    assert not list((workdir / "optimizations").glob("build_*"))
    assert not (workdir / "final_libs").exists()
    # no tuning job runs in this step: no optimization bar (it showed 'Optimization in
    # progress: 0/1' once the YAMLs were written)
    assert "Optimization in progress" not in first.stdout + first.stderr
    assert first.stdout.splitlines()[-1] == MODEL_LAST  # the sim reminder ends this run too
    # step 2, optimize.py's flags: -w, -d, -n, --up_thr, --err_thr, --no_retry
    second = ok(geko("--tune", "-w", "run", "-d", "0,1", "-n", "2", "--up_thr", "1.01",
                     "--err_thr", "0.05", "--no_retry", cwd=tmp_path))
    config = yaml.safe_load((workdir / "geko_config.yaml").read_text())
    # --no_retry holds for this invocation only, as in the original: not saved
    assert (config["devices"], config["n_slots"], config["up_thr"], config["err_thr"],
            config["retry"]) == ([0, 1], 2, 1.01, 0.05, True)
    assert (config["arch"], config["keep_thr"]) == ("gfx942", 0.0)  # kept from step 1
    assert config["workload_list"] == str(tmp_path / "sizes.yaml")
    assert f"Final optimized library available in: '{workdir / 'final_libs'}'" in second.stdout
    assert list((workdir / "final_libs").glob("*.yaml"))
    # the GA's per-generation rows are in the job log, not interleaved on the terminal
    rows = [line for p in (workdir / "logs" / "optimize").glob("*.log")
            for line in p.read_text().splitlines() if re.search(r"\| +\d+ \| +\d+ \|", line)]
    assert rows
    assert not re.search(r"\| +\d+ \| +\d+ \|", second.stdout + second.stderr)


def test_a_continuation_on_other_devices_keeps_its_baseline(tmp_path):
    """Step 2 of a two-step tune on other devices (-d) than step 1's reuses step 1's baseline:
    its timings do not depend on which devices took them (its parts are named for the device
    count, which re-ran it)."""
    log = tmp_path / "app.yaml"
    log.write_text("".join(
        f"- {{function: matmul, M: {m}, N: 16, K: 1024, transA: T, transB: N, batch_count: 1, "
        "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
        "compute_type: c_f32_r, call_count: 10}\n" for m in (1024, 2048)))
    ok(geko("--tune", "--workload-log", str(log), "-a", "gfx950", "-w", "run", "--keep_thr",
            "1", "-d", "0", "--until", "configure", cwd=tmp_path))
    parts = tmp_path / "run" / "baseline" / "parts"
    before = {p.name: p.stat().st_mtime_ns for p in parts.glob("*.csv")}
    second = ok(geko("--tune", "-w", "run", "-d", "0,1", "--until", "configure",
                     cwd=tmp_path))
    assert {p.name: p.stat().st_mtime_ns for p in parts.glob("*.csv")} == before
    assert "Baseline phase" not in second.stdout, second.stdout[-3000:]


def test_the_discarded_campaign_is_named_once(tmp_path):
    ok(geko("--bench", "--inline", "256", "512", "1", "256", "B", "B", "S", "N", "T", "-w",
            "run", cwd=tmp_path))
    again = ok(geko("--bench", "--inline", "512", "512", "1", "256", "B", "B", "S", "N", "T",
                    "-w", "run", "--discard-results", cwd=tmp_path))
    said = (again.stdout + again.stderr).splitlines()
    discarded = [line for line in said if line.startswith("geko: discard_results:")]
    assert discarded and len(discarded) == len(set(discarded)), said


def test_a_continuation_without_a_campaign_is_refused(tmp_path):
    proc = subprocess.run([*GEKO, "--tune", "-w", "nothing"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "nothing/geko_config.yaml does not exist" in proc.stderr


def test_a_failed_gemm_is_named_at_the_end(tmp_path):
    crash = "BBS_TN_M3000_N7_B1_K5000"  # the sim platform's injected failure, for one GEMM
    proc = ok(geko("--search", "--workload-log", str(WORKLOADS / "mixed_types.yaml"),
                   "--keep_thr", "0", "--workdir", "run", "--",
                   "--config", f"sim={{crash_on: [{crash}]}}", cwd=tmp_path))
    failed_log = tmp_path / "run" / "search" / "failed_jobs.log"
    assert crash in failed_log.read_text()
    assert f"geko: 1 failed and skipped (the rest finished): {crash}; see {failed_log}" in \
        proc.stdout
    assert "Final remapped library available in:" in proc.stdout
    # the headline is over the whole workload (6 GEMMs), the failed one counted as not kept;
    # keep_thr 0 timed no baseline, so the time shares are the compared GEMMs' and say so
    assert re.search(r"geko: \d+ of 6 GEMMs kept \(1 failed\); time-weighted uplift [\d.]+% "
                     r"of the compared GEMMs' time saved \(1 failed GEMM\(s\) untimed\)",
                     proc.stdout), proc.stdout[-3000:]


TWO_GEMMS = "".join(
    f"- {{function: matmul, M: {m}, N: 16, K: 1024, transA: T, transB: N, batch_count: 1, "
    "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, "
    "call_count: 10}\n" for m in (1024, 2048))
SEARCH_FAILS = "sim={search_crash_on: [M2048_N16]}"  # the second GEMM's search job fails


def _whole_workload_figures(workdir: Path) -> tuple[float, float]:
    """(uplift %, kept share %) over both GEMMs, each at its default kernel's time (the
    platform's own, timed here), the failed one unchanged."""
    from geko_lib import platforms
    from geko_lib.gemm import GemmProblem

    config = yaml.safe_load((workdir / "geko_config.yaml").read_text()) \
        if (workdir / "geko_config.yaml").is_file() else {"platform": "sim", "arch": "gfx950"}
    raw = pd.read_csv(workdir / "results" / "raw_results.csv", dtype={"transA": str,
                                                                       "transB": str})
    (kept,) = raw[raw["kept"]].to_dict("records")
    workload = yaml.safe_load(TWO_GEMMS)
    problems = [GemmProblem.from_row(dict(r, m=r["M"], n=r["N"], k=r["K"])) for r in workload]
    default = platforms.get(config).bench(problems, workdir / "expected", 0, duration=0.1)
    total = sum(10 * us for us in default["us"])
    share = 100.0 * 10 * kept["us_reference"] / total
    return share * (1 - kept["us_tuned"] / kept["us_reference"]), share


def _says_whole_workload(stdout: str, workdir: Path) -> None:
    uplift, share = _whole_workload_figures(workdir)
    assert 0 < share < 100
    assert f"geko: 1 of 2 GEMMs kept (1 failed); time-weighted uplift {uplift:.2f}% of the " \
           "workload's GEMM time saved;" in stdout, stdout[-3000:]
    # the original's log line (the geko command prints it too)
    logged = (workdir / "logs" / "analyze.log").read_text()
    assert f"Weighted GEMM uplift of {uplift:.4f}% (share of the workload's total GEMM time " \
           "saved" in logged, logged[-3000:]
    assert f"the kept GEMMs are {share:.1f}% of that time" in logged
    m = json.loads((workdir / "results" / "metrics.json").read_text())
    assert m["e2e"]["n_untimed"] == 0 and m["counts"]["n_failed"] == 1
    assert m["e2e"]["coverage_pct"] == pytest.approx(share)
    # the failed GEMM ships its default kernel: it counts in the roofline at its reference time
    assert m["roofline"]["n"] == 2 and m["roofline"]["n_failed"] == 1


def test_with_keep_thr_0_a_failed_jobs_gemm_counts_in_every_headline_figure(tmp_path):
    """keep_thr 0 times no baseline, so a GEMM whose search failed had no timing and the
    time-weighted uplift and the kept share were of the compared GEMMs' time (12.71% and 100.0%
    here, where the whole workload gives 6.28% and 49.4%). Its default kernel is timed now
    (bench_uncompared), and both doors say the whole workload's figures, the failed GEMM at its
    unchanged time."""
    import shutil
    import sys

    from .conftest import ROOT

    (tmp_path / "app.yaml").write_text(TWO_GEMMS)
    proc = ok(geko("--search", "--workload-log", "app.yaml", "--keep_thr", "0", "-w", "run",
                   "--", "--config", SEARCH_FAILS, cwd=tmp_path))
    _says_whole_workload(proc.stdout, tmp_path / "run")
    assert "the kept GEMMs are 49.4% of that time" in proc.stdout  # as this sim model has it

    for name in ("workflow", "config", "profiles"):  # the snakemake door, on a checkout
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake"))
    (tmp_path / "mine.yaml").write_text('workload_log: app.yaml\n')
    route = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "profiles/local", "final_libs",
         "--cores", "2", "--configfile", "mine.yaml", "--config", "keep_thr=0",
         "workdir=runs/s", SEARCH_FAILS], cwd=tmp_path, capture_output=True, text=True)
    ok(route)
    _says_whole_workload(route.stdout, tmp_path / "runs" / "s")


def test_a_run_that_keeps_nothing_names_no_final_library(tmp_path):
    proc = ok(geko("--search", "--inline", "256", "512", "1", "256", "B", "B", "S", "N", "T",
                   "-w", "run", "--up_thr", "100", cwd=tmp_path))
    assert "geko: No kernels improve over the base library" in proc.stdout
    assert "Final remapped library available in" not in proc.stdout
    assert f"geko: no library to load: no kernel was kept, '{tmp_path / 'run' / 'final_libs'}'" \
        " holds none" in proc.stdout
