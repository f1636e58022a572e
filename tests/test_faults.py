"""Reliability: a campaign killed with SIGKILL at random points resumes to the same result, and
malformed configuration is refused before anything is written."""
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import yaml

from .conftest import SNAKEFILE
from .test_workflow import assert_no_partial_files, final_lib_texts

pytestmark = pytest.mark.slow
KILL_POINTS = 20


def start(c):
    c.config_path.write_text(yaml.safe_dump(c.config))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "final_libs",
           "--configfile", str(c.config_path), "--cores", "2", "--resources", "gpu=2",
           "gpu_slot=4", "--scheduler", "greedy", "--rerun-incomplete"]
    return subprocess.Popen(cmd, cwd=c.root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


SIZES = "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\nSizes:\n" \
        "  - [6144, 16, 1, 4096]\n  - [4096, 8, 1, 14336]\n  - [2048, 2048, 1, 2048]\n"


def test_sigkill_at_random_points_then_rerun_gives_the_same_final_libs(campaign, tmp_path):
    (tmp_path / "sizes.yaml").write_text(SIZES)
    small = {"keep_thr": 0.0, "workload_log": "", "workload_list": str(tmp_path / "sizes.yaml"),
             "search_chunk_size": 1}
    reference = campaign(**small)
    reference.workdir = tmp_path / "reference"
    reference.config["workdir"] = str(reference.workdir)
    began = time.monotonic()
    reference.snakemake("final_libs")
    full_run = time.monotonic() - began
    expected = final_lib_texts(reference)

    rng = random.Random(20261130)
    survived = 0
    for point in range(KILL_POINTS):
        c = campaign(**small)
        c.workdir = tmp_path / f"kill{point}"
        c.config["workdir"] = str(c.workdir)
        proc = start(c)
        time.sleep(rng.uniform(0.2, full_run))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if c.workdir.exists():
            assert_no_partial_files(c.workdir)
        c.snakemake("--unlock")
        c.snakemake("final_libs")
        assert final_lib_texts(c) == expected, f"kill point {point}"
        survived += 1
    assert survived == KILL_POINTS


@pytest.mark.parametrize("change, key", [
    ({"devices": ["0"]}, "devices"),
    ({"devices": []}, "devices"),
    ({"keep_thr": -1}, "keep_thr"),
    ({"platform": "opencl"}, "platform"),
    ({"mode": "fast"}, "mode"),
    ({"n_slots": 0}, "n_slots"),
    ({"search_chunk_size": 0}, "search_chunk_size"),
    ({"sim": {"noise": 2.0}}, "noise"),
    ({"no_such_key": 1}, "no_such_key"),
    ({"workload_log": "missing.yaml"}, "missing.yaml"),
])
def test_malformed_config_is_refused_and_nothing_written(campaign, change, key):
    c = campaign(**change)
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0
    assert key in proc.stderr
    assert not c.workdir.exists()


def test_a_workdir_of_another_arch_is_refused_and_left_as_it_was(campaign):
    c = campaign(keep_thr=0.0)
    c.snakemake("final_libs")
    recorded = (c.path("final_libs", "provenance.json")).read_text()
    assert '"arch": "gfx950"' in recorded and '"platform": "sim"' in recorded
    before = {p: p.read_bytes() for p in c.workdir.rglob("*")
              if p.is_file() and ".snakemake" not in p.parts}
    c.config["arch"] = "gfx942"  # an execution setting: snakemake itself sees no change
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    assert "this workdir belongs to another campaign: arch 'gfx950' (this run: 'gfx942')" \
        in message and "new --workdir" in message
    after = {p: p.read_bytes() for p in c.workdir.rglob("*")
             if p.is_file() and ".snakemake" not in p.parts}
    assert after == before


def test_libraries_of_another_arch_are_recomputed_without_run_state(campaign):
    c = campaign(keep_thr=0.0)
    c.snakemake("final_libs")
    expected = final_lib_texts(c)
    c.path("run_state.json").unlink()  # no record of the campaign: the stamps still tell
    c.config["arch"] = "gfx942"
    proc = c.snakemake("final_libs")
    assert "final_libs: made for arch 'gfx950' (this run: 'gfx942')" in proc.stderr
    assert '"arch": "gfx942"' in c.path("final_libs", "provenance.json").read_text()
    assert final_lib_texts(c) != expected  # gfx942 kernels, not gfx950's
