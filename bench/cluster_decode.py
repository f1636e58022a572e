"""The cluster split-K CUDA C++ kernel (geko_lib/platforms/cuda/cluster_gemm.py) on decode
GEMMs, beside what geko ships, cuBLASLt's default and the floor, all in one process:

    python bench/cluster_decode.py [--gemms 1280x1x8192,...] [--out DIR] [--repeats 15]
    python bench/cluster_decode.py --compile-only   # NVRTC builds of every candidate, no GPU

Per GEMM: every candidate config of ``cluster_gemm.candidate_configs`` is checked twice on a
NaN-poisoned output against the float32 reference (timing.checked_error; a wrong one is listed
and never timed), the right ones screened side by side (few replays), then the fastest few
re-timed side by side (timing.time_side_by_side: CUDA graphs, rotating operands past 4x L2)
with the fastest's twins that leave out the cluster reduction and the MMAs (wrong results:
what each part costs), with the Triton kernel the TP-8 trace's library ships for that shape (or, for a shape it does
not hold, the shipped decode_tma_atomic of the 1280-row shard nearest in tokens), cuBLASLt's
default and the read and copy floors. floor = max(read of the operand bytes, FLOPs at the bf16
matmul rate measured in this run). Writes ``cluster_decode.csv`` (every candidate's check and
time) and ``cluster_decode_summary.csv`` (per GEMM: each column's us and % of floor).
"""
import csv
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gemms import probe_arguments, probe_each  # noqa: E402
from geko_lib.gemm import GemmProblem  # noqa: E402
from geko_lib.platforms.cuda import cluster_gemm as cg  # noqa: E402

# the worst decode shards (issue 30): q/k/v of Llama-3-70B and Mistral-Large-2 at TP 8,
# Qwen2.5-32B at TP 4, the o-proj and lm-head shards
GEMMS = ("1280x1x8192,1280x16x8192,1280x48x8192,1280x96x8192,1792x2x5120,1792x8x5120,"
         "1792x32x5120,1792x56x5120,8192x24x1024,8192x48x1024,8192x96x1024,4096x8x12288,"
         "4096x32x12288,4096x128x12288")
SHIPPED_CSV = ROOT / "bench" / "results" / "h200_tp8_trace_per_gemm_2026-12-02.csv"
ERR_THR = 1e-2
SCREEN_REPEATS = 3
SCREEN_CHUNK = 48  # candidates screened side by side at once
FINALISTS = 4
FAIL_FAST = 8  # the first this many candidates all failing stops the run (a broken build)


def shipped_triton(problem: GemmProblem) -> str | None:
    """The Triton kernel the TP-8 trace's library ships for this shape, else the 1280-row
    q/k/v shard's decode_tma_atomic nearest in tokens (None if it cannot run the shape)."""
    from geko_lib.platforms.cuda import triton_gemm as tg

    rows = list(csv.DictReader(SHIPPED_CSV.open()))
    for r in rows:
        if (int(r["m"]), int(r["n"]), int(r["k"])) == (problem.m, problem.n, problem.k) \
                and r["combined_name"].startswith("triton_"):
            return r["combined_name"]
    atomic = [r for r in rows if r["m"] == "1280" and "tma_atomic" in r["combined_name"]]
    atomic.sort(key=lambda r: abs(math.log2(int(r["n"])) - math.log2(problem.n)))
    for r in atomic:
        cfg = tg.TritonConfig.from_name(r["combined_name"])
        if tg.infeasible_reason(cfg, problem) is None:
            return cfg.name
    return None


def checked(problem, sets, configs):
    """(config, error) of every candidate that built and ran; those over ERR_THR are wrong."""
    from geko_lib.platforms.cuda import timing

    ref = timing.reference(sets[0])
    out = []
    for cfg in configs:
        try:
            error = timing.checked_error(cg.launcher(cfg, sets[0]), sets[0], ref)
        except Exception as err:  # a candidate that fails to build or launch is named
            print(f"  {cfg.name}: {type(err).__name__}: {str(err)[:300]}", file=sys.stderr)
            error = math.inf
        out.append((cfg, error))
        if len(out) == FAIL_FAST and all(e == math.inf for _, e in out):
            sys.exit(f"{problem.name}: the first {FAIL_FAST} candidates all failed: stopping")
    return out


def screen(sets, configs, repeats):
    """configs sorted by a short side-by-side timing, fastest first, with their times."""
    from geko_lib.platforms.cuda import timing

    timed = []
    for start in range(0, len(configs), SCREEN_CHUNK):
        chunk = configs[start:start + SCREEN_CHUNK]
        calls = [[cg.launcher(cfg, ops) for ops in sets] for cfg in chunk]
        timed += zip(timing.time_side_by_side(calls, repeats=repeats), chunk)
    timed.sort(key=lambda tc: tc[0].us)
    return timed


