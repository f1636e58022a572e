#!/usr/bin/env python3
"""Test-only stand-in for hipblaslt-bench (no AMD GPU here): ``hipblaslt_bench.py --yaml F
--device N``, answering in the layout of the recorded real output
(tests/fixtures/hipblaslt_bench/bench_100200_gfx950_*.txt: version/device preamble,
"Rotating buffer ..." and "Is supported ..." lines, ``[i]:`` CSV header, an indented value line,
``--Solution index/name``, ``--kernel name``; ``Winner:`` and a repeat of the fastest block when
several solutions ran; verification columns ``CPU-Gflops,CPU-us,norm_error,atol,rtol`` after
``us``; frequency columns before ``hipblaslt-Gflops`` with HIPBLASLT_BENCH_FREQ).

Header forms (the performance columns of three hipBLASLt generations, column for column as the
recorded demos in tests/fixtures/hipblaslt_bench/ print them): the classic 100200 set above;
with HIPBLASLT_BENCH_PERF=1 the 2026 set (``num_cu, tiles_per_cu, tile0_gran, ...,
efficiency`` before ``hipblaslt-Gflops``; bench_readme_perf_env_*); with HIPBLASLT_BENCH_EFF=1
(and no PERF) the 2025 build's set (no swizzle/aux/flush/timer columns, ``total_gran,
tiles_per_cu, num_cu's, ...`` and ``efficiency`` between ``hipblaslt-Gflops`` and
``hipblaslt-GB/s``; bench_readme_eff_env_*).

Solutions come from the fake checkout's device library (its MatchTable and logic files, copied
from real hipBLASLt logic), or, with HIPBLASLT_TENSILE_LIBPATH, from the library-logic YAML files
under that directory. Timings and errors come from geko's sim model, so runs are deterministic.

Environment: GEKO_REPLAY_ROOT (the fake checkout; set by its hipblaslt-bench wrapper),
GEKO_REPLAY_ARCH (model architecture, default gfx950), GEKO_REPLAY_DEVICES (device count, 8),
GEKO_REPLAY_LOG (append one JSON line per run: argv, library path, frequency flag),
GEKO_REPLAY_FAIL (exit 3 after printing an error), GEKO_REPLAY_FAULTY (solution-name substring
whose verification fails).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # geko_lib of this checkout

from geko_lib import library as liblogic  # noqa: E402
from geko_lib.gemm import GemmProblem, strip_compute_prefix  # noqa: E402
from geko_lib.library import operations  # noqa: E402
from geko_lib.platforms import peak_class, sim  # noqa: E402

HEADER = ("transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,ldc,"
          "stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,scaleC,"
          "scaleD,amaxD,swizzle_a,swizzle_b,activation_type,bias_vector,bias_type,aux_type,"
          "rotating_buffer,flush,use_gpu_timer").split(",")
FREQ_COLUMNS = ["lowest-avg-freq", "lowest-median-freq", "avg-MCLK", "median-MCLK"]
PERF_COLUMNS = ["hipblaslt-Gflops", "hipblaslt-GB/s", "us"]
# HIPBLASLT_BENCH_PERF=1 (2026): after use_gpu_timer, before hipblaslt-Gflops
PERF_ENV_COLUMNS = ("num_cu,tiles_per_cu,tile0_gran,tile1_gran,cu_gran,wave_gran,total_gran,"
                    "mem_read_bytes,mem_write_bytes,lowest_avg_freq,lowest_median_freq,avg_MCLK,"
                    "median_MCLK,efficiency").split(",")
# HIPBLASLT_BENCH_EFF=1 (2025 build): its problem columns lack these of the 100200 set
EFF_MISSING = ("swizzle_a", "swizzle_b", "aux_type", "flush", "use_gpu_timer")
EFF_ENV_COLUMNS = ("total_gran,tiles_per_cu,num_cu's,tile_0_granularity,tile_1_granularity,"
                   "cu_gran,wave_gran,mem_read_bytes,mem_write_bytes,lowest_avg_freq,"
                   "lowest_median_freq,avg_MCLK,median_MCLK").split(",")
VERIFY_COLUMNS = ["CPU-Gflops", "CPU-us", "norm_error", "atol", "rtol"]
PREAMBLE = """hipBLASLt version: 100200
hipBLASLt git version: 0000000000-replay
Query device success: there are {count} devices. (Target device ID is {device})
Device ID {device} : AMD Instinct MI350X gfx950:sramecc+:xnack-
with 270.6 GB memory, max. SCLK 2200 MHz, max. MCLK 1900 MHz, compute capability 9.5
maxGridDimX 2147483647, sharedMemPerBlock 163.8 KB, maxThreadsPerBlock 1024, warpSize 64
"""


def g(value: float) -> str:
    """C++ stream default formatting (6 significant digits)."""
    return f"{value:.6g}"


class Library:
    """Solutions by GEMM type: (printed index, solution dict) and exact sizes -> index."""

    def __init__(self):
        self.by_type: dict = {}
        self.exact: dict = {}

    def add(self, gemm_type, index: int, solution: dict) -> None:
        self.by_type.setdefault(gemm_type, []).append((index, solution))

    @classmethod
    def from_match_table(cls, path: Path) -> "Library":
        """Every solution a MatchTable numbers, with the exact sizes of its logic files."""
        lib = cls()
        table = operations.load_match_table(path)
        global_index = {(logic, local): index for index, (logic, local) in table.items()}
        loaded = {}
        for index, (logic, local) in sorted(table.items()):
            if logic not in loaded:
                loaded[logic] = liblogic.load(logic)
                for size, local_index, _ in loaded[logic].size_entries():
                    lib.exact[(loaded[logic].gemm_type, size)] = global_index[(logic, local_index)]
            source = loaded[logic]
            lib.add(source.gemm_type, index, source.solutions[source.solution_position()[local]])
        return lib

    @classmethod
    def device_library(cls, root: Path) -> "Library":
        """hipBLASLt's own library: exact sizes play no part (its logic is the default)."""
        lib = cls.from_match_table(root / "build/release/device-library/MatchTable.yaml")
        lib.exact.clear()
        return lib

    @classmethod
    def custom(cls, libpath: Path) -> "Library":
        """A created library: TensileCreateLibrary leaves MatchTable.yaml beside library/ (in
        the directory it ran in); logic YAML files in the directory also count."""
        tables = [d / "MatchTable.yaml" for d in (libpath, libpath.parent, libpath.parent.parent)
                  if (d / "MatchTable.yaml").is_file()]
        if tables:
            return cls.from_match_table(tables[0])
        lib = cls()
        files = [p for p in sorted(libpath.rglob("*.yaml")) if p.name != "MatchTable.yaml"]
        if not files:
            fail(f"rocblaslt error: no library under HIPBLASLT_TENSILE_LIBPATH={libpath}")
        for path in files:
            logic = liblogic.load(path)
            for i in range(len(logic.solutions)):
                lib.add(logic.gemm_type, logic.solutions.index_of(i), logic.solutions[i])
            for size, index, _ in logic.size_entries():
                lib.exact[(logic.gemm_type, size)] = index
        return lib


