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
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import files
from ..bench_formats.rows import iterations
from . import codec, edits
from .codec import Solutions
from ..errors import GekoError
from ..gemm import BY_ENUM, BY_NAME, GemmProblem, GemmType, normalize_compute_type, scale_type_for

__all__ = ["LibraryError", "LibraryLogic", "gemm_type_of", "problem_type_for", "file_name",
           "build", "load", "dump", "problems_of", "bench_rows", "dump_rows", "rows_text",
           "keep_sizes"]

_NO_DEFAULT = object()

# dict-layout key of each list position (Tensile's normalized dictionary layout)
DICT_KEYS = ("MinimumRequiredVersion", "ScheduleName", "ArchitectureName", "DeviceNames",
             "ProblemType", "Solutions", "IndexOrder", "ExactLogic", "RangeLogic",
             "TileSelection", "PerfMetric", "LibraryType", "DefaultSolution")
DICT_REQUIRED = ("ArchitectureName", "ProblemType", "Solutions", "LibraryType")


class LibraryError(GekoError, ValueError):
    pass


@dataclass(eq=False)
class LibraryLogic:
    version: dict
    schedule_name: str
    architecture: object  # a name, or {Architecture, CUCount}
    device_names: list
    problem_type: dict
    solutions: Solutions
    index_order: list = field(default_factory=lambda: [2, 3, 0, 1])
    exact_logic: list = field(default_factory=list)
    range_logic: object = None
    tile_selection: object = None
    perf_metric: str = "DeviceEfficiency"
    library_type: str = "Equality"
    default_solution: object = _NO_DEFAULT
    layout: str = "list"  # how the file was written: "list" or "dict"
    dict_extra: dict = field(default_factory=dict)  # dict-layout keys this model does not know
    source: str | None = None  # the file it was loaded from

    def __setattr__(self, name, value):
        if name == "solutions" and not isinstance(value, Solutions):
            value = Solutions(value)
        super().__setattr__(name, value)

    def __eq__(self, other):
        return isinstance(other, LibraryLogic) and self.to_list() == other.to_list()

    # --- list layout -------------------------------------------------------------------------
    @classmethod
    def from_list(cls, data, source="<memory>") -> "LibraryLogic":
        if not isinstance(data, list) or not 12 <= len(data) <= 13:
            raise LibraryError(f"{source}: not a library-logic list (expected 12 or 13 entries, "
                               f"got {len(data) if isinstance(data, list) else type(data).__name__})")
        data = with_flat_solutions(data, source)
        if not isinstance(data[4], dict) or not isinstance(data[5], (list, Solutions)):
            raise LibraryError(f"{source}: entry 4 must be ProblemType (a mapping) and entry 5 "
                               "Solutions (a list)")
        extra = data[12] if len(data) > 12 else _NO_DEFAULT
        solutions = data[5] if isinstance(data[5], Solutions) else Solutions(data[5])
        _check_exact_logic(solutions, data[7] or [], source)
        return cls(data[0], data[1], data[2], data[3], data[4], solutions, data[6],
                   data[7] or [], data[8], data[9], data[10], data[11], extra)

    def to_list(self) -> list:
        out = [self.version, self.schedule_name, self.architecture, self.device_names,
               self.problem_type, list(self.solutions), self.index_order, self.exact_logic,
               self.range_logic, self.tile_selection, self.perf_metric, self.library_type]
        if self.default_solution is not _NO_DEFAULT:
            out.append(self.default_solution)
        return out

    # --- dict layout -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict, source="<memory>") -> "LibraryLogic":
        missing = [k for k in DICT_REQUIRED if k not in data]
        if missing:
            raise LibraryError(f"{source}: dict-layout library lacks {', '.join(missing)}")
        values = [data.get(k) for k in DICT_KEYS]
        values[0] = {"MinimumRequiredVersion": values[0]} if values[0] is not None else None
        values[6] = values[6] if values[6] is not None else [2, 3, 0, 1]
        if "DefaultSolution" not in data:
            values = values[:12]
        lib = cls.from_list(values, source)
        lib.layout = "dict"
        lib.dict_extra = {k: v for k, v in data.items() if k not in DICT_KEYS}
        return lib

    def to_dict(self) -> dict:
        values = self.to_list()
        version = values[0].get("MinimumRequiredVersion") if isinstance(values[0], dict) else None
        out = {key: value for key, value in zip(DICT_KEYS, [version, *values[1:]])}
        out.update(self.dict_extra)
        return out

    # --- text --------------------------------------------------------------------------------
    @classmethod
    def from_text(cls, text: str, source="<memory>") -> "LibraryLogic":
        try:
            entries = codec.top_level_entries(text)
            if len(entries) not in (12, 13):
                raise codec.NotBlockLayout("entry count")
            if SOLUTION_DEFAULTS in entries[5]:
                raise codec.NotBlockLayout("defaults + overrides")  # the whole parse expands it
            data = [codec.parse_entry(e) for e in entries[:5]]
            data.append(codec.split_solutions(entries[5]))
            data.append(codec.parse_entry(entries[6]))
            data.append(codec.parse_sizes(entries[7]))
            data.extend(codec.parse_entry(e) for e in entries[8:])
        except (codec.NotBlockLayout, yaml.YAMLError):
            return cls.from_data(_parse_whole(text, source), source)
        return cls.from_list(data, source)

    @classmethod
    def from_data(cls, data, source="<memory>") -> "LibraryLogic":
        if isinstance(data, dict):
            return cls.from_dict(data, source)
        return cls.from_list(data, source)

    def text(self) -> str:
        """The YAML text in this library's layout (TensileLite's block style for lists)."""
        if self.layout == "dict":
            return codec.dump_yaml(self.to_dict())
        values = [self.version, self.schedule_name, self.architecture, self.device_names,
                  self.problem_type]
        parts = [codec.entry_text(v) for v in values]
        parts.append(self.solutions.text())
        parts.append(codec.entry_text(self.index_order))
        parts.append(codec.sizes_text(self.exact_logic))
        tail = [self.range_logic, self.tile_selection, self.perf_metric, self.library_type]
        if self.default_solution is not _NO_DEFAULT:
            tail.append(self.default_solution)
        parts.extend(codec.entry_text(v) for v in tail)
        return "".join(parts)

    # --- the original tool's method API ------------------------------------------------------
    @property
    def name(self) -> str:
        """File name: the one it was loaded from, else TensileLite's name for it."""
        return Path(self.source).name if self.source else file_name(self.schedule_name,
                                                                       self.gemm_type)

    def trim(self) -> "LibraryLogic":
        """Duplicate sizes keep their best entry; unused solutions go (in place)."""
        return edits.trim(self)

    def add_epilogues(self) -> "LibraryLogic":
        """Bias, activation and scale-vector epilogues turned on (in place)."""
        return edits.add_epilogues(self)

    def create_bench_input(self, output_dir, verify: bool = False, duration: float = 0.5,
                           iters: int = 100, cold_iters: int = 100, rotating: int = 512,
                           beta: bool = False, flush: bool = True, print_kernel_info: bool = True,
                           initialization: str = "trig_float") -> tuple[Path, Path | None]:
        """``<stem>_bench.yaml`` (and, with ``verify``, ``<stem>_verify.yaml``) hipblaslt-bench
        rows in output_dir, with the original's keywords and defaults; returns both paths (the
        second is None without ``verify``)."""
        stem = Path(self.name).stem
        options = dict(iters=iters, cold_iters=cold_iters, rotating_mb=rotating, beta=beta,
                       flush=flush, print_kernel_info=print_kernel_info,
                       initialization=initialization)
        bench = dump_rows(bench_rows(self, duration, **options),
                          Path(output_dir) / f"{stem}_bench.yaml")
        check = dump_rows(bench_rows(self, duration, verify=True, **options),
                          Path(output_dir) / f"{stem}_verify.yaml") if verify else None
        return bench, check

    def dump(self, out_dir, header: str | None = None) -> Path:
        return dump(self, Path(out_dir) / self.name, header=header)

    # --- identity ----------------------------------------------------------------------------
    @property
    def architecture_name(self) -> str:
        arch = self.architecture
        return arch.get("Architecture", "") if isinstance(arch, dict) else str(arch)

    @property
    def gemm_type(self) -> GemmType:
        return gemm_type_of(self.problem_type)

    # --- sizes -------------------------------------------------------------------------------
    @property
    def sizes(self) -> list:
        """The ExactLogic entries as the original's ``Library.sizes``: ``[[M, N, B, K, ...],
        [SolutionIndex, gflops]]`` each; assign a list of such entries to replace them (then
        ``trim()`` drops the solutions no size uses)."""
        return self.exact_logic

    @sizes.setter
    def sizes(self, entries) -> None:
        entries = [[list(size), list(entry)] for size, entry in entries]
        _check_exact_logic(self.solutions, entries, self.source or "<memory>")
        self.exact_logic = entries

    def size_entries(self) -> list[tuple[tuple[int, int, int, int], int, float]]:
        """(M, N, B, K), solution index, gflops for every ExactLogic entry."""
        return [(tuple(int(v) for v in size[:4]), int(entry[0]), float(entry[1]))
                for size, entry in self.exact_logic]

    def solution_position(self) -> dict[int, int]:
        """SolutionIndex -> position in the solutions list."""
        return {self.solutions.index_of(i): i for i in range(len(self.solutions))}

    def solution_for(self, problem: GemmProblem) -> dict | None:
        positions = self.solution_position()
        for size, index, _ in self.size_entries():
            if size == problem.size:
                return self.solutions[positions[index]]
        return None


