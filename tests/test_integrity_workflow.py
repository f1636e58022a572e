"""Stale results through the real workflow: switching mode in one workdir never reuses the other
mode's benchmarks nor ships its library; a workload changed behind the workdir's back (another
content, an older mtime) is refused before anything in the workdir changes."""
import json
import re
import os

import pandas as pd
import pytest

from geko_lib import library

from .test_workflow import final_lib_texts

pytestmark = pytest.mark.slow

SIZES = "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\nSizes:\n" \
        "  - [2048, 2048, 1, 2048]\n"


@pytest.fixture
def one_gemm(campaign, tmp_path):
    (tmp_path / "sizes.yaml").write_text(SIZES)
    return lambda **config: campaign(**({"keep_thr": 0.0, "workload_log": "", "n_slots": 2,
                                         "workload_list": str(tmp_path / "sizes.yaml")} | config))


def stamp(path):
    return json.loads(path.with_name(path.name + ".stamp.json").read_text())


def test_search_then_tune_in_one_workdir_ships_the_tuned_library(one_gemm):
    c = one_gemm()
    c.snakemake("final_libs")
    searched = final_lib_texts(c)
    assert json.loads(c.path("libs", "provenance.json").read_text())["provenance"]["mode"] == \
        "search"

    c.config["mode"] = "tune"
    # a finished search is never replaced by accident: refused, nothing lost
    refused = c.snakemake("final_libs", check=False)
    assert refused.returncode != 0 and "mode 'search' (this run: 'tune')" in refused.stderr
    assert final_lib_texts(c) == searched
    c.config["discard_results"] = True  # the explicit way out
    proc = c.snakemake("final_libs")
    told = proc.stderr
    # the search's libraries and results are stale for tune: removed and recomputed
    assert "libs: made for mode 'search' (this run: 'tune'): removed" in told
    assert "final_libs: made for mode 'search' (this run: 'tune'): removed" in told
    assert json.loads(c.path("libs", "provenance.json").read_text())["provenance"]["mode"] == \
        "tune"
    for path in c.path("benchmarks").glob("*.csv"):
        assert stamp(path)["provenance"]["mode"] == "tune", path
    raw = pd.read_csv(c.path("results", "raw_results.csv"))
    assert raw["kernel_tuned"].str.contains("_SIMT_").all()  # tuned kernels, not the catalogue
    assert final_lib_texts(c) != searched
    for path in c.path("final_libs").glob("*.yaml"):
        for solution in library.load(path).solutions:
            assert "_SIMT_" in solution["SolutionNameMin"]
    # the workload tables are the same for both modes: reused, not recomputed
    assert not re.search(r"^\s*(local)?(rule|checkpoint) (ingest|summarize):", told, re.M)
    assert "workload.yaml:" not in told and "summary.csv:" not in told


@pytest.mark.parametrize("change", ["other content, older mtime", "unreadable"])
def test_a_changed_workload_is_refused_and_the_workdir_left_as_it_was(campaign, tmp_path, change):
    log = tmp_path / "app.yaml"
    log.write_text(SIZES)
    c = campaign(keep_thr=0.0, workload_log="", workload_list=str(log))
    c.snakemake("bench")
    before = {p: p.read_bytes() for p in c.workdir.rglob("*")
              if p.is_file() and ".snakemake" not in p.parts}
    mtime = log.stat().st_mtime_ns
    log.write_text(SIZES.replace("2048, 2048", "1024, 2048") if change.startswith("other")
                   else "Sizes: [\n")
    os.utime(log, ns=(mtime - 10**9, mtime - 10**9))  # older: Snakemake alone sees no change
    proc = c.snakemake("bench", check=False)
    assert proc.returncode != 0
    assert "this workdir belongs to another campaign: input_sha256" in proc.stderr
    assert "new --workdir" in proc.stderr
    after = {p: p.read_bytes() for p in c.workdir.rglob("*")
             if p.is_file() and ".snakemake" not in p.parts}
    assert after == before  # workload.yaml and everything else kept
