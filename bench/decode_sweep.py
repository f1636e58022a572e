"""A grid sweep of the cuda decode kernel family on chosen decode GEMMs, beside cuBLASLt.

    python bench/decode_sweep.py --workload W.yaml [--max-n 16] [--rows 4096,6144] [--k 4096]
                                 [--n 1,16] [--configs grid|seeds|both|shard|wide|splits] [--out DIR]
                                 [--seed-library-out DIR]

The GA of the tune mode samples a few dozen configs per GEMM; this sweep measures every config
of a grid (decode_fma with 2..32 weight rows per program, decode_mma / decode_mmaw for 16
tokens), to learn which shapes of kernel reach the memory floor and which the GA should be
seeded with. ``--configs seeds`` measures the tune mode's rule seeds instead (what a tune
campaign starts from), ``both`` the union, ``shard`` the seeds and the grid's shard kernels
(weights-as-rows tl.dot with pointer or TMA panels, ordered or atomic split-K; for N > 8, or
for any N on weight matrices of at most 8192 rows), ``wide`` the shard kernels over wider
axes (``wide_grid``) alone, ``splits`` the shard kernels split to one, two or three programs
per SM with any split-K count (``split_grid``). Per GEMM, same
method as bench_h200.py (timing.py: CUDA graph over rotating
operands > 4x L2, median of replays):

1. screen: every feasible, compiled config timed alone (5 replays);
2. finalists: the best 6 configs, the cuBLASLt default, the best 2 of geko's dense search
   (``search_one``) and an elementwise copy of the GEMM's bytes (``timing.copy_calls``, the
   size-aware floor of shared/reference/h200_measurements.md), all timed side by side (9
   replays, interleaved);
   every finalist is checked against the float32 reference.

Writes ``decode_sweep.csv`` (every config: screen us, finalist us, error) and
``decode_sweep_summary.csv`` (per GEMM: floor, default, search, best Triton, % of floor);
``--seed-library-out DIR`` also writes each GEMM's fastest verified Triton config as library
logic (a ``seed_library`` for tune mode).
"""
import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from geko_lib.bench_formats import summary  # noqa: E402
from geko_lib import platforms, workload  # noqa: E402
from geko_lib.gemm import GemmProblem  # noqa: E402
from geko_lib.platforms.cuda import timing, triton_gemm as tg, tune  # noqa: E402
from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings  # noqa: E402

FINALISTS = 6
ERR_THR = 1e-2


SHARD_ROWS = 8192  # weight rows at or below which the shard kernels are swept for any N


def grid(problem: GemmProblem) -> list[tg.TritonConfig]:
    """The configs swept for one GEMM (infeasible ones are dropped by the caller)."""
    tokens = tg._next_pow2(problem.n)
    out = shard_grid(problem)
    fma_m = min(8, tokens)
    for bn, bk, split, warps, unroll in itertools.product(
            (2, 4, 8, 16, 32), (256, 512, 1024), (1, 2, 4), (4, 8), (1, 2, 3)):
        out.append(tg.TritonConfig("decode_fma", fma_m, bn, bk, 1, split, warps, unroll))
    if problem.n > 8:
        mma_m = min(128, max(16, tokens))
        for template, bn, bk, split, warps, stages in itertools.product(
                ("decode_mma",), (16, 32, 64, 128), (64, 128, 256), (1, 2, 4, 8), (4,), (2, 3)):
            out.append(tg.TritonConfig(template, mma_m, bn, bk, 1, split, warps, stages))
    return [c for c in out if tg.infeasible_reason(c, problem) is None]


def shard_grid(problem: GemmProblem) -> list[tg.TritonConfig]:
    """The weights-as-rows tl.dot kernels (pointer and TMA panels, ordered and atomic split-K),
    for N > 8 or small weight matrices (at most SHARD_ROWS rows)."""
    tokens = tg._next_pow2(problem.n)
    out = []
    if problem.n > 8 or problem.m <= SHARD_ROWS:
        for template, bn, bk, split, stages in itertools.product(
                ("decode_mmaw", "decode_mmaw_atomic", "decode_tma", "decode_tma_atomic"),
                (64, 128), (128, 256), (1, 2, 4, 8, 16), (3, 4)):
            warps = 8 if max(16, tokens) * bn >= 128 * 64 else 4
            out.append(tg.TritonConfig(template, min(128, max(16, tokens)), bn, bk, 1, split,
                                       warps, stages))
    return [c for c in out if tg.infeasible_reason(c, problem) is None]


