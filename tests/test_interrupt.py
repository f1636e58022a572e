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

from .conftest import ROOT, SIZES, SNAKEFILE, GekoRun, final_lib_texts

pytestmark = pytest.mark.slow
STOPPED_WITHIN_S = 10.0
LINE = f"geko: {interrupt.MESSAGE}"


def tuning_child(proc, count=1, timeout=300.0) -> None:
    """Wait until ``count`` supervised tuning jobs' children run (descendants in other process
    groups)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the campaign ended before its tuning jobs ran"
        if len(tuning_groups(proc)) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"{count} tuning job(s) did not start")


def tuning_groups(proc) -> set[int]:
    groups = set()
    for child in interrupt.descendants(proc.pid):
        try:
            groups.add(os.getpgid(child.pid))
        except ProcessLookupError:
            continue
    return groups - {proc.pid}


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
    assert_said_interrupted_once(output)
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-6000:]


def assert_said_interrupted_once(output: str) -> None:
    """One line says so; none of Snakemake's reports of the jobs it stopped as failed jobs."""
    assert output.count(LINE) == 1, output[-3000:]
    for reported in ("Error in rule", "RuleException", "did not complete successfully"):
        assert reported not in output, output[-6000:]


def test_ctrl_c_stops_a_geko_campaign_and_a_plain_rerun_resumes(finished_campaign, tmp_path):
    expected, _ = finished_campaign("tune")
    run = GekoRun(tmp_path, "tune", "run")
    proc = run.start(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tuning_child(proc)
    output, seconds = ctrl_c(proc)
    assert_stopped_quietly(run, proc, output, seconds, interrupt.EXIT_CODE)
    run.run()
    assert final_lib_texts(run) == expected


def snakemake_tune(root, sizes, workdir, **config) -> list[str]:
    """The argv of `snakemake --profile profiles/local` tuning ``sizes`` in ``workdir``, with
    ``config`` over the campaign's settings (written to ``root/campaign.yaml``)."""
    path = root / "campaign.yaml"
    path.write_text(yaml.safe_dump({
        "mode": "tune", "workload_log": "", "workload_list": str(sizes),
        "workdir": str(workdir), "keep_thr": 0.0, "n_slots": 2,
        "lock_dir": str(root / "locks")} | config))
    profile = ROOT / "profiles" / "local"
    return [sys.executable, "-m", "snakemake", "final_libs", "--snakefile", str(SNAKEFILE),
            "--profile", str(profile), "--configfile", str(profile / "sim.yaml"), str(path)]


def start_snakemake(argv, root):
    return subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def test_ctrl_c_stops_a_snakemake_campaign_and_a_plain_rerun_resumes(finished_campaign,
                                                                     tmp_path):
    expected, _ = finished_campaign("tune")
    run = GekoRun(tmp_path, "tune", "run")  # its sizes and workdir; run by snakemake itself
    argv = snakemake_tune(tmp_path, tmp_path / "tune_sizes.yaml", run.workdir)
    proc = start_snakemake(argv, tmp_path)
    tuning_child(proc)
    output, seconds = ctrl_c(proc)
    assert_stopped_quietly(run, proc, output, seconds, 1)  # snakemake: a run that failed
    rerun = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-6000:]
    assert final_lib_texts(run) == expected


def test_ctrl_c_during_two_tuning_jobs_says_interrupted_once_not_their_errors(tmp_path):
    """Snakemake reports each job a Ctrl-C stopped as failed (its exception and an `Error in
    rule optimize` block, one per running job); the run says it was interrupted, once, instead
    (geko_lib.interrupt.quiet_after_ctrl_c)."""
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text(SIZES)  # three GEMMs: a tuning job each, two run at once (n_slots 2)
    workdir = tmp_path / "run"
    # every tuning job hangs until the Ctrl-C: both are surely running when it comes
    stalled = {"sim": {"stall_on": ["_B1_K"]}}
    proc = start_snakemake(snakemake_tune(tmp_path, sizes, workdir, **stalled), tmp_path)
    tuning_child(proc, count=2)
    output, _ = ctrl_c(proc)
    assert proc.returncode == 1, output[-3000:]  # snakemake's status of a run that failed
    assert_said_interrupted_once(output)
    rerun = subprocess.run(snakemake_tune(tmp_path, sizes, workdir), cwd=tmp_path,
                           capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-6000:]
    assert "Error in rule" not in rerun.stderr
