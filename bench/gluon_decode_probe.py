"""A warp-specialized decode kernel in Gluon, beside the shipped Triton kernels (issue 23: the
1280-row q/k/v and o-proj shards).

    python bench/gluon_decode_probe.py --out DIR [--gemms 1280x1x8192,1280x96x8192]
    python bench/gluon_decode_probe.py --compile-only     # sm_90, no GPU needed

Nsight Compute (bench/h200_ncu.sh) showed the Triton decode kernels' time growing with N by
about the tensor-core time per SM, as if their MMAs ran after their loads, where cuBLASLt's
warp-specialized kernel overlaps the two. Triton 3.6's ``tl`` language has no warp
specialization on sm_90 (``warp_specialize=True`` compiles to the same code), but Gluon, in the
same wheel, does: ``gl.warp_specialize`` runs a one-warp TMA producer beside a warpgroup issuing
wgmma, the two handing STAGES shared-memory slots back and forth through mbarriers. The
reduction over split-K is the shipped one (fp32 atomics into a zeroed tile; the last program to
arrive stores D and re-zeroes).

Measured on the H200 (2026-12-02, bench/RESULTS.md): correct, and 3-8% slower than the shipped
Triton kernels on every shard GEMM. So this is a probe, not a template. Per GEMM it times every
config here beside the shipped Triton winner, cuBLASLt's default and the copy floor, side by
side (``timing.time_side_by_side``: CUDA graphs over rotating operands > 4x L2, medians of
interleaved replays). Every kernel is checked against float32 on two consecutive NaN-poisoned
calls. Writes ``gluon_decode_probe.csv``.
"""
import itertools
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)

from geko_lib.gemm import GemmProblem  # noqa: E402
from bench.gemms import parse_gemm, probe_arguments, probe_each  # noqa: E402

# the shipped winners of the TP-8 trace (bench/results/h200_tp8_trace_per_gemm_2026-12-02.csv)
SHIPPED = {(1280, 1): "triton_decode_tma_atomic_16x128x64_g1_k32_w4_s3",
           (1280, 16): "triton_decode_tma_atomic_16x64x128_g1_k16_w4_s3",
           (1280, 48): "triton_decode_tma_atomic_64x64x128_g1_k4_w4_s6",
           (1280, 96): "triton_decode_tma_atomic_128x64x128_g1_k4_w8_s4",
           (8192, 1): "triton_decode_tma_16x64x128_g1_k1_w4_s4",
           (8192, 16): "triton_decode_mmaw_16x64x128_g1_k1_w4_s6",
           (8192, 48): "triton_decode_tma_64x64x128_g1_k1_w4_s6",
           (8192, 96): "triton_decode_mmaw_128x64x64_g1_k1_w8_s6"}
ERR_THR = 1e-2


@gluon.jit
def _load_partition(x_desc, w_desc, x_bufs, w_bufs, ready, empty, r0, c0, kb_start, n_iter,
                    BLOCK_K: gl.constexpr):
    """One warp: the TMA producer, STAGES slots ahead of the MMAs."""
    STAGES: gl.constexpr = x_bufs.type.shape[0]
    for i in range(n_iter):
        slot = i % STAGES
        # a slot starts empty: the first pass waits on the phase before the barrier's first
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)
        k0 = (kb_start + i) * BLOCK_K
        mbarrier.expect(ready.index(slot), x_desc.block_type.nbytes + w_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(w_desc, [c0, k0], ready.index(slot), w_bufs.index(slot))
        tma.async_copy_global_to_shared(x_desc, [r0, k0], ready.index(slot), x_bufs.index(slot))


@gluon.jit
def _mma_partition(x_bufs, w_bufs, ready, empty, n_iter, BLOCK_M: gl.constexpr,
                   BLOCK_N: gl.constexpr, layout: gl.constexpr):
    """The default warpgroup: W [BLOCK_N, BLOCK_K] x X^T [BLOCK_K, BLOCK_M] per slot, one wgmma
    in flight; a slot goes back to the producer once the wgmma that read it has retired."""
    STAGES: gl.constexpr = x_bufs.type.shape[0]
    acc = gl.zeros((BLOCK_N, BLOCK_M), dtype=gl.float32, layout=layout)
    for i in range(n_iter):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        w, x = w_bufs.index(slot), x_bufs.index(slot)
        acc = warpgroup_mma(w, x.permute((1, 0)), acc, is_async=True)
        acc, w, x = warpgroup_mma_wait(num_outstanding=1, deps=(acc, w, x))
        mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES), count=1, pred=i > 0)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
    return (acc, )  # warp_specialize returns the default partition's values as a tuple