def wide_grid(problem: GemmProblem) -> list[tg.TritonConfig]:
    """The shard kernels over wider axes: 32..256 weight rows, K blocks of 64..256, split-K up
    to 32, pipelines 3..6 deep (more rows per program for many tokens: each weight panel
    re-reads the token panel from L2)."""
    tokens = min(128, max(16, tg._next_pow2(problem.n)))
    rows_of = (32, 64, 128) if tokens <= 16 else (64, 128, 256)
    ks = (64, 128, 256) if tokens <= 16 else (64, 128)
    out = []
    for template, bn, bk, split, stages in itertools.product(
            ("decode_mmaw", "decode_mmaw_atomic", "decode_tma", "decode_tma_atomic"), rows_of,
            ks, (1, 2, 4, 8, 16, 32), (3, 4, 6)):
        atomic = template in tg.ATOMIC_TEMPLATES
        if (split == 1 and atomic) or (split == 32 and not atomic):
            continue
        warps = 8 if tokens * bn >= 128 * 64 else 4
        out.append(tg.TritonConfig(template, tokens, bn, bk, 1, split, warps, stages))
    return [c for c in out if tg.infeasible_reason(c, problem) is None]


def split_grid(problem: GemmProblem) -> list[tg.TritonConfig]:
    """The shard kernels split to fill the GPU exactly: split-K counts that need not be powers
    of two, chosen so the programs come to about one, two or three per SM (132 SMs), for 64-
    and 128-row weight panels, K blocks of 64..256 and pipelines 3..6 deep."""
    tokens = min(128, max(16, tg._next_pow2(problem.n)))
    out = []
    for template, bn, bk, stages in itertools.product(
            ("decode_mmaw_atomic", "decode_tma_atomic", "decode_tma"), (64, 128), (64, 128, 256),
            (3, 4, 6)):
        tiles = -(-problem.m // bn) * -(-problem.n // tokens)
        # rounded to the nearest count, and down (no program of a second wave)
        splits = {max(1, f(waves * tg.H200_SMS / tiles)) for waves in (1, 2, 3)
                  for f in (round, math.floor)}
        warps = 8 if tokens * bn >= 128 * 64 else 4
        for split in sorted(splits):
            if split == 1 and template in tg.ATOMIC_TEMPLATES:
                continue
            out.append(tg.TritonConfig(template, tokens, bn, bk, 1, split, warps, stages))
    return [c for c in out if tg.infeasible_reason(c, problem) is None]


def search_solutions(platform, problem, device, count=2) -> list[dict]:
    rows = sorted((r for r in platform.search_one(problem, device)
                   if r.get("stage") == "final" and r.get("eligible")), key=lambda r: r["us"])
    return [json.loads(r["params"]) for r in rows[:count]]


def configs_of(problem: GemmProblem, which: str) -> list[tg.TritonConfig]:
    picked = []
    if which in ("seeds", "both", "shard"):
        picked += tune.rule_seeds(problem)
    if which in ("grid", "both"):
        picked += grid(problem)
    if which == "shard":
        picked += shard_grid(problem)
    if which == "wide":
        picked += wide_grid(problem)
    if which == "splits":
        picked += split_grid(problem)
    return list(dict.fromkeys(picked))


def sweep_one(platform, problem, device, executor, which="grid") -> tuple[list[dict], dict]:
    configs = configs_of(problem, which)
    started = time.time()
    compiled = tg.compile_all(configs, problem, device, executor=executor)
    configs = [c for c in configs if compiled.get(c) is None]
    compile_s = time.time() - started
    sets = platform._operands(problem, device, salt=11)
    rows = []
    for cfg in configs:
        try:
            us = timing.time_calls([tg.launcher(cfg, o) for o in sets], repeats=5).us
        except Exception as err:  # a config that fails at launch loses, loudly
            print(f"  {cfg.name}: {err}", file=sys.stderr)
            us = math.inf
        rows.append({"gemm": problem.name, "config": cfg.name, "template": cfg.template,
                     "screen_us": us, "cfg": cfg})
    rows.sort(key=lambda r: r["screen_us"])
    finalists = [r for r in rows[:FINALISTS] if math.isfinite(r["screen_us"])]
    default = platform.default_solution(problem, device)
    searched = search_solutions(platform, problem, device)
    variants = ([("triton", r["config"],
                  platform.launchers(tune.solution(r["cfg"].to_params()), problem, sets, device))
                 for r in finalists]
                + [("default", default["SolutionNameMin"],
                    platform.launchers(default, problem, sets, device))]
                + [("search", s["SolutionNameMin"], platform.launchers(s, problem, sets, device))
                   for s in searched]
                + [("copy", "copy", timing.copy_calls(timing.operand_bytes(problem), device))])
    timings = timing.time_side_by_side([calls for _, _, calls in variants], repeats=9)
    best = {}
    for (kind, name, calls), t in zip(variants, timings):
        error = 0.0 if kind == "copy" else timing.checked_error(calls[0], sets[0])
        for r in rows:
            if r["config"] == name:
                r["final_us"], r["error"] = t.us, error
        if kind == "copy" or error < ERR_THR:
            if kind not in best or t.us < best[kind][1]:
                best[kind] = (name, t.us)
    floor = max(problem.flops / 700e6, best["copy"][1])  # 700 TFLOP/s: never the bound here
    line = {"gemm": problem.name, "m": problem.m, "n": problem.n, "k": problem.k,
            "configs": len(configs), "compile_s": round(compile_s, 1), "floor_us": floor,
            "copy_us": best["copy"][1]}
    for kind in ("default", "search", "triton"):
        if kind in best:
            line[f"{kind}_us"], line[f"{kind}_name"] = best[kind][1], best[kind][0]
            line[f"{kind}_pct_floor"] = 100 * floor / best[kind][1]
    for r in rows:
        r.pop("cfg")
    return rows, line


def write_seed_library(problems, lines, out_dir: Path) -> list[Path]:
    """Each GEMM's fastest verified Triton config as tune-mode library logic."""
    from geko_lib import library as liblogic

    by_type: dict = {}
    for problem, line in zip(problems, lines):
        if "triton_name" in line:
            cfg = tg.TritonConfig.from_name(line["triton_name"])
            by_type.setdefault(problem.type, []).append(
                (problem, tune.solution(cfg.to_params()), problem.flops / line["triton_us"] / 1e3))
    paths = []
    for gemm_type, chosen in by_type.items():
        template = liblogic.LibraryLogic(
            version={"MinimumRequiredVersion": "5.0.0"}, schedule_name="h200",
            architecture="sm_90", device_names=["NVIDIA H200"],
            problem_type=liblogic.problem_type_for(gemm_type), solutions=[])
        lib = liblogic.build(template, chosen, key=lambda sol: sol["SolutionNameMin"])
        paths.append(liblogic.dump(lib, out_dir / liblogic.file_name("h200", gemm_type)))
    return paths


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", type=Path, required=True)
    parser.add_argument("--max-n", type=int, default=16, help="decode GEMMs with N <= this")
    parser.add_argument("--rows", default="", help="only these BLAS M (comma-separated)")
    parser.add_argument("--k", default="", help="only these K (comma-separated)")
    parser.add_argument("--n", default="", help="only these N (comma-separated)")
    parser.add_argument("--configs", choices=("grid", "seeds", "both", "shard", "wide", "splits"), default="grid")
    parser.add_argument("--seed-library-out", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gemms = summary.gemm_identity(workload.read(args.workload,
                                                support=platforms.gemm_support(None)))
    rows = {int(v) for v in args.rows.split(",") if v}
    ks = {int(v) for v in args.k.split(",") if v}
    ns = {int(v) for v in args.n.split(",") if v}
    problems = [p for p in (GemmProblem.from_row(r) for r in gemms.to_dict("records"))
                if p.n <= args.max_n and (not rows or p.m in rows) and (not ks or p.k in ks)
                and (not ns or p.n in ns)]
    platform = CudaPlatform(SearchSettings(err_thr=0.01))  # profiles/h200 err_thr
    executor = tg.make_executor(16)
    every, lines = [], []
    for problem in problems:
        rows, line = sweep_one(platform, problem, args.device, executor, args.configs)
        every += rows
        lines.append(line)
        print(json.dumps(line), flush=True)
        # rewritten after every GEMM: a sweep cut by its time limit keeps what it measured
        pd.DataFrame(every).to_csv(args.out / "decode_sweep.csv", index=False)
        pd.DataFrame(lines).to_csv(args.out / "decode_sweep_summary.csv", index=False)
    if args.seed_library_out is not None:
        write_seed_library(problems, lines, args.seed_library_out)
    print(pd.DataFrame(lines)[["gemm", "floor_us", "default_us", "search_us", "triton_us",
                               "search_pct_floor", "triton_pct_floor", "triton_name"]]
          .to_string(index=False))


if __name__ == "__main__":
    main()
