"""End-to-end runs of the real workflow (snakemake subprocess) on the sim platform."""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from geko_lib import library
from geko_lib.library import exports
from geko_lib.campaign import layout
from geko_lib.gemm import GEMM_FIELDS

from .conftest import SNAKEFILE, final_lib_texts

pytestmark = pytest.mark.slow
KEYS = list(GEMM_FIELDS)


def read(path):
    return pd.read_csv(path, dtype={"transA": str, "transB": str})


def jobs_run(proc) -> dict:
    """rule name -> number of jobs snakemake ran (from its log)."""
    counts = {}
    for rule in re.findall(r"^(?:local)?(?:rule|checkpoint) (\w+):", proc.stderr, re.M):
        counts[rule] = counts.get(rule, 0) + 1
    return counts


def assert_no_partial_files(workdir):
    """Every file that looks finished (not a hidden temporary) parses completely."""
    for path in workdir.rglob("*"):
        if path.name.startswith(".") or ".snakemake" in path.parts or not path.is_file():
            continue
        if path.name == "tunableop_results.csv":
            exports.read_tunableop(path)
        elif path.name == "hipblaslt_tuning_override.txt":
            exports.read_tuning_override(path)
        elif path.suffix == ".csv":
            assert len(pd.read_csv(path).columns) > 1, path
        elif path.suffix == ".yaml":
            assert yaml.safe_load(path.read_text()) is not None, path


def test_search_end_to_end(finished_trace_search, tmp_path):
    c = finished_trace_search.copy(tmp_path)  # the prune target below adds to it

    workload = yaml.safe_load(c.path("workload.yaml").read_text())
    assert len(workload) == 45 and all(r["call_count"] > 0 for r in workload)

    # summary: shares recomputed from the baseline timings
    baseline = read(c.path("baseline", "workload.csv"))
    summary = read(c.path("summary.csv"))
    assert (baseline["measured"] == False).all()  # noqa: E712 (sim says it is a model)
    calls = {(r["M"], r["N"], r["K"]): r["call_count"] for r in workload}
    us = {(r.m, r.n, r.k): r.us for r in baseline.itertuples()}
    total = sum(calls[key] * us[key] for key in calls)
    for r in summary.to_dict("records"):
        key = (r["m"], r["n"], r["k"])
        assert math.isclose(r["% of total"], 100 * calls[key] * us[key] / total, rel_tol=1e-9)
    assert (summary["% of total"] >= 0.5).all()
    assert list(summary["total (us)"]) == sorted(summary["total (us)"], reverse=True)
    gemms = read(c.path("gemms.csv"))
    assert len(gemms) == len(summary) < 45  # some GEMMs are below 0.5 %

    # dense search: every GEMM of gemms.csv has a winner, the fastest candidate of its chunk data
    chunks = sorted(c.path("search", "data").glob("gemms_*.csv"))
    assert len(chunks) >= 2
    candidates = pd.concat([read(p) for p in chunks])
    winners = read(c.path("winners.csv"))
    assert len(winners) == len(gemms)
    fastest = candidates.groupby(["m", "n", "k"])["us"].min()
    for w in winners.itertuples():
        assert w.us == fastest[(w.m, w.n, w.k)]
    reference = baseline.set_index(["m", "n", "k"])
    changed = [w for w in winners.itertuples()
               if w.solution_index != reference.loc[(w.m, w.n, w.k), "solution_index"]]
    assert changed, "the sim heuristic is imperfect: the search must find other winners"

    # results: keep rule and metrics recomputed independently
    raw = read(c.path("results", "raw_results.csv"))
    assert len(raw) == len(winners)
    ratio = raw["us_reference"] / raw["us_tuned"]
    keep = (raw["kernel_reference"] != raw["kernel_tuned"]) & (ratio >= 1.03) & (
        raw["error_tuned"] < 0.03)
    assert (keep == raw["kept"]).all() and keep.any() and not keep.all()
    metrics = json.loads(c.path("results", "metrics.json").read_text())
    kept = raw[keep]
    assert metrics["counts"]["n_kept"] == len(kept)
    assert metrics["platform"]["name"] == "sim" and metrics["platform"]["measured"] is False
    geomean = 100 * (math.exp(sum(math.log(x) for x in ratio[keep]) / len(kept)) - 1)
    assert math.isclose(metrics["uplift_kept"]["geomean"], geomean, rel_tol=1e-9)
    pct = summary.set_index(["m", "n", "k"])["% of total"]
    e2e = sum(pct[(r.m, r.n, r.k)] * (1 - r.us_tuned / r.us_reference) for r in kept.itertuples())
    assert math.isclose(metrics["e2e"]["e2e_uplift_pct"], e2e, rel_tol=1e-9)
    final = read(c.path("results", "final_results.csv"))
    assert len(final) == len(kept)

    # final_libs holds exactly the kept GEMMs, each with its winning kernel
    shipped = {}
    for path in c.path("final_libs").glob("*.yaml"):
        lib = library.load(path)
        assert path.read_text().startswith("# sim platform")
        names = {s["SolutionIndex"]: s["SolutionNameMin"] for s in lib.solutions}
        for size, index, _ in lib.size_entries():
            shipped[size] = names[index]
    expected = {(r.m, r.n, r.batch_count, r.k): r.kernel_tuned for r in kept.itertuples()}
    assert shipped == expected

    # full_libs: every GEMM with its winner, the reference kernel where tuning did not win
    full = {}
    for path in c.path("full_libs").glob("*.yaml"):
        lib = library.load(path)
        names = {s["SolutionIndex"]: s["SolutionNameMin"] for s in lib.solutions}
        full.update({size: names[index] for size, index, _ in lib.size_entries()})
    assert full == {(r.m, r.n, r.batch_count, r.k): r.kernel_tuned if r.kept else r.kernel_reference
                    for r in raw.itertuples()}

    # prune (optional target): same sizes, no more solutions than final_libs
    c.snakemake("prune")
    report = read(c.path("results", "prune_report.csv"))
    assert set(report["status"]) <= {"trivial", "optimal", "feasible", "greedy"}
    for path in c.path("final_libs").glob("*.yaml"):
        final, pruned = library.load(path), library.load(c.path("pruned_libs", path.name))
        assert [s for s, _, _ in pruned.size_entries()] == [s for s, _, _ in final.size_entries()]
        assert len(pruned.solutions) <= len(final.solutions)

    # exports: the kept GEMMs with the index the search measured their kernel under in the
    # platform's own library (winners.csv), not the one of the library built for the
    # comparison; the override file leaves index 0 out (hipBLASLt ignores it), readable back
    winners = read(c.path("winners.csv"))
    searched = {(r.m, r.n, r.batch_count, r.k): r.solution_index for r in winners.itertuples()}
    expected = {size: searched[size] for size in
                ((r.m, r.n, r.batch_count, r.k) for r in kept.itertuples())}
    override = exports.read_tuning_override(c.path("exports", "hipblaslt_tuning_override.txt"))
    tunable = exports.read_tunableop(c.path("exports", "tunableop_results.csv"))
    for table, wanted in ((override, {k: v for k, v in expected.items() if v > 0}),
                          (tunable, expected)):
        got = {(r.m, r.n, r.batch_count, r.k): r.solution_index for r in table.itertuples()}
        assert got == wanted


