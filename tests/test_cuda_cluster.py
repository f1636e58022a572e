"""The cluster split-K CUDA C++ kernel (geko_lib/platforms/cuda/cluster_gemm.py): configs and
their names, feasibility, the source's named parameters, the cubin cache's key and the loader's
refusal of a cubin of another SM, all without a GPU; an NVRTC build where cuda.core and NVRTC
are installed; the numerics on a GPU (``gpu``) against the float32 reference, poisoned output."""
import math
import struct

import numpy as np
import pytest

from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms.cuda import cluster_gemm as cg
from geko_lib.platforms.cuda import cluster_source
from tests.conftest import _has_gpu

BF16_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
F16_TN = GemmType("T", "N", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")


def problem(m, n, k, gemm_type=BF16_TN):
    return GemmProblem(gemm_type, m, n, 1, k)


def test_names_round_trip_and_carry_the_shape():
    cfg = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8)
    assert cfg.name == "cuda_cluster_m64n16k128_w4x1_s6_c8"
    assert (cfg.block_m, cfg.block_n, cfg.threads) == (64, 16, 160)
    assert cg.ClusterConfig.from_name(cfg.name) == cfg
    assert cg.ClusterConfig.from_params(cfg.to_params()) == cfg
    half = cg.ClusterConfig(2, 2, 2, 4, 64, 4, 16, fp16=1)
    assert cg.ClusterConfig.from_name(half.name) == half
    ablated = cg.ClusterConfig(2, 2, 2, 4, 64, 4, 16, ablate=1)
    assert ablated.name.endswith("_ablate1") and cg.ClusterConfig.from_name(ablated.name) == ablated
    assert "GEKO_ABLATE" not in cfg.defines() and ablated.defines()["GEKO_ABLATE"] == 1
    for bad in ("cuda_cluster_m60n16k128_w4x1_s6_c8", "triton_decode_tma_16x64x128"):
        with pytest.raises(cg.ClusterConfigError):
            cg.ClusterConfig.from_name(bad)
    with pytest.raises(cg.ClusterConfigError, match="unknown"):
        cg.ClusterConfig.from_params({**cfg.to_params(), "split": 2})


def test_source_parameters_are_the_configs_defines():
    cfg = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8)
    defines = cfg.defines()
    for name in defines:
        assert name in cluster_source.SOURCE
    # the cluster size is a launch parameter: every cluster size shares one build
    assert cfg.compiled().defines() == cg.ClusterConfig(4, 1, 1, 2, 128, 6, 1).defines()
    assert f"extern \"C\" __global__" in cluster_source.SOURCE
    assert cluster_source.KERNEL_NAME in cluster_source.SOURCE


def test_shared_memory_is_the_ring_or_the_partial_tile_plus_barriers():
    # 1024 B to align the swizzled boxes, then 6 stages x 2 boxes x (64 + 8) rows x 128 B
    ring = cg.ClusterConfig(4, 1, 1, 1, 128, 6, 8)
    assert cg.smem_bytes(ring) == 1024 + 6 * 2 * 72 * 128 + 16 * 6
    tile = cg.ClusterConfig(4, 1, 2, 16, 64, 1, 1)  # 128 x 128 fp32 partial > 1 stage
    assert cg.smem_bytes(tile) == 1024 + 128 * 128 * 4 + 16


def test_feasibility_names_what_stops_a_config():
    cfg = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8)
    assert cg.infeasible_reason(cfg, problem(1280, 16, 8192)) is None
    nn = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    cases = {problem(1280, 16, 8192, nn): "TN",
             problem(1280, 16, 8192, F16_TN): "built for bf16",
             problem(1280, 16, 8100): "multiple of block_k",
             problem(1282, 16, 8192): "multiple of 4",
             problem(1280, 16, 512): "K blocks",
             problem(1280, 2, 8192): "padding"}
    for p, words in cases.items():
        assert words in (cg.infeasible_reason(cfg, p) or ""), p.name
    huge = cg.ClusterConfig(4, 1, 1, 16, 256, 8, 1)
    assert "shared memory" in cg.infeasible_reason(huge, problem(1280, 128, 8192))


