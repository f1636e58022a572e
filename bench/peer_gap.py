"""Why a searched GEMM ships slower than nvmath's top 8 (issue 39, criterion 4).

For each GEMM named (default: the six of the 2026-12-07 thresholds-off TP-8 run on an H100),
in one process on one GPU:
1. ``CudaPlatform.search_one`` as a campaign runs it, and ``search.winners`` of its rows: every
   finalist's time, error, eligibility and tie, the heuristic's first 8 (the peers) marked;
2. the heuristic's first 8 as the search times them (the heuristic's own algo structs) beside
   the same 8 rebuilt from their stored configurations (what a library and the bench run),
   side by side with the search's pick: does a stored configuration run another kernel?
3. bench/bench_h200.py's measure of the pick: its default, nvmath_top8 and geko_search columns.

    python3 bench/peer_gap.py --out DIR [--gemm BBS_TN_M8192_N8192_B1_K1024 ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from geko_lib import search  # noqa: E402
from geko_lib.gemm import GemmProblem  # noqa: E402
from geko_lib.platforms.cuda import timing  # noqa: E402
from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings, use_device  # noqa: E402
from search_profile import TRACE, trace_problems  # noqa: E402

SLOWER_2026_12_07 = ("BBS_TN_M16032_N2_B1_K8192", "BBS_TN_M8192_N512_B1_K3584",
                     "BBS_TN_M16032_N512_B1_K8192", "BBS_TN_M8192_N2048_B1_K3584",
                     "BBS_TN_M8192_N8192_B1_K1024", "BBS_TN_M7168_N8192_B1_K8192")


def problems_named(names) -> list[GemmProblem]:
    found = {p.name: p for p in trace_problems()}
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"{TRACE}: no GEMM named {', '.join(missing)}")
    return [found[n] for n in names]


def finals_of(platform: CudaPlatform, problem: GemmProblem, peers: list[str]) -> tuple:
    rows = pd.DataFrame(platform.search_one(problem, 0))
    pick = search.winners(rows).iloc[0]
    finals = rows[rows["stage"] == "final"].sort_values("us")
    finals = finals.assign(peer=finals["solution_name"].map(
        lambda n: peers.index(n) if n in peers else -1))
    return pick, finals[["solution_name", "us", "error", "eligible", "tie_with", "peer",
                         "spread_pct"]]


def heuristic_vs_rebuilt(platform: CudaPlatform, problem: GemmProblem, pick: dict) -> list:
    """The 8 peers by the heuristic's structs and by their rebuilt configurations, and the
    pick, all interleaved in one side-by-side run on fresh operands."""
    lt = platform._lt(problem)
    sets = platform._operands(problem, 0, salt=23)
    workspace = platform._workspace(0)
    variants, labels = [], []
    for rank, (cfg, algo) in enumerate(lt.heuristic(8)):
        variants.append([lt.call(algo, ops, workspace) for ops in sets])
        labels.append((f"peer{rank} heuristic", cfg.name))
        solution = platform.cublaslt_solution(cfg, 0)
        variants.append(platform.launchers(solution, problem, sets, 0))
        labels.append((f"peer{rank} rebuilt", cfg.name))
    variants.append(platform.launchers(pick, problem, sets, 0))
    labels.append(("search pick", pick["SolutionNameMin"]))
    timings = timing.time_side_by_side(variants, repeats=9)
    return [{"what": what, "name": name, "us": round(t.us, 3),
             "spread_pct": round(100 * t.spread, 2)} for (what, name), t in zip(labels, timings)]


def bench_columns(row: dict) -> dict:
    """The bench's columns of one measure: each pick's confirmed time and its selection's."""
    return {k: row.get(k) for c in ("default", "nvmath_top8", "geko_search")
            for k in (c, f"{c}_selection", f"{c}_name")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gemm", action="append", help="a GEMM's name (repeatable)")
    parser.add_argument("--passes", type=int, default=1,
                        help="bench measures of each pick: does the same comparison repeat?")
    parser.add_argument("--no-rebuilt", action="store_true",
                        help="leave step 2 out (answered on 2026-12-07: no difference)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import bench_h200

    use_device(0)
    platform = CudaPlatform(SearchSettings(err_thr=0.01))  # profiles/h200's err_thr
    bench = bench_h200.Bench(0, triton=False)
    peak = timing.measure_ceilings(0)["peak_tflops"]["16"]
    report = []
    for problem in problems_named(args.gemm or SLOWER_2026_12_07):
        peers = [cfg.name for cfg, _ in platform._lt(problem).heuristic(8)]
        pick, finals = finals_of(platform, problem, peers)
        solution = json.loads(pick["params"])
        side = [] if args.no_rebuilt else heuristic_vs_rebuilt(platform, problem, solution)
        columns = [bench_columns(bench.measure(problem, {"geko_search": solution}, peak))
                   for _ in range(args.passes)]
        print(f"== {problem.name}: search pick {pick['solution_name']} {pick['us']:.2f} us; "
              f"bench {json.dumps(columns)}")
        print(finals.to_string(index=False))
        print(pd.DataFrame(side).to_string(index=False), flush=True)
        report.append({"gemm": problem.name, "pick": pick["solution_name"],
                       "pick_us": float(pick["us"]), "bench": columns,
                       "finals": finals.to_dict("records"), "side_by_side": side})
    (args.out / "peer_gap.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
