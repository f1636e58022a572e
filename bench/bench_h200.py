"""The headline benchmark of the cuda platform: every GEMM of a workload, timed side by side.

    python bench/bench_h200.py --workload W.yaml --workdir RUN [--out DIR] [--no-triton]

RUN is a finished geko run of that workload (``snakemake --profile profiles/h200 final_libs``,
optionally a tune-mode run in --tune-workdir). For each GEMM, on the same operands and with the
same method (timing.py: CUDA graph over rotating operands > 4x L2, median of replays):

- floor: a lower bound every kernel of the run respects, max(FLOPs at the best rate, bytes at
  the best bandwidth): the rate is the best TFLOP/s the run measured (its bf16 8192^3 matmul or
  any kernel timed here), the bandwidth at a GEMM's size the best the run measured moving as
  many bytes or fewer (a device copy of the GEMM's bytes, a read of them (``read_us``: a GEMM
  reads its operands at least once, and reading is faster than copying), or any kernel of a
  GEMM of that size or smaller: achievable bandwidth grows with size); ``copy_floor`` keeps
  the plain size-aware floor (max(FLOPs at the matmul rate, the copy)) of
  shared/reference/h200_measurements.md.
  A time under the floor (above 100%) is listed under ``floor_flaws`` in the summary;
- default: cuBLASLt's heuristic choice (what an application gets); torch: torch.matmul;
- nvmath_top8: best of the heuristic's first 8 algorithms (what TunableOp does on CUDA);
- triton_autotune: best of a standard Triton config list (what Inductor's autotune does);
- geko_search / geko_tune: the winner of geko's dense search / Triton tuning for the GEMM;
- final: what geko's final_libs dispatches (the default where it kept nothing);
- combined (with ``--combined-out DIR``): per GEMM the fastest verified of final, geko_tune and
  default from these same side-by-side timings, written to DIR as one library
  (``geko_lib.platforms.cuda.combine``) and loaded back with ``runtime.load``.

A column that picks among several candidates (nvmath_top8, triton_autotune) would read fast by
selection alone if it reported the replays that picked it, so every column's pick is timed
again, side by side with the other columns' picks on fresh operands, and that second run is
the column's time (the first run's stays in ``<column>_selection``). Every candidate that wins
a column is checked against a float32 reference. Writes
``h200_per_gemm.csv`` and ``h200_summary.json`` into --out, and prints the table.
"""
import argparse
import datetime
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
from geko_lib.platforms.cuda import cublaslt, timing  # noqa: E402
from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings  # noqa: E402
from geko_lib.platforms.cuda.solutions import solutions_in  # noqa: E402

COLUMNS = ("default", "torch", "nvmath_top8", "triton_autotune", "geko_search", "geko_tune",
           "final", "combined")
COMBINED_FROM = ("final", "geko_tune", "default")  # candidates of the combined library, in order
ERR_THR = 1e-2


def library_choices(lib_dir: Path) -> dict:
    """(GemmType, size) -> solution of every library-logic file under lib_dir."""
    return solutions_in(lib_dir) if lib_dir.is_dir() else {}


def tune_choices(workdir: Path) -> dict:
    """The tuned solutions of a tune-mode run: its merged libs/, or where the run stopped
    before merging, every optimize job's 3_LibraryLogic."""
    if (workdir / "libs").is_dir():
        return library_choices(workdir / "libs")
    chosen = {}
    for logic in sorted(workdir.glob("optimizations/build_*/3_LibraryLogic")):
        chosen.update(library_choices(logic))
    return chosen


def winners_choices(path: Path) -> dict:
    if not path.is_file():
        return {}
    frame = pd.read_csv(path)
    return {(p.type, p.size): json.loads(row["params"])
            for p, row in ((GemmProblem.from_row(r), r) for r in frame.to_dict("records"))}


def solution_key(solution: dict) -> str:
    """What identifies a kernel: its backend and that backend's parameters, not its names or
    its place in a library (every ``default`` solution is the heuristic's choice for the GEMM
    at hand, whatever configuration a library recorded for another size)."""
    kernel = {k: solution.get(k) for k in ("Backend", "CublasLt", "CublasLtVersion", "Triton",
                                                     "CudaKernel")
              if solution.get("Backend") != "default" or k == "Backend"}
    return json.dumps(kernel, sort_keys=True, default=str)