def test_bench_mode_and_nothing_left_to_do(campaign):
    c = campaign(keep_thr=0.0)
    c.snakemake("bench")
    baseline = read(c.path("baseline", "workload.csv"))
    summary = read(c.path("summary.csv"))
    assert len(baseline) == 6 and set(summary.columns) == set(KEYS) | {"call_count"}
    assert not c.path("winners.csv").exists()
    again = c.snakemake("bench")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_resume_reruns_only_what_is_missing(campaign):
    c = campaign(keep_thr=0.0, search_chunk_size=2)
    c.snakemake("final_libs")
    before = final_lib_texts(c)
    assert before
    again = c.snakemake("final_libs")
    assert "Nothing to be done" in again.stdout + again.stderr

    share = sorted(c.path("search", "parts").glob("part_*.csv"))[0]
    share.unlink()
    rerun = c.snakemake("final_libs")
    ran = jobs_run(rerun)
    # only the missing output's job runs again, from its chunks' stamped candidates; what
    # consumes it follows
    assert ran.get("search_share") == 1, ran
    assert not {"ingest", "baseline", "summarize", "search_configure"} & set(ran), ran
    log = c.path("logs", "search", f"{share.stem}.log").read_text()
    assert "searched: " not in log and "reused (stamped)" in log
    assert final_lib_texts(c) == before


def test_a_killed_search_job_resumes_from_its_stamped_chunks(campaign):
    """One search job per device over its share of the chunks: a job killed after some of
    its chunks finished (their candidates stamped, the share's table not yet written) is run
    again by a plain rerun, which searches only the chunks without a current stamp; a chunk
    whose stamped rows changed is searched again too."""
    c = campaign(keep_thr=0.0, search_chunk_size=2)
    c.snakemake("final_libs")
    before = final_lib_texts(c)
    shares = sorted(c.path("search", "parts").glob("part_*.csv"))
    assert len(shares) == len(c.config["devices"]) == 2  # one job per device
    share = shares[0]
    chunks = layout.Layout(c.workdir).share_chunks(share.stem)
    assert len(chunks) >= 2
    share.unlink()  # as a kill leaves it: the share's table never written
    c.path("search", "data", f"{chunks[1]}.csv").unlink()  # nor its second chunk's candidates
    rerun = c.snakemake("final_libs")
    assert jobs_run(rerun).get("search_share") == 1
    log = c.path("logs", "search", f"{share.stem}.log").read_text()
    assert re.findall(r"(gemms_[\d-]+): searched: ", log) == [chunks[1]], log
    assert re.findall(r"(gemms_[\d-]+): reused \(stamped\)", log) == \
        [chunk for chunk in chunks if chunk != chunks[1]]
    assert final_lib_texts(c) == before


