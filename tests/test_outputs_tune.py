"""Tune mode's files as the original lays them out, through real snakemake runs on the sim
platform: optimizations/<TYPE>_<n>.yaml with the .sh that runs that one job by hand beside the
build_*/ dirs, `--until configure` for review, and a tuning job that fails once retried."""
import json
import subprocess

import pytest

from geko_lib import failures, platforms
from geko_lib.campaign import progress as campaign_progress

from .test_tune_workflow import tune  # noqa: F401 (the tune-mode campaign fixture)
from .test_workflow import jobs_run

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

pytestmark = pytest.mark.slow

FLAKY = "BBS_TN_M6144_N16_B1_K4096"  # the GEMM of BBS_TN_0


def test_sh_beside_the_yaml_runs_that_one_job_by_hand(tune):
    c = tune()
    c.snakemake("final_libs", "--until", "configure")
    tuning = c.path("optimizations")
    assert sorted(p.name for p in tuning.glob("BBS_TN_*") if p.suffix in (".sh", ".yaml")) == [
        "BBS_TN_0.sh", "BBS_TN_0.yaml", "BBS_TN_1.sh", "BBS_TN_1.yaml", "BBS_TN_2.sh",
        "BBS_TN_2.yaml"]
    job_config = json.loads((tuning / "job_config.json").read_text())
    assert job_config["workdir"] == str(c.workdir.resolve())
    assert job_config["workload_list"].startswith("/")  # runs from the workdir

    script = tuning / "BBS_TN_1.sh"
    assert script.stat().st_mode & 0o111
    # run from anywhere: the script finds its workdir
    proc = subprocess.run(["sh", str(script)], cwd=c.root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(c.path("optimizations", "build_BBS_TN_1", "3_LibraryLogic").glob("*.yaml"))
    assert not c.path("optimizations", "build_BBS_TN_0").exists()  # only that one job

    rest = c.snakemake("final_libs")
    assert jobs_run(rest).get("optimize") == 2  # the job run by hand is not run again
    assert c.path("final_libs").is_dir()


def test_a_tuning_job_that_fails_once_is_retried_and_not_logged(tune):
    c = tune(sim={"flaky_on": [FLAKY]})
    proc = c.snakemake("tune")
    assert jobs_run(proc).get("optimize") == 4  # three jobs, one of them twice
    assert "injected one-time failure" in proc.stderr
    assert not c.path("optimizations", "failed_jobs.log").exists()
    assert list(c.path("optimizations", "build_BBS_TN_0", "3_LibraryLogic").glob("*.yaml"))


def test_no_retry_skips_the_failed_job_and_finishes(tune):
    c = tune(retry=False, sim={"flaky_on": [FLAKY]})
    c.snakemake("final_libs")
    failed_log = c.path("optimizations", "failed_jobs.log").read_text()
    assert failures.failed_names(failed_log) == ["BBS_TN_0"], failed_log
    assert "BBS_TN_0 skipped: failed 1 attempt(s)" in \
        c.path("logs", "optimize", "BBS_TN_0.log").read_text()
    assert c.path("final_libs").is_dir()
    # the campaign bar's counts: 2 tuned, 1 skipped
    assert campaign_progress.tune_counts(c.workdir) == campaign_progress.Counts(3, 2, 1)
    # with retry off a plain rerun leaves the failed job alone (the original's --no_retry)
    again = c.snakemake("final_libs")
    assert not jobs_run(again).get("optimize")
    failed_log = c.path("optimizations", "failed_jobs.log").read_text()
    assert failures.failed_names(failed_log) == ["BBS_TN_0"], failed_log
    assert campaign_progress.tune_counts(c.workdir) == campaign_progress.Counts(3, 2, 1)
    # with retry on, the next plain rerun tries it again, and now it works
    c.config["retry"] = True
    again = c.snakemake("final_libs")
    assert jobs_run(again).get("optimize") == 1
    assert not c.path("optimizations", "failed_jobs.log").exists()
    assert campaign_progress.tune_counts(c.workdir) == campaign_progress.Counts(3, 3, 0)


def test_list_grid_follows_the_campaigns_arch(campaign, tmp_path):
    """SIZE_OPTION 1 through the workflow: the original's grid for the CU count of the
    campaign's arch (gfx942: 304 CUs), not the file's ARCH."""
    from geko_lib.workload import grid_sizes
    from geko_lib import workload

    grid = tmp_path / "grid.yaml"
    grid.write_text("TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
                    "ARCH: gfx950\nSIZE_OPTION: 1\nGRID_DENSITY: 5\n")
    c = campaign(mode="tune", arch="gfx942", keep_thr=0.0, workload_log="",
                 workload_list=str(grid))
    c.snakemake("workload.yaml")
    table = workload.read(c.path("workload.yaml"), support=ANY)
    sizes = list(zip(table.M, table.N, table.batch_count, table.K))
    assert sizes == grid_sizes.grid(304, 5) != grid_sizes.grid(256, 5)
