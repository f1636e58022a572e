"""Target combine (issue 15, one library from both modes), on the sim platform through the real
workflow: a dense-search campaign and a tune campaign of one workload, their final kernels raced
per GEMM beside the default, the fastest verified one shipped in combined_libs/."""
import pandas as pd
import pytest

from geko_lib import library
from geko_lib.gemm import GemmProblem

from .conftest import Campaign

pytestmark = pytest.mark.slow

SIZES = "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\nSizes:\n" \
        "  - [6144, 16, 1, 4096]\n  - [4096, 8, 1, 14336]\n  - [2048, 2048, 1, 2048]\n"


def _campaign(root, sizes, **config):
    root.mkdir()
    settings = {"keep_thr": 0.0, "workload_log": "", "workload_list": str(sizes),
                "lock_dir": str(root.parent / "locks"), "n_slots": 2}
    return Campaign(root, **(settings | config))


def _served(directory) -> dict:
    """(GEMM type, size) -> SolutionNameMin of every size a library directory serves."""
    out = {}
    for lib in library.load_dir(directory).values():
        positions = lib.solution_position()
        for size, index, _ in lib.size_entries():
            out[(lib.gemm_type, size)] = lib.solutions[positions[index]]["SolutionNameMin"]
    return out


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("combine")
    sizes = root / "sizes.yaml"
    sizes.write_text(SIZES)
    tune = _campaign(root / "tune", sizes, mode="tune")
    tune.snakemake("final_libs")
    search = _campaign(root / "search", sizes, mode="search")
    search.snakemake("final_libs")
    search.config["combine_with"] = [str(tune.workdir)]
    proc = search.snakemake("combine")
    return root, search, tune, proc


def test_each_gemm_ships_the_fastest_verified_kernel_of_both_campaigns(finished):
    _, search, tune, _ = finished
    results = pd.read_csv(search.path("results", "combined_results.csv"))
    # one row per GEMM that either campaign ships, each raced beside the default
    either = set(_served(search.path("final_libs"))) | set(_served(tune.path("final_libs")))
    assert len(results) == len(either) > 0
    assert {"us_default", "us_this", "us_run", "winner", "us_combined", "ratio", "kept"} <= \
        set(results)
    for row in results.to_dict("records"):
        entrants = {name: row[f"us_{name}"] for name in ("this", "run")
                    if row.get(f"us_{name}") == row.get(f"us_{name}")
                    and row[f"error_{name}"] < 0.03}
        if row["kept"]:
            assert row["us_combined"] == min(entrants.values())
            assert row["winner"] == min(entrants, key=entrants.get)
            assert row["us_default"] / row["us_combined"] >= 1.03  # the keep rule
        else:
            assert row["winner"] == "default" and row["us_combined"] == row["us_default"]
    # the library serves exactly the kept GEMMs, each with the kernel of the source that won
    combined = _served(search.path("combined_libs"))
    sources = {"this": _served(search.path("final_libs")), "run": _served(tune.path("final_libs"))}
    kept = results[results["kept"]]
    assert len(combined) == len(kept) > 0
    for row in kept.to_dict("records"):
        problem = GemmProblem.from_row(row)
        key = (problem.type, problem.size)
        assert combined[key] == sources[row["winner"]][key]
    assert search.path("combined_libs", "provenance.json").is_file()
    job_log = search.path("logs", "combine_libs.log").read_text()
    assert f"combine: run is {tune.workdir}" in job_log
    assert f"combined library: {len(kept)} of {len(results)} GEMMs served" in job_log


def test_a_rerun_keeps_the_combined_library(finished):
    _, search, _, _ = finished
    before = {p.name: p.read_bytes() for p in search.path("combined_libs").iterdir()}
    proc = search.snakemake("combine")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    assert {p.name: p.read_bytes() for p in search.path("combined_libs").iterdir()} == before


def test_a_campaign_of_another_workload_is_refused_naming_its_foreign_gemms(finished):
    root, search, _, _ = finished
    other_sizes = root / "other.yaml"
    other_sizes.write_text(SIZES.replace("[2048, 2048, 1, 2048]", "[1024, 1024, 1, 1024]")
                           .replace("[6144, 16, 1, 4096]", "[6144, 32, 1, 4096]"))
    other = _campaign(root / "other", other_sizes, mode="search", keep_thr=0.0, up_thr=1.0)
    other.snakemake("final_libs")
    foreign = [key for key in _served(other.path("final_libs"))
               if key[1] in ((1024, 1024, 1, 1024), (6144, 32, 1, 4096))]
    assert foreign  # the refusal below is about them
    before = {p.name: p.read_bytes() for p in search.path("combined_libs").iterdir()}
    search.config["combine_with"] = [str(other.workdir)]
    proc = search.snakemake("combine", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert f"{other.path('final_libs')}: serves {len(foreign)} GEMM(s) that are not in this " \
        "campaign's workload" in out
    assert GemmProblem(foreign[0][0], *foreign[0][1]).name in out
    assert {p.name: p.read_bytes() for p in search.path("combined_libs").iterdir()} == before


def test_a_campaign_of_a_part_of_the_workload_is_a_source(finished):
    """A tune campaign of some of the workload's GEMMs (the decode GEMMs of a trace, say)
    combines with the search of the whole workload; its kernels race for its GEMMs only."""
    root, search, _, _ = finished
    part_sizes = root / "part.yaml"
    part_sizes.write_text(SIZES.replace("  - [2048, 2048, 1, 2048]\n", ""))
    part = _campaign(root / "part", part_sizes, mode="tune", keep_thr=0.0, up_thr=1.0)
    part.snakemake("final_libs")
    assert _served(part.path("final_libs"))
    search.config["combine_with"] = [str(part.workdir)]
    search.snakemake("combine")
    results = pd.read_csv(search.path("results", "combined_results.csv"))
    raced = {GemmProblem.from_row(r).size for r in results.to_dict("records")
             if r.get("us_run") == r.get("us_run")}
    assert raced == {size for _, size in _served(part.path("final_libs"))}
    assert (2048, 2048, 1, 2048) not in raced


def test_a_damaged_source_library_is_refused_naming_it(finished):
    _, search, tune, _ = finished
    victim = sorted(tune.path("final_libs").glob("*.yaml"))[0]
    original = victim.read_bytes()
    before = {p.name: p.read_bytes() for p in search.path("combined_libs").iterdir()}
    search.config["combine_with"] = [str(tune.workdir)]
    try:
        victim.write_bytes(original.replace(b"SolutionIndex", b"SolutionIndeks", 1))
        proc = search.snakemake("combine", check=False)
    finally:
        victim.write_bytes(original)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert f"{tune.path('final_libs')}: content differs from its stamp" in out
    assert {p.name: p.read_bytes() for p in search.path("combined_libs").iterdir()} == before

def test_geko_status_lists_the_combine_job(finished):
    import json
    import subprocess
    import sys

    _, search, _, _ = finished
    proc = subprocess.run([sys.executable, "-m", "geko_lib.cli", "status",
                           str(search.workdir), "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)
    assert "combine_libs" in json.dumps(jobs)
