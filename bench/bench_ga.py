"""Benchmark: sample efficiency of the GA tuner (geko_lib.tuning.ga) on the sim GPU model.

20 GEMM sizes (bf16 TN on gfx950: decode-like skinny shapes, square, large-K), each with its own
search space small enough to enumerate:

* tile parameters the sim model understands: MacroTile0/1 (tiles larger than twice the problem
  dimension are left out, as the sim's dense search does), DepthU, GlobalSplitU (at least 64 K
  elements per split), WorkGroupMapping;
* three parameters the model does not know (PrefetchGlobalRead, StaggerU, ClusterLocalRead) that
  change the time by a deterministic hash of the whole kernel and the size, within +-3 %, so the
  landscape is rugged the way real kernel timings are (the sim adds its own per-solution quality
  factor, 0.93-1.07, and per-size variation, +-3 %).

A kernel's score is its modelled GFLOPS (``sim.model_us`` on the sim catalogue row with the
same tile parameters). Per size: the exhaustive best, then the GA (population sized for a 10 %
budget, several seeds), random search (same seeds) and Optuna's TPE sampler (if optuna is
installed; ``pip install "optuna>=4"``), each reported as best found / exhaustive best after
1 %, 2 %, 5 % and 10 % of the space has been evaluated. Prints markdown tables, the machine
and the date.

    python bench/bench_ga.py [--seeds 5] [--tpe-seeds 1] [--tpe-mode seq|batch|both]
                             [--pop auto|N] [--jobs 2] [--budget 0.10] [--no-tpe]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import os
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geko_lib.gemm import GemmProblem, GemmType  # noqa: E402
from geko_lib.platforms import sim  # noqa: E402
from geko_lib.tuning import ga  # noqa: E402
from machine import summary as machine_summary  # noqa: E402 (bench/machine.py, beside this script)

BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
ARCH = "gfx950"
FRACTIONS = (0.01, 0.02, 0.05, 0.10)
GOAL = 0.98

# [M, N, K]; hipBLASLt's view of nn.Linear: M = out features, N = tokens, K = in features
SIZES = [
    # decode-like skinny
    (4096, 1, 4096), (14336, 2, 4096), (4096, 4, 14336), (6144, 8, 4096), (28672, 16, 8192),
    (8192, 32, 8192), (1024, 64, 8192),
    # square and prefill-like
    (256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048), (3000, 3000, 3000),
    (4096, 4096, 4096), (8192, 8192, 8192), (4096, 2048, 14336), (14336, 4096, 4096),
    # large K
    (128, 128, 65536), (256, 512, 32768), (1024, 1024, 65536), (64, 4096, 131072),
    (2048, 256, 16384),
]
EXTRA = {"PrefetchGlobalRead": [1, 2, 3], "StaggerU": [0, 4, 16, 32], "ClusterLocalRead": [0, 1]}
EXTRA_AMPLITUDE = 0.03


def make_space(m: int, n: int, k: int) -> ga.Space:
    tiles0 = [t for t in sim.MACRO_TILES if t <= max(16, 2 * m)]
    tiles1 = [t for t in sim.MACRO_TILES if t <= max(16, 2 * n)]
    splits = [g for g in sim.SPLIT_K if g == 1 or k / g >= 64]
    return ga.Space({"MacroTile0": tiles0, "MacroTile1": tiles1, "DepthU": [32, 64, 128],
                     "GlobalSplitU": splits, "WorkGroupMapping": list(sim.WG_MAPPING), **EXTRA})


class SimEvaluator:
    """evaluate(list of param dicts) -> GFLOPS, shape (1, batch), from the sim model."""

    def __init__(self, m: int, n: int, k: int):
        self.problem = GemmProblem(BBS_TN, m, n, 1, k)
        self.arch = sim.arch_by_name(ARCH)
        self.cat = sim.catalogue(BBS_TN)
        c = self.cat
        self.position = {(int(a), int(b), int(d), int(g), int(w)): i for i, (a, b, d, g, w) in
                         enumerate(zip(c.mt0, c.mt1, c.du, c.gsu, c.wgm))}
        self.calls = 0

    def __call__(self, batch: list[dict]) -> np.ndarray:
        self.calls += len(batch)
        rows = np.array([self.position[(p["MacroTile0"], p["MacroTile1"], p["DepthU"],
                                        p["GlobalSplitU"], p["WorkGroupMapping"])]
                         for p in batch], dtype=np.int64)
        us = sim.model_us(self.arch, self.problem, self.cat, rows)
        size = repr(self.problem.size)
        u = np.array([zlib.crc32(repr(sorted(p.items())).encode() + size.encode()) / 2**32
                      for p in batch])
        us = us * (1 + EXTRA_AMPLITUDE * (2 * u - 1))
        return (self.problem.flops / us / 1e3)[None, :]


def auto_pop(budget: int) -> int:
    """About a dozen generations inside the budget, 24..128 individuals."""
    return int(np.clip(round(budget / 12), 24, 128))


def curve_at(best_curve: np.ndarray, n_evals: int) -> float:
    """Best score after ``n_evals`` evaluations (the last value if the run stopped earlier)."""
    if len(best_curve) == 0:
        return 0.0
    return float(best_curve[min(n_evals, len(best_curve)) - 1])


def evals_to(curve: np.ndarray, target: float) -> float:
    """Evaluations until the best reached ``target`` (inf if never)."""
    hit = np.flatnonzero(curve >= target)
    return float(hit[0] + 1) if len(hit) else float("inf")


def tpe_curve(space: ga.Space, evaluate, budget: int, seed: int, batch: int = 1) -> np.ndarray:
    """Optuna TPE, ``batch`` asks then their tells (constant liar when batch > 1); repeats are
    answered from a cache and not counted as evaluations."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {name: optuna.distributions.CategoricalDistribution(list(range(len(vals))))
             for name, vals in zip(space.names, space.values)}
    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=batch > 1)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    cache, curve, best = {}, [], 0.0
    for _ in range(3 * budget):
        if len(cache) >= budget:
            break
        trials = [study.ask(dists) for _ in range(min(batch, budget - len(cache)))]
        keys = [tuple(t.params[name] for name in space.names) for t in trials]
        new = list(dict.fromkeys(k for k in keys if k not in cache))
        if new:
            for key, score in zip(new, evaluate([space.decode(k) for k in new])[0]):
                cache[key] = float(score)
                best = max(best, cache[key])
                curve.append(best)
        for trial, key in zip(trials, keys):
            study.tell(trial, cache[key])
    return np.array(curve)


