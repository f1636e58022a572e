"""The bench_uncompared job (keep_thr 0: the default kernel of the GEMMs whose search or tuning
job failed, so the headline weighs the whole workload) runs supervised: a timing that hangs is
killed after stall_timeout, the GEMM that hangs alone is left out by name, the others are timed,
and the campaign goes on to its analysis instead of waiting at its last step."""

import contextlib
import signal

import pandas as pd

from geko_lib import bench, library, search
from geko_lib.campaign import layout

from .test_api_workflow_parity import SEARCH_CRASH, TWO_GEMMS, _config

THIRD = TWO_GEMMS.splitlines(keepends=True)[1].replace("M: 2048", "M: 3072")
HANGS = "M3072_N16"


@contextlib.contextmanager
def _within(seconds: int):
    """Fails the test where the job would wait for ever (its timing hung, unsupervised)."""
    def expired(signum, frame):
        raise TimeoutError(f"the job still ran after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _workdir_with_failed_searches(tmp_path, monkeypatch, sim):
    """summary.csv of three GEMMs and libs/ holding the first only (the others' searches
    failed), as the workflow has them before bench_uncompared."""
    workdir = tmp_path / "workdir"
    (tmp_path / "app.yaml").write_text(TWO_GEMMS + THIRD)
    summary, gemms = bench.log.summarize(log_file=tmp_path / "app.yaml", output_dir=workdir,
                                         keep_thr=0, platform="sim")
    winners = search.run(configs=search.configure(gemms, duration=0.01),
                         output_dir=tmp_path / "search", devices=[0], platform="sim",
                         sim={"search_crash_on": [SEARCH_CRASH, HANGS]},
                         lock_dir=str(tmp_path / "locks"))
    library.operations.extract_solutions(winners, platform="sim").dump(workdir / layout.LIBS)
    assert layout.Layout(workdir).uncompared() == [layout.UNCOMPARED]
    return workdir, dict(_config(tmp_path, "search", sim), keep_thr=0)


def test_a_gemm_whose_timing_hangs_is_left_out_by_name_and_the_others_are_timed(
        tmp_path, monkeypatch, run_phase):
    workdir, config = _workdir_with_failed_searches(tmp_path, monkeypatch, {"stall_on": [HANGS]})
    config["stall_timeout"] = 2
    with _within(60):
        job = run_phase("bench_uncompared", workdir, config,
                        wildcards={"rest": layout.UNCOMPARED})
    timed = pd.read_csv(job.output.table)
    assert timed["m"].tolist() == [2048]  # the failed search's GEMM that does not hang
    said = (workdir / job.log[0]).read_text()
    assert "uncompared GEMM(s) together failed (no progress in" in said
    assert "BBS_TN_M3072_N16_B1_K1024: no reference timing (no progress in" in said
    assert not list((workdir / "benchmarks").glob("*.part.csv"))


def test_without_a_hang_every_failed_search_s_gemm_is_timed(tmp_path, monkeypatch, run_phase):
    workdir, config = _workdir_with_failed_searches(tmp_path, monkeypatch, {})
    job = run_phase("bench_uncompared", workdir, config, wildcards={"rest": layout.UNCOMPARED})
    assert sorted(pd.read_csv(job.output.table)["m"]) == [2048, 3072]