class Bench:
    def __init__(self, device: int, triton: bool, repeats: int = 9):
        self.device = device
        self.repeats = repeats
        self.platform = CudaPlatform(SearchSettings(err_thr=0.01))  # profiles/h200 err_thr
        self.triton = triton
        self.t = timing.torch()
        self.executor = None
        self.verified: dict = {}  # problem -> column -> the solution it timed and checked

    def launch_lists(self, problem, sets, solutions):
        """(solution, calls) of every solution that can be set up for this problem."""
        ready = []
        for solution in solutions:
            try:
                ready.append((solution, self.platform.launchers(solution, problem, sets,
                                                                self.device)))
            except Exception as err:  # a peer's config that cannot run loses, loudly
                print(f"  {problem.name}: {solution.get('SolutionNameMin')} failed: {err}",
                      file=sys.stderr)
        return ready

    def triton_solutions(self, problem):
        from geko_lib.platforms.cuda import triton_gemm

        configs = triton_gemm.inductor_like_configs(problem)
        if self.executor is None:  # one pool of compile workers for the whole run
            self.executor = triton_gemm.make_executor(8)
        compiled = triton_gemm.compile_all(configs, problem, self.device,
                                           executor=self.executor)
        return [{"SolutionNameMin": c.name, "Backend": "triton", "Triton": c.to_params()}
                for c in configs if compiled.get(c) is None]

    def measure(self, problem, choices: dict, peak_tflops: float) -> dict:
        """Every column's candidates timed side by side (replays interleaved), each column's
        fastest candidate that computes the right product picked, then the picks timed again
        on fresh operands for the columns' times (``confirm``)."""
        sets = self.platform._operands(problem, self.device, salt=11)
        row = {"gemm": problem.name, "m": problem.m, "n": problem.n, "k": problem.k,
               "flops": problem.flops, "bytes": timing.operand_bytes(problem)}
        row["copy_us"] = timing.copy_us(timing.operand_bytes(problem), self.device)
        row["read_us"] = timing.read_us(timing.operand_bytes(problem), self.device)
        row["copy_floor"] = max(problem.flops / peak_tflops / 1e6, row["copy_us"])
        groups = {"default": [self.platform.default_solution(problem, self.device)],
                  "nvmath_top8": [self.platform.cublaslt_solution(cfg, self.device)
                                  for cfg, _ in self.platform._lt(problem).heuristic(8)]}
        if self.triton and problem.batch == 1:
            groups["triton_autotune"] = self.triton_solutions(problem)
        groups.update({column: [solution] for column, solution in choices.items()
                       if solution is not None})
        timed, ready = self.time_distinct(problem, sets, groups, torch_too=True)
        row["torch"] = timed.pop("torch").us
        picks = self.verified_picks(problem, groups, timed, ready, sets[0], row)
        del sets, ready
        self.confirm(problem, picks, row)
        return row

    def verified_picks(self, problem, groups: dict, timed: dict, ready: dict, ops,
                       row: dict) -> dict:
        """Per column, its fastest candidate that computes the right product on ``ops``: its
        name, error and time into ``row``, the solution returned."""
        picks: dict = {}
        errors: dict = {}
        for column, solutions in groups.items():
            ranked = sorted(((timed[solution_key(s)].us, s) for s in solutions
                             if solution_key(s) in timed), key=lambda r: r[0])
            row[column] = math.nan
            for us, solution in ranked:
                key = solution_key(solution)
                if key not in errors:
                    errors[key] = timing.checked_error(ready[key][0], ops)
                if errors[key] < ERR_THR:
                    row[f"{column}_name"], row[f"{column}_error"] = (
                        solution["SolutionNameMin"], errors[key])
                    row[f"{column}_selection"] = us
                    picks[column] = solution
                    self.verified.setdefault(problem, {})[column] = solution
                    break
        return picks

    def time_distinct(self, problem, sets, groups: dict, torch_too: bool = False):
        """Every distinct kernel the groups name timed once, side by side on ``sets``: a
        kernel two columns name (the default that final_libs ships, nvmath's pick that the
        search kept) read up to 4.8% apart as two variants of one round on the H200
        (2026-12-02), a difference of places, not of kernels. Returns (key -> Timing, with
        torch.matmul under "torch" if asked; key -> calls)."""
        by_key: dict = {}  # each kernel's first solution, in the columns' order
        for solutions in groups.values():
            for solution in solutions:
                by_key.setdefault(solution_key(solution), solution)
        ready = {solution_key(s): calls
                 for s, calls in self.launch_lists(problem, sets, list(by_key.values()))}
        keys = [k for k in by_key if k in ready]
        variants = [ready[k] for k in keys]
        if torch_too:
            keys.append("torch")
            variants.append([(lambda o=o: self.t.matmul(o.x, o.y, out=o.d)) for o in sets])
        timings = timing.time_side_by_side(variants, repeats=self.repeats)
        return dict(zip(keys, timings)), ready

    def confirm(self, problem, picks: dict, row: dict) -> None:
        """Each column's pick timed again, side by side on fresh operands: that is the
        column's time (the first run's stays in ``<column>_selection``). A column that takes
        the fastest of several candidates from the replays that rank them reads fast by
        selection alone, the least of eight noisy medians against one; on an H100 under
        sustained load one run's replays of a large GEMM spread 12-46%, and the same kernel's
        median moved 1-4% from run to run (bench/RESULTS.md, tenth session), more than
        criterion 4's margin of 1%."""
        if not picks:
            return
        sets = self.platform._operands(problem, self.device, salt=12)
        timed, _ = self.time_distinct(problem, sets, {c: [s] for c, s in picks.items()})
        del sets
        for column, solution in picks.items():
            found = timed.get(solution_key(solution))
            row[column] = found.us if found is not None else math.nan


