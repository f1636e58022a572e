"""The cuda platform on a real NVIDIA GPU: timing harness, cuBLASLt search, library, runtime,
and a real workflow run. Skipped where there is no GPU (CI); run on the device machine."""

import json
import math

import pytest
import yaml

from geko_lib import library as liblogic
from geko_lib.gemm import GemmProblem, GemmType

pytestmark = pytest.mark.gpu

BF16 = dict(a_type="bf16_r", b_type="bf16_r", c_type="bf16_r", d_type="bf16_r",
            compute_type="c_f32_r")


def problem(trans_a="T", trans_b="N", m=512, n=64, k=1024):
    gemm_type = GemmType(trans_a, trans_b, **BF16)
    return GemmProblem(gemm_type, m, n, 1, k)


@pytest.fixture
def platform():
    from geko_lib.platforms.cuda import CudaPlatform, platform as cp

    return CudaPlatform(cp.SearchSettings(budget_s=1.0, max_candidates=40, finalists=3))


def test_operands_rotate_past_l2_and_are_random():
    from geko_lib.platforms.cuda import timing

    p = problem(m=4096, n=16, k=4096)
    sets = timing.make_operands(p, 0, seed=1)
    total = sum(s.a.numel() * 2 + s.b.numel() * 2 + s.d.numel() * 2 for s in sets)
    assert total >= timing.ROTATING_FACTOR * timing.L2_BYTES_H200
    assert float(sets[0].a.float().abs().mean()) > 0.5  # standard normal, not zeros
    assert not bool((sets[0].a == sets[1].a).all())


@pytest.mark.parametrize("trans_a,trans_b", [("T", "N"), ("N", "N"), ("N", "T"), ("T", "T")])
def test_cublaslt_default_and_enumerated_configs_compute_the_product(trans_a, trans_b):
    from geko_lib.platforms.cuda import cublaslt, timing

    t = timing.torch()
    p = problem(trans_a, trans_b, m=384, n=96, k=640)
    ops = timing.make_operands(p, 0, seed=3, count=1)[0]
    workspace = t.empty(cublaslt.DEFAULT_WORKSPACE, dtype=t.uint8, device="cuda:0")
    with cublaslt.ProblemDescriptors(p) as lt:
        default_cfg, algo = lt.heuristic(1)[0]
        assert timing.checked_error(lt.call(algo, ops, workspace), ops) < 1e-2
        configs = []
        for cfg, algo in lt.enumerate():
            configs.append(cfg)
            assert timing.checked_error(lt.call(algo, ops, workspace), ops) < 1e-2, cfg.name
            if len(configs) == 12:
                break
        assert len(set(configs)) == len(configs) == 12
        rebuilt = lt.checked(cublaslt.AlgoConfig.from_params(configs[3].to_params()))
        assert cublaslt.config_of(rebuilt) == configs[3]
        # the heuristic's picks as a search times them: rebuilt from their configurations
        ranked = lt.heuristic(8)
        for (cfg, built), (same, _) in zip(lt.rebuilt(ranked), ranked):
            assert cfg == same and cublaslt.config_of(built) == cfg
            assert timing.checked_error(lt.call(built, ops, workspace), ops) < 1e-2, cfg.name


def test_time_calls_is_stable_and_uses_a_graph():
    from geko_lib.platforms.cuda import timing

    t = timing.torch()
    p = problem(m=4096, n=128, k=4096)
    sets = timing.make_operands(p, 0, seed=5)
    calls = [lambda o=o: t.matmul(o.x, o.y, out=o.d) for o in sets]
    first, second = timing.time_calls(calls), timing.time_calls(calls)
    assert first.graph and first.calls >= len(sets)
    assert abs(first.us - second.us) / first.us < 0.2