def test_candidates_are_feasible_and_fill_the_gpu():
    for p in (problem(1280, 1, 8192), problem(8192, 96, 1024), problem(4096, 128, 12288)):
        found = cg.candidate_configs(p)
        assert found, p.name
        for cfg in found:
            assert cg.infeasible_reason(cfg, p) is None
            ctas = -(-p.m // cfg.block_m) * -(-p.n // cfg.block_n) * cfg.cluster
            assert cg.CTA_RANGE[0] <= ctas <= cg.CTA_RANGE[1]
        assert len({cfg.cluster for cfg in found}) > 1


def test_cache_key_changes_with_everything_a_cubin_depends_on(monkeypatch):
    cfg = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8)
    key = cg.cache_key(cfg, "13.0", "13000")
    assert key == cg.cache_key(cg.ClusterConfig(4, 1, 1, 2, 128, 6, 2), "13.0", "13000")
    others = {cg.cache_key(cg.ClusterConfig(4, 1, 1, 2, 128, 5, 8), "13.0", "13000"),
              cg.cache_key(cfg, "13.1", "13000"), cg.cache_key(cfg, "13.0", "13010"),
              cg.cache_key(cfg, "13.0", "13000", arch="sm_100a")}
    monkeypatch.setattr(cluster_source, "SOURCE", cluster_source.SOURCE + "\n")
    others.add(cg.cache_key(cfg, "13.0", "13000"))
    assert key not in others and len(others) == 5


def test_cubins_live_beside_the_warm_start_cache(monkeypatch, tmp_path):
    from geko_lib.platforms.cuda import warm

    monkeypatch.setenv(warm.CACHE_ENV, str(tmp_path))
    assert cg.cubin_dir() == tmp_path / "cuda-cubins"
    assert warm.cache_dir() == tmp_path / "cuda-warm"


def elf(sm: int) -> bytes:
    """A 64-bit ELF header as NVRTC writes a cubin's: the SM in e_flags bits 8-15."""
    head = bytearray(64)
    head[:5] = b"\x7fELF\x02"
    struct.pack_into("<I", head, 0x30, 0x06000004 | (sm << 8))
    return bytes(head)


def test_loader_refuses_a_cubin_of_another_sm():
    assert cg.cubin_sm(elf(90)) == 90
    cg.check_arch(elf(90), 90)
    with pytest.raises(cg.ClusterConfigError, match="sm_100.*sm_90"):
        cg.check_arch(elf(100), 90)
    with pytest.raises(cg.ClusterConfigError, match="ELF"):
        cg.check_arch(b"not a cubin", 90)


def _nvrtc_available() -> bool:
    try:
        cg.nvrtc_version()
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _nvrtc_available(), reason="cuda.core / NVRTC not installed")
def test_nvrtc_builds_a_cubin_for_sm90_and_caches_it(monkeypatch, tmp_path):
    from geko_lib.platforms.cuda import warm

    monkeypatch.setenv(warm.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(warm, "_driver_version", lambda: "test")
    cfg = cg.ClusterConfig(2, 1, 1, 1, 64, 4, 4)
    code = cg.cubin(cfg)
    assert cg.cubin_sm(code) == cg.SM
    cached = list((tmp_path / "cuda-cubins").glob("*.cubin"))
    assert len(cached) == 1 and cached[0].read_bytes() == code
    monkeypatch.setattr(cg, "compile_cubin", lambda cfg: pytest.fail("compiled again"))
    assert cg.cubin(cg.ClusterConfig(2, 1, 1, 1, 64, 4, 16)) == code  # another cluster size


# --------------------------------------------------------------------------------------------
# on a GPU

GPU_CASES = [((1280, 1, 8192), cg.ClusterConfig(2, 1, 1, 1, 128, 6, 8)),
             ((1280, 16, 8192), cg.ClusterConfig(4, 1, 1, 2, 128, 6, 16)),
             ((1792, 56, 5120), cg.ClusterConfig(4, 1, 1, 7, 64, 4, 4)),  # odd fragments
             ((8192, 24, 1024), cg.ClusterConfig(4, 1, 1, 3, 64, 4, 1)),
             ((1280, 48, 8192), cg.ClusterConfig(2, 2, 2, 3, 128, 4, 8)),
             ((4096, 128, 12288), cg.ClusterConfig(4, 2, 2, 8, 64, 3, 2)),
             ((1000, 3, 2048), cg.ClusterConfig(4, 1, 1, 1, 64, 2, 3)),  # ragged M and N
             ((1280, 16, 8192, F16_TN), cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8, fp16=1))]


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu() or not _nvrtc_available(), reason="needs a GPU, cuda.core")
@pytest.mark.parametrize("shape,cfg", GPU_CASES, ids=[c.name for _, c in GPU_CASES])
def test_cluster_kernel_matches_the_reference(shape, cfg):
    from geko_lib.platforms.cuda import timing

    p = problem(*shape)
    assert cg.infeasible_reason(cfg, p) is None
    ops = timing.make_operands(p, 0, seed=3, count=1)[0]
    error = timing.checked_error(cg.launcher(cfg, ops), ops, calls=3)
    assert error < 1e-2, f"{cfg.name} on {p.name}: relative error {error}"
    # deterministic: the same bits on every call (no atomics, fixed summation order)
    first = ops.d.clone()
    cg.launcher(cfg, ops)()
    assert bool((first == ops.d).all())


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu() or not _nvrtc_available(), reason="needs a GPU, cuda.core")
def test_cluster_kernel_replays_in_a_cuda_graph():
    import torch

    from geko_lib.platforms.cuda import timing

    p = problem(1280, 16, 8192)
    cfg = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8)
    ops = timing.make_operands(p, 0, seed=5, count=1)[0]
    call = cg.launcher(cfg, ops)
    call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    ops.d.fill_(math.nan)
    graph.replay()
    torch.cuda.synchronize()
    assert timing.relative_error(ops.d, timing.reference(ops)) < 1e-2


