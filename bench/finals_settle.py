"""What leaving the settling replay out of the search's finals would change (issue 39,
criterion 5: the finals and their ties' re-timings are about half of a dense search's time,
bench/RESULTS.md, tenth session, and the untimed replay before each timed one is half of
theirs).

    python3 bench/finals_settle.py --out DIR [--gemms 10]

On GEMMs of the TP-8 trace spread over its sizes, in one process on one GPU:
``CudaPlatform.search_one`` as campaigns run it (``settle_finals``) and without the settling
replay, the order of the two alternating from GEMM to GEMM; then, where the two picks differ,
the two picks timed side by side as the search re-times a tie (a round on fresh operands and
``RETIME_ROUNDS`` more, settled). Writes finals_settle.json: per GEMM each way's seconds,
pick and its time, and the confirmed ratio of the unsettled pick to the settled one (above
1.01: the unsettled finals shipped a slower kernel).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from geko_lib import search  # noqa: E402
from geko_lib.platforms.cuda import timing  # noqa: E402
from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings, use_device  # noqa: E402

WAYS = ("settled", "unsettled")


def searched(platform: CudaPlatform, problem, settle: bool) -> dict:
    platform.settle_finals = settle
    started = time.perf_counter()
    rows = pd.DataFrame(platform.search_one(problem, 0))
    seconds = time.perf_counter() - started
    pick = search.winners(rows).iloc[0]
    return {"seconds": round(seconds, 3), "pick": pick["solution_name"],
            "us": float(pick["us"]), "solution": json.loads(pick["params"])}


def confirmed_ratio(platform: CudaPlatform, problem, first: dict, second: dict) -> float:
    """second's time over first's, from one settled side-by-side round on fresh operands and
    the rounds on fresh operands that the search gives a tie (``_retimed``)."""
    solutions = [first, second]
    sets = platform._operands(problem, 0, salt=41)
    one = timing.time_side_by_side([platform.launchers(s, problem, sets, 0) for s in solutions])
    del sets
    a, b = platform._retimed(problem, solutions, one, 0)
    return b.us / a.us


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gemms", type=int, default=10)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from search_profile import spread_problems

    use_device(0)
    platform = CudaPlatform(SearchSettings(err_thr=0.01))
    report = []
    for index, problem in enumerate(spread_problems(args.gemms)):
        order = WAYS if index % 2 == 0 else WAYS[::-1]
        ways = {way: searched(platform, problem, way == "settled") for way in order}
        on, off = ways["settled"], ways["unsettled"]
        ratio = 1.0 if on["pick"] == off["pick"] else confirmed_ratio(
            platform, problem, on["solution"], off["solution"])
        entry = {"gemm": problem.name, "order": list(order), "unsettled_over_settled": ratio}
        entry |= {way: {k: v for k, v in found.items() if k != "solution"}
                  for way, found in ways.items()}
        report.append(entry)
        print(f"{problem.name:32s} settled {on['seconds']:6.2f} s {on['pick']:36s} "
              f"{on['us']:9.2f} us | unsettled {off['seconds']:6.2f} s {off['pick']:36s} "
              f"{off['us']:9.2f} us | confirmed {ratio:.4f}", flush=True)
    total = {way: round(sum(e[way]["seconds"] for e in report), 2) for way in WAYS}
    slower = [e["gemm"] for e in report if e["unsettled_over_settled"] > 1.01]
    summary = {"card": timing.torch().cuda.get_device_name(0), "seconds": total,
               "same_pick": sum(e["settled"]["pick"] == e["unsettled"]["pick"] for e in report),
               "gemms": len(report), "unsettled_pick_over_1pct_slower": slower}
    (args.out / "finals_settle.json").write_text(json.dumps({"summary": summary,
                                                              "per_gemm": report}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