def test_a_screening_timed_without_waiting_reads_as_a_waited_one(platform):
    """timing.start_timing (replays enqueued back to back, no side-stream pass; the search's
    screening) beside time_calls on the same cuBLASLt calls: the same graph, a comparable
    median, and the operands really computed (poisoned output overwritten)."""
    from geko_lib.platforms.cuda import timing

    p = problem(m=4096, n=16, k=4096)
    lt = platform._lt(p)
    sets = timing.make_operands(p, 0, seed=9)
    workspace = platform._workspace(0)
    algo = lt.heuristic(1)[0][1]
    for ops in sets:
        ops.d.fill_(float("nan"))
    calls = [lt.call(algo, ops, workspace) for ops in sets]
    pending = timing.start_timing(calls)
    quick = pending.result()
    waited = timing.time_calls(calls, repeats=3, warmup=1, target_us=300.0)
    assert quick.graph and len(quick.samples) == 3
    assert abs(quick.us - waited.us) / waited.us < 0.25
    assert all(not ops.d.isnan().any() for ops in sets)
    assert timing.checked_error(calls[0], sets[0]) < 1e-2


def test_search_finds_checked_winner_never_slower_than_default(platform):
    from geko_lib import search

    rows = platform.search([problem(m=4096, n=16, k=4096)], None, 0)
    final = rows[rows["stage"] == "final"]
    assert (final["solution_name"] == "cublaslt_heuristic_default").sum() == 1
    assert final["error"].max() < 1e-2
    best = search.winners(rows).iloc[0]
    default_us = float(final.loc[final["solution_name"] == "cublaslt_heuristic_default",
                                 "us"].iloc[0])
    assert float(best["us"]) <= default_us
    assert json.loads(best["params"])["Backend"] in ("cublaslt", "default")


def test_poisoned_output_catches_a_kernel_that_skips_rows():
    from geko_lib.platforms.cuda import timing

    t = timing.torch()
    p = problem(m=256, n=64, k=256)
    ops = timing.make_operands(p, 0, seed=9, count=1)[0]

    def lazy():  # writes all but the last row of D_mem
        ops.d[:, :-1].copy_(t.matmul(ops.x, ops.y)[:, :-1])

    assert math.isinf(timing.checked_error(lazy, ops))


def test_library_round_trip_verify_and_runtime_dispatch(platform, tmp_path):
    from geko_lib import runtime, search
    from geko_lib.platforms.cuda import timing

    p = problem(m=1024, n=32, k=2048)
    rows = platform.search([p], None, 0)
    winners = search.winners(rows)
    libs = tmp_path / "libs"
    libs.mkdir()
    paths = platform.extract(winners, libs)
    lib = liblogic.load(paths[0])
    solution = lib.solutions[0]
    assert solution["Backend"] in ("cublaslt", "default")
    built = platform.create_library(libs, tmp_path / "built")
    verified = platform.verify([p], None, 0, built.parent)
    assert float(verified["error"].iloc[0]) < 1e-2

    rt = runtime.load(libs)
    t = timing.torch()
    x = t.randn(32, 2048, device="cuda", dtype=t.bfloat16)
    w = t.randn(1024, 2048, device="cuda", dtype=t.bfloat16)
    out = rt.linear(x, w)
    ref = t.nn.functional.linear(x.float(), w.float())
    assert timing.relative_error(out, ref) < 1e-2
    rt.linear(t.randn(7, 2048, device="cuda", dtype=t.bfloat16), w)  # not in the library
    cov = rt.coverage()
    expected_hits = 0 if solution["Backend"] == "default" else 1
    assert cov["hits"] == expected_hits and cov["misses"] == 2 - expected_hits


def test_stored_config_from_another_cublaslt_is_refused(platform, tmp_path):
    from geko_lib.platforms import PlatformError

    p = problem()
    cfg = platform._lt(p).heuristic(1)[0][0]
    solution = platform.cublaslt_solution(cfg, 0) | {"CublasLtVersion": 1}
    with pytest.raises(PlatformError, match="re-run the search"):
        platform.launchers(solution, p, [], 0)