def _parse_whole(text: str, source):
    try:
        return codec.load_yaml(text)
    except yaml.YAMLError as exc:
        raise LibraryError(f"{source}: not valid YAML: {exc}") from None


def _check_exact_logic(solutions: list, exact: list, source) -> None:
    """Every ExactLogic entry is [[M, N, B, K(, ldc, ldd, lda, ldb)], [solution, gflops]] and
    points at a solution the file has."""
    try:
        indices = {solutions.index_of(i) for i in range(len(solutions))}
    except (KeyError, TypeError, ValueError, codec.NotBlockLayout):
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

    d = name("DataTypeD") if "DataTypeD" in problem_type else dest
    return GemmType(transpose("TransposeA"), transpose("TransposeB"), a, b, dest, d,
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
        # Tensile has one type for C and D; geko's own key keeps a differing D type
        **({"DataTypeD": enum(gemm_type.d_type)} if gemm_type.d_type != gemm_type.c_type else {}),
    }


def file_name(schedule_name: str, gemm_type: GemmType) -> str:
    """Library file name as TensileLite writes it: ``gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml``."""
    return f"{schedule_name}_{gemm_type.tensile_problem_name}_UserArgs.yaml"


def build(template: LibraryLogic, chosen: list[tuple[GemmProblem, dict, float]],
          key=lambda solution: int(solution["SolutionIndex"])) -> LibraryLogic:
    """A library serving exactly ``chosen`` (problem, solution, gflops): solutions deduplicated by
    ``key`` (default: their original index), renumbered 0..n-1, sizes sorted by (M, N, B, K)."""
    solutions: list[dict] = []
    position: dict = {}
    exact = []
    for problem, solution, gflops in sorted(chosen, key=lambda c: c[0].size):
        source = key(solution)
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

