"""Where a cuda dense search's seconds go, and what a leaner screening would keep (issue 39,
criterion 5: search + final_libs of a 40-65 GEMM trace in <= 180 s):

    python3 bench/search_profile.py --out DIR [--gemms 10] [--ab 4] [--ab-candidates 120]

1. ``CudaPlatform.search_one`` on ``--gemms`` GEMMs of the in-repo TP-8 trace (spread over
   its sizes), with the wall seconds spent inside each step recorded by call path: the
   heuristic query, cuBLASLt's enumeration with AlgoCheck, each screening (``start_timing``,
   of which ``prepare``: the eager passes and the graph capture, and its wait, ``result``), the
   finals' side-by-side, the numerics check and the tie re-timings (``_retimed``).
2. On ``--ab`` of those GEMMs, the first ``--ab-candidates`` configurations screened three
   ways, interleaved per candidate: ``waited`` (``time_calls`` with the side-stream pass
   before capture: the search's way until 2026-12-07), ``pending`` (``start_timing``: no side
   pass, the replays back to back, what the search runs now) and ``short`` (``waited`` with a
   replay of 150 us instead of 300). Then every candidate that any way ranked in its top 8 is timed in
   one side-by-side run as the finals time them (the truth). Per way: seconds per candidate,
   how many of the truth's 3 fastest it ranks in its top 6 (what reaches the finals), and the
   truth's time of its own first pick against the truth's best.

Writes ``search_profile.json`` under --out and prints a table per part. Without a GPU it
prints 'no GPU' and exits 0.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TRACE = ROOT / "bench" / "configs" / "llama3_70b_tp8_serving.yaml"


class CallPaths:
    """Inclusive wall seconds per call path of the wrapped functions ('a/b': b inside a)."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self.stack: list[str] = []

    def wrap(self, owner, attr: str, label: str | None = None) -> None:
        original = getattr(owner, attr)
        label = label or attr

        def wrapped(*args, **kwargs):
            self.stack.append(label)
            path = "/".join(self.stack)
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[path] += time.perf_counter() - t0
                self.calls[path] += 1
                self.stack.pop()

        setattr(owner, attr, wrapped)

    def wrap_generator(self, owner, attr: str, label: str) -> None:
        """A generator method whose time is counted inside each ``next``."""
        original = getattr(owner, attr)
        paths = self

        def wrapped(*args, **kwargs):
            inner = original(*args, **kwargs)
            while True:
                paths.stack.append(label)
                path = "/".join(paths.stack)
                t0 = time.perf_counter()
                try:
                    item = next(inner)
                except StopIteration:
                    return
                finally:
                    paths.seconds[path] += time.perf_counter() - t0
                    paths.calls[path] += 1
                    paths.stack.pop()
                yield item

        setattr(owner, attr, wrapped)

    def table(self) -> list[dict]:
        return [{"path": p, "s": round(s, 3), "calls": self.calls[p]}
                for p, s in sorted(self.seconds.items())]


def trace_problems() -> list:
    """Every GEMM of the in-repo TP-8 trace, in the trace's order."""
    from geko_lib import platforms, workload
    from geko_lib.bench_formats import summary
    from geko_lib.gemm import GemmProblem

    gemms = summary.gemm_identity(workload.read(TRACE, support=platforms.gemm_support(None)))
    return [GemmProblem.from_row(r) for r in gemms.to_dict("records")]


def spread_problems(count: int):
    problems = sorted(trace_problems(), key=lambda p: p.flops)
    if count >= len(problems):
        return problems
    last = len(problems) - 1  # the smallest and the largest always among them
    return [problems[round(i * last / max(count - 1, 1))] for i in range(count)]