def combine_columns(rows: list, verified: dict, problems: list, out_dir: Path) -> None:
    """Fill each row's ``combined`` column and write the combined library to ``out_dir``."""
    from geko_lib import runtime
    from geko_lib.platforms.cuda import combine

    chosen = []
    for row, problem in zip(rows, problems):
        solutions = verified.get(problem, {})
        best = combine.fastest([(row.get(c, math.nan), solutions.get(c))
                                for c in COMBINED_FROM])
        if best is None:
            continue
        us, solution = best
        row["combined"], row["combined_name"] = us, solution["SolutionNameMin"]
        chosen.append((problem, solution, problem.flops / us / 1e3))
    combine.write(chosen, out_dir)
    served = runtime.load(out_dir).solutions  # the runtime's own validation of the files
    print(f"combined library: {len(served)} GEMMs in {out_dir}")


def timed_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in COLUMNS if c in frame and not frame[c].isna().all()]


def honest_floor(frame: pd.DataFrame, matmul_tflops: float) -> tuple[pd.Series, dict]:
    """Per GEMM, max(FLOPs at the best rate the run measured, bytes at the best bandwidth it
    measured at that size or smaller) and the two ceilings: a lower bound for every time."""
    times = frame[timed_columns(frame)].min(axis=1)  # the fastest kernel of each GEMM
    peak = max(matmul_tflops, float((frame["flops"] / times / 1e6).max()))
    movers = [frame["copy_us"]] + ([frame["read_us"]] if "read_us" in frame else [])
    moved = pd.concat([frame["bytes"] / us for us in movers + [times]], axis=1)
    best_here = moved.max(axis=1) / 1e6  # TB/s
    order = frame["bytes"].sort_values(kind="stable").index
    # achievable bandwidth grows with size: what ran at fewer bytes runs at these
    bandwidth = best_here[order].cummax()[frame.index]
    floor = pd.concat([frame["flops"] / peak / 1e6, frame["bytes"] / bandwidth / 1e6],
                      axis=1).max(axis=1)
    return floor, {"peak_tflops": peak, "matmul_tflops": matmul_tflops,
                   "bandwidth_tbps": {int(b): float(v) for b, v in
                                      zip(frame["bytes"], bandwidth)}}


def floor_flaws(frame: pd.DataFrame) -> list[str]:
    """Every (GEMM, column) timed under the floor: the floor would not be a lower bound."""
    return [f"{row['gemm']} {column}: {row[column]:.2f} us < floor {row['floor']:.2f} us"
            for row in frame.to_dict("records") for column in timed_columns(frame)
            if row.get(column) == row.get(column) and row[column] < row["floor"] * (1 - 1e-9)]


def summarize_runs(frame: pd.DataFrame) -> dict:
    weights = frame["call_count"]
    out = {"gemms": len(frame), "time_weighted_us": {}, "pct_of_floor": {}, "vs_default": {}}
    floor_total = float((weights * frame["floor"]).sum())
    for column in COLUMNS + ("floor",):
        if column not in frame or frame[column].isna().all():
            continue
        # a column without a result for some GEMM falls back to the default there
        us = frame[column].fillna(frame["default"])
        total = float((weights * us).sum())
        out["time_weighted_us"][column] = total
        out["pct_of_floor"][column] = 100 * floor_total / total
        out["vs_default"][column] = float((weights * frame["default"]).sum()) / total
    decode = frame[frame["n"] <= 128]
    if "final" in frame:
        final = frame["final"].fillna(frame["default"])
        out["final_min_pct_floor_decode"] = float(100 * (decode["floor"] / final[decode.index]).min())
        out["final_losses_vs_default"] = int((final > frame["default"] * 1.01).sum())
        pct = 100 * frame["floor"] / final
        out["decode_pct_floor_final"] = {
            "n<=16 min": float(pct[frame["n"] <= 16].min()),
            "n<=128 min": float(pct[frame["n"] <= 128].min()),
            "n<=16 below 85%": int((pct[frame["n"] <= 16] < 85).sum()),
            "n<=128 below 80%": int((pct[frame["n"] <= 128] < 80).sum())}
    out["nvmath_top8_faster"] = peer_wins(frame, "nvmath_top8")
    out["floor_flaws"] = floor_flaws(frame)
    return out