def bench_size(args) -> dict:
    (m, n, k), seeds, tpe_seeds, pop, frac, tpe_modes = args
    space = make_space(m, n, k)
    evaluate = SimEvaluator(m, n, k)
    t0 = time.perf_counter()
    full = ga.exhaustive(space, evaluate)
    t_exh = time.perf_counter() - t0
    best = float(full.best_scores[0])
    budget = max(1, int(round(frac * space.size)))
    marks = [max(1, int(round(f * space.size))) for f in FRACTIONS]
    pop_size = auto_pop(budget) if pop == "auto" else int(pop)
    out = {"size": (m, n, k), "space": space.size, "best": best, "budget": budget,
           "pop": pop_size, "t_exh": t_exh, "ga": [], "random": [], "tpe": [], "tpe_batch": [],
           "ga_evals": [], "ga_stop": [], "t_ga": 0.0, "t_tpe": 0.0, "t_tpe_batch": 0.0,
           "to_goal": {"ga": [], "random": [], "tpe": [], "tpe_batch": []}}
    target = GOAL * best
    for seed in seeds:
        t0 = time.perf_counter()
        res = ga.run(space, evaluate, pop_size=pop_size, n_gen=1000, max_evals=budget, seed=seed)
        out["t_ga"] += time.perf_counter() - t0
        curve = res.best_curve()[0]
        out["ga"].append([curve_at(curve, x) / best for x in marks])
        out["to_goal"]["ga"].append(evals_to(curve, target) / space.size)
        out["ga_evals"].append(res.n_evals)
        out["ga_stop"].append(res.stop_reason)
        rnd = ga.random_search(space, evaluate, budget, seed=seed).best_curve()[0]
        out["random"].append([curve_at(rnd, x) / best for x in marks])
        out["to_goal"]["random"].append(evals_to(rnd, target) / space.size)
    for seed in tpe_seeds:
        for mode in tpe_modes:
            key = "tpe" if mode == "seq" else "tpe_batch"
            t0 = time.perf_counter()
            curve = tpe_curve(space, evaluate, budget, seed, 1 if mode == "seq" else pop_size)
            out["t_" + key] += time.perf_counter() - t0
            out[key].append([curve_at(curve, x) / best for x in marks])
            out["to_goal"][key].append(evals_to(curve, target) / space.size)
    return out


def machine() -> str:
    try:
        import optuna

        opt = f"optuna {optuna.__version__}"
    except ImportError:
        opt = "optuna not installed"
    return f"{machine_summary()}, numpy {np.__version__}, {opt}"


