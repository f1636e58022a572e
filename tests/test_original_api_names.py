"""The original's documented names that geko's README API lacked, through ``geko``: bench.log.read
and verify_output, bench.standard_benchmark and compare_pr, constants.INDEX_TYPE_MAP,
library.operations.from_full_dataframe, merge and prune_library in the original's form."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import FIXTURES
from tests.rocm_fake import build_fake_hipblaslt, fixture_logic
from tests.test_readme_api import BBS_NN_LIB, LOG_TEXT

LIB = FIXTURES / "tensile_logic" / BBS_NN_LIB


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GEKO_HIPBLASLT_PATH", raising=False)
    Path("log.yaml").write_text(LOG_TEXT)
    Path("libs").mkdir()
    shutil.copy(LIB, "libs")
    return tmp_path


def test_log_read_and_verify_output(here):
    from geko import bench

    rows = bench.log.read("log.yaml")
    assert [r["M"] for r in rows] == [16, 16, 512, 1024] and rows[0]["call_count"] == 40
    Path("mangled.yaml").write_text(LOG_TEXT.replace("scaleA: 0,", "scaleA: 0, : ,", 1))
    assert len(bench.log.read("mangled.yaml")) == 4  # the original's cleanup of ": ,"
    rows = bench.log.update(bench.log.parse("log.yaml", as_df=False))
    Path("bench.yaml").write_text("".join(f"- {r}\n".replace("'", "") for r in rows))
    out = bench.run(bench_file="bench.yaml", output_file="bench.out", platform="sim")
    assert len(out) == 4
    assert bench.log.verify_output("bench.out", "bench.yaml")
    Path("two.yaml").write_text("".join(Path("bench.yaml").read_text().splitlines(True)[:2]))
    assert not bench.log.verify_output("bench.out", "two.yaml")  # answers other GEMMs
    Path("cut.out").write_text(Path("bench.out").read_text()[:200])
    assert not bench.log.verify_output("cut.out", "bench.yaml")


def test_standard_benchmark(here):
    from geko import bench
    from geko_lib.errors import GekoError

    rows = bench.log.update(bench.log.parse("log.yaml", as_df=False))
    Path("bench.yaml").write_text("".join(f"- {r}\n".replace("'", "") for r in rows))
    frame = bench.standard_benchmark(bench_file="bench.yaml", output_file="std/bench.out",
                                     duration=0.01, platform="sim")
    assert len(frame) == 4 and Path("std/bench.out").is_file() and (frame["us"] > 0).all()
    with pytest.raises(GekoError, match="probe pass"):
        bench.standard_benchmark(bench_file="bench.yaml", output_file="x.out",
                                 initial_iters=50, platform="sim")


def test_compare_pr(here):
    from geko import bench

    frame = bench.compare_pr(lib_dir="libs", base_lib_dir="libs", device=0, platform="sim")
    stem = Path(BBS_NN_LIB).stem
    assert Path(f"benchmarks/{stem}_bench-base.out").is_file()
    assert Path(f"benchmarks/{stem}_bench-pr.out").is_file()
    assert Path(f"benchmarks/{stem}_verify-pr.csv").is_file()
    assert {"us_base", "us_pr", "error_pr", "ratio"} <= set(frame.columns)
    assert not any(c.endswith(("_reference", "_tuned")) for c in frame.columns)
    # the same library on both sides: the same kernels, the same times
    assert (frame["ratio"].round(6) == 1.0).all() and (frame["error_pr"] < 0.03).all()


def test_index_type_map():
    from geko.constants import INDEX_TYPE_MAP

    assert (INDEX_TYPE_MAP[0], INDEX_TYPE_MAP[4], INDEX_TYPE_MAP[7]) == ("f32_r", "f16_r", "bf16_r")
    assert (INDEX_TYPE_MAP[15], INDEX_TYPE_MAP[16], INDEX_TYPE_MAP[13]) == ("f8_r", "bf8_r", "f8b8")
    assert sorted(INDEX_TYPE_MAP) == list(range(22))


def test_the_library_module_of_the_readme_layout_holds_the_classes(here):
    """The README's layout puts Library and LibraryCollection in geko/library/library.py."""
    from geko import library
    from geko.library.library import Library, LibraryCollection

    assert Library is library.Library and LibraryCollection is library.LibraryCollection
    lib = library.operations.load_library(f"libs/{BBS_NN_LIB}")
    assert isinstance(lib, Library)
    assert isinstance(library.operations.load_collection("libs"), LibraryCollection)