def probe(problem: GemmProblem, device: int, repeats: int, peak_tflops: float) -> list[dict]:
    from geko_lib.platforms.cuda import timing, triton_gemm as tg
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    platform = CudaPlatform(SearchSettings())
    sets = platform._operands(problem, device, salt=11)
    start = time.time()
    results = checked(problem, sets, cg.candidate_configs(problem))
    right = [cfg for cfg, e in results if e < ERR_THR]
    rows = [{"gemm": problem.name, "kind": "candidate", "config": cfg.name, "error": e,
             "verified": e < ERR_THR, "us": math.nan} for cfg, e in results]
    wrong = [r["config"] for r in rows if not r["verified"]]
    print(f"{problem.name}: {len(results)} candidates, {len(wrong)} wrong "
          f"({time.time() - start:.1f} s to build and check)", flush=True)
    for name in wrong:
        print(f"  WRONG {name}", file=sys.stderr)
    screened = screen(sets, right, SCREEN_REPEATS)
    by_name = {r["config"]: r for r in rows}
    for t, cfg in screened:
        by_name[cfg.name]["us"] = t.us
    finalists = [cfg for _, cfg in screened[:FINALISTS]]
    variants = [("cluster", cfg.name, [cg.launcher(cfg, ops) for ops in sets])
                for cfg in finalists]
    # the fastest without its cluster reduction / without its MMAs: what each part costs
    for ablate, kind in ((1, "ablate_noreduce"), (2, "ablate_nomma")):
        twin = cg.ClusterConfig(**{**finalists[0].to_params(), "ablate": ablate})
        variants.append((kind, twin.name, [cg.launcher(twin, ops) for ops in sets]))
    shipped = shipped_triton(problem)
    if shipped:
        cfg = tg.TritonConfig.from_name(shipped)
        variants.append(("triton_shipped", shipped, [tg.launcher(cfg, ops) for ops in sets]))
    default = platform.default_solution(problem, device)
    variants.append(("default", default["Chosen"],
                     platform.launchers(default, problem, sets, device)))
    variants.append(("read", "read", timing.read_calls(timing.operand_bytes(problem), device)))
    variants.append(("copy", "copy", timing.copy_calls(timing.operand_bytes(problem), device)))
    timings = timing.time_side_by_side([v[2] for v in variants], repeats=repeats)
    read = next(t.us for v, t in zip(variants, timings) if v[0] == "read")
    floor = max(read, problem.flops / peak_tflops / 1e6)
    for (kind, name, calls), t in zip(variants, timings):
        error = math.nan
        if kind in ("triton_shipped", "default", "cluster"):
            error = timing.checked_error(calls[0], sets[0])
        rows.append({"gemm": problem.name, "kind": kind, "config": name, "us": t.us,
                     "spread": t.spread, "error": error, "floor_us": floor,
                     "pct_floor": 100 * floor / t.us,
                     "verified": (error < ERR_THR) if error == error else None})
    return rows


def summary_row(problem: GemmProblem, rows: list[dict]) -> dict:
    final = [r for r in rows if r["kind"] != "candidate"]
    best = min((r for r in final if r["kind"] == "cluster" and r["verified"]),
               key=lambda r: r["us"], default=None)
    out = {"gemm": problem.name, "floor_us": final[0]["floor_us"]}
    for kind, r in (("cluster", best), *((k, next((r for r in final if r["kind"] == k), None))
                                         for k in ("triton_shipped", "default", "read"))):
        out[f"{kind}_us"] = r["us"] if r else math.nan
        out[f"{kind}_pct_floor"] = r["pct_floor"] if r else math.nan
        out[f"{kind}_config"] = r["config"] if r else ""
    return out


def compile_only(problems) -> None:
    """Every candidate's cubin through NVRTC (no GPU: cluster_gemm.compile_cubin)."""
    seen = {}
    for problem in problems:
        for cfg in cg.candidate_configs(problem):
            key = cfg.compiled()
            if key not in seen:
                start = time.time()
                seen[key] = len(cg.compile_cubin(key))
                print(f"{key.name}: {seen[key]} B in {time.time() - start:.2f} s")
    print(f"{len(seen)} cubins")


def main():
    args = probe_arguments(GEMMS, repeats=15)
    if args.compile_only:
        return compile_only(args.problems)
    import pandas as pd

    from geko_lib.platforms.cuda import timing

    peak = timing.matmul_peak_tflops(args.device)
    print(f"bf16 matmul {peak:.0f} TFLOP/s", flush=True)
    summaries = []
    for problem, rows in probe_each(args, lambda p, d: probe(p, d, args.repeats, peak),
                                    "cluster_decode.csv"):
        summaries.append(summary_row(problem, rows))
        s = summaries[-1]
        print(f"{problem.name}: floor {s['floor_us']:.2f} us; cluster {s['cluster_us']:.2f} "
              f"({s['cluster_pct_floor']:.1f}%) {s['cluster_config']}; triton "
              f"{s['triton_shipped_us']:.2f} ({s['triton_shipped_pct_floor']:.1f}%); default "
              f"{s['default_us']:.2f} ({s['default_pct_floor']:.1f}%)", flush=True)
        pd.DataFrame(summaries).to_csv(args.out / "cluster_decode_summary.csv", index=False)


if __name__ == "__main__":
    main()
