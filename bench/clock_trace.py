"""Why a large GEMM's kernel reads 193 us in one run and 212 us, its replays 46% apart, in
another (issue 39, criterion 4; bench/RESULTS.md, tenth session): every timed replay beside the
card's SM clock, power, temperature and clock-event reasons.

    python3 bench/clock_trace.py --out DIR [--gemm NAME] [--seconds 90] [--heat 30]

For one GEMM of the TP-8 trace (default 8192 x 8192 x 1024), in one process: the cuBLASLt
default and the heuristic's first 8, rebuilt as a library runs them, timed as the search's
finals time them (CUDA graphs over rotating operands, an untimed replay of the same variant
before each timed one, each round starting one variant later), round after round for
--seconds, after --heat seconds of 8192^3 matmuls that bring the card to a campaign's
temperature. nvidia-smi samples the card every 50 ms meanwhile. Writes replays.csv (each
timed replay's end, variant and time per call), smi.csv, and summary.json: per variant its
median over the run, over the run's first and last thirds, and over the replays that ended
while the SM clock sat below and at or above the run's median clock, and its per-round ratio
to the default with that ratio's spread. A kernel whose time follows the clock, or the time
since the start, shows there; and whether ranking by paired ratios would cut the noise.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from geko_lib.platforms.cuda import timing  # noqa: E402
from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings, use_device  # noqa: E402

SMI_FIELDS = ("timestamp", "clocks.sm", "power.draw", "temperature.gpu")
REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")  # new name, old


def start_smi(path: Path) -> subprocess.Popen:
    """nvidia-smi sampling the card every 50 ms into ``path``; drivers before the event
    reasons' new name know only the old one."""
    for reason in REASONS:
        out = path.open("w")
        smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS + (reason,))}",
                                "--format=csv,noheader,nounits", "-lms", "50"],
                               stdout=out, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        if smi.poll() is None:
            return smi
    raise SystemExit("nvidia-smi could not sample the card")


def read_smi(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, header=None, names=["stamp", "sm_mhz", "power_w", "temp_c",
                                                  "reasons"], skipinitialspace=True)
    frame["t"] = [datetime.datetime.strptime(s, "%Y/%m/%d %H:%M:%S.%f").timestamp()
                  for s in frame["stamp"]]
    return frame.drop(columns="stamp")


def heat(seconds: float) -> None:
    t = timing.torch()
    a = t.randn(8192, 8192, device="cuda", dtype=t.bfloat16)
    out = t.empty_like(a)
    until = time.time() + seconds
    while time.time() < until:
        for _ in range(20):
            t.matmul(a, a, out=out)
        t.cuda.synchronize()


def trace(variants: dict, seconds: float) -> list[dict]:
    """Round after round of the variants side by side, as timing.time_side_by_side runs them,
    each timed replay's end time kept."""
    labels = list(variants)
    prepared = [timing.prepare(variants[label]) for label in labels]
    rows, round_ = [], 0
    until = time.time() + seconds
    while time.time() < until:
        for i in range(len(labels)):
            index = (round_ + i) % len(labels)
            prepared[index].run()  # the settling replay
            us = timing._time_region(prepared[index].run) / prepared[index].calls
            rows.append({"t": time.time(), "variant": labels[index], "us": us, "round": round_})
        round_ += 1
    return rows


def summarize(replays: pd.DataFrame, smi: pd.DataFrame) -> dict:
    replays = pd.merge_asof(replays.sort_values("t"), smi.sort_values("t"), on="t")
    replays["third"] = pd.cut(replays["t"], 3, labels=["first", "middle", "last"])
    slow_clock = replays["sm_mhz"] < replays["sm_mhz"].median()
    out = {"sm_mhz": {"min": float(smi["sm_mhz"].min()), "median": float(smi["sm_mhz"].median()),
                      "max": float(smi["sm_mhz"].max())},
           "power_w_max": float(smi["power_w"].max()), "temp_c_max": float(smi["temp_c"].max()),
           "reasons_seen": sorted(set(map(str, smi["reasons"]))), "variants": {}}
    for label, group in replays.groupby("variant"):
        us = group["us"]
        out["variants"][label] = {
            "replays": len(us), "median_us": float(us.median()),
            "spread_pct": float(100 * (us.max() - us.min()) / us.median()),
            "first_third_us": float(group[group["third"] == "first"]["us"].median()),
            "last_third_us": float(group[group["third"] == "last"]["us"].median()),
            "below_median_clock_us": float(us[slow_clock[group.index]].median()),
            "at_or_above_median_clock_us": float(us[~slow_clock[group.index]].median())}
    paired = paired_to_default(replays)
    for label, ratios in paired.items():
        out["variants"][label]["vs_default_median"] = float(ratios.median())
        out["variants"][label]["vs_default_spread_pct"] = float(
            100 * (ratios.max() - ratios.min()) / ratios.median())
    return out


def paired_to_default(replays: pd.DataFrame) -> dict:
    """Per variant, its time over the default's in each round: where the rounds' clocks move
    every variant alike, these ratios spread far less than the times do, and a ranking by them
    would separate kernels that the times cannot."""
    by_round = replays.pivot_table(index="round", columns="variant", values="us")
    return {label: (by_round[label] / by_round["default"]).dropna()
            for label in by_round.columns if label != "default"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gemm", default="BBS_TN_M8192_N8192_B1_K1024")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--heat", type=float, default=30.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from peer_gap import problems_named

    use_device(0)
    (problem,) = problems_named([args.gemm])
    platform = CudaPlatform(SearchSettings(err_thr=0.01))
    sets = platform._operands(problem, 0, salt=31)
    variants = {"default": platform.launchers(platform.default_solution(problem, 0), problem,
                                              sets, 0)}
    for cfg, _ in platform._lt(problem).heuristic(8):
        variants.setdefault(cfg.name, platform.launchers(platform.cublaslt_solution(cfg, 0),
                                                         problem, sets, 0))
    smi = start_smi(args.out / "smi.csv")
    try:
        heat(args.heat)
        replays = pd.DataFrame(trace(variants, args.seconds))
    finally:
        smi.terminate()
        smi.wait()
    replays.to_csv(args.out / "replays.csv", index=False)
    result = {"gemm": problem.name, "card": timing.torch().cuda.get_device_name(0),
              "heat_s": args.heat, "seconds": args.seconds}
    result |= summarize(replays, read_smi(args.out / "smi.csv"))
    (args.out / "summary.json").write_text(json.dumps(result, indent=1))
    for label, v in sorted(result["variants"].items(), key=lambda kv: kv[1]["median_us"]):
        print(f"{label:40s} {v['median_us']:8.2f} us  spread {v['spread_pct']:5.1f}%  first "
              f"{v['first_third_us']:8.2f}  last {v['last_third_us']:8.2f}  clock low "
              f"{v['below_median_clock_us']:8.2f} / high {v['at_or_above_median_clock_us']:8.2f}")
    print(f"SM clock {result['sm_mhz']}, power max {result['power_w_max']} W, "
          f"temperature max {result['temp_c_max']} C, reasons {result['reasons_seen']}")


if __name__ == "__main__":
    main()