# --------------------------------------------------------------------------------------------
# the family among the cuda platform's kernels: library logic, the tune mode, coverage

CLUSTER = cg.ClusterConfig(2, 1, 1, 2, 128, 4, 4)
DECODE = problem(1024, 16, 4096)


def cuda_solution(cfg=CLUSTER) -> dict:
    from geko_lib.platforms.cuda import tune

    return tune.solution_of(cfg)


def test_a_cuda_solution_is_library_logic_the_platform_accepts(tmp_path):
    from geko_lib.platforms import PlatformError
    from geko_lib.platforms.cuda import combine, families, solutions

    sol = cuda_solution()
    assert sol["Backend"] == "cuda" and sol["SolutionNameMin"] == CLUSTER.name
    combine.write([(DECODE, sol, 1.0)], tmp_path / "lib")
    found = solutions.solutions_in(tmp_path / "lib", validate=True)
    assert found[(DECODE.type, DECODE.size)]["CudaKernel"] == CLUSTER.to_params()
    assert families.of(sol).feasible(sol, DECODE) == CLUSTER
    with pytest.raises(PlatformError, match="multiple of block_k"):
        families.CUDA.feasible(sol, problem(1024, 16, 4000))
    with pytest.raises(PlatformError, match="CudaKernel"):
        solutions.validate_solution({**sol, "CudaKernel": {"warps": 2}}, source="lib.yaml")