def fmt(values) -> str:
    if not values:
        return "-"
    arr = np.array(values)
    return "/".join(f"{100 * v:.1f}" for v in arr.mean(axis=0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="GA and random-search seeds per size")
    ap.add_argument("--tpe-seeds", type=int, default=1, help="Optuna TPE seeds per size")
    ap.add_argument("--no-tpe", action="store_true", help="leave out Optuna TPE")
    ap.add_argument("--tpe-mode", choices=("seq", "batch", "both"), default="seq",
                    help="TPE one trial at a time, in batches of the GA population, or both")
    ap.add_argument("--pop", default="auto", help="GA population (auto: budget/12, 24..128)")
    ap.add_argument("--budget", type=float, default=0.10, help="fraction of the space")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--sizes", type=int, default=len(SIZES), help="first N sizes only")
    args = ap.parse_args(argv)

    tpe_seeds = [] if args.no_tpe else list(range(args.tpe_seeds))
    if tpe_seeds:
        try:
            importlib.import_module("optuna")
        except ImportError:  # the optional extra is missing: leave the column out
            print("optuna is not installed: the TPE column is skipped "
                  "(pip install 'optuna>=4' to include it)\n")
            tpe_seeds = []
    seeds = list(range(args.seeds))
    modes = ("seq", "batch") if args.tpe_mode == "both" else (args.tpe_mode,)
    work = [(s, seeds, tpe_seeds, args.pop, args.budget, modes) for s in SIZES[: args.sizes]]
    t0 = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(bench_size, work))
    else:
        results = [bench_size(w) for w in work]
    wall = time.perf_counter() - t0

    pct = "/".join(f"{100 * f:g}%" for f in FRACTIONS)
    print(f"# GA sample efficiency on the sim model ({ARCH}, bf16 TN)\n")
    print(f"Date: {_dt.datetime.now().isoformat(timespec='seconds')}  ")
    print(f"Machine: {machine()}  ")
    print(f"Seeds: GA and random {len(seeds)}, TPE {len(tpe_seeds)}; budget "
          f"{100 * args.budget:g}% of each space; wall {wall:.0f} s with {args.jobs} jobs\n")
    print(f"Best found / exhaustive best (%), mean over seeds, after {pct} of the space "
          "was evaluated.\n")
    print("| M x N x K | space | pop | exhaustive GFLOPS | GA | GA min@10% | random | TPE "
          "| TPE batch | GA evals (stop) |")
    print("|---|---:|---:|---:|---|---:|---|---|---|---|")
    for r in results:
        ga_min = min(v[-1] for v in r["ga"])
        stops = ",".join(sorted(set(r["ga_stop"])))
        print(f"| {'x'.join(map(str, r['size']))} | {r['space']} | {r['pop']} | "
              f"{r['best']:.1f} | {fmt(r['ga'])} | {100 * ga_min:.1f} | {fmt(r['random'])} | "
              f"{fmt(r['tpe'])} | {fmt(r['tpe_batch'])} | "
              f"{int(np.mean(r['ga_evals']))} ({stops}) |")

    print("\nSummary over sizes (each size's mean over seeds), at " + pct + ":\n")
    print("| method | mean | worst size | runs >= 98% at 10% | exact optimum at 10% | median "
          "evals to 98% (% of space) | CPU s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for key, label, tkey in (("ga", "GA", "t_ga"), ("random", "random search", None),
                             ("tpe", "Optuna TPE", "t_tpe"),
                             ("tpe_batch", "Optuna TPE, batches of pop", "t_tpe_batch")):
        if not results[0][key]:
            continue
        per_size = np.array([np.mean(r[key], axis=0) for r in results])
        runs = [v[-1] for r in results for v in r[key]]
        hit = sum(v >= GOAL for v in runs)
        exact = sum(v >= 1 - 1e-12 for v in runs)
        secs = f"{sum(r[tkey] for r in results):.1f}" if tkey else "-"
        to_goal = np.median([v for r in results for v in r["to_goal"][key]])
        print(f"| {label} | {'/'.join(f'{100 * v:.2f}' for v in per_size.mean(axis=0))} | "
              f"{'/'.join(f'{100 * v:.2f}' for v in per_size.min(axis=0))} | "
              f"{hit}/{len(runs)} | {exact}/{len(runs)} | {100 * to_goal:.2f} | {secs} |")
    print(f"\nExhaustive search: {sum(r['space'] for r in results)} evaluations in "
          f"{sum(r['t_exh'] for r in results):.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