@gluon.jit
def decode_ws_kernel(x_desc, w_desc, d_ptr, ws_ptr, count_ptr, R, C, K, sdr, sdc,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                     SPLIT_K: gl.constexpr, STAGES: gl.constexpr, LOAD_REGS: gl.constexpr,
                     num_warps: gl.constexpr):
    """D[R tokens, C weights] = X[R, K] W[C, K]^T for one (token tile, weight panel, K slice)."""
    tile = gl.program_id(0)
    split = gl.program_id(1)
    tiles_r = gl.cdiv(R, BLOCK_M)
    r0 = (tile % tiles_r) * BLOCK_M
    c0 = (tile // tiles_r) * BLOCK_N
    kb_total = gl.cdiv(K, BLOCK_K)
    per_split = gl.cdiv(kb_total, SPLIT_K)
    kb_start = split * per_split
    n_iter = gl.maximum(gl.minimum(kb_start + per_split, kb_total) - kb_start, 0)

    x_bufs = gl.allocate_shared_memory(x_desc.dtype, [STAGES] + x_desc.block_type.shape,
                                       x_desc.layout)
    w_bufs = gl.allocate_shared_memory(w_desc.dtype, [STAGES] + w_desc.block_type.shape,
                                       w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, BLOCK_M, 16])
    (acc, ) = gl.warp_specialize([
        (_mma_partition, (x_bufs, w_bufs, ready, empty, n_iter, BLOCK_M, BLOCK_N, layout)),
        (_load_partition, (x_desc, w_desc, x_bufs, w_bufs, ready, empty, r0, c0, kb_start,
                           n_iter, BLOCK_K)),
    ], [1], [LOAD_REGS])

    rn = c0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
    rm = r0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, layout))
    valid = (rn[:, None] < C) & (rm[None, :] < R)
    d_ptrs = d_ptr + rm[None, :].to(gl.int64) * sdr + rn[:, None].to(gl.int64) * sdc
    if SPLIT_K == 1:
        gl.store(d_ptrs, acc.to(d_ptr.dtype.element_ty), mask=valid)
    else:
        cell = (gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))[:, None] * BLOCK_M
                + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, layout))[None, :])
        tile_ws = ws_ptr + tile.to(gl.int64) * (BLOCK_M * BLOCK_N) + cell
        gl.atomic_add(tile_ws, acc, mask=valid, sem="relaxed", scope="gpu")
        gl.thread_barrier()
        arrived = gl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            gl.thread_barrier()
            total = gl.load(tile_ws, mask=valid, other=0.0, cache_modifier=".cg")
            gl.store(d_ptrs, total.to(d_ptr.dtype.element_ty), mask=valid)
            gl.store(tile_ws, gl.zeros_like(total), mask=valid)
            gl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")


def config_name(block_m, block_n, block_k, split, stages, maxnreg) -> str:
    return f"gluon_decode_ws_{block_m}x{block_n}x{block_k}_k{split}_s{stages}_r{maxnreg}"


def configs_for(problem: GemmProblem) -> list[tuple]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, STAGES, MAXNREG): all tokens in one tile, 64- or
    128-row weight panels, split-K to about one, two (or, for few tokens, three) programs per
    SM, pipelines 4-8 slots deep within the shared memory, and registers for two programs per
    SM (three where the accumulator is small)."""
    tokens = max(16, triton.next_power_of_2(problem.n))
    out = []
    for block_n, (block_k, stages) in itertools.product(
            (64, 128), ((64, 4), (64, 8), (128, 4), (128, 6))):
        panels = -(-problem.m // block_n) * -(-problem.n // tokens)
        blocks = -(-problem.k // block_k)
        if stages * (tokens + block_n) * block_k * 2 > 220 * 1024 or tokens * block_n > 128 * 128:
            continue
        maxnreg = 80 if tokens * block_n <= 64 * 32 else 128
        for waves in (1, 2, 3) if tokens <= 16 else (1, 2):
            split = max(1, min(blocks, math.floor(waves * 132 / panels)))
            out.append((tokens, block_n, block_k, split, stages, maxnreg))
    return list(dict.fromkeys(out))


def launcher(cfg: tuple, ops):
    """A zero-argument call of the Gluon kernel on ``ops`` (timing.Operands of a TN problem)."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    block_m, block_n, block_k, split, stages, maxnreg = cfg
    problem = ops.problem
    x, w, d = ops.b[0], ops.a[0], ops.d[0]  # X [N, K], W [M, K] as stored, D [N, M]
    x_layout = gl.NVMMASharedLayout.get_default_for([block_m, block_k], gl.bfloat16)
    w_layout = gl.NVMMASharedLayout.get_default_for([block_n, block_k], gl.bfloat16)
    x_desc = TensorDescriptor.from_tensor(x, [block_m, block_k], x_layout)
    w_desc = TensorDescriptor.from_tensor(w, [block_n, block_k], w_layout)
    tiles = -(-problem.n // block_m) * -(-problem.m // block_n)
    ws = torch.zeros(tiles * block_m * block_n if split > 1 else 1, dtype=torch.float32,
                     device=d.device)
    counts = torch.zeros(tiles, dtype=torch.int32, device=d.device)
    grid = (tiles, split)
    args = (x_desc, w_desc, d, ws, counts, problem.n, problem.m, problem.k, d.stride(0),
            d.stride(1))

    def call():
        decode_ws_kernel[grid](*args, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                               SPLIT_K=split, STAGES=stages, LOAD_REGS=40, num_warps=4,
                               maxnreg=maxnreg)
    return call


def compile_config(cfg: tuple):
    """One config compiled for sm_90 without a GPU (Triton's compiled kernel)."""
    from triton.backends.compiler import GPUTarget

    block_m, block_n, block_k, split, stages, maxnreg = cfg
    sig = {"x_desc": f"tensordesc<bf16[{block_m}, {block_k}],{_layout_text(block_m, block_k)}>",
           "w_desc": f"tensordesc<bf16[{block_n}, {block_k}],{_layout_text(block_n, block_k)}>",
           "d_ptr": "*bf16", "ws_ptr": "*fp32", "count_ptr": "*i32", "R": "i32", "C": "i32",
           "K": "i32", "sdr": "i32", "sdc": "constexpr"}
    consts = {"sdc": 1, "BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
              "SPLIT_K": split, "STAGES": stages, "LOAD_REGS": 40, "num_warps": 4}
    sig.update({name: "constexpr" for name in consts if name != "sdc"})
    src = gluon._runtime.GluonASTSource(fn=decode_ws_kernel, signature=sig, constexprs=consts)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "maxnreg": maxnreg})


