"""Where the shipped decode kernels spend the time the copy floor does not (issue 23: the
1280-row q/k/v and 8192 x N x 1024 o-proj shards of a tensor-parallel model).

    python bench/decode_ablation.py --out DIR [--gemms 1280x1x8192,1280x96x8192]
    python bench/decode_ablation.py --compile-only     # sm_90, no GPU needed

Per GEMM it takes the shipped TMA decode config and times, side by side in one process
(``timing.time_side_by_side``: CUDA graphs over rotating operands > 4x L2, medians of
interleaved replays), a replica of that kernel with parts taken out:

- ``full``: the replica itself (the shipped kernel's loop and split-K reduction); checked
  against float32 beside the shipped kernel, so the other rows are ablations of the same code;
- ``noreduce``: each program stores its partial tile straight to D (no atomics, no counter, no
  read-back): what the in-launch split-K reduction costs; ``atomics_only`` keeps only the
  partials' fp32 atomic adds, ``sync_only`` only the arrival counter and the last program's
  read-back, store and re-zeroing, ``nozeroing`` all but the re-zeroing, ``relaxed_counter``
  the shipped reduction with a relaxed counter (no release/acquire: unsound, timed only):
  which part costs;
- ``onex``: the token panel loaded once per program and reused for every K block: what
  re-reading it from L2 (once per weight panel) costs;
- ``onex_noreduce``: both: what is left is streaming the weights through the template's
  pipeline at this grid, and its MMAs (Triton pipelines TMA loads only where they feed
  ``tl.dot``, so a variant without MMAs would measure an unpipelined loop, not the template);
- ``read``: ``timing.read_calls``, a plain read of the GEMM's bytes by 8 KB programs (the
  read floor: what streaming the operands once costs at this size);
- ``copy``: the copy floor itself, and cuBLASLt's default.

- ``early_ticket``: a candidate reduction, checked like ``full``: each program takes its
  tile's ticket in its first K block, and the program that started last waits for the others'
  partials and adds its own in registers (one round trip to L2 fewer after the last byte);
- ``two_kernels`` / ``two_kernels_pdl``: candidates, checked: every slice parks its partial,
  a second kernel sums them in split order (deterministic), launched after the first or, with
  programmatic dependent launch, already resident and waiting (``griddepcontrol.wait``) for
  the first to finish;
- ``shipped_again``: the shipped kernel once more, late in the round: a place effect of the
  interleaved timing shows as a difference from ``shipped``.

The ablations compute wrong results by design and are never checked or shipped. Writes
``decode_ablation.csv``.
"""
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # noqa: E402

from geko_lib.gemm import GemmProblem  # noqa: E402
from bench.gemms import parse_gemm, probe_arguments, probe_each  # noqa: E402

# the shipped winners of the TP-8 trace (bench/results/h200_tp8_trace_per_gemm_2026-12-02.csv);
# the o-proj ones that ship pointer-loaded (decode_mmaw) are replaced by their TMA twin
SHIPPED = {(1280, 1): "triton_decode_tma_atomic_16x128x64_g1_k32_w4_s3",
           (1280, 16): "triton_decode_tma_atomic_16x64x128_g1_k16_w4_s3",
           (1280, 48): "triton_decode_tma_atomic_64x64x128_g1_k4_w4_s6",
           (1280, 96): "triton_decode_tma_atomic_128x64x128_g1_k4_w8_s4",
           (8192, 1): "triton_decode_tma_16x64x128_g1_k1_w4_s4",
           (8192, 16): "triton_decode_tma_16x64x128_g1_k1_w4_s6"}
# REDUCE: how split-K partials meet (what the shipped kernel does, or a part of it)
(SHIPPED_REDUCE, NO_REDUCE, DATA_ONLY, SYNC_ONLY, NO_ZEROING, EARLY_TICKET, PARTIALS,
 RELAXED_COUNTER) = range(8)
# (name, REDUCE, X_ONCE): the token panel loaded for every K block, or once per program
ABLATIONS = (("full", SHIPPED_REDUCE, False), ("noreduce", NO_REDUCE, False),
             ("atomics_only", DATA_ONLY, False), ("sync_only", SYNC_ONLY, False),
             ("nozeroing", NO_ZEROING, False), ("onex", SHIPPED_REDUCE, True),
             ("onex_noreduce", NO_REDUCE, True), ("early_ticket", EARLY_TICKET, False),
             ("two_kernels", PARTIALS, False), ("two_kernels_pdl", PARTIALS, False),
             ("relaxed_counter", RELAXED_COUNTER, False))
