"""Where a cuda tune's seconds go (issue 39, criterion 5: a tune of 25 decode GEMMs in <= 180 s
cold and <= 60 s warm; 249 s and 143 s on an H100; issue 40: a process and a CUDA context per
optimize job).

    python3 bench/tune_profile.py --out DIR [--gemms 8] [--fake]

Tuning YAMLs for the first ``--gemms`` decode GEMMs (N <= 128) of the TP-8 trace, written by
``tune.configure`` as a campaign's configure writes them, then ``tune.optimize`` on each, in
this process, with the steps inside it timed by call path (bench/search_profile.py's
CallPaths): the compiles, the GA's measurements, the finalists' re-timing, the early edge's
verdict, the warm-start cache. Before that, what one more optimize job costs before it tunes
anything: a fresh Python that imports torch and makes its CUDA context, timed three times.
Writes tune_profile.json (per YAML its wall seconds, the call paths, the start-up) and prints a
table. ``--fake`` measures nothing on a GPU: the GA runs on a fake evaluator (a smoke run of
the plumbing, for the tests).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from search_profile import TRACE, CallPaths, trace_problems  # noqa: E402

STARTUP = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"


def decode_sizes(count: int) -> tuple:
    """(GEMM type, [M, N, batch, K] of the first ``count`` decode GEMMs of the trace)."""
    problems = [p for p in trace_problems() if p.n <= 128][:count]
    if not problems:
        raise SystemExit(f"{TRACE}: no decode GEMM (N <= 128)")
    return problems[0].type, [[p.m, p.n, p.batch, p.k] for p in problems]


def startup_seconds(repeats: int = 3) -> list[float]:
    """Wall seconds of a fresh interpreter importing torch and making a CUDA context."""
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", STARTUP], check=True)
        out.append(round(time.perf_counter() - started, 3))
    return out


def profiled(paths: CallPaths) -> None:
    """The tune's steps wrapped for timing by call path."""
    from geko_lib.platforms.cuda import cluster_gemm, triton_gemm, tune, warm

    for name in ("_tune_one_size", "_pick_finalist", "_warm_seeds"):
        paths.wrap(tune, name)
    for name in ("__call__", "_compile", "_time", "_correct", "finalists", "edge_pays"):
        paths.wrap(tune.Measurer, name, f"Measurer.{name}")
    paths.wrap(triton_gemm, "compile_all", "triton.compile_all")
    paths.wrap(cluster_gemm, "edge_timings", "cluster.edge_timings")
    paths.wrap(warm, "environment", "warm.environment")


def fake_evaluate(configs, problems) -> np.ndarray:
    """GFLOP/s from the configuration's name alone: the same on every run."""
    return np.array([[1.0 + zlib.crc32(c.name.encode()) % 997 / 997.0 for c in configs] for _ in problems])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gemms", type=int, default=8)
    parser.add_argument("--fake", action="store_true", help="no GPU: a fake evaluator")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from geko_lib.platforms.cuda import tune

    gemm_type, sizes = decode_sizes(args.gemms)
    yamls = tune.configure(gemm_type, sizes, args.out / "configs")
    report = {"gemms": len(sizes), "yamls": [p.name for p in yamls],
              "startup_s": [] if args.fake else startup_seconds()}
    paths = CallPaths()
    profiled(paths)
    if not args.fake:
        from geko_lib.platforms.cuda.platform import use_device
        use_device(0)
    walls = []
    for path in yamls:
        started = time.perf_counter()
        tune.optimize(path, args.out / f"build_{path.stem}", 0,
                      evaluate=fake_evaluate if args.fake else None)
        walls.append({"yaml": path.name, "wall_s": round(time.perf_counter() - started, 2)})
        print(f"{path.name}: {walls[-1]['wall_s']:.1f} s", flush=True)
    report |= {"per_yaml": walls, "paths": paths.table()}
    (args.out / "tune_profile.json").write_text(json.dumps(report, indent=1))
    for row in report["paths"]:
        print(f"{row['s']:10.3f} s {row['calls']:7d}  {row['path']}")
    if report["startup_s"]:
        print(f"a fresh python with torch and a CUDA context: {report['startup_s']} s")


if __name__ == "__main__":
    main()
