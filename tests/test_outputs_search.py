"""Search mode through a real snakemake run on the sim platform: the original's files (its
"Workflow Output Structure"), its column names and log lines, and a failing GEMM retried, logged
and skipped while the campaign finishes for the rest (issue 14)."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from geko_lib import log_setup
from geko_lib.bench_formats import rows as bench_rows
from geko_lib.gemm import GemmProblem
from geko_lib.platforms.rocm.bench import read_bench_output

from .test_workflow import jobs_run, read

pytestmark = pytest.mark.slow

CRASH = "HHS_NN_M4096_N4096_B1_K4096"  # fails every time
FLAKY = "BBS_TN_M128_N2048_B32_K128"  # fails once, then works
AVERAGE = re.compile(r"Average GEMM uplift of (\d+\.\d+)% for a total of (\d+) GEMMs")


def names(frame) -> set:
    return {GemmProblem.from_row(r).name for r in frame.to_dict("records")}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One search campaign with an always-failing and a once-failing GEMM."""
    from .conftest import Campaign

    c = Campaign(tmp_path_factory.mktemp("search"), keep_thr=0.1,
                 sim={"search_crash_on": [CRASH], "flaky_on": [FLAKY]})
    return c, c.snakemake("final_libs")


def test_the_original_files_are_where_its_readme_puts_them(finished):
    c, _ = finished
    gemms = read(c.path("gemms.csv"))
    # the updated benchmark log and its hipblaslt-bench output, named after the log
    rows = yaml.safe_load(c.path("mixed_types.yaml").read_text())
    assert len(rows) == len(yaml.safe_load(c.path("workload.yaml").read_text()))
    # the search baseline times the original's fixed counts (bench_timing: iterations)
    assert all(r["iters"] == bench_rows.DEFAULT_ITERS
               and r["cold_iters"] == bench_rows.DEFAULT_COLD_ITERS and r["rotating"] == 512
               and r["initialization"] == "trig_float" for r in rows)
    # updated as the documented geko_lib.bench.log.update does: the bench keys it adds
    assert all(r["compute_type"].startswith("c_") and "scale_type" in r
               and {"scaleA", "scaleB", "use_gpu_timer", "print_kernel_info"} <= set(r)
               and "us" not in r for r in rows)
    baseline = read_bench_output(c.path("mixed_types.out"))
    assert len(baseline) == len(rows)
    # one .yaml (its bench rows) and one .out (every candidate, then the winner) per GEMM
    for name in names(gemms) - {CRASH}:
        row = yaml.safe_load(c.path("search", f"{name}.yaml").read_text())
        assert row[0]["requested_solution_num"] == -1 and GemmProblem.from_row(row[0]).name == name
        text = c.path("search", f"{name}.out").read_text()
        assert text.count("Winner:") == 1
        parsed = read_bench_output(c.path("search", f"{name}.out"))
        assert names(parsed) == {name} and len(parsed) > 10
    assert not c.path("search", f"{CRASH}.out").exists()
    libs = sorted(p.stem for p in c.path("libs").glob("*.yaml"))
    for lib in libs:
        assert c.path("benchmarks", f"{lib}_bench.yaml").is_file()
        assert c.path("benchmarks", f"{lib}_verify.yaml").is_file()
    assert c.path("final_libs").is_dir() and c.path("results", "final_results.csv").is_file()


def test_failing_gemm_is_retried_logged_and_skipped(finished):
    c, proc = finished
    failed = c.path("search", "failed_jobs.log").read_text().splitlines()
    assert [line.split()[0] for line in failed] == [CRASH]
    assert "injected search crash" in failed[0]
    winners = read(c.path("winners.csv"))
    gemms = read(c.path("gemms.csv"))
    # the flaky GEMM failed with its chunk, then worked alone; only the crashing one is missing
    assert names(winners) == names(gemms) - {CRASH} and FLAKY in names(winners)
    assert c.path("search", ".sim_flaky", FLAKY).is_file()
    raw = read(c.path("results", "raw_results.csv"))
    assert CRASH not in names(raw) and len(raw) == len(winners)
    chunk_log = next(p.read_text() for p in c.path("logs", "search").glob("*.log")
                     if CRASH in p.read_text())
    assert "retrying each alone" in chunk_log