SOLUTION_DEFAULTS = "SolutionDefaults"


def with_flat_solutions(data: list, source="<memory>") -> list:
    """``data`` with entry 5 as a list of whole solutions. Current TensileLite logic files may
    hold ``{SolutionDefaults: {...}, Solutions: [...]}`` there instead: each solution lists only
    what differs from the defaults, and is the defaults updated with those keys (what
    TensileLite's own conversion tool expands back). geko reads both and writes whole ones."""
    entry = data[5] if len(data) > 5 else None
    if not (isinstance(entry, dict) and SOLUTION_DEFAULTS in entry):
        return data
    defaults, overrides = entry.get(SOLUTION_DEFAULTS) or {}, entry.get("Solutions") or []
    if not isinstance(defaults, dict) or not isinstance(overrides, list) or \
            not all(isinstance(o, dict) for o in overrides):
        raise LibraryError(f"{source}: entry 5 {{SolutionDefaults, Solutions}} needs a mapping "
                           "of defaults and a list of solution mappings")
    return [*data[:5], [copy.deepcopy(defaults) | o for o in overrides], *data[6:]]


def load(path) -> LibraryLogic:
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: cannot read: {exc}") from None
    lib = LibraryLogic.from_text(text, source=str(path))
    lib.source = str(path)
    return lib