REDUCE_BLOCK = 1024  # workspace cells per program of the second kernel of two_kernels
ERR_THR = 1e-2


@triton.jit
def ablation_kernel(x_desc, w_desc, d_ptr, ws_ptr, count_ptr, R, C, K, sdr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    SPLIT_K: tl.constexpr, REDUCE: tl.constexpr, X_ONCE: tl.constexpr):
    """The shipped decode TMA kernel (``_decode_tma_kernel`` with the atomic reduction), with
    the split-K reduction (REDUCE: 0 shipped, 1 none, 2 atomics only, 3 counter and read-back
    only, 4 no re-zeroing, 5 early ticket, 6 partials parked for a second kernel, 7 relaxed
    counter) and the
    token panel's reloading (X_ONCE) as switches."""
    tile = tl.program_id(0)
    split = tl.program_id(1)
    tiles_m = tl.cdiv(R, BLOCK_M)
    r0 = (tile % tiles_m) * BLOCK_M
    c0 = (tile // tiles_m) * BLOCK_N
    per_split = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)
    kb_start = split * per_split
    kb_stop = tl.minimum(kb_start + per_split, tl.cdiv(K, BLOCK_K))
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    ticket = 0
    if REDUCE == 6:
        # the reduce kernel, launched with programmatic dependent launch, may start now: its
        # programs wait (griddepcontrol.wait) until this kernel has finished and flushed
        gdc_launch_dependents()
    if X_ONCE:
        x_once = x_desc.load([r0, kb_start * BLOCK_K])
    for kb in tl.range(kb_start, kb_stop):
        w = w_desc.load([c0, kb * BLOCK_K])
        if X_ONCE:
            x = x_once
        else:
            x = x_desc.load([r0, kb * BLOCK_K])
        acc = tl.dot(w, tl.trans(x), acc)
        if REDUCE == 5 and SPLIT_K > 1 and kb == kb_start:
            # the ticket is taken as the program starts (in its first K block, once the
            # pipeline's first loads are in flight, so their latency hides the atomic's): the
            # program that starts last reduces; every other program of its tile has started by
            # then, so waiting for them cannot deadlock (a started program runs to its end)
            ticket = tl.atomic_add(count_ptr + tile, 1, sem="relaxed", scope="gpu")
    out = tl.trans(acc)
    rm = r0 + tl.arange(0, BLOCK_M)
    rn = c0 + tl.arange(0, BLOCK_N)
    valid = (rm[:, None] < R) & (rn[None, :] < C)
    d = d_ptr + rm[:, None].to(tl.int64) * sdr + rn[None, :]
    if SPLIT_K == 1 or REDUCE == 1:
        tl.store(d, out.to(d_ptr.dtype.element_ty), mask=valid)
    elif REDUCE == 6:  # every slice's partial parked in ws[split, tile]; a second kernel sums
        cell = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        slot = (split * tl.num_programs(0) + tile).to(tl.int64) * (BLOCK_M * BLOCK_N)
        tl.store(ws_ptr + slot + cell, out, mask=valid)
    elif REDUCE == 5:
        cell = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        tile_ws = ws_ptr + tile.to(tl.int64) * (BLOCK_M * BLOCK_N) + cell
        done = count_ptr + tl.num_programs(0) + tile
        if ticket == SPLIT_K - 1:
            arrived = tl.atomic_add(done, 0, sem="acquire", scope="gpu")
            while arrived < SPLIT_K - 1:
                arrived = tl.atomic_add(done, 0, sem="acquire", scope="gpu")
            tl.debug_barrier()
            total = tl.load(tile_ws, mask=valid, other=0.0, cache_modifier=".cg") + out
            tl.store(d, total.to(d_ptr.dtype.element_ty), mask=valid)
            tl.store(tile_ws, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32), mask=valid)
            tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")
            tl.atomic_xchg(done, 0, sem="relaxed", scope="gpu")
        else:
            tl.atomic_add(tile_ws, out, mask=valid, sem="relaxed", scope="gpu")
            tl.debug_barrier()
            tl.atomic_add(done, 1, sem="release", scope="gpu")
    else:
        cell = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        tile_ws = ws_ptr + tile.to(tl.int64) * (BLOCK_M * BLOCK_N) + cell
        if REDUCE != 3:
            tl.atomic_add(tile_ws, out, mask=valid, sem="relaxed", scope="gpu")
        if REDUCE != 2:
            tl.debug_barrier()
            if REDUCE == 7:  # no release/acquire: what the counter's fence costs (unsound)
                arrived = tl.atomic_add(count_ptr + tile, 1, sem="relaxed", scope="gpu")
            else:
                arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")
            if arrived == SPLIT_K - 1:
                tl.debug_barrier()
                total = tl.load(tile_ws, mask=valid, other=0.0, cache_modifier=".cg")
                if REDUCE == 3:  # (the partial must be used somewhere, or it is not computed)
                    total += out
                tl.store(d, total.to(d_ptr.dtype.element_ty), mask=valid)
                if REDUCE != 4:
                    tl.store(tile_ws, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32),
                             mask=valid)
                tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")


