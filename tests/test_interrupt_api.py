"""Ctrl-C in the Python API: SIGINT while search.run or optim.run runs its jobs (threads of the
caller's process) stops the run within seconds, not after every queued job: the jobs not
started are dropped, one line says it was interrupted and that a rerun resumes, and the run ends
with SystemExit 130 (no traceback); a plain rerun returns what an uninterrupted run returns."""
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from geko_lib import interrupt, optim, search
from geko_lib.platforms import sim
from geko_lib.schemas import GemmConfig, GemmType
from geko_lib.tuning import ga

from .test_one_engine import GEMMS

JOB_S = 0.5  # each sim job's real time: the queue of jobs lasts far longer than the test waits
BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "f32_r")


def ctrl_c_once(started: threading.Event):
    """SIGINT this process (as a terminal's Ctrl-C) once the first job has started."""
    def send():
        started.wait(30)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=send, daemon=True).start()


def first_job_starts(monkeypatch, method: str, marker) -> threading.Event:
    """Set once the sim platform's ``method`` was first called, in this process or in a child
    (a tuning job runs in its stall watchdog's child): the call leaves ``marker``."""
    started, real = threading.Event(), getattr(sim.SimPlatform, method)

    def noted(self, *args, **kwargs):
        marker.touch()
        return real(self, *args, **kwargs)
    monkeypatch.setattr(sim.SimPlatform, method, noted)

    def watch():
        while not marker.exists():
            time.sleep(0.01)
        started.set()
    threading.Thread(target=watch, daemon=True).start()
    return started


def interrupted(capsys, call) -> float:
    """Run ``call`` to its interrupt; the seconds it took."""
    began = time.monotonic()
    with pytest.raises(SystemExit) as stopped:
        call()
    assert isinstance(stopped.value, interrupt.Interrupted)
    assert stopped.value.code == interrupt.EXIT_CODE
    assert capsys.readouterr().err.count(f"geko: {interrupt.MESSAGE}") == 1
    return time.monotonic() - began


def test_ctrl_c_stops_search_run_and_a_rerun_returns_the_same(tmp_path, monkeypatch, capsys):
    rows = search.configure(GEMMS, duration=0.01)

    def run(out, job_s):
        return search.run(configs=rows, output_dir=out, devices=[0], max_chunk_size=1,
                          platform="sim", sim={"job_seconds": job_s},
                          lock_dir=str(tmp_path / "locks"))
    expected = run(tmp_path / "uninterrupted", 0.0)
    ctrl_c_once(first_job_starts(monkeypatch, "search", tmp_path / "started"))
    seconds = interrupted(capsys, lambda: run(tmp_path / "api", JOB_S))
    assert seconds < len(rows) * JOB_S  # not every chunk ran
    assert len(list((tmp_path / "api" / "data").glob("*.csv"))) < len(rows)
    pd.testing.assert_frame_equal(run(tmp_path / "api", 0.0), expected)


def test_ctrl_c_stops_optim_run_and_a_rerun_returns_the_same(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ga.GAConfig, "n_gen", 2)
    sizes = [[256, 128, 1, 64], [4096, 4096, 1, 4096], [8192, 8, 1, 14336]]

    def tuning_dir(name):  # one tuning YAML (one job) per size
        out = tmp_path / name
        assert len(optim.configure(gemm_configs=[GemmConfig(BBS_TN, sizes)], output_dir=out,
                                   arch="gfx950", platform="sim")) == len(sizes)
        return out

    def run(out, job_s):
        return optim.run(tuning_dir=out, devices=[0], n_slots=1, platform="sim",
                         sim={"job_seconds": job_s}, lock_dir=str(tmp_path / "locks"))
    expected = run(tuning_dir("uninterrupted"), 0.0)
    ctrl_c_once(first_job_starts(monkeypatch, "optimize", tmp_path / "started"))
    out = tuning_dir("api")
    seconds = interrupted(capsys, lambda: run(out, JOB_S * 4))
    assert seconds < len(sizes) * JOB_S * 4
    # the job the interrupt killed did not fail: nothing counts it (gpu_jobs' policy)
    assert not (out / "failed_jobs.log").exists()
    assert not list(out.glob("build_*/.failcount")) and not list(out.glob("build_*/3_*"))
    assert (out / "running_jobs.log").read_text() == ""
    rerun = run(out, 0.0)
    assert [p.parent.name for p in rerun] == [p.parent.name for p in expected]
    assert [sorted(f.read_text() for f in p.glob("*.yaml")) for p in rerun] == \
        [sorted(f.read_text() for f in p.glob("*.yaml")) for p in expected]


def test_ctrl_c_in_a_user_script_prints_one_line_and_no_traceback(tmp_path):
    """As a user sees it: a script calling search.run, SIGINT to its process group."""
    script = tmp_path / "user.py"
    script.write_text(
        "from geko import search\n"
        "from tests.test_one_engine import GEMMS\n"
        "rows = search.configure(GEMMS, duration=0.01)\n"
        f"search.run(configs=rows, output_dir={str(tmp_path / 'out')!r}, devices=[0],\n"
        f"           max_chunk_size=1, platform='sim', sim={{'job_seconds': 1.0}},\n"
        f"           lock_dir={str(tmp_path / 'locks')!r})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(interrupt.__file__).rsplit(os.sep, 2)[0], os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not list((tmp_path / "out").glob("gemms_*.yaml")) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    began = time.monotonic()
    output, _ = proc.communicate(timeout=30)
    assert time.monotonic() - began < 10
    assert proc.returncode == interrupt.EXIT_CODE, output
    assert output.count(f"geko: {interrupt.MESSAGE}") == 1, output
    assert "Traceback" not in output, output