def dump(lib: LibraryLogic, path, header: str | None = None) -> Path:
    """Write atomically; ``header`` becomes leading ``#`` comment lines (YAML readers skip them)."""
    text = lib.text()
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    return files.write_text(path, text)


def problems_of(lib: LibraryLogic) -> list[GemmProblem]:
    gemm_type = lib.gemm_type
    return [GemmProblem(gemm_type, m, n, b, k) for (m, n, b, k), _, _ in lib.size_entries()]


def bench_rows(lib: LibraryLogic, duration: float, *, verify: bool = False, iters: int = 100,
               cold_iters: int = 100, rotating_mb: int = 512, beta: bool = False,
               flush: bool = True, print_kernel_info: bool = True,
               initialization: str = "trig_float") -> list[dict]:
    """hipblaslt-bench YAML rows, one per ExactLogic size. Iterations come from the expected
    latency (the logic file's gflops) and the time budget per phase; without a known latency
    the fixed counts are used. Verify rows run once with norm and allclose checks."""
    rows = []
    for problem, (_, _, gflops), (size, _) in zip(problems_of(lib), lib.size_entries(), lib.exact_logic):
        t = problem.type
        row = {"function": "matmul", "transA": t.transA, "transB": t.transB,
               "a_type": t.a_type, "b_type": t.b_type, "c_type": t.c_type, "d_type": t.d_type,
               "scale_type": scale_type_for(t.compute_type), "compute_type": t.log_compute_type,
               "alpha": 1.0, "beta": 1.0 if beta else 0.0, "M": problem.m, "N": problem.n,
               "batch_count": problem.batch, "K": problem.k,
               # hipblaslt-bench's trig_float has no integer form: int8 data is drawn as integers
               "initialization": "rand_int" if t.a_type == "i8_r" else initialization}
        if len(size) == 8:  # sizes that carry leading dimensions keep them
            row.update(zip(("ldc", "ldd", "lda", "ldb"), size[4:]))
        if verify:
            row.update(norm_check=1, norm_check_assert=0, allclose_check=1, iters=1, cold_iters=0)
        else:
            expected_us = problem.flops / gflops / 1e3 if gflops > 0 else None
            timed, cold = iterations(duration, expected_us, (iters, cold_iters))
            row.update(rotating=rotating_mb, flush=flush, use_gpu_timer=True,
                       print_kernel_info=print_kernel_info, iters=timed, cold_iters=cold)
        rows.append(row)
    return rows


def rows_text(rows: list[dict]) -> str:
    """A YAML list of flow mappings, one row per line (what hipblaslt-bench --yaml reads)."""
    lines = [yaml.dump(row, Dumper=codec.Dumper, default_flow_style=True, sort_keys=False,
                       width=5000).strip() for row in rows]
    return "".join(f"- {line}\n" for line in lines) or "[]\n"


def dump_rows(rows: list[dict], path) -> Path:
    return files.write_text(path, rows_text(rows))


def keep_sizes(lib: LibraryLogic, sizes: set[tuple[int, int, int, int]]) -> LibraryLogic:
    """The library restricted to ``sizes``, unreferenced solutions dropped and renumbered."""
    by_index = {int(s["SolutionIndex"]): s for s in lib.solutions}
    chosen = [(GemmProblem(lib.gemm_type, *size), by_index[index], gflops)
              for size, index, gflops in lib.size_entries() if size in sizes]
    return build(lib, chosen)
