"""Reliability: a campaign of either mode interrupted (SIGKILL or SIGINT) at random points resumes
with a plain `geko` rerun to the same result; malformed configuration is refused before anything
is written; a workdir of another campaign is refused, a live one too, before anything changes.

GEKO_KILL_POINTS sets the interruptions per (mode, signal) (default 1: the suite stays fast)."""
import os
import random
import signal
import subprocess
import time

import pytest

from .conftest import GekoRun, final_lib_texts
from .test_workflow import assert_no_partial_files

pytestmark = pytest.mark.slow
KILL_POINTS = int(os.environ.get("GEKO_KILL_POINTS", "1"))

def interrupt(proc, sig) -> None:
    """SIGKILL the whole campaign, or SIGINT it as Ctrl-C does (the process group), giving it
    time to stop on its own."""
    os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if sig == signal.SIGINT:  # what Ctrl-C leaves running (job scripts) is gone before a rerun
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("mode", ["search", "tune"])
def test_interrupted_campaign_resumes_with_a_plain_geko_rerun(finished_campaign, tmp_path, mode,
                                                             sig):
    expected, full_run = finished_campaign(mode)
    assert expected
    rng = random.Random(f"{mode}-{sig}")
    for point in range(KILL_POINTS):
        run = GekoRun(tmp_path, mode, f"interrupted{point}")
        proc = run.start()
        time.sleep(rng.uniform(0.5, full_run))
        interrupt(proc, sig)
        if run.workdir.exists():
            assert_no_partial_files(run.workdir)
        stale = list(run.path(".snakemake", "locks").glob("*.lock"))
        rerun = run.run()  # no --unlock: a stale lock is geko's to clear
        assert ("cleared a stale Snakemake lock" in rerun.stderr) == bool(stale)
        assert final_lib_texts(run) == expected, f"{mode} {sig.name} point {point}"


def test_a_second_campaign_on_a_running_workdir_changes_nothing(tmp_path):
    run = GekoRun(tmp_path, "search", "run")
    first = run.start()
    try:
        deadline = time.monotonic() + 60
        while not list(run.path(".snakemake", "locks").glob("*.lock")) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        config = run.path("geko_config.yaml").read_bytes()
        second = GekoRun(tmp_path, "search", "run")
        second.argv[second.argv.index("--keep_thr") + 1] = "0.5"  # another campaign's config
        proc = second.run(check=False)
        assert proc.returncode != 0 and "a campaign is running there" in proc.stderr
        assert run.path("geko_config.yaml").read_bytes() == config
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


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


def test_a_workdir_of_another_arch_is_refused_and_left_as_it_was(finished_search, tmp_path):
    c = finished_search.copy(tmp_path)
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


def test_libraries_of_another_arch_are_refused_without_run_state_then_discarded(
        finished_search, tmp_path):
    c = finished_search.copy(tmp_path)
    expected = final_lib_texts(c)
    c.path("run_state.json").unlink()  # no record of the campaign: the stamps still tell
    c.config["arch"] = "gfx942"
    refused = c.snakemake("final_libs", check=False)
    assert refused.returncode != 0
    assert "this workdir holds a finished result" in refused.stderr
    assert "arch 'gfx950' (this run: 'gfx942')" in refused.stderr
    assert final_lib_texts(c) == expected  # nothing lost
    c.config["discard_results"] = True  # the explicit way out: recompute there
    proc = c.snakemake("final_libs")
    assert "final_libs: made for arch 'gfx950' (this run: 'gfx942')" in proc.stderr
    assert '"arch": "gfx942"' in c.path("final_libs", "provenance.json").read_text()
    assert final_lib_texts(c) != expected  # gfx942 kernels, not gfx950's
