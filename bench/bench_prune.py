"""Benchmark: library pruning, greedy set cover (the original's) vs the exact ILP (PuLP).

Generates realistic pruning instances (seeded): hundreds of GEMM sizes x hundreds of Tensile-like
solutions. Each solution is a macro tile MT0 x MT1 x DepthU plus a few other parameters; its
gflops on a size come from a roofline-like model of how well the tile fits the size (tile and
wave quantization on a 304-CU device, DepthU vs K, bigger tiles reaching higher peak), times a
per-solution quality factor, a smooth per-solution affinity to size regions and per-measurement
noise; a few pairs are invalid (NaN). So each size has a handful of solutions within 2 % of its
best and the cover is not trivial.

Per instance: ``select(..., tol=0.02, scale_tol=True)`` with ``method="greedy"`` and
``method="ilp"`` on every available solver (HiGHS needs ``highspy``; CBC ships with PuLP), with
and without the efficiency tie-break; then a few adversarial instances (uniform random, as in
reference/libraries.md §2) where the ILP hits its time limit. Prints markdown tables with the
machine and the date.

    python bench/bench_prune.py [--instances 50] [--time-limit 10] [--seed 0]
                                [--solvers auto|highs,cbc] [--no-tiebreak-run] [--stress 2]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geko_lib.library import prune  # noqa: E402
from machine import summary as machine_summary  # noqa: E402 (bench/machine.py, beside this script)

N_CU = 304
TILES = [16, 32, 64, 96, 128, 192, 256]
DEPTHU = [32, 64, 128, 256]
QUALITY_SIGMA = 0.015  # spread of the other parameters' effect
AFFINITY = 0.02  # amplitude of a solution's smooth preference for size regions
NOISE_SIGMA = 0.004  # measurement noise


def make_instance(seed: int):
    """(gflops DataFrame, flops Series) of one instance."""
    rng = np.random.default_rng(seed)
    n_sizes = int(rng.integers(200, 601))
    n_sols = int(rng.integers(100, 401))

    # sizes: mostly LLM-like shapes (M tokens, N/K layer dims) plus some random ones
    dims = np.array([1024, 1536, 2048, 3072, 4096, 5120, 6144, 7168, 8192, 10240, 11008, 14336,
                     18432, 28672])
    tokens = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])
    small = seed % 3 == 2  # every third library: small GEMMs (decode), the tolerance scales up
    if small:
        dims = dims[dims <= 4096] // 2
        tokens = tokens[tokens <= 64]
    m = rng.choice(tokens, n_sizes) * rng.choice([1, 1, 1, 3], n_sizes)
    n = rng.choice(dims, n_sizes)
    k = rng.choice(dims, n_sizes)
    rnd = rng.random(n_sizes) < 0.3
    hi = 2048 if small else 16384
    m[rnd] = np.exp(rng.uniform(np.log(16), np.log(hi / 8 if small else hi), rnd.sum())).astype(int)
    n[rnd] = np.exp(rng.uniform(np.log(64), np.log(hi), rnd.sum())).astype(int)
    k[rnd] = np.exp(rng.uniform(np.log(64), np.log(hi), rnd.sum())).astype(int)
    m, n, k = (np.maximum(v, 1).astype(float) for v in (m, n, k))
    flops = 2 * m * n * k

    # solutions: families of variants (other parameters: WGM, GSU, LDS use, ...) of a set of
    # macro tiles (biased to the popular ones); variants of a tile are close to each other
    n_tiles = max(8, n_sols // int(rng.integers(2, 7)))
    p = [.05, .1, .2, .1, .25, .1, .2]
    tile_mt0 = rng.choice(TILES, n_tiles, p=p).astype(float)
    tile_mt1 = rng.choice(TILES, n_tiles, p=p).astype(float)
    tile_du = rng.choice(DEPTHU, n_tiles, p=[.2, .4, .3, .1]).astype(float)
    fam = rng.integers(0, n_tiles, n_sols)
    mt0, mt1, du = tile_mt0[fam], tile_mt1[fam], tile_du[fam]
    quality = np.exp(rng.normal(0, QUALITY_SIGMA, n_sols))
    # smooth affinity over (log M, log N, log K): a few random cosine waves
    freq = rng.normal(0, 0.5, (n_sols, 3, 3))
    phase = rng.uniform(0, 2 * np.pi, (n_sols, 3))
    logs = np.log2(np.stack([m, n, k], axis=1))  # sizes x 3

    M, N, K = m[:, None], n[:, None], k[:, None]
    tm = np.ceil(M / mt0)
    tn = np.ceil(N / mt1)
    fit = (M / (tm * mt0)) * (N / (tn * mt1))                 # tile quantization
    tiles = tm * tn
    waves = np.ceil(tiles / N_CU)
    occupancy = tiles / (waves * N_CU)                         # wave quantization
    area = mt0 * mt1
    peak = area / (area + 6000.0) * (1 + 0.05 * (du >= 64))    # bigger tiles: more reuse
    kfit = K / (np.ceil(K / du) * du)                          # DepthU vs K
    kover = 1 / (1 + du / (4 * K))                             # prologue cost for small K
    aff = np.zeros((n_sizes, n_sols))
    for w in range(3):
        aff += np.cos(logs @ freq[:, :, w].T + phase[:, w])
    aff = 1 + AFFINITY / 3 * aff
    # small problems are latency bound: everything is closer together there
    work = (2 * M * N * K) / 1e9
    latency = 1 / (1 + 0.02 / work)
    eff = fit * np.sqrt(occupancy) * peak * kfit * kover * quality * aff
    eff = latency * eff + (1 - latency) * eff.mean(axis=1, keepdims=True) ** 0.5 * 0.5
    noise = np.exp(rng.normal(0, NOISE_SIGMA, eff.shape))
    gflops = 1300e3 * eff * noise
    gflops[rng.random(gflops.shape) < 0.03] = np.nan
    # every size keeps at least one measured solution
    empty = np.isnan(gflops).all(axis=1)
    gflops[empty, 0] = 1.0
    sizes = [f"{int(a)}x{int(b)}x{int(c)}#{i}" for i, (a, b, c) in enumerate(zip(m, n, k))]
    sols = [f"MT{int(a)}x{int(b)}x{int(c)}_{j}" for j, (a, b, c) in enumerate(zip(mt0, mt1, du))]
    return (pd.DataFrame(gflops, index=sizes, columns=sols),
            pd.Series(flops, index=sizes))


def make_stress(seed: int, n_sizes=2000, n_sols=500):
    """Adversarial (libraries.md §2): every size has 2-4 feasible solutions drawn uniformly."""
    rng = np.random.default_rng(10_000 + seed)
    g = np.full((n_sizes, n_sols), 50.0)
    for i in range(n_sizes):
        g[i, rng.choice(n_sols, rng.integers(2, 5), replace=False)] = 100.0
    return pd.DataFrame(g, index=[f"g{i}" for i in range(n_sizes)],
                        columns=[f"k{j}" for j in range(n_sols)])


def loss_stats(gflops: pd.DataFrame, sel: prune.Selection) -> float:
    """Mean efficiency loss (%) of the assignment."""
    eff = prune.efficiency(gflops)
    got = [eff.at[s, sol] for s, sol in sel.assignment.items()]
    return 100 * (1 - float(np.mean(got)))


def machine() -> str:
    import pulp
    try:
        import highspy  # noqa: F401
        from importlib.metadata import version
        hv = f"highspy {version('highspy')}"
    except Exception:
        hv = "no highspy"
    return (f"{machine_summary()}, PuLP {pulp.__version__}, {hv}, "
            f"pandas {pd.__version__}, numpy {np.__version__}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=50)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solvers", default="auto",
                    help="comma list among highs,cbc; 'auto' = every available one")
    ap.add_argument("--stress", type=int, default=2,
                    help="adversarial 2000x500 instances to run after the realistic ones")
    ap.add_argument("--no-tiebreak-run", action="store_true",
                    help="skip the runs without the efficiency tie-break")
    args = ap.parse_args(argv)

    solvers = (list(prune.available_solvers()) if args.solvers == "auto"
               else args.solvers.split(","))
    variants = []
    for s in solvers:
        variants.append((s, True))
        if not args.no_tiebreak_run:
            variants.append((s, False))

    rows = []
    t_start = time.perf_counter()
    for i in range(args.instances):
        gflops, flops = make_instance(args.seed + i)
        t0 = time.perf_counter()
        g = prune.select(gflops, flops, method="greedy")
        t_greedy = time.perf_counter() - t0
        feas = prune.feasible_pairs(prune.efficiency(gflops), g.tolerance).to_numpy()
        rec = {"sizes": gflops.shape[0], "sols": gflops.shape[1],
               "per_size": float(feas.sum(axis=1).mean()), "tol": g.tolerance,
               "greedy": len(g.chosen), "greedy_s": t_greedy, "greedy_loss": loss_stats(gflops, g)}
        for s, tb in variants:
            t0 = time.perf_counter()
            sel = prune.select(gflops, flops, method="ilp", time_limit=args.time_limit,
                               solver=s, tiebreak=tb)
            wall = time.perf_counter() - t0
            key = f"{s}{'' if tb else '-notb'}"
            rec[key] = len(sel.chosen)
            rec[key + "_s"] = sel.solve_seconds
            rec[key + "_wall"] = wall
            rec[key + "_status"] = sel.status
            rec[key + "_method"] = sel.method
            rec[key + "_loss"] = loss_stats(gflops, sel)
            rec[key + "_bound"] = sel.lower_bound
        rows.append(rec)
        print(f"# {i}: {rec['sizes']}x{rec['sols']} feasible/size {rec['per_size']:.1f} "
              f"tol {rec['tol']:.4f} greedy {rec['greedy']} "
              + " ".join(f"{s}{'' if tb else '-notb'} {rec[s + ('' if tb else '-notb')]}"
                         f" ({rec[s + ('' if tb else '-notb') + '_status']},"
                         f" {rec[s + ('' if tb else '-notb') + '_s']:.2f}s)"
                         for s, tb in variants), flush=True)
    total = time.perf_counter() - t_start

    df = pd.DataFrame(rows)
    print()
    print(f"{_dt.date.today().isoformat()}, {machine()}")
    print(f"{len(df)} instances (seeds {args.seed}..{args.seed + len(df) - 1}), "
          f"{df.sizes.min()}-{df.sizes.max()} sizes x {df.sols.min()}-{df.sols.max()} solutions, "
          f"{df.per_size.mean():.1f} feasible solutions per size on average, tol 0.02 scaled "
          f"({df.tol.min():.4f}-{df.tol.max():.4f}), ILP time limit {args.time_limit:g} s, "
          f"whole run {total:.0f} s")
    print()
    print("| method | kept: mean | median | max | ILP < greedy | solve s: total | max | "
          "proven optimal | fallbacks | mean loss % |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| greedy (original) | {df.greedy.mean():.1f} | {df.greedy.median():g} | "
          f"{df.greedy.max()} | – | {df.greedy_s.sum():.2f} | {df.greedy_s.max():.3f} | – | – "
          f"| "
          f"{df.greedy_loss.mean():.3f} |")
    for s, tb in variants:
        k = f"{s}{'' if tb else '-notb'}"
        fewer = (df[k] < df.greedy).mean() * 100
        opt = int((df[k + "_status"] == "optimal").sum())
        fb = int((df[k + "_method"] == "greedy-fallback").sum())
        label = f"ILP {s.upper() if s == 'cbc' else 'HiGHS'}" + (" + tie-break" if tb else "")
        print(f"| {label} | {df[k].mean():.1f} | {df[k].median():g} | {df[k].max()} | "
              f"{fewer:.0f} % | {df[k + '_s'].sum():.2f} | {df[k + '_s'].max():.2f} | "
              f"{opt}/{len(df)} | {fb} | {df[k + '_loss'].mean():.3f} |")
    saved = [(r["greedy"] - r[f"{variants[0][0]}"]) / r["greedy"] * 100 for r in rows]
    print()
    print(f"ILP ({variants[0][0]}) keeps {statistics.mean(saved):.1f} % fewer solutions than "
          f"greedy on average (max {max(saved):.1f} %). Tie-break cost: "
          + ", ".join(f"{s} {df[s + '_s'].sum() - df[s + '-notb_s'].sum():.2f} s in total"
                      for s, tb in variants if tb and (s + '-notb_s') in df))

    if args.stress:
        print()
        print(f"Stress (adversarial, uniform random 2-4 feasible solutions per size, "
              f"tol 0.02 unscaled, time limit {args.time_limit:g} s, no tie-break):")
        print()
        print("| instance | greedy | " + " | ".join(
            f"ILP {'HiGHS' if s == 'highs' else 'CBC'}" for s in solvers) + " |")
        print("|---|---:|" + "---:|" * len(solvers))
        for i in range(args.stress):
            g = make_stress(i)
            cells = []
            n_greedy = None
            for s in solvers:
                sel = prune.select(g, scale_tol=False, time_limit=args.time_limit, solver=s,
                                   tiebreak=False)
                n_greedy = sel.n_greedy
                lb = "" if sel.lower_bound is None else f", bound {sel.lower_bound:.1f}"
                cells.append(f"{len(sel.chosen)} ({sel.status}{lb}, {sel.solve_seconds:.1f} s)")
            print(f"| {g.shape[0]}x{g.shape[1]} #{i} | {n_greedy} | " + " | ".join(cells) + " |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
