"""The original README's Python API ("Module Reference" and "Common Usage Patterns"), run as a
GEKO user would run it under geko_lib: the same calls with the same arguments, changed only in
the package name, the paths and the platform. Each test runs once on the sim platform
(``hipblaslt_path`` None, ``platform="sim"``) and once on the rocm platform, whose
``hipblaslt_path`` is a fake built checkout whose tools are the replays of tests/rocm_replay
(tests/rocm_fake.py). Checked: what a user would look at (files written, their columns, counts,
the kept kernels)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import FIXTURES
from tests.rocm_fake import INVOKE_PATH, build_fake_hipblaslt, fixture_logic

pytestmark = pytest.mark.skipif(not (FIXTURES / "tensile_logic").is_dir(),
                                reason="tests/fixtures is not here")

# the GEMM types the fake checkout's device library serves (gfx950 logic fixtures): bf16 NN
# and f16 TT, logged as HIPBLASLT_LOG_MASK=64 rows
LOG_ROWS = [
    (16, 2048, 15360, "N", "N", "bf16_r", 40),
    (16, 16384, 15360, "N", "N", "bf16_r", 10),
    (512, 512, 512, "N", "N", "bf16_r", 5),
    (1024, 1024, 1024, "T", "T", "f16_r", 3),
]
LOG_TEXT = "".join(
    f"- {{function: matmul, M: {m}, N: {n}, K: {k}, lda: {m if ta == 'N' else k}, "
    f"ldb: {k if tb == 'N' else n}, ldc: {m}, ldd: {m}, stride_a: 0, stride_b: 0, stride_c: 0, "
    f"stride_d: 0, alpha: 1.0, beta: 0.0, transA: {ta}, transB: {tb}, batch_count: 1, "
    f"scaleA: 0, scaleB: 0, a_type: {t}, b_type: {t}, c_type: {t}, d_type: {t}, "
    f"scale_type: f32_r, bias_type: f32_r, compute_type: c_f32_r, activation_type: none, "
    f"flush: false, rotating: 512, cold_iters: 0, iters: 0, call_count: {calls}}}\n"
    for m, n, k, ta, tb, t, calls in LOG_ROWS)
BBS_NN_LIB = "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"


@pytest.fixture(params=["sim", "rocm"])
def env(request, tmp_path, monkeypatch):
    """(hipblaslt_path, platform keywords) of one platform, in a fresh working directory with
    the workload log in it."""
    monkeypatch.chdir(tmp_path)
    Path("hipblaslt-log-mask64.yaml").write_text(LOG_TEXT)
    for var in ("HIPBLASLT_TENSILE_LIBPATH", "GEKO_HIPBLASLT_PATH", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "SLURM_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    if request.param == "sim":
        return None, {"platform": "sim"}
    hip = build_fake_hipblaslt(tmp_path / "hipBLASLt", fixture_logic("gfx950"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(INVOKE_PATH), os.environ.get("PYTHONPATH")) if p))
    return str(hip), {}


def platform_of(frame: pd.DataFrame) -> set:
    return set(frame["platform"])


# --- Module Reference ------------------------------------------------------------------------

def test_bench_module(env):
    from geko_lib import bench

    hipblaslt_path, kw = env
    df = bench.log.parse("hipblaslt-log-mask64.yaml", as_df=True)
    assert len(df) == 4 and {"M", "N", "K", "call_count"} <= set(df.columns)
    assert bench.log.parse("hipblaslt-log-mask64.yaml", as_df=False)[0]["call_count"] == 40

    summary_df, unique_df = bench.log.summarize(
        hipblaslt_path=hipblaslt_path,
        log_file="hipblaslt-log-mask64.yaml",
        output_dir="workdir",
        keep_thr=0.1,
        device=0, **kw
    )
    written = pd.read_csv("workdir/summary.csv")
    assert len(written) == len(summary_df) and {"% of total", "total (us)", "us",
                                                "hipblaslt-Gflops"} <= set(written.columns)
    assert written["% of total"].is_monotonic_decreasing
    assert len(pd.read_csv("workdir/gemms.csv")) == len(unique_df) <= 4
    # the benchmark log and its output, as the original leaves them
    assert Path("workdir/hipblaslt-log-mask64.yaml").is_file()
    out = bench.utils.parse_benchmark_output("workdir/hipblaslt-log-mask64.out")
    assert len(out) == 4 and {"solutionIdx", "solution", "kernel"} <= set(out.columns)

    rows = bench.log.update(bench.log.parse("hipblaslt-log-mask64.yaml", as_df=False),
                            flush=True, rotating=256)
    assert all(r["flush"] and r["rotating"] == 256 and r["iters"] == 100 for r in rows)


def test_optim_module(env):
    from geko_lib import library, optim
    from geko_lib.schemas import GemmConfig, GemmType

    hipblaslt_path, kw = env
    gemm_type = GemmType(
        transA="N", transB="N",
        a_type="bf16_r", b_type="bf16_r",
        c_type="bf16_r", compute_type="f32_r"
    )
    gemm_config = GemmConfig(
        gemm_type=gemm_type,
        sizes=[[16, 2048, 1, 15360], [512, 512, 1, 512]]
    )
    config = optim.configure(
        hipblaslt_path=hipblaslt_path,
        gemm_configs=gemm_config,
        output_dir="workdir/optimizations",
        arch="gfx950", **kw
    )
    assert config and all(p.parent == Path("workdir/optimizations") for p in config)
    assert all(p.name.startswith("BBS_NN_") for p in config)

    optim.run(
        hipblaslt_path=hipblaslt_path,
        tuning_dir="workdir/optimizations",
        devices=[0, 1, 2, 3],
        retry=True, **kw
    )
    logic = sorted(Path("workdir/optimizations").glob("build_*/3_LibraryLogic/*.yaml"))
    assert len(logic) == len(config)

    library.operations.merge_solutions("workdir/optimizations", epilogues=False).dump(
        "workdir/libs")
    results = optim.analyze(
        hipblaslt_path=hipblaslt_path,
        lib_dir="workdir/libs",
        output_dir="workdir/results",
        up_thr=1.03,
        error_thr=0.03, **kw
    )
    raw = pd.read_csv("workdir/results/raw_results.csv")
    assert len(raw) == 2 and {"ratio", "us_reference", "us_tuned", "error_tuned",
                              "kept"} <= set(raw.columns)
    assert len(results) == int(raw["kept"].sum())
    assert (results["ratio"] >= 1.03).all() and (results["error_tuned"] < 0.03).all()
    metrics = json.loads(Path("workdir/results/metrics.json").read_text())
    assert metrics["counts"]["n_kept"] == len(results)


def test_search_module(env):
    from geko_lib import search

    hipblaslt_path, kw = env
    df = pd.DataFrame([
        {'M': 512, 'N': 512, 'K': 512, 'batch_count': 1,
         'transA': 'N', 'transB': 'N',
         'a_type': 'bf16_r', 'b_type': 'bf16_r',
         'c_type': 'bf16_r', 'd_type': 'bf16_r',
         'compute_type': 'f32_r', 'us': 125.5}
    ])
    configs = search.configure(
        df=df,
        duration=0.04,  # Target 40ms benchmark duration
        iters=100,
        cold_iters=20,
        rotating=512
    )
    assert len(configs) == 1 and configs[0]["iters"] == configs[0]["cold_iters"] == 319
    assert configs[0]["requested_solution_num"] == -1 and configs[0]["algo_method"] == 0

    winners = search.run(
        hipblaslt_path=hipblaslt_path,
        configs=configs,
        output_dir="search_results",
        devices=[0, 1, 2, 3, 4, 5, 6, 7], **kw
    )
    assert len(winners) == 1 and winners["us"].iloc[0] > 0
    assert Path("search_results/gemms_0.yaml").is_file()
    assert Path("search_results/gemms_0.out").is_file()
    assert not Path("search_results/failed_jobs.log").exists()


def test_library_module(env, tmp_path):
    from geko_lib import library

    hipblaslt_path, kw = env
    shutil.copy(FIXTURES / "tensile_logic" / BBS_NN_LIB, BBS_NN_LIB)
    lib = library.operations.load_library(BBS_NN_LIB)
    assert isinstance(lib, library.Library) and lib.sizes

    Path("optimized_libs").mkdir()
    shutil.copy(BBS_NN_LIB, "optimized_libs")
    collection = library.operations.load_collection("optimized_libs/")
    assert isinstance(collection, library.LibraryCollection) and list(collection) == [BBS_NN_LIB]
    collection.trim()
    collection.add_epilogues()
    assert all(lib.problem_type["UseBias"] for lib in collection.values())
    pairs = collection.create_bench_input(
        output_dir="benchmarks",
        verify=True,
        duration=1.0,
        beta=True
    )
    bench_file, verify_file = pairs[0]
    assert bench_file.is_file() and verify_file.is_file()
    rows = yaml.safe_load(bench_file.read_text())
    assert len(rows) == len(lib.sizes) and all(r["beta"] == 1.0 for r in rows)

    # merge: two tuning outputs of one library name become one library
    for job in ("build_a", "build_b"):
        logic = Path("workdir/optimizations", job, "3_LibraryLogic")
        logic.mkdir(parents=True)
        shutil.copy(BBS_NN_LIB, logic)
    merged = library.operations.merge_solutions(
        input_dir="workdir/optimizations",
        epilogues=True
    )
    assert len(merged) == 1
    merged.dump("workdir/merged")

    # filter and save: the rows of a results table pick their sizes out of the libraries
    m, n, b, k = lib.sizes[0][0][:4]
    results_df = pd.DataFrame([{"lib": BBS_NN_LIB, "m": m, "n": n, "batch_count": b, "k": k}])
    filtered = library.operations.from_dataframe(
        df=results_df,
        lib_dir="optimized_libs"
    )
    filtered.dump("final/")
    shipped = library.operations.load_library(Path("final") / BBS_NN_LIB)
    assert [s[0][:4] for s in shipped.sizes] == [[m, n, b, k]]


def test_schemas_module():
    from geko_lib.constants import DTYPE, GEMM_TYPE_FIELDS, LOG_FIELDS
    from geko_lib.schemas import GemmConfig, GemmType

    gemm_type = GemmType.from_hipblaslt(
        "T", "N", "f16_r", "f16_r", "f16_r", "f32_r"
    )
    assert GemmType.from_tensile("N", "T", "H", "H", "S").gemm_name == "HHS_NT"
    assert gemm_type.gemm_name == "HHS_TN" and gemm_type.d_type == "f16_r"
    assert gemm_type == GemmType(**dict(zip(GEMM_TYPE_FIELDS, (
        "T", "N", "f16_r", "f16_r", "f16_r", "f32_r"))))
    gemm_config = GemmConfig(
        gemm_type=gemm_type,
        sizes=[[1024, 1024, 1, 1024], [2048, 2048, 1, 2048]],
    )
    rows = gemm_config.workload_log_rows()
    assert [(r["M"], r["N"], r["batch_count"], r["K"]) for r in rows] == [
        (1024, 1024, 1, 1024), (2048, 2048, 1, 2048)]
    assert all(set(r) <= set(LOG_FIELDS) and r["compute_type"] == "c_f32_r" for r in rows)
    assert DTYPE["bf16_r"] == "B" and DTYPE["f8_r"] == "F8"


def test_utils_module(env, tmp_path):
    from geko_lib.errors import GekoError
    from geko_lib.utils import build_tensilelite_client, parse_devices, run_silent_command

    hipblaslt_path, _ = env
    run_silent_command(["ls", "-la", str(tmp_path)])
    with pytest.raises(GekoError, match="exit code"):
        run_silent_command(["ls", str(tmp_path / "missing")])
    assert parse_devices("0,1,2") == [0, 1, 2]
    if hipblaslt_path is None:
        return  # the client belongs to a hipBLASLt checkout
    build_dir = "build_tmp"
    client = build_tensilelite_client(hipblaslt_path, build_dir)
    assert client.is_file() and Path(build_dir, "hash.txt").is_file()


# --- Common Usage Patterns ---------------------------------------------------------------------

def test_pattern_1_ga_optimization(env):
    from geko_lib import bench, library, optim
    from geko_lib.constants import GEMM_TYPE_FIELDS
    from geko_lib.schemas import GemmConfig, GemmType

    hipblaslt_path, kw = env
    workdir = Path("workdir")
    log_file = "hipblaslt-log-mask64.yaml"

    summary_df, unique_df = bench.log.summarize(
        hipblaslt_path,
        log_file,
        output_dir=workdir,
        keep_thr=0.1,
        device=0, **kw
    )
    for gemm_type, gby in unique_df.groupby(list(GEMM_TYPE_FIELDS)):
        sizes = gby[["m", "n", "batch_count", "k"]].values.tolist()
        gemm_type = GemmType(**dict(zip(GEMM_TYPE_FIELDS, gemm_type)))
        optim.configure(
            hipblaslt_path,
            GemmConfig(gemm_type, sizes),
            workdir / "optimizations",
            arch="gfx950", **kw
        )
    optim.run(
        hipblaslt_path,
        tuning_dir=workdir / "optimizations",
        devices=[0, 1, 2, 3],
        retry=True, **kw
    )
    merged = library.operations.merge_solutions(
        workdir / "optimizations",
        epilogues=True
    )
    merged.dump(workdir / "merged_libs")
    results_df = optim.analyze(
        hipblaslt_path,
        lib_dir=workdir / "merged_libs",
        output_dir=workdir / "results",
        up_thr=1.03,
        error_thr=0.03, **kw
    )
    final = library.operations.from_dataframe(
        results_df,
        lib_dir=workdir / "merged_libs"
    )
    final.dump("final/")

    raw = pd.read_csv(workdir / "results" / "raw_results.csv")
    assert len(raw) == len(unique_df) and raw["verified"].all()
    shipped = [library.operations.load_library(p) for p in Path("final").glob("*.yaml")]
    assert sum(len(lib.sizes) for lib in shipped) == len(results_df) == int(raw["kept"].sum())
    # the merged libraries carry the epilogue variants the original adds
    assert all("_Bias" in p.name for p in (workdir / "merged_libs").glob("*.yaml"))


def test_pattern_2_dense_search(env):
    from geko_lib import bench, library, optim, search

    hipblaslt_path, kw = env
    workdir = Path("workdir")
    log_file = "hipblaslt-log-mask64.yaml"

    summary_df, uniq_df = bench.log.summarize(
        hipblaslt_path,
        log_file,
        output_dir=workdir,
        keep_thr=0.1,
        device=0, **kw
    )
    configs = search.configure(summary_df, duration=0.04)
    winners = search.run(
        hipblaslt_path,
        configs=configs,
        output_dir=workdir / "search",
        devices=[0, 1, 2, 3, 4, 5, 6, 7], **kw
    )
    if hipblaslt_path is not None:
        match_table = Path(hipblaslt_path) / "build/release/device-library/MatchTable.yaml"
        libs = library.operations.extract_solutions(winners, match_table)
    else:  # the sim platform has no MatchTable: it extracts its own solutions
        libs = library.operations.extract_solutions(winners, **kw)
    libs.dump(workdir / "libs")
    results = optim.analyze(
        hipblaslt_path,
        lib_dir=workdir / "libs",
        output_dir=workdir / "results",
        device=0,
        up_thr=1.03, **kw
    )
    library.from_dataframe(results, workdir / "libs").dump(workdir / "final_libs")

    assert len(winners) == len(uniq_df) and (winners["solution_index"] >= 0).all()
    raw = pd.read_csv(workdir / "results" / "raw_results.csv")
    assert len(raw) == len(uniq_df)
    shipped = [library.operations.load_library(p) for p in (workdir / "final_libs").glob("*.yaml")]
    assert sum(len(lib.sizes) for lib in shipped) == len(results)
    for lib in shipped:  # every shipped size is a kept GEMM
        for size, _ in lib.sizes:
            m, n, b, k = size[:4]
            assert ((results["m"] == m) & (results["n"] == n) & (results["k"] == k)).any()


def test_pattern_3_custom_library_manipulation(env):
    from geko_lib import library

    # the logic fixture's sizes all have K = 15360: half of them get a small K, so the
    # README's filter keeps some and drops some
    mine = library.operations.load_library(FIXTURES / "tensile_logic" / BBS_NN_LIB)
    for size, _ in mine.sizes[::2]:
        size[3] = 1024
    mine.source = None
    Path("my_library.yaml").write_text(mine.text())
    lib = library.operations.load_library("my_library.yaml")
    lib.add_epilogues()
    bench_file, verify_file = lib.create_bench_input(
        output_dir="benchmarks",
        verify=True,
        duration=2.0,
        beta=True,
        initialization="trig_float"
    )
    filtered_sizes = [size for size in lib.sizes if size[0][3] < 2048]  # Keep small K
    lib.sizes = filtered_sizes
    lib.trim()
    lib.dump("modified_libs")

    assert bench_file.is_file() and verify_file.is_file()
    assert all(r["initialization"] == "trig_float" for r in yaml.safe_load(bench_file.read_text()))
    saved = library.operations.load_library(Path("modified_libs") / "my_library.yaml")
    assert len(saved.sizes) == 4 and all(size[3] < 2048 for size, _ in saved.sizes)
    used = {entry[0] for _, entry in saved.sizes}
    assert used == set(range(len(saved.solutions)))  # trim dropped the unused solutions


def test_pattern_4_custom_benchmarking(env):
    from geko_lib import bench, library

    hipblaslt_path, kw = env
    Path("optimized_libs").mkdir()
    shutil.copy(FIXTURES / "tensile_logic" / BBS_NN_LIB, "optimized_libs")
    Path("modified_libs").mkdir()
    lib = library.operations.load_library(Path("optimized_libs") / BBS_NN_LIB)
    lib.sizes = lib.sizes[:2]
    lib.trim()
    lib.dump("modified_libs")
    bench_file, _ = lib.create_bench_input(output_dir=".", duration=0.1)
    shutil.copy(bench_file, "custom_bench.yaml")
    bench.compare(hipblaslt_path=hipblaslt_path, lib_dir="optimized_libs",
                  custom_lib_dir="ref_build", benchmark_dir="benchmarks", device=0, **kw)

    results = bench.utils.parse_benchmark_output_dir(
        "benchmarks",
        suffix="_bench"
    )
    library.operations.create(hipblaslt_path, "modified_libs", "build", **kw)
    benchmark_df = bench.run(
        hipblaslt_path=hipblaslt_path,
        bench_file="custom_bench.yaml",
        output_file="results/custom_bench.out",
        custom_lib_dir="build",
        device=0,
        cache=True, **kw
    )
    comparison = bench.compare(
        hipblaslt_path=hipblaslt_path,
        lib_dir="optimized_libs",
        custom_lib_dir="build",
        benchmark_dir="benchmarks",
        device=0, **kw
    )

    n_sizes = len(library.operations.load_library(Path("optimized_libs") / BBS_NN_LIB).sizes)
    assert len(results) == 2 * n_sizes  # the reference and the tuned output of one library
    assert set(results["file"]) == {f"{Path(BBS_NN_LIB).stem}_bench-reference.out",
                                    f"{Path(BBS_NN_LIB).stem}_bench-tuned.out"}
    assert len(benchmark_df) == 2 and Path("results/custom_bench.out").is_file()
    again = bench.run(hipblaslt_path=hipblaslt_path, bench_file="custom_bench.yaml",
                      output_file="results/custom_bench.out", custom_lib_dir="build", device=0,
                      cache=True, **kw)
    assert list(again["us"]) == pytest.approx(list(benchmark_df["us"]), rel=1e-5)
    assert len(comparison) == n_sizes and {"ratio", "kept", "lib"} <= set(comparison.columns)


def test_a_call_without_a_platform_runs_on_sim_and_says_so(tmp_path, monkeypatch, caplog):
    from geko_lib import bench

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GEKO_HIPBLASLT_PATH", raising=False)
    Path("log.yaml").write_text(LOG_TEXT)
    with caplog.at_level("WARNING", logger="geko"):
        summary_df, _ = bench.log.summarize(log_file="log.yaml", output_dir="w", keep_thr=0.1)
    assert "running on the sim platform" in caplog.text
    assert set(summary_df["platform"]) == {"sim"}
