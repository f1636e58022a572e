"""Tensile library logic: the YAML that carries solutions and the sizes they serve.

The list layout (the one TensileLite writes) has fixed positions:
 0 {MinimumRequiredVersion}, 1 ScheduleName, 2 ArchitectureName, 3 DeviceNames, 4 ProblemType,
 5 Solutions, 6 IndexOrder, 7 ExactLogic [[[M, N, B, K(, ldc, ldd, lda, ldb)], [index, gflops]], ...],
 8 RangeLogic, 9 tile selection, 10 PerfMetric, 11 LibraryType, 12 DefaultSolution (optional).
This module keeps that structure as is (unknown keys survive a load/dump) and adds what the
workflow needs: problem-type <-> GemmType, size lookup, building a library from chosen solutions.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import files
from ..gemm import (BY_ENUM, BY_NAME, GemmProblem, GemmType, normalize_compute_type,
                   scale_type_for)

__all__ = ["LibraryError", "LibraryLogic", "gemm_type_of", "problem_type_for", "file_name",
           "build", "load", "load_dir", "dump", "problems_of", "bench_rows", "dump_rows",
           "keep_sizes", "ship_kept"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_NO_DEFAULT = object()


class LibraryError(ValueError):
    pass


@dataclass
class LibraryLogic:
    version: dict
    schedule_name: str
    architecture: object  # a name, or {Architecture, CUCount}
    device_names: list
    problem_type: dict
    solutions: list[dict]
    index_order: list = field(default_factory=lambda: [2, 3, 0, 1])
    exact_logic: list = field(default_factory=list)
    range_logic: object = None
    tile_selection: object = None
    perf_metric: str = "DeviceEfficiency"
    library_type: str = "Equality"
    default_solution: object = _NO_DEFAULT

    # --- list layout -------------------------------------------------------------------------
    @classmethod
    def from_list(cls, data, source="<memory>") -> "LibraryLogic":
        if not isinstance(data, list) or len(data) < 12:
            raise LibraryError(f"{source}: not a library-logic list (expected >= 12 entries)")
        if not isinstance(data[4], dict) or not isinstance(data[5], list):
            raise LibraryError(f"{source}: entry 4 must be ProblemType (a mapping) and entry 5 "
                               "Solutions (a list)")
        extra = data[12] if len(data) > 12 else _NO_DEFAULT
        _check_exact_logic(data[5], data[7] or [], source)
        return cls(data[0], data[1], data[2], data[3], data[4], data[5], data[6],
                   data[7] or [], data[8], data[9], data[10], data[11], extra)

    def to_list(self) -> list:
        out = [self.version, self.schedule_name, self.architecture, self.device_names,
               self.problem_type, self.solutions, self.index_order, self.exact_logic,
               self.range_logic, self.tile_selection, self.perf_metric, self.library_type]
        if self.default_solution is not _NO_DEFAULT:
            out.append(self.default_solution)
        return out

    # --- identity ----------------------------------------------------------------------------
    @property
    def architecture_name(self) -> str:
        arch = self.architecture
        return arch.get("Architecture", "") if isinstance(arch, dict) else str(arch)

    @property
    def gemm_type(self) -> GemmType:
        return gemm_type_of(self.problem_type)

    # --- sizes -------------------------------------------------------------------------------
    def sizes(self) -> list[tuple[tuple[int, int, int, int], int, float]]:
        """(M, N, B, K), solution position, gflops for every ExactLogic entry."""
        return [(tuple(int(v) for v in size[:4]), int(entry[0]), float(entry[1]))
                for size, entry in self.exact_logic]

    def solution_for(self, problem: GemmProblem) -> dict | None:
        by_index = {int(s["SolutionIndex"]): s for s in self.solutions}
        for size, index, _ in self.sizes():
            if size == problem.size:
                return by_index.get(index)
        return None


def _check_exact_logic(solutions: list, exact: list, source) -> None:
    """Every ExactLogic entry is [[M, N, B, K(, ldc, ldd, lda, ldb)], [solution, gflops]] and
    points at a solution the file has."""
    try:
        indices = {int(s["SolutionIndex"]) for s in solutions}
    except (KeyError, TypeError, ValueError):
        raise LibraryError(f"{source}: every solution needs an integer SolutionIndex") from None
    for i, entry in enumerate(exact):
        ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
              and len(entry[0]) in (4, 8) and all(isinstance(v, int) for v in entry[0])
              and isinstance(entry[1], list) and len(entry[1]) == 2
              and isinstance(entry[1][0], int) and isinstance(entry[1][1], (int, float)))
        if not ok:
            raise LibraryError(f"{source}: ExactLogic entry {i} must be [[M, N, B, K], "
                               f"[solution, gflops]], got {entry!r}")
        if entry[1][0] not in indices:
            raise LibraryError(f"{source}: ExactLogic entry {i} ({entry[0]}) points at "
                               f"solution {entry[1][0]}, which the file does not have")


def gemm_type_of(problem_type: dict) -> GemmType:
    """GemmType of a ProblemType mapping (numeric Tensile data-type enums)."""
    def name(key, fallback=None):
        value = problem_type.get(key, problem_type.get(fallback) if fallback else None)
        try:
            return BY_ENUM[int(value)].hipblaslt
        except (KeyError, TypeError, ValueError):
            raise LibraryError(f"ProblemType {key}={value!r} is not a known data type") from None

    a = name("DataTypeA", "DataType")
    b = name("DataTypeB", "DataType")
    dest = name("DestDataType")
    compute = name("ComputeDataType")
    if int(problem_type.get("F32XdlMathOp", 0) or 0) == 10:  # TF32 math on f32 data
        compute = "xf32_r"
    def transpose(key):
        value = problem_type.get(key, False)
        if value not in (True, False):  # also admits 0 and 1
            raise LibraryError(f"ProblemType {key}={value!r} must be true/false or 0/1")
        return "T" if value else "N"

    return GemmType(transpose("TransposeA"), transpose("TransposeB"), a, b, dest, dest,
                    normalize_compute_type(compute))


def problem_type_for(gemm_type: GemmType) -> dict:
    """A minimal ProblemType mapping for a GEMM type (the keys the workflow reads back)."""
    enum = lambda name: BY_NAME[name].enum  # noqa: E731
    compute = gemm_type.compute_type[2:] if gemm_type.compute_type.startswith("c_") else gemm_type.compute_type
    return {
        "OperationType": "GEMM",
        "DataType": enum(gemm_type.a_type),
        "DataTypeA": enum(gemm_type.a_type),
        "DataTypeB": enum(gemm_type.b_type),
        "DestDataType": enum(gemm_type.c_type),
        "ComputeDataType": enum("f32_r" if compute == "xf32_r" else compute),
        "F32XdlMathOp": 10 if compute == "xf32_r" else 0,
        "HighPrecisionAccumulate": gemm_type.high_precision_accumulate,
        "TransposeA": gemm_type.transA == "T",
        "TransposeB": gemm_type.transB == "T",
        "Batched": True,
        "StridedBatched": True,
        "UseBias": 0,
        "Activation": False,
    }


def file_name(schedule_name: str, gemm_type: GemmType) -> str:
    """Library file name as TensileLite writes it: ``gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml``."""
    return f"{schedule_name}_{gemm_type.tensile_problem_name}_UserArgs.yaml"


def build(template: LibraryLogic, chosen: list[tuple[GemmProblem, dict, float]]) -> LibraryLogic:
    """A library serving exactly ``chosen`` (problem, solution, gflops): solutions deduplicated by
    their original index, renumbered 0..n-1, sizes sorted by (M, N, B, K)."""
    solutions: list[dict] = []
    position: dict[int, int] = {}
    exact = []
    for problem, solution, gflops in sorted(chosen, key=lambda c: c[0].size):
        source = int(solution["SolutionIndex"])
        if source not in position:
            position[source] = len(solutions)
            renumbered = copy.deepcopy(solution)
            renumbered["SolutionIndex"] = position[source]
            solutions.append(renumbered)
        exact.append([list(problem.size), [position[source], round(float(gflops), 3)]])
    lib = copy.copy(template)
    lib.solutions = solutions
    lib.exact_logic = exact
    return lib


# --- files ---------------------------------------------------------------------------------------

def load(path) -> LibraryLogic:
    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise LibraryError(f"{path}: not valid YAML: {exc}") from None
    return LibraryLogic.from_list(data, source=str(path))


def load_dir(directory) -> dict[str, LibraryLogic]:
    """Every ``*.yaml`` library in a directory, by file name."""
    return {p.name: load(p) for p in sorted(Path(directory).glob("*.yaml"))}


def dump(lib: LibraryLogic, path, header: str | None = None) -> Path:
    """Write atomically; ``header`` becomes leading ``#`` comment lines (YAML readers skip them)."""
    path = Path(path)
    text = yaml.dump(lib.to_list(), Dumper=_Dumper, default_flow_style=None, sort_keys=False,
                     width=5000)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    return files.write_text(path, text)


