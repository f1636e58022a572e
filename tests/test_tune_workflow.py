"""Tune mode end to end on the sim platform: configure checkpoint, optimize jobs on device
slots, stall timeout, failure cap, build-dir resume, merged libraries."""
import json
import shutil

import pandas as pd
import pytest
import yaml

from geko_lib import failures, library

from .conftest import tune_campaign
from .test_workflow import jobs_run, read

pytestmark = pytest.mark.slow

@pytest.fixture
def tune(tmp_path):
    """A fresh tune campaign of conftest.SIZES (``tune(**config)``) in this test's tmp dir."""
    return lambda **config: tune_campaign(tmp_path, **config)


def run(c, *args, check=True):
    return c.snakemake(*args, check=check)


def test_until_configure_then_tune_to_final_libs(configured_tune, finished_tune, tmp_path):
    c, first = configured_tune, configured_tune.run
    configs = sorted(p.name for p in c.path("optimizations").glob("*.yaml"))
    assert configs == ["BBS_TN_0.yaml", "BBS_TN_1.yaml", "BBS_TN_2.yaml"]
    assert c.path("optimizations", "tuning_configs.txt").read_text().split() == \
        ["BBS_TN_0", "BBS_TN_1", "BBS_TN_2"]
    assert not list(c.path("optimizations").glob("build_*"))
    assert "optimize" not in jobs_run(first)
    text = c.path("optimizations", "BBS_TN_0.yaml").read_text()
    assert "Name: Ductile" in text and yaml.safe_load(text)["LibraryLogic"]["ArchitectureName"]
    assert c.path("Config_BBS_TN.log").is_file()  # the original's place: the workdir

    c, done = finished_tune, finished_tune.run  # the configured campaign, continued
    ran = jobs_run(done)
    assert ran.get("optimize") == 3 and "configure" not in ran
    for cfg in ("BBS_TN_0", "BBS_TN_1", "BBS_TN_2"):
        logic = list(c.path("optimizations", f"build_{cfg}", "3_LibraryLogic").glob("*.yaml"))
        assert len(logic) == 1
        assert c.path("optimizations", f"build_{cfg}", "step-00__ductile.checkpoint.json").is_file()
        assert " | " in c.path("logs", "optimize", f"{cfg}.log").read_text()  # GA table
    libs = sorted(p.name for p in c.path("libs").glob("*.yaml"))
    assert libs == ["gfx950_Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs.yaml"]
    merged = library.load(c.path("libs", libs[0]))
    assert sorted(s for s, _, _ in merged.size_entries()) == [(2048, 2048, 1, 2048), (4096, 8, 1, 14336),
                                                       (6144, 16, 1, 4096)]
    assert merged.problem_type["UseBias"] == 1
    raw = read(c.path("results", "raw_results.csv"))
    assert raw["kernel_tuned"].str.contains("_SIMT_").all()  # tuned kernels, not the catalogue
    assert raw["kernel_reference"].str.contains("_SIM_").all()
    metrics = json.loads(c.path("results", "metrics.json").read_text())
    assert metrics["counts"]["n_attempted"] == 3 and metrics["counts"]["n_kept"] == raw["kept"].sum()
    assert raw["kept"].any()
    again = run(c.copy(tmp_path), "final_libs")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_tensile_backend_measures_every_kernel(tune):
    c = tune(backend="tensile")
    c.config["workload_list"] = ""
    c.config["workload_inline"] = "128 128 1 128 B B S T N"
    run(c, "tune")
    text = c.path("optimizations", "BBS_TN_0.yaml").read_text()
    assert "Name: Tensile" in text
    log = c.path("logs", "optimize", "BBS_TN_0.log").read_text()
    total = int(text.split("Total #kernels:")[1].split()[0])
    evaluated = [int(line.split("|")[2]) for line in log.splitlines() if line.count("|") >= 4]
    assert evaluated and evaluated[-1] <= total  # exhaustive over the valid kernels
    assert total < 200_000 and evaluated[-1] > total // 2