def peer_wins(frame: pd.DataFrame, peer: str, margin: float = 0.01) -> list[str]:
    """GEMMs where ``peer`` is more than ``margin`` faster than what geko ships (the combined
    library where the run wrote one, else final_libs), from the same side-by-side timings."""
    shipped = "combined" if "combined" in frame and frame["combined"].notna().any() else "final"
    if peer not in frame or shipped not in frame:
        return []
    ours = frame[shipped].fillna(frame["default"])
    faster = frame[peer] * (1 + margin) < ours
    return [f"{row['gemm']}: {peer} {row[peer]:.2f} us, {shipped} {ours[i]:.2f} us "
            f"({why_slower(row, ours[i], peer, margin)})" for i, row in frame[faster].iterrows()]


def why_slower(row, ours: float, peer: str, margin: float) -> str:
    """Why a GEMM ships slower than ``peer``: the campaign never searched it (summarize left it
    out: keep_thr), the keep rule kept the default (the search's own best was within margin of
    the peer here, but not up_thr faster than the default there), or the search's pick is
    itself slower (its timing ranked the candidates otherwise)."""
    found = row.get("geko_search")
    if found is None or pd.isna(found):
        return "not searched: left out of the campaign's GEMMs"
    if found <= row[peer] * (1 + margin) and ours >= row["default"]:
        return f"keep rule: the search's best {found:.2f} us was not up_thr faster than the default"
    return f"search's pick: {found:.2f} us"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--tune-workdir", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--no-triton", action="store_true")
    parser.add_argument("--limit", type=int, default=0, help="first N GEMMs only (smoke runs)")
    parser.add_argument("--repeats", type=int, default=9, help="timed replays per variant")
    parser.add_argument("--combined-out", type=Path,
                        help="write the per-GEMM fastest of final/tune/default here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    gemms = summary.gemm_identity(workload.read(args.workload,
                                                support=platforms.gemm_support(None)))
    if args.limit:
        gemms = gemms.head(args.limit)
    ceilings = timing.measure_ceilings(args.device)
    peak = ceilings["peak_tflops"]["16"]
    print(f"ceilings: copy {ceilings['hbm_tbps']:.2f} TB/s, bf16 matmul {peak:.0f} TFLOP/s")
    search = winners_choices(args.workdir / "winners.csv")
    final = library_choices(args.workdir / "final_libs")
    tuned = tune_choices(args.tune_workdir) if args.tune_workdir else {}
    bench = Bench(args.device, triton=not args.no_triton, repeats=args.repeats)
    rows, problems = [], []
    for record in gemms.to_dict("records"):
        problem = GemmProblem.from_row(record)
        problems.append(problem)
        key = (problem.type, problem.size)
        choices = {"geko_search": search.get(key), "geko_tune": tuned.get(key),
                   "final": final.get(key)}
        row = bench.measure(problem, choices, peak) | {"call_count": record["call_count"]}
        if math.isnan(row.get("final", math.nan)):
            row["final"] = row["default"]  # nothing kept: the application runs the default
        rows.append(row)
        print(f"{problem.name:36s} copy floor {row['copy_floor']:8.1f}  default "
              f"{row['default']:8.1f}  tune {row.get('geko_tune', math.nan):8.1f}  final "
              f"{row['final']:8.1f}", flush=True)
    if args.combined_out:
        combine_columns(rows, bench.verified, problems, args.combined_out)
    frame = pd.DataFrame(rows)
    frame["floor"], ceilings["floor"] = honest_floor(frame, peak)
    frame.to_csv(args.out / "h200_per_gemm.csv", index=False)
    result = summarize_runs(frame) | {
        "ceilings": ceilings, "cublaslt_version": cublaslt.version(),
        "gpu": timing.torch().cuda.get_device_name(args.device),
        "date": datetime.date.today().isoformat(), "seconds": round(time.time() - started, 1)}
    (args.out / "h200_summary.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("pct_of_floor", "vs_default")}, indent=1))
    print("decode min % floor (final):", result.get("final_min_pct_floor_decode"),
          " losses vs default:", result.get("final_losses_vs_default"),
          " decode goals:", result.get("decode_pct_floor_final"),
          " floor flaws:", len(result["floor_flaws"]))
    print("nvmath top-8 > 1% faster than shipped:", result["nvmath_top8_faster"] or "none")


if __name__ == "__main__":
    main()