# --- benchmarking a library and shipping the kept part -----------------------------------------

def problems_of(lib: LibraryLogic) -> list[GemmProblem]:
    gemm_type = lib.gemm_type
    return [GemmProblem(gemm_type, m, n, b, k) for (m, n, b, k), _, _ in lib.sizes()]


def bench_rows(lib: LibraryLogic, duration: float, *, verify: bool = False, iters: int = 100,
               cold_iters: int = 100, rotating_mb: int = 512) -> list[dict]:
    """hipblaslt-bench YAML rows, one per ExactLogic size. Iterations come from the expected
    latency (the logic file's gflops) and the time budget per phase; without a known latency
    the fixed counts are used. Verify rows run once with norm and allclose checks."""
    rows = []
    for problem, (_, _, gflops), (size, _) in zip(problems_of(lib), lib.sizes(), lib.exact_logic):
        t = problem.type
        row = {"function": "matmul", "transA": t.transA, "transB": t.transB,
               "a_type": t.a_type, "b_type": t.b_type, "c_type": t.c_type, "d_type": t.d_type,
               "scale_type": scale_type_for(t.compute_type), "compute_type": t.compute_type,
               "alpha": 1.0, "beta": 0.0, "M": problem.m, "N": problem.n,
               "batch_count": problem.batch, "K": problem.k, "initialization": "trig_float"}
        if len(size) == 8:  # sizes that carry leading dimensions keep them
            row.update(zip(("ldc", "ldd", "lda", "ldb"), size[4:]))
        if verify:
            row.update(norm_check=1, norm_check_assert=0, allclose_check=1, iters=1, cold_iters=0)
        else:
            expected_us = problem.flops / gflops / 1e3 if gflops > 0 else 0.0
            n = math.ceil(duration * 1e6 / expected_us) if expected_us > 0 and duration > 0 else 0
            row.update(rotating=rotating_mb, flush=True, use_gpu_timer=True,
                       print_kernel_info=True, iters=n or iters, cold_iters=n or cold_iters)
        rows.append(row)
    return rows