def test_stalled_job_is_killed_and_counted_then_rerun_succeeds(tune):
    c = tune(stall_timeout=3, sim={"stall_on": ["M4096_N8_B1_K14336"]})
    # the campaign finishes for the other GEMMs (the original skips a job that keeps failing)
    first = run(c, "final_libs")
    assert "no progress in" in c.path("logs", "optimize", "BBS_TN_1.log").read_text()
    assert "BBS_TN_1 skipped" in c.path("logs", "optimize", "BBS_TN_1.log").read_text()
    failed_log = c.path("optimizations", "failed_jobs.log").read_text()
    assert failures.failed_names(failed_log) == ["BBS_TN_1"], failed_log
    # tried twice (tune_retries: 1), killed both times
    assert c.path("optimizations", "build_BBS_TN_1", ".failcount").read_text().strip() == "2"
    assert not list(c.path("optimizations", "build_BBS_TN_1", "3_LibraryLogic").glob("*.yaml"))
    assert c.path("optimizations", "build_BBS_TN_0", "3_LibraryLogic").is_dir()
    shipped = {s for p in c.path("final_libs").glob("*.yaml")
               for s, _, _ in library.load(p).size_entries()}
    assert (4096, 8, 1, 14336) not in shipped and jobs_run(first).get("optimize") == 4

    c.config["sim"] = {}
    rerun = run(c, "final_libs")
    assert jobs_run(rerun).get("optimize") == 1
    assert not c.path("optimizations", "failed_jobs.log").exists()
    assert c.path("final_libs").is_dir()


def test_consecutive_failure_cap_stops_new_jobs(tune):
    c = tune(max_consecutive_failures=1, tune_retries=0,
             sim={"crash_on": ["BBS_TN_M"]})  # every tuning job crashes
    c.cores = 1  # one job at a time, so the order of failures is defined
    proc = run(c, "tune", "--keep-going", check=False)
    assert proc.returncode != 0
    logs = [c.path("logs", "optimize", f"BBS_TN_{i}.log").read_text() for i in range(3)]
    assert sum("injected crash" in text for text in logs) == 1
    assert sum("consecutive tuning jobs failed" in text for text in logs) == 2


def test_a_tune_stopped_by_a_full_disk_resumes_once_space_is_freed(tune):
    """Issue 41: a full disk's failures counted toward the streak, so every rerun after space
    was freed stopped at once ('8 consecutive tuning jobs failed') and never wrote final_libs."""
    c = tune(max_consecutive_failures=1, tune_retries=0, sim={"disk_full_on": ["BBS_TN_M"]})
    c.cores = 1  # one job at a time: a counted failure would stop the next job
    first = run(c, "final_libs", "--keep-going", check=False)
    assert first.returncode != 0 and not c.path("final_libs").exists()
    logs = [c.path("logs", "optimize", f"BBS_TN_{i}.log").read_text() for i in range(3)]
    assert all("free some and rerun" in text for text in logs), logs
    assert not any("consecutive tuning jobs failed" in text for text in logs)
    assert not c.path("optimizations", "failed_jobs.log").exists()
    assert not list(c.path("optimizations").glob("build_*/.failcount"))

    c.config["sim"] = {}  # space freed
    rerun = run(c, "final_libs")
    assert jobs_run(rerun).get("optimize") == 3
    assert c.path("final_libs").is_dir() and list(c.path("final_libs").glob("*.yaml"))


def test_resumable_build_dir_continues_from_its_checkpoint(finished_tune, tmp_path):
    c = finished_tune.copy(tmp_path)
    logic_dir = c.path("optimizations", "build_BBS_TN_2", "3_LibraryLogic")
    before = {p.name: p.read_text() for p in logic_dir.glob("*.yaml")}
    shutil.rmtree(logic_dir)
    rerun = run(c, "tune")
    assert jobs_run(rerun).get("optimize") == 1
    assert "resumable build dir, retrying from its checkpoint" in \
        c.path("logs", "optimize", "BBS_TN_2.log").read_text()
    assert {p.name: p.read_text() for p in logic_dir.glob("*.yaml")} == before
