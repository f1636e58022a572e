"""`geko status` and `geko coverage` as a user runs them (subprocesses) against real sim
campaigns, checked against the workdir's own files; and the progress lines of long jobs."""
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from geko_lib import devices, progress
from geko_lib.campaign import layout
from geko_lib.gemm import GemmProblem
from geko_lib.tuning import optimize

from .conftest import SNAKEFILE, WORKLOADS, Campaign

GEKO = [shutil.which("geko", path=str(Path(sys.executable).parent)) or ""]
GEKO = GEKO if GEKO[0] else [sys.executable, "-m", "geko_lib.cli"]


def geko(*args, cwd=None):
    return subprocess.run([*GEKO, *args], cwd=cwd, capture_output=True, text=True)


def status(workdir, *args) -> dict:
    proc = geko("status", str(workdir), "--json", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def read(path):
    return pd.read_csv(path, dtype={"transA": str, "transB": str})


def write_geko_config(c: Campaign) -> None:
    """What the geko command writes into every workdir."""
    (c.workdir / "geko_config.yaml").write_text(yaml.safe_dump(c.config))


def rule(report, name) -> dict:
    return next(r for r in report["rules"] if r["rule"] == name)


def jobs_of(report, name) -> list[dict]:
    return [j for j in report["jobs"] if j["rule"] == name]


# --- a finished search campaign, shared by the read-only tests ---------------------------------

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    c = Campaign(tmp_path_factory.mktemp("finished"), keep_thr=0.5, search_chunk_size=2)
    env = dict(os.environ, GEKO_PROGRESS_INTERVAL="0")
    c.snakemake("final_libs", env=env)
    write_geko_config(c)
    return c


def copy_of(c: Campaign, tmp_path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(c.workdir, target, symlinks=True)
    return target


@pytest.mark.slow
def test_status_of_a_finished_campaign(finished):
    c = finished
    report = status(c.workdir)
    assert report["state"] == "finished"
    assert report["config"]["source"] == "geko_config.yaml"
    assert report["config"]["mode"] == "search" and report["config"]["devices"] == [0, 1]
    counts = report["counts"]
    assert counts["failed"] == counts["running"] == counts["pending"] == 0
    assert counts["done"] == counts["total"]
    chunks = sorted(p.stem for p in c.path("search", "chunks").glob("*.yaml"))
    assert len(chunks) >= 2
    assert len(list(c.path("search", "data").glob("*.csv"))) == len(chunks)
    searches = layout.Layout(c.workdir).search_shares(len(c.config["devices"]))
    assert rule(report, "search_share")["done"] == len(searches) == 2  # one job per device
    assert sorted(j["name"] for j in jobs_of(report, "search_share")) == searches
    libs = sorted(p.stem for p in c.path("libs").glob("*.yaml"))
    shares = layout.Layout(c.workdir).lib_shares(len(c.config["devices"]))
    assert sorted(j["name"] for j in jobs_of(report, "bench_libs")) == shares
    assert rule(report, "bench_libs")["done"] == len(shares)
    workload = yaml.safe_load(c.path("workload.yaml").read_text())
    calls = sum(r["call_count"] for r in workload)
    assert rule(report, "ingest")["detail"] == f"{len(workload)} GEMMs, {calls} calls"
    summary = read(c.path("summary.csv"))
    assert rule(report, "summarize")["detail"].startswith(f"{len(summary)} GEMMs to tune")

    metrics = json.loads(c.path("results", "metrics.json").read_text())
    up = report["uplift"]
    assert up["final"] and up["source"] == "results/metrics.json"
    assert up["n_kept"] == metrics["counts"]["n_kept"] == len(read(c.path("results",
                                                                          "final_results.csv")))
    assert up["geomean_pct"] == pytest.approx(metrics["uplift_kept"]["geomean"])
    assert up["weighted_pct"] == pytest.approx(metrics["e2e"]["e2e_uplift_pct"])
    assert up["pct_roofline_shipped"] == pytest.approx(
        metrics["roofline"]["time_weighted_pct_roofline_shipped"])

    dev = report["devices"]
    assert dev["platform"] == "sim" and dev["devices"] == [0, 1] and dev["busy"] == []
    assert dev["lock_dir"] == c.config["lock_dir"]
    assert report["snakemake"]["active"] is False and report["snakemake"]["locks"] == []


@pytest.mark.slow
def test_status_text(finished):
    proc = geko("status", str(finished.workdir))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    metrics = json.loads(finished.path("results", "metrics.json").read_text())
    assert "state:     finished" in text
    assert f"geomean {metrics['uplift_kept']['geomean']:.2f}%" in text
    assert f"weighted {metrics['e2e']['e2e_uplift_pct']:.2f}% of GEMM time saved" in text
    assert "none busy" in text
    assert "search_share" in text and "bench_libs" in text


@pytest.mark.slow
def test_metrics_and_raw_results_carry_the_roofline(finished):
    metrics = json.loads(finished.path("results", "metrics.json").read_text())
    raw = read(finished.path("results", "raw_results.csv"))
    roof = metrics["roofline"]
    assert roof["ceilings"]["arch"] == "gfx950" and len(roof["gemms"]) == len(raw)
    by_name = {g["gemm"]: g for g in roof["gemms"]}
    for r in raw.to_dict("records"):
        g = by_name[GemmProblem.from_row(r).name]
        tflops = 2 * r["m"] * r["n"] * r["k"] * r["batch_count"] / r["us_reference"] / 1e6
        assert g["tflops_reference"] == pytest.approx(tflops)
        assert r["pct_roofline_reference"] == pytest.approx(100 * tflops / g["roofline_tflops"])
        assert 0 < r["pct_roofline_tuned"] < 100  # the sim reaches at most 80 % of a ceiling
    shares = raw["pct_of_total"] / raw["pct_of_total"].sum()
    assert roof["time_weighted_pct_roofline_reference"] == pytest.approx(
        (shares * raw["pct_roofline_reference"]).sum())
    counts = metrics["counts"]
    assert sum(counts["improved_in_ranges"].values()) == counts["n_improved"]
    assert set(raw["category"]) <= set(metrics["per_category"])


@pytest.mark.slow
def test_long_jobs_log_progress_lines(finished):
    logs = sorted(finished.path("logs", "search").glob("*.log"))
    assert logs
    shares = layout.Layout(finished.workdir)
    for path in logs:  # a share's job counts each of its chunks' GEMMs
        text = path.read_text()
        for chunk in shares.share_chunks(path.stem):
            rows = yaml.safe_load(finished.path("search", "chunks", f"{chunk}.yaml").read_text())
            n = len(rows)
            assert f"search {chunk}: 0/{n} (0%) elapsed" in text
            assert f"search {chunk}: {n}/{n} (100%) elapsed" in text
        assert "\r" not in text
    logs = "".join(p.read_text() for p in finished.path("logs", "bench_libs").glob("*.log"))
    for lib in layout.Layout(finished.workdir).lib_stems():  # each library's check, counted
        assert f"verify {lib}: " in logs


@pytest.mark.slow
def test_status_without_a_config_file_reads_devices_from_the_logs(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    (copy / "geko_config.yaml").unlink()
    report = status(copy)
    assert report["config"]["source"].startswith("inferred")
    used = set()
    for path in (copy / "logs").rglob("*.log"):
        for line in path.read_text().splitlines():
            if "leased sim device" in line:
                used.add(int(line.split("device ")[1].split()[0]))
    assert report["devices"]["devices"] == sorted(used)
    assert report["state"] == "finished"


@pytest.mark.slow
def test_status_with_a_deleted_search_output(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    data = sorted((copy / "search" / "parts").glob("part_*.csv"))
    data[0].unlink()
    report = status(copy)
    assert report["state"] == "stopped"
    share = rule(report, "search_share")
    assert share["done"] == len(data) - 1 and share["pending"] == 1
    pending = [j["name"] for j in jobs_of(report, "search_share") if j["state"] == "pending"]
    assert pending == [data[0].stem]


@pytest.mark.slow
def test_status_with_a_failed_job(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    data = sorted((copy / "search" / "parts").glob("part_*.csv"))[-1]
    data.unlink()
    log = copy / "logs" / "search" / f"{data.stem}.log"
    log.write_text(log.read_text() + "GEKO:ERROR [geko] sim: injected crash on X\n")
    report = status(copy)
    assert report["state"] == "failed" and report["counts"]["failed"] == 1
    failed = [j for j in report["jobs"] if j["state"] == "failed"]
    assert failed[0]["name"] == data.stem and failed[0]["detail"] == "sim: injected crash on X"
    text = geko("status", str(copy)).stdout
    assert f"failed      search_share {data.stem}" in text and "injected crash on X" in text


@pytest.mark.slow
def test_partial_uplift_from_benchmarks(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    raw = read(copy / "results" / "raw_results.csv")
    for name in ("results", "final_libs", "full_libs", "exports"):
        shutil.rmtree(copy / name)
    report = status(copy)
    assert report["state"] == "stopped"
    up = report["uplift"]
    assert not up["final"] and up["source"].startswith("benchmarks/")
    assert up["n_compared"] == len(raw)
    assert up["best_pct"] == pytest.approx(raw["uplift_pct"].max())
    better = raw[(raw["ratio"] >= 1.03) & raw["kernel_changed"]]  # not verified yet
    assert up["n_faster"] == len(better)
    assert up["weighted_pct"] == pytest.approx(
        (better["pct_of_total"] * (1 - 1 / better["ratio"])).sum())


@pytest.mark.slow
def test_partial_uplift_from_search_winners(finished, tmp_path):
    copy = copy_of(finished, tmp_path)
    for name in ("results", "final_libs", "full_libs", "exports", "benchmarks", "libs",
                 "tensile"):
        shutil.rmtree(copy / name)
    report = status(copy)
    up = report["uplift"]
    assert up["source"].startswith("search/")
    winners = read(copy / "winners.csv")
    baseline = read(copy / "baseline" / "workload.csv")
    pairs = baseline.merge(winners, on=["m", "n", "k", "batch_count", "a_type", "transA",
                                        "transB"], suffixes=("_b", "_w"))
    ratio = pairs["us_b"] / pairs["us_w"]
    assert up["n_compared"] == len(winners)
    assert up["best_pct"] == pytest.approx(100 * (ratio.max() - 1))
    faster = (ratio >= 1.03) & (pairs["kernel_b"] != pairs["kernel_w"])
    assert up["n_faster"] == int(faster.sum())


@pytest.mark.slow
def test_coverage_of_final_libs_with_timings(finished):
    c = finished
    proc = geko("coverage", "--library", str(c.path("final_libs")), "--workload",
                c.config["workload_log"], "--timings", str(c.path("baseline", "workload.csv")),
                "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    workload = yaml.safe_load(c.path("workload.yaml").read_text())
    kept = read(c.path("results", "final_results.csv"))
    kept_sizes = {(r.m, r.n, r.batch_count, r.k) for r in kept.itertuples()}
    served = {(g["m"], g["n"], g["batch_count"], g["k"]) for g in report["gemms"] if g["served"]}
    assert served == kept_sizes
    assert report["n_gemms"] == len(workload) and not report["estimate"]
    calls = {(r["M"], r["N"], r["batch_count"], r["K"]): r["call_count"] for r in workload}
    total_calls = sum(calls.values())
    assert report["served"]["n_calls"] == sum(calls[s] for s in served)
    assert report["served"]["pct_calls"] == pytest.approx(
        100 * sum(calls[s] for s in served) / total_calls)
    us = {(r.m, r.n, r.batch_count, r.k): r.us for r in read(c.path("baseline",
                                                                   "workload.csv")).itertuples()}
    total = sum(calls[s] * us[s] for s in calls)
    assert report["served"]["pct_time"] == pytest.approx(
        100 * sum(calls[s] * us[s] for s in served) / total)
    assert report["served"]["pct_time"] + report["not_served"]["pct_time"] == pytest.approx(100)
    assert report["library_sizes_not_in_workload"] == []
    times = [g["time_us"] for g in report["gemms"]]
    assert times == sorted(times, reverse=True)


@pytest.mark.slow
def test_coverage_model_estimate_and_reasons(finished, tmp_path):
    c = finished
    kept = read(c.path("results", "final_results.csv"))
    first = kept.iloc[0]
    # the application runs one kept GEMM, the same type at a size never tuned, and an f64 GEMM
    (tmp_path / "app.yaml").write_text(
        f"- {{function: matmul, M: {first.m}, N: {first.n}, K: {first.k}, transA: {first.transA}, "
        f"transB: {first.transB}, batch_count: {first.batch_count}, a_type: {first.a_type}, "
        f"b_type: {first.b_type}, c_type: {first.c_type}, d_type: {first.d_type}, "
        f"compute_type: {first.compute_type}, call_count: 3}}\n"
        f"- {{function: matmul, M: 4000, N: 8, K: 4000, transA: {first.transA}, "
        f"transB: {first.transB}, batch_count: 1, a_type: {first.a_type}, "
        f"b_type: {first.b_type}, c_type: {first.c_type}, d_type: {first.d_type}, "
        f"compute_type: {first.compute_type}, call_count: 1}}\n"
        "- {function: matmul, M: 64, N: 64, K: 64, transA: N, transB: N, batch_count: 1, "
        "a_type: f64_r, b_type: f64_r, c_type: f64_r, d_type: f64_r, compute_type: c_f64_r, "
        "call_count: 6}\n")
    proc = geko("coverage", "--library", str(c.path("final_libs")), "--workload",
                str(tmp_path / "app.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["estimate"] and "sim model estimate (gfx950)" in report["time_source"]
    gemms = {(g["m"], g["n"], g["k"]): g for g in report["gemms"]}
    assert gemms[(first.m, first.n, first.k)]["served"]
    assert gemms[(4000, 8, 4000)]["reason"] == "size not in the library"
    assert gemms[(64, 64, 64)]["reason"] == "type DDD_NN not in the library"
    assert report["served"]["n_calls"] == 3 and report["served"]["pct_calls"] == pytest.approx(30)
    # the sim model's default kernel is what the baseline measured for the same GEMM
    baseline = read(c.path("baseline", "workload.csv")).set_index(["m", "n", "k"])
    assert gemms[(first.m, first.n, first.k)]["us"] == pytest.approx(
        baseline.loc[(first.m, first.n, first.k), "us"])
    assert len(report["library_sizes_not_in_workload"]) == len(kept) - 1
    text = geko("coverage", "--library", str(c.path("final_libs")), "--workload",
                str(tmp_path / "app.yaml")).stdout
    assert "served:     1 of 3 GEMMs (33.3%), 3 of 10 calls (30.0%)" in text
    assert "(estimate)" in text and "type DDD_NN not in the library" in text


def test_coverage_usage_errors(tmp_path):
    proc = geko("coverage", "--library", str(tmp_path / "nope"), "--workload",
                str(WORKLOADS / "mixed_types.yaml"))
    assert proc.returncode == 2 and "--library" in proc.stderr
    (tmp_path / "libs").mkdir()
    proc = geko("coverage", "--library", str(tmp_path / "libs"), "--workload",
                str(WORKLOADS / "mixed_types.yaml"))
    assert proc.returncode == 2 and "no library logic" in proc.stderr
    proc = geko("status", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_status_of_an_empty_workdir(tmp_path):
    report = status(tmp_path)
    assert report["state"] == "not started"
    assert report["uplift"]["source"] is None


# --- half-finished campaigns -----------------------------------------------------------------

@pytest.mark.slow
def test_status_after_until_configure_and_with_a_held_device_lock(configured_tune, tmp_path):
    c = configured_tune.copy(tmp_path)  # its own geko_config.yaml and lock dir
    write_geko_config(c)
    report = status(c.workdir)
    assert report["state"] == "stopped" and "after configure" in report["state_detail"]
    assert rule(report, "configure")["done"] == 1
    configs = sorted(p.stem for p in c.path("optimizations").glob("*.yaml"))
    assert rule(report, "optimize")["total"] == len(configs) == 3
    assert rule(report, "optimize")["pending"] == 3
    assert rule(report, "configure")["detail"] == "3 tuning configs"
    assert report["devices"]["n_slots"] == 2 and report["devices"]["busy"] == []
    assert report["uplift"]["source"] is None

    with devices.lease([1], n_slots=2, lock_dir=c.config["lock_dir"], namespace="sim") as held:
        busy = status(c.workdir)["devices"]["busy"]
        text = geko("status", str(c.workdir)).stdout
    assert busy == [{"device": 1, "slot": held.slot, "pid": os.getpid(), "since": busy[0]["since"],
                     "this_campaign": False}]
    assert f"dev1 slot{held.slot} (pid {os.getpid()}" in text
    assert status(c.workdir)["devices"]["busy"] == []


@pytest.mark.slow
def test_status_of_a_running_then_killed_campaign(campaign):
    c = campaign(keep_thr=0.0, search_chunk_size=2, sim={"job_seconds": 2.0})
    c.config_path.write_text(yaml.safe_dump(c.config))
    c.workdir.mkdir(parents=True)
    write_geko_config(c)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--configfile",
           str(c.config_path), "--cores", "2", "--resources=gpu=2", "--scheduler", "greedy",
           "final_libs"]
    proc = subprocess.Popen(cmd, cwd=c.root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline, seen = time.monotonic() + 120, None
        while time.monotonic() < deadline:
            report = status(c.workdir)
            running = [j for j in report["jobs"] if j["state"] == "running"]
            ours = [b for b in report["devices"]["busy"] if b["this_campaign"]]
            if report["state"] == "running" and any(j["rule"] == "search_share"
                                                    for j in running) and ours:
                seen = report
                break
            time.sleep(0.3)
        assert seen is not None, "never saw a search job running"
        assert seen["snakemake"]["active"] and seen["snakemake"]["processes"]
        assert any(key.startswith("search/parts/") for key in seen["snakemake"]["incomplete"])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    after = status(c.workdir)
    assert after["state"] in ("stopped", "failed")
    assert after["counts"]["running"] == 0 and after["counts"]["interrupted"] >= 1
    # a killed run's lock: a plain rerun clears it and resumes (no snakemake --unlock needed)
    assert after["snakemake"]["locks"] and "--unlock" not in after["state_detail"]
    assert "a plain rerun" in after["state_detail"]
    assert after["devices"]["busy"] == []  # locks die with their holders


@pytest.mark.slow
def test_geko_lock_dir_flag_is_recorded(tmp_path):
    (tmp_path / "run").mkdir()  # a dry run removes a workdir it made itself
    proc = geko("--bench", "--inline", "1024", "1024", "1", "1024", "B", "B", "S", "N", "T",
                "--workdir", "run", "--lock-dir", "locks", "--", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = yaml.safe_load((tmp_path / "run" / "geko_config.yaml").read_text())
    assert config["lock_dir"] == str((tmp_path / "locks").resolve())
    assert status(tmp_path / "run")["devices"]["lock_dir"] == config["lock_dir"]


# --- progress ---------------------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def capture_logger(name):
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    stream = io.StringIO()
    logger.addHandler(logging.StreamHandler(stream))
    return logger, stream


def test_progress_line_format():
    assert progress.line("search gemms_0-44", 12, 45, 3.14) == \
        "search gemms_0-44: 12/45 (26%) elapsed 3.1 s"
    assert progress.line("gen", 7, None, 0.04) == "gen: 7 elapsed 0.0 s"


def test_progress_lines_are_throttled_and_the_last_is_always_written():
    logger, out = capture_logger("test.progress.throttle")
    clock = Clock()
    bar = progress.Progress(10, "job", interval=5.0, logger=logger, stream=io.StringIO(),
                            clock=clock)
    for i in range(1, 10):
        clock.now = float(i)  # one item per second
        bar.update()
    clock.now = 9.5
    bar.update()  # 10/10: always written
    bar.close()
    assert out.getvalue().splitlines() == [
        "job: 0/10 (0%) elapsed 0.0 s",
        "job: 5/10 (50%) elapsed 5.0 s",
        "job: 10/10 (100%) elapsed 9.5 s",
    ]


def test_progress_close_writes_an_unwritten_count():
    logger, out = capture_logger("test.progress.close")
    clock = Clock()
    with progress.Progress(None, "gens", interval=60, logger=logger, stream=io.StringIO(),
                           clock=clock) as bar:
        clock.now = 2.0
        bar.set(3)
    assert out.getvalue().splitlines() == ["gens: 0 elapsed 0.0 s", "gens: 3 elapsed 2.0 s"]


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_on_a_terminal_draws_a_bar_and_keeps_plain_lines_for_the_log(tmp_path):
    terminal = FakeTerminal()
    logger = logging.getLogger("test.progress.tty")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.StreamHandler(terminal))
    logger.addHandler(logging.FileHandler(tmp_path / "job.log"))
    for _ in progress.track(range(3), label="verify lib", interval=0, logger=logger,
                            stream=terminal):
        pass
    logger.info("done")
    for handler in logger.handlers:
        handler.close()
    shown = terminal.getvalue()
    assert "verify lib: 100%" in shown and "3/3" in shown  # tqdm's bar
    assert "elapsed" not in shown and "done" in shown  # plain lines only in the log
    # the elapsed seconds depend on the machine's load: the lines' shape is what is checked
    log = [re.sub(r"elapsed \d+\.\d s", "elapsed T s", line)
           for line in (tmp_path / "job.log").read_text().splitlines()]
    assert log == ["verify lib: 0/3 (0%) elapsed T s", "verify lib: 1/3 (33%) elapsed T s",
                   "verify lib: 2/3 (66%) elapsed T s", "verify lib: 3/3 (100%) elapsed T s",
                   "done"]


def test_run_with_progress_uses_the_platform_callback_where_there_is_one(caplog):
    calls = []

    def with_callback(problems, out_dir, device, duration=None, progress=None):
        for p in problems:
            calls.append(p)
            progress(1)
        return "table"

    def without(problems, out_dir, device, duration=None):
        return "table"

    caplog.set_level(logging.INFO, logger=progress.log.name)
    os.environ[progress.ENV_INTERVAL] = "0"
    try:
        assert progress.run_with_progress(with_callback, [1, 2, 3], "search c", "out", 0,
                                          duration=1.0) == "table"
        assert progress.run_with_progress(without, [1, 2], "verify v", "out", 0) == "table"
    finally:
        del os.environ[progress.ENV_INTERVAL]
    lines = [r.getMessage().split(" elapsed")[0] for r in caplog.records]
    assert lines == ["search c: 0/3 (0%)", "search c: 1/3 (33%)", "search c: 2/3 (66%)",
                     "search c: 3/3 (100%)", "verify v: 0/2 (0%)", "verify v: 2/2 (100%)"]
    assert calls == [1, 2, 3]


def test_ga_progress_logger_keeps_the_table_lines(caplog):
    caplog.set_level(logging.INFO)
    os.environ[progress.ENV_INTERVAL] = "0"
    try:
        callback = optimize.progress_logger("BBS_TN_0", total=3)
        for gen in range(3):
            callback({"generation": gen, "n_evals": 10 * (gen + 1), "best_fitness": 1.0,
                      "mean_fitness": 0.5, "best_scores": [100.0 + gen]})
        callback.close()
    finally:
        del os.environ[progress.ENV_INTERVAL]
    messages = [r.getMessage() for r in caplog.records]
    table = [m for m in messages if m.count("|") >= 4]
    assert [int(m.split("|")[2]) for m in table] == [10, 20, 30]
    counts = [m.split(" elapsed")[0] for m in messages if "elapsed" in m]
    assert counts == ["BBS_TN_0 generations: 0/3 (0%)", "BBS_TN_0 generations: 1/3 (33%)",
                      "BBS_TN_0 generations: 2/3 (66%)", "BBS_TN_0 generations: 3/3 (100%)"]
    assert all("|" not in c for c in counts)


def test_a_job_logs_first_error_is_its_reason_whatever_the_brackets_hold(tmp_path):
    """geko's own lines name [module:function]; a line another formatter wrote names one word
    ([geko]): status gives the message of either (it gave nothing for the second, so a failed
    job read as stopped)."""
    from geko_lib.campaign import status as status_module

    log = tmp_path / "job.log"
    log.write_text("GEKO:INFO [search:run] started\n"
                   "GEKO:ERROR [geko] sim: injected crash on X\n"
                   "GEKO:ERROR [jobs:run] a later error\n")
    assert status_module.log_error(log) == "sim: injected crash on X"
    log.write_text("GEKO:ERROR [jobs:run] hipblaslt-bench exited 1\n")
    assert status_module.log_error(log) == "hipblaslt-bench exited 1"