def _workload(path, sizes) -> str:
    """A mask-64 style workload of bf16 T/N calls, 100 calls each."""
    rows = []
    for m, n, k in sizes:
        rows.append({"function": "matmul", "M": m, "N": n, "K": k, "lda": k, "ldb": k,
                     "ldc": m, "ldd": m, "stride_a": 0, "stride_b": 0, "stride_c": 0,
                     "stride_d": 0, "alpha": 1.0, "beta": 0.0, "transA": "T", "transB": "N",
                     "batch_count": 1, "scaleA": 0, "scaleB": 0, "a_type": "bf16_r",
                     "b_type": "bf16_r", "c_type": "bf16_r", "d_type": "bf16_r",
                     "scale_type": "f32_r", "bias_type": "f32_r", "compute_type": "c_f32_r",
                     "call_count": 100})
    path.write_text(yaml.safe_dump(rows))
    return str(path)


def test_workflow_search_on_the_gpu(campaign, tmp_path):
    workload = _workload(tmp_path / "small.yaml", ((4096, 16, 4096), (6144, 128, 4096)))
    run = campaign(platform="cuda", arch="h200", devices=[0], workload_log=workload,
                   cuda={"search_budget_s": 1.0})
    run.resources = ["gpu=1", "gpu_slot=1"]
    run.snakemake("final_libs")
    metrics = json.loads(run.path("results", "metrics.json").read_text())
    assert metrics["platform"]["name"] == "cuda" and metrics["platform"]["measured"]
    assert metrics["counts"]["n_attempted"] == 2 and metrics["counts"]["n_invalid"] == 0
    import pandas as pd

    raw = pd.read_csv(run.path("results", "raw_results.csv"))
    assert (raw["error_tuned"] < 1e-2).all() and raw["us_paired_reference"].notna().any()
    if any(run.path("final_libs").glob("*.yaml")):
        from geko_lib import runtime

        assert runtime.load(run.path("final_libs")).solutions


def test_workflow_combines_search_and_tune_on_the_gpu(tmp_path):
    """Target combine on the H200: a dense search and a tune campaign of one decode workload,
    each GEMM's final kernels raced beside cuBLASLt's default; what ships is the fastest
    verified one, and the runtime loads and dispatches the combined library."""
    import pandas as pd

    from geko_lib import runtime

    from .conftest import Campaign

    workload = _workload(tmp_path / "decode.yaml", ((4096, 1, 4096), (6144, 16, 4096)))
    runs = {}
    for mode, extra in (("tune", {"tune_options": {"decode_n_gen": 1, "decode_population": 4,
                                                   "finalists": 2}}),
                        ("search", {"cuda": {"search_budget_s": 1.0}})):
        (tmp_path / mode).mkdir()
        run = Campaign(tmp_path / mode, platform="cuda", arch="h200", devices=[0], mode=mode,
                       workload_log=workload, keep_thr=0.0, up_thr=1.0, epilogues=False,
                       lock_dir=str(tmp_path / "locks"), **extra)
        run.resources = ["gpu=1", "gpu_slot=1"]
        run.snakemake("final_libs")
        runs[mode] = run
    search = runs["search"]
    search.config["combine_with"] = [str(runs["tune"].workdir)]
    search.snakemake("combine")
    results = pd.read_csv(search.path("results", "combined_results.csv"))
    assert len(results) == 2 and results["us_default"].gt(0).all()
    for row in results.to_dict("records"):
        if row["kept"]:
            assert row["error_" + row["winner"]] < 1e-2
            assert row["us_combined"] <= row["us_default"]
        else:
            assert row["winner"] == "default"
    # the dense search beats cuBLASLt's default on 4096 x 1 x 4096 on an H200 (1.17x,
    # bench/RESULTS.md): at least that GEMM ships
    assert results["kept"].any()
    served = runtime.load(search.path("combined_libs"))
    assert len(served.solutions) == int(results["kept"].sum())


def test_search_on_another_device_than_the_current_one(platform):
    """A job leased device 1 must launch there (cuBLASLt follows the current device)."""
    from geko_lib.platforms.cuda import timing

    t = timing.torch()
    if t.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    rows = platform.search([problem(m=1024, n=16, k=1024)], None, 1)
    assert (rows["device"] == 1).all()
    assert rows.loc[rows["stage"] == "final", "error"].max() < 1e-2
