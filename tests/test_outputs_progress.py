"""The original's one campaign progress bar, drawn by the real `geko` command while snakemake
runs, and its counts read from a real workdir with a failed GEMM."""
import re

import pytest

from geko_lib.campaign import progress as campaign_progress

from .test_cli import geko

pytestmark = pytest.mark.slow

SIZES = ("TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
         "Sizes:\n  - [6144, 16, 1, 4096]\n  - [4096, 8, 1, 14336]\n  - [28672, 512, 1, 4096]\n")
# the bar on a terminal, or its plain line when stderr is not one (as here)
FINAL = re.compile(r"Search in progress: (?:100%\|[^|]*\| )?3/3 \[(?:[^\]]*, )?n_completed: (\d+), "
                   r"n_failed: (\d+)\]")


def test_geko_search_draws_one_campaign_bar(tmp_path):
    (tmp_path / "sizes.yaml").write_text(SIZES)
    proc = geko("--search", "--list", "sizes.yaml", "-d", "0,1", "--workdir", "run",
                "--keep_thr", "0", "--cores", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    final = FINAL.findall(proc.stderr)
    assert final and final[-1] == ("3", "0"), proc.stderr[-2000:]
    counts = campaign_progress.search_counts(tmp_path / "run")
    assert counts == campaign_progress.Counts(3, 3, 0)


def test_counts_of_a_campaign_with_a_failed_gemm(campaign):
    c = campaign(keep_thr=0.0, sim={"search_crash_on": ["HHS_NN_M4096_N4096_B1_K4096"]})
    c.snakemake("search")
    counts = campaign_progress.search_counts(c.workdir)
    assert counts.total == 6 and counts.failed == 1 and counts.completed == 5
    assert campaign_progress.phase_of({"mode": "search"}, "bench") == ("baseline",)
    assert campaign_progress.tune_counts(c.workdir).total is None  # no tuning configs here