def fail(message: str, code: int = 3):
    print(message, flush=True)
    sys.exit(code)


def model_times(arch, problem: GemmProblem, solutions: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    cat = sim.solutions_catalogue(problem.type, solutions)
    rows = np.arange(len(solutions))
    return (sim.model_us(arch, problem, cat, rows),
            sim.model_us(arch, problem, cat, rows, smooth=True))


def selected(lib: Library, problem: GemmProblem, row: dict, arch):
    """[(printed index, solution, us)] the row asks for: all (requested_solution_num -1), or
    the library's pick (an exact entry, else what the smooth model ranks first)."""
    candidates = lib.by_type.get(problem.type, [])
    if not candidates:
        return []
    us, smooth = model_times(arch, problem, [s for _, s in candidates])
    everything = int(row.get("requested_solution_num", 1)) == -1
    if everything:
        return [(i, s, t) for (i, s), t in zip(candidates, us)]
    exact = lib.exact.get((problem.type, problem.size))
    pos = next((n for n, (i, _) in enumerate(candidates) if i == exact), None)
    if pos is None:
        pos = int(np.argmin(smooth))
    index, solution = candidates[pos]
    return [(index, solution, us[pos])]


def header_form(environ) -> str:
    """Which performance columns this run prints: "perf" (HIPBLASLT_BENCH_PERF=1, 2026), "eff"
    (HIPBLASLT_BENCH_EFF=1 on the 2025 build that had it) or "classic"."""
    if environ.get("HIPBLASLT_BENCH_PERF", "0") not in ("", "0"):
        return "perf"
    if environ.get("HIPBLASLT_BENCH_EFF", "0") not in ("", "0"):
        return "eff"
    return "classic"


def header(form: str, freq: bool, verify: bool) -> list[str]:
    if form == "perf":  # its frequency columns are part of the set
        perf = PERF_ENV_COLUMNS + PERF_COLUMNS
        return HEADER + perf + (VERIFY_COLUMNS if verify else [])
    if form == "eff":
        base = [c for c in HEADER if c not in EFF_MISSING]
        perf = EFF_ENV_COLUMNS + ["hipblaslt-Gflops", "efficiency", "hipblaslt-GB/s", "us"]
        return base + perf + (VERIFY_COLUMNS if verify else [])
    return HEADER + (FREQ_COLUMNS if freq else []) + PERF_COLUMNS + (
        VERIFY_COLUMNS if verify else [])


def values(row: dict, problem: GemmProblem, us: float, arch, solution: dict,
           verify_values) -> dict:
    """Every column any header form prints, by name (``header`` picks and orders them)."""
    t = problem.type
    m, n, b, k = problem.m, problem.n, problem.batch, problem.k
    lda = m if t.transA == "N" else k
    ldb = k if t.transB == "N" else n
    out = dict(zip(HEADER, [
        t.transA, t.transB, "0", str(b), str(m), str(n), str(k), "1", str(lda), str(lda * (
            k if t.transA == "N" else m)), g(float(row.get("beta", 0.0))), str(ldb), str(ldb * (
                n if t.transB == "N" else k)), str(m), str(m * n), str(m), str(m * n),
        t.a_type, t.b_type, t.c_type, t.d_type, strip_compute_prefix(t.compute_type),
        str(int(row.get("scaleA", 0))), str(int(row.get("scaleB", 0))), "0", "0", "0", "0", "0",
        "none", "0", t.d_type, t.d_type, str(int(row.get("rotating", 0))),
        str(int(bool(row.get("flush", False)))), str(int(bool(row.get("use_gpu_timer", False))))]))
    out.update(zip(FREQ_COLUMNS, ["2100", "2100", "1900", "1900"]))
    gflops = problem.flops / us / 1e3
    out.update({"hipblaslt-Gflops": g(gflops), "hipblaslt-GB/s": g(problem.min_bytes / us / 1e3),
                "us": g(us)})
    # the efficiency set: the model's tile counts and the arch's peak (the 2026 build prints
    # "-nan" granularities for some kernels, as the recorded demo shows; the replay prints numbers)
    mt0, mt1 = (int(v) for v in (solution.get("MacroTile0", 128), solution.get("MacroTile1", 128)))
    tiles = -(-m // mt0) * -(-n // mt1) * b
    peak = arch.peak_tflops[peak_class(t)] * 1e3
    efficiency = g(100.0 * gflops / peak)
    gran = {"tiles_per_cu": g(tiles / arch.cus), "tile0_gran": g(m / (-(-m // mt0) * mt0)),
            "tile1_gran": g(n / (-(-n // mt1) * mt1)),
            "cu_gran": g(tiles / (-(-tiles // arch.cus) * arch.cus)), "wave_gran": "1"}
    gran["total_gran"] = g(float(gran["tile0_gran"]) * float(gran["tile1_gran"])
                           * float(gran["cu_gran"]))
    out.update(gran, num_cu=str(arch.cus), efficiency=efficiency,
               mem_read_bytes=str(int(problem.min_bytes - m * n * b * t.output_bytes)),
               mem_write_bytes=str(int(m * n * b * t.output_bytes)),
               lowest_avg_freq="2100", lowest_median_freq="2100", avg_MCLK="1900",
               median_MCLK="1900")
    out.update({"num_cu's": out["num_cu"], "tile_0_granularity": gran["tile0_gran"],
                "tile_1_granularity": gran["tile1_gran"]})
    out.update(zip(VERIFY_COLUMNS, verify_values or []))
    return out


def verification(problem: GemmProblem, solution: dict) -> list[str]:
    faulty = os.environ.get("GEKO_REPLAY_FAULTY", "")
    broken = bool(faulty) and faulty in str(solution.get("SolutionNameMin", ""))
    error = sim.emulated_error(problem, int(solution.get("DepthU", 64)),
                               max(1, int(solution.get("GlobalSplitU", 1) or 1)), broken, 0)
    tol = "failed" if broken else "1e-05"
    return [g(0.1), g(4e4), g(error * problem.batch), tol, tol]


def print_block(sol: int, header: list[str], vals: dict, index: int, solution: dict,
                kernel_info: bool) -> None:
    print(f"[{sol}]:" + ",".join(header))
    print("    " + ",".join(vals[c] for c in header))
    if kernel_info:
        print(f"    --Solution index: {index}")
        print(f"    --Solution name:  {solution.get('SolutionNameMin', '')}")
        print(f"    --kernel name:    {solution.get('KernelNameMin', '')}")


def run_row(row: dict, lib: Library, arch, freq: bool, form: str) -> None:
    problem = GemmProblem.from_row(row)
    chosen = selected(lib, problem, row, arch)
    rotating = int(row.get("rotating", 0))
    if rotating:
        print(f"Rotating buffer {rotating} MiB. Needed Size: 1 MiB. Needed block count: 2 "
              f"(Capped to max iters: {int(row.get('iters', 10))})")
    print(f"Is supported {len(chosen)} / Total solutions: {len(chosen)}")
    if not chosen:
        return
    verify = bool(row.get("norm_check") or row.get("allclose_check"))
    columns = header(form, freq, verify)
    kernel_info = bool(row.get("print_kernel_info", False))
    ratio = float(row.get("skip_slow_solution_ratio", 0) or 0)
    best, printed = None, 0
    for sol, (index, solution, us) in enumerate(chosen):
        if ratio and best is not None and us * ratio > best[2]:
            print(f"Skip solution: {sol} (best warm-up = {best[2]:.2g} us , warm-up = "
                  f"{us:.2g} us, skip ratio = {ratio})")
            continue
        vals = values(row, problem, us, arch, solution,
                      verification(problem, solution) if verify else None)
        print_block(sol, columns, vals, index, solution, kernel_info)
        printed += 1
        if best is None or us < best[2]:
            best = (sol, index, us, solution, vals)
    if len(chosen) > 1:
        sol, index, _, solution, vals = best
        print("Winner: ")
        print_block(sol, columns, vals, index, solution, kernel_info)


def main() -> int:
    parser = argparse.ArgumentParser(prog="hipblaslt-bench")
    parser.add_argument("--yaml", required=True)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    root = Path(os.environ["GEKO_REPLAY_ROOT"])
    libpath = os.environ.get("HIPBLASLT_TENSILE_LIBPATH")
    freq = "HIPBLASLT_BENCH_FREQ" in os.environ
    if os.environ.get("GEKO_REPLAY_LOG"):
        with open(os.environ["GEKO_REPLAY_LOG"], "a") as handle:
            handle.write(json.dumps({"argv": sys.argv[1:], "libpath": libpath, "freq": freq,
                                     "yaml": Path(args.yaml).name}) + "\n")
    count = int(os.environ.get("GEKO_REPLAY_DEVICES", "8"))
    if not 0 <= args.device < count:
        fail(f"Invalid device ID {args.device}: there are {count} devices", 1)
    print(PREAMBLE.format(count=count, device=args.device))
    if os.environ.get("GEKO_REPLAY_FAIL"):
        fail("hipBLASLt error: replay asked to fail (GEKO_REPLAY_FAIL)")
    lib = Library.custom(Path(libpath)) if libpath else Library.device_library(root)
    arch = sim.arch_by_name(os.environ.get("GEKO_REPLAY_ARCH", "gfx950"))
    rows = yaml.safe_load(Path(args.yaml).read_text()) or []
    for row in rows:
        run_row(row, lib, arch, freq, header_form(os.environ))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