def dump_rows(rows: list[dict], path) -> Path:
    """A YAML list of flow mappings, one row per line (what hipblaslt-bench --yaml reads)."""
    lines = [yaml.dump(row, Dumper=_Dumper, default_flow_style=True, sort_keys=False,
                       width=5000).strip() for row in rows]
    return files.write_text(path, "".join(f"- {line}\n" for line in lines) or "[]\n")


def keep_sizes(lib: LibraryLogic, sizes: set[tuple[int, int, int, int]]) -> LibraryLogic:
    """The library restricted to ``sizes``, unreferenced solutions dropped and renumbered."""
    by_index = {int(s["SolutionIndex"]): s for s in lib.solutions}
    chosen = [(GemmProblem(lib.gemm_type, *size), by_index[index], gflops)
              for size, index, gflops in lib.sizes() if size in sizes]
    return build(lib, chosen)


def ship_kept(libs_dir, kept, out_dir, header: str = "") -> list[Path]:
    """final_libs: each library of ``libs_dir`` restricted to the kept rows (``lib``, m, n,
    batch_count, k); libraries with nothing kept are not written."""
    written = []
    for name, lib in load_dir(libs_dir).items():
        rows = kept[kept["lib"] == name]
        if rows.empty:
            continue
        sizes = {(int(r.m), int(r.n), int(r.batch_count), int(r.k)) for r in rows.itertuples()}
        written.append(dump(keep_sizes(lib, sizes), Path(out_dir) / name, header=header or None))
    return written