def test_from_full_dataframe_on_sim(here):
    from geko import library, optim

    raw = optim.analyze(lib_dir="libs", output_dir="results", up_thr=1.0, platform="sim")
    full = pd.read_csv("results/raw_results.csv")
    if "lib" not in full:
        full["lib"] = BBS_NN_LIB
    libs = library.operations.from_full_dataframe(full, "libs", platform="sim")
    (lib,) = libs.values()
    assert len(lib.sizes) == len(full) >= len(raw)  # every GEMM, its winner's solution


def test_merge_runs_tensile_merge_library_of_the_checkout(here):
    from geko import library
    from geko_lib.library import LibraryError

    hip = build_fake_hipblaslt(here / "hipBLASLt", fixture_logic("gfx950"))
    Path("orig").mkdir()
    shutil.copy(LIB, "orig")
    out = library.operations.merge(str(hip), "orig", "libs", "merged")
    assert (out / BBS_NN_LIB).is_file() and (out / "tensile-merge-library.log").is_file()
    with pytest.raises(LibraryError, match="hipblaslt_path"):
        library.operations.merge(None, "orig", "libs", "merged")


def test_merge_refuses_a_sim_library_for_a_rocm_checkout(here):
    """A sim campaign's library names model kernels never measured on hipBLASLt: merging it
    into a checkout's library is refused naming it (its provenance.json or its first line)."""
    from geko import library
    from geko_lib.library import LibraryError
    from geko_lib.platforms.sim import MODEL_NOTE

    hip = build_fake_hipblaslt(here / "hipBLASLt", fixture_logic("gfx950"))
    Path("orig").mkdir()
    shutil.copy(LIB, "orig")
    Path("sim_libs").mkdir()
    Path("sim_libs", LIB.name).write_text(f"# {MODEL_NOTE}\n" + LIB.read_text())
    with pytest.raises(LibraryError, match=r"sim_libs/.*: a sim platform library"):
        library.operations.merge(str(hip), "orig", "sim_libs", "merged")
    assert not Path("merged").exists()


def test_an_api_checkout_argument_is_named_as_such(here, monkeypatch):
    """search.run(hipblaslt_path=...) of a path that is no checkout names the argument, not
    GEKO_HIPBLASLT_PATH (which the call did not use)."""
    from geko import search
    from geko_lib.platforms import PlatformError

    monkeypatch.setenv("GEKO_HIPBLASLT_PATH", str(here / "elsewhere"))
    with pytest.raises(PlatformError, match=r"nowhere \(from the hipblaslt_path argument\) "
                                            "does not exist"):
        search.run(hipblaslt_path=str(here / "nowhere"), configs="gemms.csv")


def test_prune_library_in_the_original_form(here):
    from geko import library

    base = library.operations.load_library(LIB)
    pruned = library.operations.prune_library(None, base, workdir="prune", devices=[0],
                                              tol=0.02, platform="sim")
    assert isinstance(pruned, library.Library)
    assert 0 < len(pruned.solutions) <= len(base.solutions)
    assert len(pruned.sizes) == len(base.sizes)
    assert Path("prune", LIB.stem).is_dir()
    greedy = library.operations.prune_library(None, base, workdir="prune", platform="sim",
                                              method="greedy")
    assert len(pruned.solutions) <= len(greedy.solutions)