def profile_search(platform, problems, timing, cublaslt) -> dict:
    from geko_lib.platforms.cuda import platform as cuda_platform

    paths = CallPaths()
    paths.wrap(cuda_platform.CudaPlatform, "search_one")
    paths.wrap(cublaslt.ProblemDescriptors, "heuristic")
    paths.wrap(cublaslt.ProblemDescriptors, "rebuilt")
    paths.wrap_generator(cublaslt.ProblemDescriptors, "enumerate", "enumerate")
    paths.wrap(cuda_platform.CudaPlatform, "_retimed")
    for name in ("start_timing", "time_calls", "time_side_by_side", "prepare", "checked_error",
                 "reference", "make_operands"):
        paths.wrap(timing, name)
    paths.wrap(timing.PendingTiming, "result", "wait")
    per_gemm = []
    for problem in problems:
        t0 = time.perf_counter()
        rows = platform.search_one(problem, 0)
        wall = time.perf_counter() - t0
        screened = sum(1 for r in rows if r.get("stage") == "screen") + sum(
            1 for r in rows if r.get("stage") == "final" and r["solution_name"] !=
            cuda_platform.DEFAULT_NAME)
        per_gemm.append({"gemm": problem.name, "wall_s": round(wall, 3),
                         "screened": screened,
                         "finals": sum(1 for r in rows if r.get("stage") == "final")})
        print(f"{problem.name}: {wall:.2f} s, {screened} screened", flush=True)
    return {"per_gemm": per_gemm, "paths": paths.table()}


def screen(timing, calls, way: str) -> float:
    if way == "waited":
        return timing.time_calls(calls, repeats=3, warmup=1, target_us=300.0).us
    if way == "short":
        return timing.time_calls(calls, repeats=3, warmup=1, target_us=150.0).us
    return timing.start_timing(calls).result().us


WAYS = ("waited", "pending", "short")


def screening_ab(platform, problem, timing, n_candidates: int) -> dict:
    lt = platform._lt(problem)
    sets = platform._operands(problem, 0, salt=7)
    workspace = platform._workspace(0)
    candidates, seen = [], set()
    for cfg, algo in itertools.chain(lt.rebuilt(lt.heuristic(platform.settings.heuristic_count)),
                                     lt.enumerate()):
        if cfg not in seen:
            seen.add(cfg)
            candidates.append((cfg, algo))
        if len(candidates) >= n_candidates:
            break
    us = {w: {} for w in WAYS}
    seconds = {w: 0.0 for w in WAYS}
    for index, (cfg, algo) in enumerate(candidates):
        calls = [lt.call(algo, ops, workspace) for ops in sets]
        for offset in range(len(WAYS)):  # each candidate starts with another way
            way = WAYS[(index + offset) % len(WAYS)]
            t0 = time.perf_counter()
            try:
                us[way][cfg] = screen(timing, calls, way)
            except Exception:  # noqa: BLE001 - a config that fails to run is no candidate
                timing.torch().cuda.synchronize()
            seconds[way] += time.perf_counter() - t0
    tops = {w: sorted(us[w], key=us[w].get)[:8] for w in WAYS}
    union = list(dict.fromkeys(c for w in WAYS for c in tops[w]))
    by_cfg = dict(candidates)
    truth = timing.time_side_by_side(
        [[lt.call(by_cfg[c], ops, workspace) for ops in sets] for c in union])
    truth_us = {c: t.us for c, t in zip(union, truth)}
    best3 = sorted(truth_us, key=truth_us.get)[:3]
    best = truth_us[best3[0]]
    result = {"gemm": problem.name, "candidates": len(candidates)}
    for w in WAYS:
        result[w] = {"s_per_candidate": round(seconds[w] / max(len(candidates), 1), 5),
                     "truth_best3_in_top6": sum(c in tops[w][:6] for c in best3),
                     "first_pick_vs_best": round(truth_us[tops[w][0]] / best, 4)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gemms", type=int, default=10)
    parser.add_argument("--ab", type=int, default=4)
    parser.add_argument("--ab-candidates", type=int, default=120)
    args = parser.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        print("no GPU")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    from geko_lib.platforms.cuda import cublaslt, timing
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings, use_device

    use_device(0)
    platform = CudaPlatform(SearchSettings(err_thr=0.01))  # profiles/h200's err_thr
    problems = spread_problems(args.gemms)
    report = {"card": torch.cuda.get_device_name(0)}
    step = max(1, len(problems) // max(args.ab, 1))
    report["screening_ab"] = [screening_ab(platform, p, timing, args.ab_candidates)
                              for p in problems[::step][:args.ab]]
    for row in report["screening_ab"]:
        print(json.dumps(row), flush=True)
    report["search"] = profile_search(platform, problems, timing, cublaslt)
    for row in report["search"]["paths"]:
        print(f"{row['s']:9.3f} s {row['calls']:7d}  {row['path']}")
    (args.out / "search_profile.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
