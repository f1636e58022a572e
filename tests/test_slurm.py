"""The sim workflow through a real single-node SLURM (tests/slurm/start_slurm.sh; .ci/run starts
it), compared with a local run."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT
from .test_workflow import final_lib_texts

pytestmark = pytest.mark.slow
START = ROOT / "tests" / "slurm" / "start_slurm.sh"
JOBCOMP = Path("/var/tmp/geko-slurm/jobcomp.log")


@pytest.fixture(scope="module")
def slurm():
    if not shutil.which("slurmctld") or not shutil.which("sbatch"):
        pytest.skip("SLURM is not installed (apt-get install -y slurm-wlm munge)")
    up = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    if not re.search(r"idle|mix|alloc", up.stdout):
        if os.geteuid() != 0:
            pytest.skip("SLURM is not running and starting it needs root")
        subprocess.run([str(START)], check=True)


def completed_jobs() -> list[str]:
    if not JOBCOMP.exists():
        return []
    return [line for line in JOBCOMP.read_text().splitlines() if "JobState=COMPLETED" in line]


def test_workflow_through_slurm_equals_local_run(campaign, finished_search, tmp_path, slurm):
    local = finished_search  # the same campaign run locally
    cluster = campaign(keep_thr=0.0)
    cluster.workdir = tmp_path / "cluster"
    cluster.config["workdir"] = str(cluster.workdir)
    before = len(completed_jobs())
    proc = cluster.snakemake(
        "final_libs", "--profile", str(ROOT / "profiles" / "slurm"),
        "--slurm-status-command", "squeue", "--slurm-no-account",
        "--seconds-between-status-checks", "1", "--slurm-init-seconds-before-status-checks", "1")
    submitted = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+)", proc.stderr)
    gpu_jobs = sum(proc.stderr.count(f"rule {r}:") for r in
                   ("baseline_part", "search_share", "bench_libs", "bench_uncompared"))
    assert gpu_jobs >= 4 and len(submitted) == gpu_jobs, proc.stderr[-3000:]
    if JOBCOMP.exists():
        assert len(completed_jobs()) - before >= gpu_jobs
    # inside the allocation the device lease took SLURM's device, not a lock of its own
    logs = "".join(p.read_text() for p in cluster.path("logs").rglob("*.log"))
    assert re.search(r"leased sim device [01] slot 0", logs)
    assert final_lib_texts(cluster) == final_lib_texts(local)
