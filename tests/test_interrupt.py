"""Ctrl-C: SIGINT to the campaign's process group (what a terminal sends) while a tuning job runs
stops everything the run started within 10 s (the command, Snakemake, its jobs and the tuning
children, which run in process groups of their own), says so in one line, prints no traceback,
and a plain rerun ships what an uninterrupted run ships; on both routes (`geko`, `snakemake
--profile`)."""
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import yaml

from geko_lib import interrupt

from .conftest import ROOT, SNAKEFILE, GekoRun, final_lib_texts

pytestmark = pytest.mark.slow
STOPPED_WITHIN_S = 10.0
LINE = f"geko: {interrupt.MESSAGE}"


def tuning_child(proc, timeout=300.0) -> None:
    """Wait until a supervised tuning job's child runs (a descendant in another process group)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the campaign ended before a tuning job ran"
        for child in interrupt.descendants(proc.pid):
            try:
                if os.getpgid(child.pid) != proc.pid:
                    return
            except ProcessLookupError:
                continue
        time.sleep(0.1)
    raise AssertionError("no tuning job started")


def ctrl_c(proc) -> tuple[str, float]:
    """SIGINT the group; (its output, seconds until every process it had started was gone)."""
    started = [psutil.Process(proc.pid), *interrupt.descendants(proc.pid)]
    os.killpg(proc.pid, signal.SIGINT)
    began = time.monotonic()
    try:
        output, _ = proc.communicate(timeout=60)
    finally:
        interrupt.kill(started)  # nothing outlives the test, whatever it asserts
    alive = started
    while alive and time.monotonic() - began < 60:
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    return output, time.monotonic() - began


def assert_stopped_quietly(run, proc, output: str, seconds: float, code: int) -> None:
    assert seconds <= STOPPED_WITHIN_S, f"processes ran on {seconds:.1f} s after Ctrl-C"
    # the tuning job was stopped, not left to finish (a sim GA job is a few seconds)
    assert not list(run.workdir.glob("optimizations/build_*/3_LibraryLogic/*.yaml"))
    assert proc.returncode == code, output[-3000:]
    assert output.count(LINE) == 1, output[-3000:]
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-6000:]


def test_ctrl_c_stops_a_geko_campaign_and_a_plain_rerun_resumes(finished_campaign, tmp_path):
    expected, _ = finished_campaign("tune")
    run = GekoRun(tmp_path, "tune", "run")
    proc = run.start(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tuning_child(proc)
    output, seconds = ctrl_c(proc)
    assert_stopped_quietly(run, proc, output, seconds, interrupt.EXIT_CODE)
    run.run()
    assert final_lib_texts(run) == expected


def test_ctrl_c_stops_a_snakemake_campaign_and_a_plain_rerun_resumes(finished_campaign,
                                                                     tmp_path):
    expected, _ = finished_campaign("tune")
    run = GekoRun(tmp_path, "tune", "run")  # its sizes and workdir; run by snakemake itself
    config = tmp_path / "campaign.yaml"
    config.write_text(yaml.safe_dump({
        "mode": "tune", "workload_log": "", "workload_list": str(tmp_path / "tune_sizes.yaml"),
        "workdir": str(run.workdir), "keep_thr": 0.0, "n_slots": 2,
        "lock_dir": str(tmp_path / "locks")}))
    profile = ROOT / "profiles" / "local"
    argv = [sys.executable, "-m", "snakemake", "final_libs", "--snakefile", str(SNAKEFILE),
            "--profile", str(profile), "--configfile", str(profile / "sim.yaml"), str(config)]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    tuning_child(proc)
    output, seconds = ctrl_c(proc)
    assert_stopped_quietly(run, proc, output, seconds, 1)  # snakemake: a run that failed
    rerun = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-6000:]
    assert final_lib_texts(run) == expected