def test_geko_coverage_counts_a_gemm_served_by_a_cuda_kernel(tmp_path, capsys):
    import json

    from geko_lib import cli
    from geko_lib.platforms.cuda import combine

    combine.write([(DECODE, cuda_solution(), 1.0)], tmp_path / "lib")
    rows = [f"- {{function: matmul, M: {m}, N: 16, K: 4096, transA: T, transB: N, "
            "batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
            f"compute_type: c_f32_r, call_count: {calls}}}" for m, calls in ((1024, 80),
                                                                           (2048, 20))]
    (tmp_path / "app.yaml").write_text("\n".join(rows) + "\n")
    timings = tmp_path / "times.csv"
    timings.write_text("transA,transB,m,n,batch_count,k,a_type,b_type,c_type,d_type,"
                       "compute_type,us\n" + "".join(
                           f"T,N,{m},16,1,4096,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r,5.0\n"
                           for m in (1024, 2048)))
    assert cli.main(["coverage", "--library", str(tmp_path / "lib"), "--workload",
                     str(tmp_path / "app.yaml"), "--timings", str(timings), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["served"]["n_gemms"] == 1 and report["served"]["n_calls"] == 80


class FakeMeasurer:
    """A tune measurer whose side-by-side round ranks the configs by a given score."""

    def __init__(self, score, edge_pays=True):
        self.score, self.rejected, self.raced = score, {}, []
        self.pays, self.edges_timed = edge_pays, []

    def finalists(self, configs, problem):
        self.raced = list(configs)
        return [self.score(c) for c in configs]

    def edge_pays(self, cfg, problem):
        self.edges_timed.append(cfg)
        return self.pays


def test_cuda_kernels_race_the_triton_finalists_and_ship_when_faster(monkeypatch):
    from geko_lib.platforms.cuda import triton_gemm as tg
    from geko_lib.platforms.cuda import tune

    one = tune.TritonTuning("BBS_TN_0", BF16_TN, [DECODE.size], "decode",
                            {}, ga=dict(tune.DECODE_GA_DEFAULTS))
    triton = tg.TritonConfig("decode_tma", 16, 64, 128, 1, 1, 4, 4)
    known = {triton: np.array([1000.0])}
    monkeypatch.setattr(cg, "available", lambda: True)
    seeds = cg.seed_configs(DECODE)
    fast = FakeMeasurer(lambda c: 2000.0 if c == seeds[0] else 900.0)
    picked = tune._pick_finalist(one, DECODE, known, fast)
    assert fast.raced == [triton] + seeds
    assert picked[1] == {**tune.solution_of(seeds[0]), "EarlyEdge": True}
    assert picked[1]["Backend"] == "cuda" and fast.edges_timed == [seeds[0]]
    slow = FakeMeasurer(lambda c: 1000.0 if c == triton else 500.0)
    assert tune._pick_finalist(one, DECODE, known, slow)[1]["Backend"] == "triton"
    assert slow.edges_timed == []  # a Triton kernel has no early edge to choose
    off = FakeMeasurer(lambda c: 1000.0)
    one.ga["cuda_kernels"] = False  # the option turns the family off
    tune._pick_finalist(one, DECODE, known, off)
    assert off.raced == [triton]
    monkeypatch.setattr(cg, "available", lambda: False)  # no cuda.core: Triton alone
    one.ga["cuda_kernels"] = True
    tune._pick_finalist(one, DECODE, known, off)
    assert off.raced == [triton]


def test_a_cluster_kernel_whose_early_edge_does_not_pay_ships_with_it_off(monkeypatch):
    """Issue 39: in one decode layer the early edge cost one GEMM 5.6 us. The tune times the
    winner's edge after a short kernel; where it does not pay, the solution says
    ``EarlyEdge: false`` and is named for it, so a library holding the same kernel both ways
    keeps both solutions."""
    from geko_lib import library as liblogic
    from geko_lib.platforms.cuda import tune

    one = tune.TritonTuning("BBS_TN_0", BF16_TN, [DECODE.size], "decode",
                            {}, ga=dict(tune.DECODE_GA_DEFAULTS))
    monkeypatch.setattr(cg, "available", lambda: True)
    seeds = cg.seed_configs(DECODE)
    measurer = FakeMeasurer(lambda c: 2000.0 if c == seeds[0] else 900.0, edge_pays=False)
    _, off, _ = tune._pick_finalist(one, DECODE, {}, measurer)
    assert off["EarlyEdge"] is False and off["KernelNameMin"] == seeds[0].name
    assert off["SolutionNameMin"] == seeds[0].name + "_plainedge"
    on = tune.with_edge_choice(tune.solution_of(seeds[0]), True)
    assert on["SolutionNameMin"] == seeds[0].name
    other = problem(2048, 16, 4096)
    lib = liblogic.build(tune.library_template(one), [(DECODE, off, 1.0), (other, on, 1.0)],
                         key=lambda sol: sol["SolutionNameMin"])
    assert [s["EarlyEdge"] for s in lib.solutions] == [False, True]


def _edge_of(solution, monkeypatch, env=None):
    from geko_lib.platforms.cuda import platform as cp

    if env is None:
        monkeypatch.delenv("GEKO_CUDA_PDL", raising=False)
    else:
        monkeypatch.setenv("GEKO_CUDA_PDL", env)
    launch = cp.CudaPlatform(cp.SearchSettings()).operand_launcher(solution, DECODE, 0)
    return launch.pdl


def test_the_runtime_launches_a_cluster_kernel_with_the_edge_its_solution_chose(monkeypatch):
    """The solution's ``EarlyEdge`` reaches the prepared launch; a solution without one keeps
    the edge on (libraries from before the choice); ``GEKO_CUDA_PDL=0`` turns it off
    whatever the solution says."""
    from geko_lib.platforms.cuda import tune

    sol = cuda_solution()
    assert _edge_of(sol, monkeypatch) is True
    assert _edge_of(tune.with_edge_choice(sol, False), monkeypatch) is False
    assert _edge_of(tune.with_edge_choice(sol, True), monkeypatch) is True
    assert _edge_of(tune.with_edge_choice(sol, True), monkeypatch, env="0") is False


@pytest.mark.parametrize("value, backend, message", [
    ("yes", "cuda", "EarlyEdge must be true or false, not 'yes'"),
    (1, "cuda", "EarlyEdge must be true or false, not 1"),
    (True, "triton", "EarlyEdge is only for cuda kernels, not Triton")])
def test_a_library_s_early_edge_is_refused_where_it_cannot_mean_anything(value, backend,
                                                                        message):
    from geko_lib.platforms import PlatformError
    from geko_lib.platforms.cuda import solutions, tune
    from geko_lib.platforms.cuda import triton_gemm as tg

    sol = cuda_solution() if backend == "cuda" else tune.solution_of(
        tg.TritonConfig("decode_tma", 16, 64, 128, 1, 1, 4, 4))
    with pytest.raises(PlatformError, match=f"lib.yaml: solution 0: {message}"):
        solutions.validate_solution({**sol, "EarlyEdge": value}, source="lib.yaml")
    solutions.validate_solution({**cuda_solution(), "EarlyEdge": False}, source="lib.yaml")


def test_seeds_are_few_feasible_candidates_of_distinct_block_shapes():
    for p in (DECODE, problem(1280, 1, 8192), problem(8192, 48, 1024)):
        seeds = cg.seed_configs(p)
        assert 1 <= len(seeds) <= cg.SEED_COUNT
        assert all(cg.infeasible_reason(c, p) is None for c in seeds)
        shapes = [(c.warps_m, c.frag_m, c.warps_n, c.frag_n) for c in seeds]
        assert len(set(shapes)) == len(shapes)
    assert cg.seed_configs(problem(1024, 16, 4096, GemmType("N", "N", "bf16_r", "bf16_r",
                                                           "bf16_r", "bf16_r", "c_f32_r"))) == []


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu() or not _nvrtc_available(), reason="needs a GPU, cuda.core")
def test_gpu_decode_tuning_races_the_cluster_kernels_and_ships_a_checked_winner(tmp_path):
    """The tune mode's per-GEMM path on a GPU: one Triton seed, no GA, the cluster seeds in
    the side-by-side round; the winner is the faster one, runnable by the runtime."""
    import time

    import torch

    from geko_lib import runtime
    from geko_lib.platforms.cuda import combine, timing
    from geko_lib.platforms.cuda import triton_gemm as tg
    from geko_lib.platforms.cuda import tune

    shard = problem(1280, 16, 8192)
    triton = tg.TritonConfig("decode_tma_atomic", 16, 64, 128, 1, 16, 4, 3)
    one = tune.TritonTuning("BBS_TN_0", BF16_TN, [shard.size], "decode", tune.SPACES["decode"],
                            ga={**tune.DECODE_GA_DEFAULTS, "n_gen": 0},
                            seeds=[[triton.to_params()]])
    measurer = tune.Measurer(one, tmp_path, 0)
    start = time.time()
    picked = tune._tune_one_size(one, tmp_path / "size0", measurer, measurer)
    measurer.close()
    assert picked is not None
    _, sol, gflops = picked
    print(f"picked {sol['SolutionNameMin']} {gflops:.0f} GFLOP/s in {time.time() - start:.1f} s")
    combine.write([(shard, sol, gflops)], tmp_path / "lib")
    rt = runtime.load(tmp_path / "lib", eager="library")
    w = torch.randn(shard.m, shard.k, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(shard.n, shard.k, device="cuda", dtype=torch.bfloat16)
    out = rt.linear(x, w)
    assert timing.relative_error(out, torch.nn.functional.linear(x.float(), w.float())) < 1e-2
    assert rt.coverage()["hits"] == 1


def test_the_weight_as_stored_and_its_transposed_view_share_one_pair_of_tensor_maps(
        monkeypatch):
    """``linear(x, w, d)`` (the runtime's F.linear path, no view made per call) finds the maps
    ``__call__(x, w.T, d)`` made, and the other way round: one key for one pair."""
    from tests.test_runtime_plans import View

    made = []
    monkeypatch.setattr(cg, "tensor_map", lambda t, rows, fp16: made.append(t.ptr) or b"m")
    monkeypatch.setattr(cg, "_check_operand", lambda *args: None)
    prepared = cg.PreparedLaunch(CLUSTER, DECODE, 0)
    w = View(0x9000, (DECODE.m, DECODE.k), (DECODE.k, 1))
    w_t = View(0x9000, (DECODE.k, DECODE.m), (1, DECODE.k))  # w.T: the same memory
    x = View(0x1000, (DECODE.n, DECODE.k), (DECODE.k, 1))
    first = prepared.weight_maps_of(x, w)
    assert prepared.maps_of(x, w_t) is first and prepared.weight_maps_of(x, w) is first
    assert made == [0x9000, 0x1000]  # W's map and X's, once
    prepared.weight_maps_of(View(0x2000, x.shape, x.stride()), w)
    assert len(made) == 4  # new activations: a new pair