def compile_only(problems) -> None:
    """Compile every config for sm_90 without a GPU: the kernel's front end, layouts and
    warp specialization are checked here, before device time is spent."""
    for problem in problems:
        for cfg in configs_for(problem):
            out = compile_config(cfg)
            ptx = out.asm["ptx"]
            print(problem.name, config_name(*cfg), "shared", out.metadata.shared,
                  "wgmma", ptx.count("wgmma.mma_async"), "setmaxnreg", ptx.count("setmaxnreg"))


def _layout_text(rows, cols) -> str:
    return str(gl.NVMMASharedLayout.get_default_for([rows, cols], gl.bfloat16))



def probe(problem: GemmProblem, device: int) -> list[dict]:
    from geko_lib.platforms.cuda import timing, triton_gemm as tg
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    platform = CudaPlatform(SearchSettings())
    sets = platform._operands(problem, device, salt=11)
    variants = []
    for cfg in configs_for(problem):
        try:
            calls = [launcher(cfg, ops) for ops in sets]
            calls[0]()
            variants.append(("gluon", config_name(*cfg), calls))
        except Exception as err:  # a config that fails to build or launch loses, loudly
            print(f"  {config_name(*cfg)}: {type(err).__name__}: {str(err)[:300]}",
                  file=sys.stderr)
    shipped = SHIPPED.get((problem.m, problem.n))
    if shipped:
        cfg = tg.TritonConfig.from_name(shipped)
        variants.append(("triton", shipped, [tg.launcher(cfg, ops) for ops in sets]))
    default = platform.default_solution(problem, device)
    variants.append(("default", default["SolutionNameMin"],
                     platform.launchers(default, problem, sets, device)))
    variants.append(("copy", "copy", timing.copy_calls(timing.operand_bytes(problem), device)))
    timings = timing.time_side_by_side([calls for _, _, calls in variants], repeats=9)
    floor = next(t.us for (kind, _, _), t in zip(variants, timings) if kind == "copy")
    rows = []
    for (kind, name, calls), t in zip(variants, timings):
        error = 0.0 if kind == "copy" else timing.checked_error(calls[0], sets[0])
        rows.append({"gemm": problem.name, "kind": kind, "config": name, "us": t.us,
                     "spread": t.spread, "error": error, "pct_floor": 100 * floor / t.us,
                     "verified": kind == "copy" or error < ERR_THR})
    return rows


def main():
    args = probe_arguments("1280x96x8192,1280x16x8192,1280x1x8192,8192x16x1024,1280x48x8192,"
                           "8192x1x1024")
    if args.compile_only:
        return compile_only(args.problems)
    rows = []
    for problem, found in probe_each(args, probe, "gluon_decode_probe.csv"):
        rows += found
        best = min((r for r in found if r["kind"] == "gluon" and r["verified"]),
                   key=lambda r: r["us"], default=None)
        others = {r["kind"]: r for r in found if r["kind"] != "gluon"}
        print(problem.name, "copy %.2f" % others["copy"]["us"],
              *(f"{k} {others[k]['us']:.2f} ({others[k]['pct_floor']:.0f}%)"
                for k in ("triton", "default") if k in others),
              "gluon " + (f"{best['us']:.2f} ({best['pct_floor']:.0f}%) {best['config']}"
                          if best else "none verified"))
    bad = [r for r in rows if not r["verified"] and math.isfinite(r["us"])]
    for r in bad:
        print("WRONG:", r["gemm"], r["config"], r["error"], file=sys.stderr)


if __name__ == "__main__":
    main()