@triton.jit
def reduce_kernel(ws_ptr, d_ptr, R, C, sdr, cells, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """The second kernel of two_kernels: D = the sum of the parked partials, in split order."""
    gdc_wait()  # (returns at once without programmatic dependent launch)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tile = offs // (BLOCK_M * BLOCK_N)
    cell = offs % (BLOCK_M * BLOCK_N)
    tiles_m = tl.cdiv(R, BLOCK_M)
    rm = (tile % tiles_m) * BLOCK_M + cell // BLOCK_N
    rn = (tile // tiles_m) * BLOCK_N + cell % BLOCK_N
    valid = (offs < cells) & (rm < R) & (rn < C)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        total += tl.load(ws_ptr + s * cells + offs, mask=valid, other=0.0)
    tl.store(d_ptr + rm * sdr + rn, total.to(d_ptr.dtype.element_ty), mask=valid)


def kernel_shape(config_name: str) -> dict:
    """The replica's launch parameters of a decode TMA config name."""
    from geko_lib.platforms.cuda import triton_gemm as tg

    cfg = tg.TritonConfig.from_name(config_name)
    return {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k,
            "SPLIT_K": cfg.split_k, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def shape_name(shape: dict) -> str:
    return ("replica_{BLOCK_M}x{BLOCK_N}x{BLOCK_K}_k{SPLIT_K}_w{num_warps}_s{num_stages}"
            .format(**shape))


def replica_launcher(shape: dict, ops, reduce=SHIPPED_REDUCE, x_once=False, pdl=False):
    """A zero-argument call of the replica on ``ops`` (timing.Operands of a TN problem); with
    PARTIALS, the replica then the reduce kernel (``pdl``: launched dependent on it)."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    problem = ops.problem
    x, w, d = ops.b[0], ops.a[0], ops.d[0]  # X [N, K], W [M, K] as stored, D [N, M]
    bm, bn, bk, split = (shape[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K"))
    x_desc = TensorDescriptor(x, [problem.n, problem.k], [problem.k, 1], [bm, bk])
    w_desc = TensorDescriptor(w, [problem.m, problem.k], [problem.k, 1], [bn, bk])
    tiles = -(-problem.n // bm) * -(-problem.m // bn)
    slices = split if reduce == PARTIALS else 1
    ws = torch.zeros(slices * tiles * bm * bn, dtype=torch.float32, device=d.device)
    counts = torch.zeros(2 * tiles, dtype=torch.int32, device=d.device)  # tickets, arrivals
    run = ablation_kernel[(tiles, split)]
    args = (x_desc, w_desc, d, ws, counts, problem.n, problem.m, problem.k, d.stride(0))

    if reduce != PARTIALS:
        def call():
            run(*args, REDUCE=reduce, X_ONCE=x_once, **shape)
        return call
    cells = tiles * bm * bn
    finish = reduce_kernel[(-(-cells // REDUCE_BLOCK),)]

    def call_two():
        run(*args, REDUCE=reduce, X_ONCE=x_once, **shape)
        finish(ws, d, problem.n, problem.m, d.stride(0), cells, BLOCK_M=bm, BLOCK_N=bn,
               SPLIT_K=split, BLOCK=REDUCE_BLOCK, num_warps=4, launch_pdl=pdl)
    return call_two


def variants_of(problem: GemmProblem, sets, platform, device) -> list[tuple]:
    """(kind, name, checked, calls) per variant of ``problem``."""
    from geko_lib.platforms.cuda import timing, triton_gemm as tg

    shipped = SHIPPED[(problem.m, problem.n)]
    shape = kernel_shape(shipped)
    out = [("shipped", shipped, True,
            [tg.launcher(tg.TritonConfig.from_name(shipped), ops) for ops in sets])]
    for name, reduce, x_once in ABLATIONS:
        if reduce != SHIPPED_REDUCE and shape["SPLIT_K"] == 1:
            continue
        checked = name in ("full", "early_ticket", "two_kernels", "two_kernels_pdl")
        out.append((name, shape_name(shape), checked,
                    [replica_launcher(shape, ops, reduce, x_once, pdl=name.endswith("_pdl"))
                     for ops in sets]))
    out.append(("shipped_again", shipped, False, out[0][3]))
    default = platform.default_solution(problem, device)
    out.append(("default", default["SolutionNameMin"], True,
                platform.launchers(default, problem, sets, device)))
    out.append(("read", "read", False, timing.read_calls(timing.operand_bytes(problem), device)))
    out.append(("copy", "copy", False, timing.copy_calls(timing.operand_bytes(problem), device)))
    return out


def probe(problem: GemmProblem, device: int) -> list[dict]:
    from geko_lib.platforms.cuda import timing
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    platform = CudaPlatform(SearchSettings())
    sets = platform._operands(problem, device, salt=11)
    variants = []
    for kind, name, checked, calls in variants_of(problem, sets, platform, device):
        try:
            calls[0]()
            variants.append((kind, name, checked, calls))
        except Exception as err:  # a variant that fails to build or launch is named, not timed
            print(f"  {kind} {name}: {type(err).__name__}: {str(err)[:300]}", file=sys.stderr)
    timings = timing.time_side_by_side([v[3] for v in variants], repeats=9)
    floor = next(t.us for v, t in zip(variants, timings) if v[0] == "copy")
    rows = []
    for (kind, name, checked, calls), t in zip(variants, timings):
        error = timing.checked_error(calls[0], sets[0]) if checked else math.nan
        rows.append({"gemm": problem.name, "kind": kind, "config": name, "us": t.us,
                     "spread": t.spread, "error": error, "pct_floor": 100 * floor / t.us,
                     "verified": (error < ERR_THR) if checked else None})
    return rows


def compile_variant(shape: dict, reduce: int, x_once: bool):
    """One replica variant compiled for sm_90 without a GPU (Triton's compiled kernel)."""
    from triton.backends.compiler import GPUTarget

    bm, bn, bk = shape["BLOCK_M"], shape["BLOCK_N"], shape["BLOCK_K"]
    sig = {"x_desc": f"tensordesc<bf16[{bm}, {bk}]>", "w_desc": f"tensordesc<bf16[{bn}, {bk}]>",
           "d_ptr": "*bf16", "ws_ptr": "*fp32", "count_ptr": "*i32", "R": "i32", "C": "i32",
           "K": "i32", "sdr": "i32"}
    consts = {k: v for k, v in shape.items() if k.isupper()} | {"REDUCE": reduce,
                                                                "X_ONCE": x_once}
    sig.update({k: "constexpr" for k in consts})
    # as a launch on these GEMMs specializes them: aligned pointers, and sizes and strides
    # that are multiples of 16 (then the fp32 adds' masks are uniform and they are vectorized)
    aligned = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(sig)
               if "ptr" in name or name in ("C", "K", "sdr")}
    src = triton.compiler.ASTSource(fn=ablation_kernel, signature=sig, constexprs=consts,
                                    attrs=aligned)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": shape["num_warps"],
                                   "num_stages": shape["num_stages"]})


def compile_only(problems) -> None:
    """Compile every replica variant for sm_90 without a GPU (front end and layouts)."""
    for problem in problems:
        shape = kernel_shape(SHIPPED[(problem.m, problem.n)])
        for name, reduce, x_once in ABLATIONS:
            out = compile_variant(shape, reduce, x_once)
            print(problem.name, name, shape_name(shape), "shared", out.metadata.shared,
                  "wgmma", out.asm["ptx"].count("wgmma.mma_async"))


def main():
    args = probe_arguments(",".join(f"{m}x{n}x{8192 if m == 1280 else 1024}"
                                    for m, n in SHIPPED))
    if args.compile_only:
        return compile_only(args.problems)
    rows = []
    for problem, found in probe_each(args, probe, "decode_ablation.csv"):
        rows += found
        print(problem.name, " ".join(f"{r['kind']}={r['us']:.2f}" for r in found))
    for r in rows:
        if r["verified"] is False:
            print("WRONG:", r["gemm"], r["kind"], r["config"], r["error"], file=sys.stderr)


if __name__ == "__main__":
    main()
