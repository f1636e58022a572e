"""The comparison runs one job per device over its share of the libraries (rule bench_libs,
geko_lib.gpu_jobs.bench_libraries), driven through real snakemake runs on the sim platform: a
job killed midway, rerun, redoes only the libraries without a stamp; one library's failure
keeps the others' results and writes that library's failure file; a continuation on another
number of devices reuses every stamped library."""
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from geko_lib.campaign import layout
from geko_lib.gemm import GemmProblem

from .conftest import SNAKEFILE, final_lib_texts

pytestmark = pytest.mark.slow

STEPS = ("bench-reference", "bench-tuned", "verify-tuned")


def _lib_files(c, lib: str) -> list:
    return [c.path("benchmarks", f"{lib}_{step}.{ext}") for step in STEPS for ext in ("csv", "out")]


def _stamps(c, lib: str) -> dict:
    """Each of a library's result files' stamp text (a remeasured file gets a new one)."""
    return {p.name: p.with_name(p.name + ".stamp.json").read_text() for p in _lib_files(c, lib)}


def _forget_comparison(c, libs) -> None:
    """As if the comparison never ran for ``libs`` (and no share table was written)."""
    for lib in libs:
        for path in _lib_files(c, lib):
            path.unlink(missing_ok=True)
            path.with_name(path.name + ".stamp.json").unlink(missing_ok=True)
    for path in c.path("benchmarks", "parts").glob("*"):
        path.unlink()
    for name in ("results", "final_libs"):
        subprocess.run(["rm", "-rf", str(c.path(name))], check=True)


def _a_gemm_of(c, lib: str) -> str:
    """One GEMM's name of ``lib`` (a sim fault injected on it hits this library only)."""
    rows = yaml.safe_load(c.path(layout.fill(layout.BENCH_INPUT, lib=lib)).read_text())
    return GemmProblem.from_row(rows[0]).name


def _one_device(finished_search, tmp_path):
    """A copy of the finished search on one device: one bench_libs job holds every library."""
    c = finished_search.copy(tmp_path / "copy")
    c.config["devices"], c.resources = [0], ["gpu=1", "gpu_slot=4"]
    libs = layout.Layout(c.workdir).lib_stems()
    assert len(libs) >= 2, libs
    return c, libs


def test_a_killed_job_redoes_only_the_libraries_without_a_stamp(finished_search, tmp_path):
    expected = final_lib_texts(finished_search)
    c, libs = _one_device(finished_search, tmp_path)
    _forget_comparison(c, libs)
    # the last library's benchmark hangs: the job is killed while it runs
    c.config["sim"] = {"stall_on": [_a_gemm_of(c, libs[-1])]}
    c.config_path.write_text(yaml.safe_dump(c.config))
    log = c.path(layout.job_log("bench_libs", "part_0_of_1"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "final_libs", "--snakefile", str(SNAKEFILE),
         "--configfile", str(c.config_path), "--rerun-triggers", "mtime", "input", "params",
         "--cores", "2", "--resources", *c.resources],
        cwd=c.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
            log.is_file() and "injected hang" in log.read_text()):
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before its job hung"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = libs[:-1]
    kept = {lib: _stamps(c, lib) for lib in done}  # stamped before the kill
    assert not any(p.exists() for p in _lib_files(c, libs[-1])[:2])
    c.config.pop("sim")
    c.snakemake("--unlock")
    c.snakemake("final_libs")
    text = log.read_text()
    for lib in done:  # not measured again: the same stamps, and the log says so
        assert _stamps(c, lib) == kept[lib]
        assert f"{lib}: reference reused (stamped)" in text
    assert f"{libs[-1]}: reference: not measured" in text
    assert final_lib_texts(c) == expected


def test_one_librarys_failure_keeps_the_others_and_writes_its_failure_file(
        finished_search, tmp_path):
    c, libs = _one_device(finished_search, tmp_path)
    _forget_comparison(c, libs)
    bad = libs[0]
    c.config["sim"] = {"crash_on": [_a_gemm_of(c, bad)]}
    proc = c.snakemake("final_libs", check=False)
    assert proc.returncode != 0
    failed = c.path(layout.fill(layout.BENCH_FAILED, lib=bad))
    assert failed.read_text().startswith(f"{bad}  # ") and "injected crash" in failed.read_text()
    for lib in libs[1:]:  # measured, stamped and kept though the job failed
        assert all(p.is_file() for p in _lib_files(c, lib))
        assert not c.path(layout.fill(layout.BENCH_FAILED, lib=lib)).exists()
    kept = {lib: _stamps(c, lib) for lib in libs[1:]}
    assert not c.path("results").exists()
    c.config.pop("sim")
    c.snakemake("final_libs")
    assert not failed.exists()
    assert {lib: _stamps(c, lib) for lib in libs[1:]} == kept
    final = pd.read_csv(c.path(layout.FINAL_RESULTS))
    assert len(final)
    assert final_lib_texts(c) == final_lib_texts(finished_search)


def test_another_number_of_devices_reuses_every_stamped_library(finished_search, tmp_path):
    c, libs = _one_device(finished_search, tmp_path)  # finished on two devices, two shares
    before = {lib: _stamps(c, lib) for lib in libs}
    c.snakemake("final_libs")
    assert {lib: _stamps(c, lib) for lib in libs} == before
    text = c.path(layout.job_log("bench_libs", "part_0_of_1")).read_text()
    assert text.count("reused (stamped)") == sum(3 for _ in libs)
    assert final_lib_texts(c) == final_lib_texts(finished_search)