def test_killed_run_resumes_to_the_same_final_libs(campaign, finished_search, tmp_path):
    expected = final_lib_texts(finished_search)  # the same campaign, never interrupted

    c = campaign(keep_thr=0.0, sim={"job_seconds": 1.0})
    c.workdir = tmp_path / "killed"
    c.config["workdir"] = str(c.workdir)
    c.config_path.write_text(yaml.safe_dump(c.config))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--configfile",
           str(c.config_path), "--cores", "2", "--resources=gpu=2", "--scheduler", "greedy",
           "final_libs"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(c.path("search", "data").glob("*.csv")) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not c.path("final_libs").exists()
    assert_no_partial_files(c.workdir)
    c.snakemake("--unlock")
    c.snakemake("final_libs")
    assert final_lib_texts(c) == expected


def test_fast_but_wrong_kernel_never_ships(campaign):
    c = campaign(keep_thr=0.0, sim={"faulty_solutions": ["x64_GSU1_WGM1"]})
    c.snakemake("final_libs")
    winners = read(c.path("winners.csv"))
    planted = winners["solution_name"].str.contains("x64_GSU1_WGM1")
    assert planted.any(), "the planted kernel is fast, so the search picks it somewhere"
    raw = read(c.path("results", "raw_results.csv"))
    bad = raw[raw["kernel_tuned"].str.contains("x64_GSU1_WGM1")]
    assert len(bad) == planted.sum()
    assert (bad["error_tuned"] > 0.03).all() and not bad["kept"].any()
    for text in final_lib_texts(c).values():
        assert "x64_GSU1_WGM1" not in text


def test_two_workload_sources_are_refused(campaign):
    c = campaign(workload_inline="1024 1024 1 1024 B B S N T")
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0
    assert "exactly one of workload_log, workload_list, workload_inline" in proc.stderr
    assert not c.workdir.exists()


def test_bad_config_value_is_refused(campaign):
    c = campaign(up_thr=-1)
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0 and "up_thr" in proc.stderr
    assert not c.workdir.exists()


def test_crashed_gemm_is_skipped_and_a_rerun_finishes_it(campaign):
    """Issue 14: a GEMM whose search keeps failing is retried alone, logged and skipped; the
    campaign finishes for the rest (it used to fail the whole run, without final_libs)."""
    crashed = "HHS_NN_M4096_N4096_B1_K4096"
    c = campaign(keep_thr=0.0, search_chunk_size=2, sim={"crash_on": ["HHS_NN_M4096_N4096"]})
    first = c.snakemake("final_libs")
    assert f"injected crash on {crashed}" in first.stdout + first.stderr
    done = sorted(p.name for p in c.path("search", "data").glob("*.csv"))
    assert len(done) == len(list(c.path("search", "chunks").glob("*.yaml")))
    assert c.path("search", "failed_jobs.log").read_text().split()[0] == crashed
    shipped = {size for p in c.path("final_libs").glob("*.yaml")
               for size, _, _ in library.load(p).size_entries()}
    assert c.path("final_libs").is_dir() and (4096, 4096, 1, 4096) not in shipped
    assert_no_partial_files(c.workdir)

    failed = [p.name.split(".")[0] for p in c.path("search", "data").glob("*.failed.yaml")
              if yaml.safe_load(p.read_text())]
    shares = layout.Layout(c.workdir)
    (share,) = [s for s in shares.search_shares(2) if failed[0] in shares.share_chunks(s)]

    c.config["sim"] = {}
    rerun = c.snakemake("final_libs")
    assert jobs_run(rerun).get("search_share") == 1  # the share with the failed GEMM
    log = c.path("logs", "search", f"{share}.log").read_text()
    # of its chunks only the one that had the failed GEMM is searched again
    assert re.findall(r"(gemms_[\d-]+): searched: 1 GEMM\(s\) failed", log) == failed, log
    assert len(re.findall(r"gemms_[\d-]+: searched: ", log)) == 1, log
    assert c.path("final_libs").is_dir() and not c.path("search", "failed_jobs.log").exists()


@pytest.mark.parametrize("value, accepted", [("true", True), ("false", True), ("yes", True),
                                             ("True", True), ("maybe", False)])
def test_booleans_on_the_snakemake_door_take_what_yaml_takes(campaign, value, accepted):
    """`--config retry=true` is the boolean a config file's `retry: true` is (snakemake hands
    the Snakefile the text "true"); text YAML reads as no boolean is refused in one line."""
    c = campaign()
    proc = c.snakemake("bench", "-n", "--config", f"retry={value}", check=False)
    said = proc.stdout + proc.stderr
    if accepted:
        assert proc.returncode == 0, said[-3000:]
    else:
        assert proc.returncode != 0 and "config key retry: 'maybe' is not of type 'boolean'" \
            in said, said[-3000:]