def test_original_column_names_beside_gekos(finished):
    c, _ = finished
    for name in ("summary.csv", "winners.csv", "baseline/workload.csv"):
        frame = read(c.path(name))
        assert (frame["hipblaslt-Gflops"] == frame["gflops"]).all(), name
        assert (frame["hipblaslt-GB/s"] == frame["gbps"]).all(), name
        assert (frame["solutionIdx"] == frame["solution_index"]).all(), name
        assert (frame["solution"] == frame["solution_name"]).all(), name
        assert (frame["lib_source"] == "NotFound").all(), name  # the sim has no MatchTable
    raw = read(c.path("results", "raw_results.csv"))
    for side in ("reference", "tuned"):
        assert (raw[f"hipblaslt-Gflops_{side}"] == raw[f"gflops_{side}"]).all()
        assert (raw[f"solutionIdx_{side}"] == raw[f"solution_index_{side}"]).all()
        assert (raw[f"solution_{side}"] == raw[f"solution_name_{side}"]).all()
        assert f"lib_source_{side}" in raw and f"kernel_{side}" in raw and f"us_{side}" in raw
    final = read(c.path("results", "final_results.csv"))
    assert set(raw.columns) == set(final.columns)


def test_documented_log_lines(finished):
    c, _ = finished
    for path in c.path("logs").rglob("*.log"):
        for line in path.read_text().splitlines():
            if line.startswith(log_setup.PREFIX):
                parsed = log_setup.parse(line)
                assert parsed and parsed["module"] and parsed["function"], (path, line)
                assert not parsed["module"].startswith("tmp"), line  # the script's own name
    final_log = c.path("logs", "final_libs.log").read_text()
    # a search campaign's library is "remapped" in its job log, as on the terminal
    where = re.search(r"Final remapped library available in: '([^']+)'", final_log)
    assert where and Path(where.group(1)) == c.path("final_libs").resolve()
    analysis_log = c.path("logs", "analyze.log").read_text()
    average = AVERAGE.search(analysis_log)
    kept = read(c.path("results", "final_results.csv"))
    assert average and int(average.group(2)) == len(kept)
    assert float(average.group(1)) == pytest.approx(kept["uplift_pct"].mean(), abs=1e-4)


def test_rerun_tries_the_failed_gemm_again_until_it_is_retired(finished, tmp_path):
    c, _ = finished
    # the failure persists: a plain rerun searches that chunk once more (a failed run), ...
    again = c.snakemake("final_libs")
    assert jobs_run(again).get("search_share") == 1
    assert c.path("search", "failed_jobs.log").is_file()
    # ... and, once fixed, the next rerun finds it
    c.config["sim"] = {}
    fixed = c.snakemake("final_libs")
    assert jobs_run(fixed).get("search_share") == 1
    assert not c.path("search", "failed_jobs.log").exists()
    assert CRASH in names(read(c.path("winners.csv")))


def test_no_retry_and_retirement(campaign):
    c = campaign(keep_thr=0.1, retry=False, retire_after=1, sim={"flaky_on": [FLAKY]})
    c.snakemake("final_libs")
    failed = {line.split()[0] for line in
              c.path("search", "failed_jobs.log").read_text().splitlines()}
    # retry off: the GEMMs of the chunk that failed once are not tried alone
    assert FLAKY in failed
    winners = names(read(c.path("winners.csv")))
    assert winners and not failed & winners
    assert winners | failed == names(read(c.path("gemms.csv")))
    # retire_after 1: the failed chunk is not tried again by a plain rerun (it would work now)
    again = c.snakemake("final_libs")
    assert "search_share" not in jobs_run(again)
    counts = json.loads(c.path("search", ".failed_runs.json").read_text())
    assert max(entry["failed_runs"] for entry in counts.values()) == 1
