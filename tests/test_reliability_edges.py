"""Edges of issue 16 that used to end in a traceback or lose results: --keep_thr leaving no GEMM,
a dense search where every GEMM failed, a header-only winners.csv in a finished workdir."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import WORKLOADS

GEKO = shutil.which("geko", path=str(Path(sys.executable).parent))
GEKO = [GEKO] if GEKO else [sys.executable, "-m", "geko_lib.cli"]


def _no_traceback(text: str):
    for symptom in ("Traceback", "AttributeError", "No objects to concatenate"):
        assert symptom not in text, text[-3000:]


@pytest.mark.slow
def test_keep_thr_that_leaves_no_gemm_says_so_and_fails(tmp_path):
    shutil.copy(WORKLOADS / "mixed_types.yaml", tmp_path / "w.yaml")
    proc = subprocess.run([*GEKO, "--search", "--workload-log", "w.yaml", "--workdir", "run",
                           "--keep_thr", "99", "--cores", "2"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "keep_thr=99.0% leaves no GEMM: the largest share of GEMM time is" in out
    _no_traceback(out)
    assert not (tmp_path / "run" / "search").exists()  # stopped before any search job


@pytest.mark.slow
def test_search_failing_for_every_gemm_is_refused_at_the_winners(campaign):
    c = campaign(keep_thr=0.0, sim={"search_crash_on": ["_M"]})
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "winners.csv: no GEMM has a winning kernel: the dense search failed for all 6" in out
    _no_traceback(out)
    assert not c.path("libs").exists()
