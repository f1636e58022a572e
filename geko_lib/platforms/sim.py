"""The sim platform: an analytic model of a GPU running tiled GEMM kernels.

It lets the whole workflow run with no GPU. Its timings are *predictions*: every table it returns
has ``measured = False`` and every library it writes says so in a header comment.

The model, per (solution, problem):
  tiles   = ceil(M/MT0) * ceil(N/MT1) * batch * GSU         (split-K multiplies the tile count)
  waves   = ceil(tiles / CUs)                               (wave quantization)
  compute = waves * 2*MT0*MT1*ceil(ceil(K/GSU)/DU)*DU / (per-CU peak * tile efficiency)
            (tile edge waste and K-loop padding are in the padded tile work)
  memory  = HBM traffic / bandwidth, where operands are re-read once per tile row/column unless
            the last-level cache holds them
  time    = max(compute, memory) + 10% of the other (imperfect overlap) + launch overhead
            + for GSU > 1 a reduction pass over the fp32 partial results
times a deterministic per-solution quality factor and a per-(solution, size) variation, so the
landscape is rugged the way real kernel timings are, and optionally seeded noise. The "default
heuristic" ranks a restricted set of solutions with the smooth model only: good but imperfect,
so a dense search finds real (modelled) uplift.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import math
import os
import re
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..library import logic as liblogic
from ..library.collection import load_dir
from .. import original_columns
from ..gemm import BY_NAME, GemmProblem, GemmType
from ..tuning import configure as tuning_configure
from ..tuning import ga
from ..tuning import optimize as tune
from ..tuning.problem import TuningConfig
from . import (EXPORT_FORMATS, RESULT_COLUMNS, VERIFY_COLUMNS, Capabilities, PlatformError,
               peak_class, require_problems, results_frame)
from ..archs import ARCH_ALIASES, ARCHS, MODELS, SimArch, arch_by_name  # noqa: F401 (re-exported)
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

MODEL_NOTE = ("sim platform: analytic GPU model; times are model predictions, not measurements")


# --------------------------------------------------------------------------------------------
# architectures


# --------------------------------------------------------------------------------------------
# the catalogue of existing solutions

MACRO_TILES = (16, 32, 64, 128, 256)
DEPTH_U_2BYTE = (32, 64, 128)
SPLIT_K = (1, 2, 4, 8, 16)
WG_MAPPING = (1, 8)


@dataclass(frozen=True)
class Catalogue:
    gemm_type: GemmType
    index: np.ndarray
    mt0: np.ndarray
    mt1: np.ndarray
    du: np.ndarray
    gsu: np.ndarray
    wgm: np.ndarray
    names: tuple[str, ...]
    quality: np.ndarray  # deterministic per-solution speed factor
    seeds: np.ndarray  # uint64 per solution, mixed with the size for per-size variation

    def __len__(self):
        return len(self.names)

    def position(self, solution_index: int) -> int:
        pos = int(solution_index) - int(self.index[0])
        if not 0 <= pos < len(self) or int(self.index[pos]) != int(solution_index):
            raise PlatformError(f"solution index {solution_index} is not in the sim catalogue of "
                                f"{self.gemm_type.name}")
        return pos

    def params(self, pos: int) -> dict:
        """The solution as library logic carries it."""
        return {
            "SolutionIndex": int(self.index[pos]),
            "SolutionNameMin": self.names[pos],
            "KernelNameMin": self.names[pos],
            "MacroTile0": int(self.mt0[pos]),
            "MacroTile1": int(self.mt1[pos]),
            "DepthU": int(self.du[pos]),
            "GlobalSplitU": int(self.gsu[pos]),
            "WorkGroupMapping": int(self.wgm[pos]),
            "StaggerU": 0,
            "SimPlatform": True,
        }


def _type_base_index(gemm_type: GemmType) -> int:
    """Stable, type-specific block of global solution indices."""
    return (zlib.crc32(gemm_type.name.encode()) % 9000 + 1000) * 1000


@functools.lru_cache(maxsize=64)
def catalogue(gemm_type: GemmType) -> Catalogue:
    scale = 2.0 / max(BY_NAME[gemm_type.a_type].bytes, 0.5)
    depths = tuple(int(max(8, d * scale)) for d in DEPTH_U_2BYTE)
    rows = [(m0, m1, du, gsu, wgm) for m0 in MACRO_TILES for m1 in MACRO_TILES for du in depths
            for gsu in SPLIT_K for wgm in WG_MAPPING]
    base = _type_base_index(gemm_type)
    mt0, mt1, du, gsu, wgm = (np.array(col, dtype=np.int64) for col in zip(*rows))
    prefix = gemm_type.tensile_problem_name
    names = tuple(f"{prefix}_SIM_MT{a}x{b}x{c}_GSU{d}_WGM{e}" for a, b, c, d, e in rows)
    seeds = np.array([zlib.crc32(n.encode()) for n in names], dtype=np.uint64)
    quality = 0.93 + 0.14 * _unit(seeds)
    return Catalogue(gemm_type, base + np.arange(len(rows)), mt0, mt1, du, gsu, wgm, names,
                     quality, seeds)


SOLUTION_KEYS = ("MacroTile0", "MacroTile1", "DepthU", "SolutionNameMin")
_EPILOGUE_TAG = re.compile(r"_Bias[A-Z]*_HAS(?:_SABV?)?_SAV")


def solution_index(solution: dict) -> int:
    """A catalogue solution keeps its catalogue index; a tuned one gets a stable index from its
    name (outside every catalogue block)."""
    if "SimSolutionIndex" in solution:
        return int(solution["SimSolutionIndex"])
    return 10_000_000 + zlib.crc32(str(solution["SolutionNameMin"]).encode()) % 90_000_000


def solutions_catalogue(gemm_type: GemmType, solutions: Sequence[dict]) -> Catalogue:
    """A catalogue of arbitrary solutions (library-logic parameter dicts): what the model needs
    is the macro tile, DepthU, split-K, workgroup mapping and the name (its quality factor)."""
    for solution in solutions:
        missing = [k for k in SOLUTION_KEYS if k not in solution]
        if missing:
            raise PlatformError(f"sim cannot time solution {solution.get('SolutionIndex')}: "
                                f"it lacks {', '.join(missing)}")
    names = tuple(str(s["SolutionNameMin"]) for s in solutions)
    # epilogue tags rename a kernel without changing its speed
    seeds = np.array([zlib.crc32(_EPILOGUE_TAG.sub("", n).encode()) for n in names],
                     dtype=np.uint64)
    column = lambda key, default: np.array([int(s.get(key, default)) for s in solutions],  # noqa: E731
                                           dtype=np.int64)
    return Catalogue(gemm_type, np.array([solution_index(s) for s in solutions], dtype=np.int64),
                     column("MacroTile0", 0), column("MacroTile1", 0), column("DepthU", 0),
                     np.maximum(column("GlobalSplitU", 1), 1), column("WorkGroupMapping", 8),
                     names, 0.93 + 0.14 * _unit(seeds), seeds)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer: decorrelates integer seeds."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
    x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)).astype(np.uint64)
    x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)).astype(np.uint64)
    return x ^ (x >> np.uint64(31))


def _unit(seeds: np.ndarray) -> np.ndarray:
    """Deterministic uniform numbers in [0, 1) from integer seeds."""
    with np.errstate(over="ignore"):
        return (_mix(seeds) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _size_seed(size: tuple) -> np.uint64:
    """The per-size seed of a problem's (M, N, batch, K)."""
    return np.uint64(zlib.crc32(repr(tuple(size)).encode()))


# --------------------------------------------------------------------------------------------
# the timing model


def model_us(arch: SimArch, problem: GemmProblem, cat: Catalogue, rows=slice(None),
             smooth: bool = False) -> np.ndarray:
    """Predicted kernel time (us) of catalogue rows on one problem; ``smooth`` leaves out the
    per-solution quality and per-size variation (what a heuristic can know)."""
    sizes = np.array([problem.size], dtype=np.int64)
    return model_grid(arch, problem.type, sizes, cat, rows, smooth)[0]


def model_grid(arch: SimArch, gemm_type: GemmType, sizes: np.ndarray, cat: Catalogue,
               rows=slice(None), smooth: bool = False) -> np.ndarray:
    """:func:`model_us` of many problems of one GEMM type at once: ``sizes`` (P x 4: M, N,
    batch, K) and ``rows`` (catalogue rows: one set for all problems, or P x R, one set per
    problem) -> P x R times (us). Elementwise the same arithmetic as one problem at a time."""
    m, n, b, k = (sizes[:, i:i + 1] for i in range(4))
    mt0, mt1, du, gsu, wgm = (a[rows].astype(np.float64) for a in
                              (cat.mt0, cat.mt1, cat.du, cat.gsu, cat.wgm))
    in_bytes = BY_NAME[gemm_type.a_type].bytes
    out_bytes = BY_NAME[gemm_type.d_type].bytes

    tiles0, tiles1 = np.ceil(m / mt0), np.ceil(n / mt1)
    tiles = tiles0 * tiles1 * b * gsu
    waves = np.ceil(tiles / arch.cus)
    k_iters = np.ceil(np.ceil(k / gsu) / du)
    tile_flops = 2.0 * mt0 * mt1 * k_iters * du
    area = mt0 * mt1
    efficiency = arch.efficiency * area / (area + 2048.0) * du / (du + 16.0 * 2 / in_bytes)
    lds_bytes = (mt0 + mt1) * du * in_bytes
    efficiency = np.where(lds_bytes > 65536, efficiency * 0.7, efficiency)
    per_cu_flops = arch.peak_tflops[peak_class(gemm_type)] * 1e12 / arch.cus
    compute_s = waves * tile_flops / (per_cu_flops * efficiency)

    a_bytes, b_bytes = m * k * b * in_bytes, k * n * b * in_bytes
    cache = arch.llc_mb * 2**20
    hit = np.minimum(1.0, cache / np.maximum(a_bytes + b_bytes, 1.0)) * 0.9
    hit = np.where((wgm == 1) & (tiles0 * tiles1 > arch.cus), hit * 0.8, hit)
    partial_bytes = np.where(gsu > 1, m * n * b * 4.0 * gsu, m * n * b * out_bytes)
    traffic = (a_bytes * (1 + (tiles1 - 1) * (1 - hit)) + b_bytes * (1 + (tiles0 - 1) * (1 - hit))
               + partial_bytes)
    bandwidth = arch.hbm_tbps * 1e12 * 0.88
    memory_s = traffic / bandwidth

    kernel_s = np.maximum(compute_s, memory_s) + 0.1 * np.minimum(compute_s, memory_s)
    reduce_s = np.where(gsu > 1, 0.5 * arch.launch_us * 1e-6
                        + (m * n * b * 4.0 * gsu + m * n * b * out_bytes) / bandwidth, 0.0)
    us = (kernel_s + reduce_s) * 1e6 + arch.launch_us
    us = np.broadcast_to(us, (len(sizes), us.shape[-1]))
    if smooth:
        return us
    size_seeds = np.array([_size_seed(tuple(int(v) for v in size)) for size in sizes],
                          dtype=np.uint64)[:, None]
    variation = 0.97 + 0.06 * _unit(cat.seeds[rows] ^ size_seeds)
    return us * cat.quality[rows] * variation


def heuristic_rows(cat: Catalogue) -> np.ndarray:
    """What the default heuristic considers: the middle DepthU, one mapping, split-K up to 4."""
    mid_du = np.sort(np.unique(cat.du))[1]
    return np.flatnonzero((cat.du == mid_du) & (cat.wgm == 8) & (cat.gsu <= 4))


def candidate_rows(cat: Catalogue, problem: GemmProblem) -> np.ndarray:
    """Solutions a dense search benchmarks: tiles not absurdly larger than the problem and at
    least 64 K-elements per split."""
    m, n, _, k = problem.size
    fits = (cat.mt0 <= max(16, 2 * m)) & (cat.mt1 <= max(16, 2 * n))
    splits = (cat.gsu == 1) | (k / cat.gsu >= 64)
    return np.flatnonzero(fits & splits)


# --------------------------------------------------------------------------------------------
# numerics: emulate the kernel on a scaled-down problem and compare with float64


def _round_to(x: np.ndarray, mantissa_bits: int | None) -> np.ndarray:
    if mantissa_bits is None:  # integer types
        return np.round(x)
    if mantissa_bits >= 52:
        return x
    exponent = np.floor(np.log2(np.abs(x), where=x != 0, out=np.zeros_like(x)))
    scale = np.exp2(mantissa_bits - exponent)
    return np.round(x * scale) / scale


def emulated_error(problem: GemmProblem, du: int, gsu: int, faulty: bool, seed: int) -> float:
    """Relative Frobenius error of an emulated kernel (inputs rounded to the input type, fp32
    accumulation in DepthU steps, split-K partials summed, output rounded to the output type)
    against a float64 product of the same inputs. A faulty kernel drops its last K block."""
    t = problem.type
    m, n, k = min(problem.m, 48), min(problem.n, 48), min(problem.k, 4096)
    rng = np.random.default_rng([seed, *problem.size])
    in_bits = BY_NAME[t.a_type].mantissa_bits
    if in_bits is None:
        a = rng.integers(-8, 8, (m, k)).astype(np.float64)
        b = rng.integers(-8, 8, (k, n)).astype(np.float64)
    else:
        a = _round_to(rng.uniform(-1, 1, (m, k)), in_bits)
        b = _round_to(rng.uniform(-1, 1, (k, n)), BY_NAME[t.b_type].mantissa_bits)
    reference = a @ b
    acc_dtype = np.float64 if BY_NAME[t.a_type].bytes >= 8 else np.float32
    chunk = max(1, math.ceil(k / gsu))
    total = np.zeros((m, n), dtype=acc_dtype)
    for start in range(0, k, chunk):
        partial = np.zeros((m, n), dtype=acc_dtype)
        stop = min(k, start + chunk)
        for s in range(start, stop, du):
            e = min(stop, s + du)
            if faulty and e == k:
                continue
            partial += (a[:, s:e] @ b[s:e, :]).astype(acc_dtype)
        total += partial
    out = _round_to(total.astype(np.float64), BY_NAME[t.d_type].mantissa_bits)
    denom = np.linalg.norm(reference)
    return float(np.linalg.norm(out - reference) / denom) if denom else 0.0


# --------------------------------------------------------------------------------------------
# tune mode: Tensile kernel parameters -> a solution the model can time

LDS_BYTES = {"gfx942": 65536, "gfx950": 163840, "h200": 232448}
MODEL_PARAMS = ("MatrixInstruction", "DepthU", "GlobalSplitU", "WorkGroupMapping")


def macro_tile(mi: Sequence[int]) -> tuple[int, int]:
    """MT0, MT1 of a MatrixInstruction [MI_M, MI_N, MI_K, MI_B, MIBlockM, waveTileM, waveTileN,
    waveM, waveN]."""
    mi_m, mi_n, _, mi_b, block_m, tile_m, tile_n, wave_m, wave_n = (int(v) for v in mi[:9])
    return mi_m * block_m * tile_m * wave_m, mi_n // block_m * mi_b * tile_n * wave_n


def _scalar(value, default: int) -> int:
    if isinstance(value, list):
        value = value[0] if value else default
    return int(value) if value is not None else default


def tuned_solution(gemm_type: GemmType, params: dict) -> dict:
    """A tuned kernel as a library-logic solution. The model sees the macro tile, DepthU,
    split-K and workgroup mapping; every other parameter only enters the kernel's name, whose
    hash is the model's per-kernel quality factor (so they matter, deterministically)."""
    mt0, mt1 = macro_tile(params["MatrixInstruction"])
    du, gsu = _scalar(params.get("DepthU"), 64), max(1, _scalar(params.get("GlobalSplitU"), 1))
    wgm = abs(_scalar(params.get("WorkGroupMapping"), 8)) or 1
    others = {k: v for k, v in sorted(params.items()) if k not in MODEL_PARAMS}
    digest = zlib.crc32(json.dumps(others, sort_keys=True, default=str).encode())
    name = (f"{gemm_type.tensile_problem_name}_UserArgs_SIMT_MT{mt0}x{mt1}x{du}_GSU{gsu}"
            f"_WGM{wgm}_K{digest:08x}")
    solution = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in params.items()}
    solution.update(MacroTile0=mt0, MacroTile1=mt1, DepthU=du, GlobalSplitU=gsu,
                    WorkGroupMapping=wgm, SolutionNameMin=name, KernelNameMin=name,
                    BaseName=name, SimPlatform=True)
    return solution


def kernel_is_valid(arch: SimArch, gemm_type: GemmType):
    """What a kernel build would reject: a macro tile below 16 or over the LDS budget."""
    lds = LDS_BYTES.get(arch.name, 65536)
    in_bytes = BY_NAME[gemm_type.a_type].bytes

    def valid(params: dict) -> bool:
        mi = params.get("MatrixInstruction")
        if not isinstance(mi, (list, tuple)) or len(mi) < 9:
            return False
        mt0, mt1 = macro_tile(mi)
        du = _scalar(params.get("DepthU"), 64)
        return mt0 >= 16 and mt1 >= 16 and (mt0 + mt1) * du * in_bytes <= lds

    return valid


# --------------------------------------------------------------------------------------------
# the platform


@dataclass
class SimPlatform:
    arch: SimArch
    seed: int = 0
    noise: float = 0.0  # relative standard deviation of seeded timing noise
    faulty: tuple[str, ...] = ()  # solution-name substrings: fast but numerically wrong
    crash_on: tuple[str, ...] = ()  # problem-name substrings: the job raises
    stall_on: tuple[str, ...] = ()  # problem-name substrings: the job hangs (tests the watchdog)
    flaky_on: tuple[str, ...] = ()  # problem-name substrings: a job fails once, then works
    search_crash_on: tuple[str, ...] = ()  # problem-name substrings: their dense search fails
    disk_full_on: tuple[str, ...] = ()  # problem-name substrings: the job's write finds no space
    job_seconds: float = 0.0  # real time a GPU job spends, to emulate long jobs
    # real time the dense search spends per GEMM, to emulate cuda's search (a fixed screening
    # budget per GEMM plus a part that grows with the GEMM's runtime): see search_seconds()
    search_seconds_per_gemm: float = 0.0
    search_seconds_per_ms: float = 0.0

    name = "sim"
    # its settings (config section sim) that shape results; fault injection and pacing do not
    RESULT_OPTIONS = ("seed", "noise", "faulty_solutions")
    ARCH_MODELS = tuple(MODELS)  # it models every GPU it knows
    measured = False
    note = MODEL_NOTE
    library_version = "sim-model-1"  # changes when the model's catalogue or formulas change

    @classmethod
    def capabilities(cls, config: dict) -> Capabilities:
        from ..archs import datasheet_ceilings

        # the override and TunableOp files are written with a warning (their indices are the
        # model's); aiter's table is not: a runtime reads its rows without a check
        return Capabilities(measured=False, note=MODEL_NOTE, epilogues=True,
                            exports=tuple(f for f in EXPORT_FORMATS if f != "aiter_tuned"),
                            integrate=False, combine=True,
                            ceilings=dict(datasheet_ceilings(config.get("arch", "gfx950")),
                                          source="datasheet figures in the sim model"))

    @classmethod
    def from_config(cls, config: dict) -> "SimPlatform":
        sim = config.get("sim") or {}
        return cls(arch=arch_by_name(config.get("arch", "gfx950")), seed=int(sim.get("seed", 0)),
                   noise=float(sim.get("noise", 0.0)),
                   faulty=tuple(sim.get("faulty_solutions") or ()),
                   crash_on=tuple(sim.get("crash_on") or ()),
                   stall_on=tuple(sim.get("stall_on") or ()),
                   flaky_on=tuple(sim.get("flaky_on") or ()),
                   search_crash_on=tuple(sim.get("search_crash_on") or ()),
                   disk_full_on=tuple(sim.get("disk_full_on") or ()),
                   job_seconds=float(sim.get("job_seconds", 0.0)),
                   search_seconds_per_gemm=float(sim.get("search_seconds_per_gemm", 0.0)),
                   search_seconds_per_ms=float(sim.get("search_seconds_per_ms", 0.0)))

    # --- helpers -----------------------------------------------------------------------------
    def _faulty_mask(self, cat: Catalogue, rows: np.ndarray) -> np.ndarray:
        if not self.faulty:
            return np.zeros(len(rows), dtype=bool)
        return np.array([any(f in cat.names[r] for f in self.faulty) for r in rows], dtype=bool)

    def _times(self, problem: GemmProblem, cat: Catalogue, rows: np.ndarray, device: int):
        us = model_us(self.arch, problem, cat, rows)
        return self._disturbed(problem, us, self._faulty_mask(cat, rows), device)

    def _disturbed(self, problem: GemmProblem, us, faulty, device: int):
        """Modelled times as the platform reports them: a planted faulty kernel looks
        attractive, so only verification can stop it; seeded noise where configured."""
        us = np.where(faulty, us * 0.6, us)
        if self.noise > 0:
            rng = np.random.default_rng([self.seed, device, *problem.size, zlib.crc32(
                problem.type.name.encode())])
            us = us * np.clip(1 + self.noise * rng.standard_normal(len(us)), 0.5, 1.5)
        return us

    def _times_of(self, problems: Sequence[GemmProblem], cat: Catalogue, positions: np.ndarray,
                  device: int) -> np.ndarray:
        """The time of one catalogue position per problem (all of ``cat``'s GEMM type), modelled
        in one pass; the same numbers as :meth:`_times` of each alone."""
        sizes = np.array([p.size for p in problems], dtype=np.int64)
        us = model_grid(self.arch, cat.gemm_type, sizes, cat, positions[:, None])[:, 0]
        faulty = self._faulty_mask(cat, positions)
        if self.noise > 0:
            return np.array([self._disturbed(p, us[i:i + 1], faulty[i:i + 1], device)[0]
                             for i, p in enumerate(problems)])
        return np.where(faulty, us * 0.6, us)

    def _start_job(self, problems: Sequence[GemmProblem], out_dir=None) -> None:
        for problem in problems:
            if out_dir is not None and any(c in problem.name for c in self.flaky_on):
                # fails the first job that runs this GEMM in the phase dir (out_dir's parent),
                # so a retry (or a rerun) of it works: a transient failure
                marker = Path(out_dir).parent / ".sim_flaky" / problem.name
                if not marker.exists():
                    marker.parent.mkdir(parents=True, exist_ok=True)
                    marker.touch()
                    raise PlatformError(f"sim: injected one-time failure on {problem.name}")
            if any(c in problem.name for c in self.crash_on):
                raise PlatformError(f"sim: injected crash on {problem.name}")

            if any(c in problem.name for c in self.stall_on):
                log.warning("sim: injected hang on %s", problem.name)
                time.sleep(10**6)
        if self.job_seconds > 0:
            time.sleep(self.job_seconds)

    def search_seconds(self, problem: GemmProblem) -> float:
        """Real seconds the dense search of one GEMM sleeps: ``search_seconds_per_gemm`` plus
        ``search_seconds_per_ms`` per millisecond of the default kernel's (smooth) modelled time,
        so a chunk job lasts in proportion to the GEMMs it holds and the largest GEMMs cost more,
        as on a real GPU (0 unless configured)."""
        seconds = self.search_seconds_per_gemm
        if self.search_seconds_per_ms > 0:
            cat = catalogue(problem.type)
            us = model_us(self.arch, problem, cat, np.array([self.default_position(problem)]),
                          smooth=True)[0]
            seconds += self.search_seconds_per_ms * float(us) / 1e3
        return seconds

    def default_position(self, problem: GemmProblem) -> int:
        return int(self.default_positions([problem])[0])

    def default_positions(self, problems: Sequence[GemmProblem]) -> np.ndarray:
        """The default heuristic's catalogue position for each problem (all of one GEMM type):
        the heuristic rows' fastest by the smooth model, decided for all problems at once."""
        cat = catalogue(problems[0].type)
        rows = heuristic_rows(cat)
        sizes = np.array([p.size for p in problems], dtype=np.int64)
        best = np.empty(len(problems), dtype=np.int64)
        step = max(1, 2**22 // max(len(rows), 1))  # bounded temporaries: ~32 MB per array
        for start in range(0, len(problems), step):
            grid = model_grid(self.arch, cat.gemm_type, sizes[start:start + step], cat, rows,
                              smooth=True)
            best[start:start + step] = rows[np.argmin(grid, axis=1)]
        return best

    def _row(self, problem: GemmProblem, cat: Catalogue, pos: int, us: float, device: int) -> dict:
        return {**problem.gemm_fields(), "scaleA": 0, "scaleB": 0, "us": round(float(us), 4),
                "gflops": round(problem.flops / us / 1e3, 3),
                "gbps": round(problem.min_bytes / us / 1e3, 3),
                "solution_index": int(cat.index[pos]), "solution_name": cat.names[pos],
                "kernel": cat.names[pos], "platform": self.name, "measured": False,
                "device": int(device)}

    def _library_choice(self, library: Path | None) -> dict:
        """(GEMM type, size) -> (catalogue of the library's solutions, position)."""
        if library is None:
            return {}
        chosen = {}
        for lib in load_dir(Path(library) / "library").values():
            cat = solutions_catalogue(lib.gemm_type, list(lib.solutions))
            positions = lib.solution_position()
            for size, index, _ in lib.size_entries():
                chosen[(lib.gemm_type, size)] = (cat, positions[index])
        return chosen

    def _choice(self, chosen: dict, problem: GemmProblem) -> tuple[Catalogue, int]:
        found = chosen.get((problem.type, problem.size))
        if found is None:
            return catalogue(problem.type), self.default_position(problem)
        return found

    # --- protocol ----------------------------------------------------------------------------
    def bench(self, problems, out_dir, device, library=None, duration=None,
              progress=None) -> pd.DataFrame:
        problems = require_problems(self.name, "bench", problems)
        self._start_job(problems)
        chosen = self._library_choice(library)
        picks: dict[int, tuple[Catalogue, int]] = {}
        defaults: dict[GemmType, list[int]] = {}
        for i, problem in enumerate(problems):
            found = chosen.get((problem.type, problem.size))
            if found is None:
                defaults.setdefault(problem.type, []).append(i)
            else:
                picks[i] = found
        for gemm_type, indices in defaults.items():
            cat = catalogue(gemm_type)
            positions = self.default_positions([problems[i] for i in indices])
            picks.update((i, (cat, int(pos))) for i, pos in zip(indices, positions))
        # one model pass per catalogue: many thousands of GEMMs take seconds, not minutes
        groups: dict[int, list[int]] = {}
        for i in range(len(problems)):
            groups.setdefault(id(picks[i][0]), []).append(i)
        times = np.empty(len(problems))
        for indices in groups.values():
            cat = picks[indices[0]][0]
            positions = np.array([picks[i][1] for i in indices], dtype=np.int64)
            times[indices] = self._times_of([problems[i] for i in indices], cat, positions,
                                            device)
        rows = []
        for i, problem in enumerate(problems):
            cat, pos = picks[i]
            rows.append(self._row(problem, cat, pos, times[i], device))
            if progress is not None:
                progress(1)
        return results_frame(rows, RESULT_COLUMNS)

    def search(self, problems, out_dir, device, duration=None, progress=None) -> pd.DataFrame:
        problems = require_problems(self.name, "search", problems)
        self._start_job(problems, out_dir)
        for problem in problems:
            if any(c in problem.name for c in self.search_crash_on):
                raise PlatformError(f"sim: injected search crash on {problem.name}")
        rows = []
        for problem in problems:
            cat = catalogue(problem.type)
            candidates = candidate_rows(cat, problem)
            times = self._times(problem, cat, candidates, device)
            rows.extend(self._row(problem, cat, pos, us, device)
                        for pos, us in zip(candidates, times))
            seconds = self.search_seconds(problem)
            if seconds > 0:
                time.sleep(seconds)
            if progress is not None:
                progress(1)
        return results_frame(rows, RESULT_COLUMNS)

    def extract(self, winners: pd.DataFrame, out_dir) -> list[Path]:
        """One library per GEMM type with the winning catalogue solutions."""
        paths = []
        problems = [GemmProblem.from_row(r) for r in winners.to_dict("records")]
        by_type: dict[GemmType, list] = {}
        for problem, row in zip(problems, winners.to_dict("records")):
            by_type.setdefault(problem.type, []).append((problem, row))
        for gemm_type, entries in sorted(by_type.items()):
            cat = catalogue(gemm_type)
            chosen = []
            for problem, row in entries:
                params = cat.params(cat.position(int(row["solution_index"])))
                params["SimSolutionIndex"] = params["SolutionIndex"]
                chosen.append((problem, params, float(row["gflops"])))
            lib = liblogic.build(self.library_template(gemm_type), chosen)
            path = Path(out_dir) / liblogic.file_name(self.arch.schedule_name, gemm_type)
            paths.append(liblogic.dump(lib, path, header=MODEL_NOTE))
        return paths

    def library_template(self, gemm_type: GemmType) -> liblogic.LibraryLogic:
        return liblogic.LibraryLogic(
            version={"MinimumRequiredVersion": "5.0.0"}, schedule_name=self.arch.schedule_name,
            architecture=self.arch.name, device_names=list(self.arch.device_names),
            problem_type=liblogic.problem_type_for(gemm_type), solutions=[])

    def create_library(self, libs_dir, out_dir) -> Path:
        """The sim 'loads' library logic directly: copy it, checked, into the library dir."""
        out = Path(out_dir) / "library"
        out.mkdir(parents=True, exist_ok=True)
        for name, lib in load_dir(libs_dir).items():
            known = catalogue(lib.gemm_type)
            for solution in lib.solutions:
                if "SimSolutionIndex" in solution:
                    known.position(int(solution["SimSolutionIndex"]))
            solutions_catalogue(lib.gemm_type, list(lib.solutions))  # every solution timeable
            liblogic.dump(lib, out / name, header=MODEL_NOTE)
        return out

    def verify(self, problems, out_dir, device, library, progress=None) -> pd.DataFrame:
        problems = require_problems(self.name, "verify", problems)
        self._start_job(problems)
        chosen = self._library_choice(library)
        rows = []
        for problem in problems:
            cat, pos = self._choice(chosen, problem)
            faulty = bool(self._faulty_mask(cat, np.array([pos]))[0])
            error = emulated_error(problem, int(cat.du[pos]), int(cat.gsu[pos]), faulty, self.seed)
            row = self._row(problem, cat, pos, 1.0, device)
            rows.append({c: row[c] for c in VERIFY_COLUMNS if c in row} | {"error": error})
            if progress is not None:
                progress(1)
        return results_frame(rows, VERIFY_COLUMNS)

    def lib_source(self, solution_index: int) -> str:
        return original_columns.NOT_FOUND  # the model's solutions live in no library directory

    def reference_solution(self, problem, solution_index) -> dict:
        cat = catalogue(problem.type)
        params = cat.params(cat.position(int(solution_index)))
        params["SimSolutionIndex"] = params["SolutionIndex"]
        return params

    def race(self, problem, solutions, device) -> list[tuple[float, float]]:
        self._start_job([problem])
        out = []
        for solution in solutions:
            if solution is None:
                cat, pos = catalogue(problem.type), self.default_position(problem)
            else:
                try:
                    cat, pos = solutions_catalogue(problem.type, [solution]), 0
                except PlatformError:
                    out.append((math.inf, math.inf))
                    continue
            us = float(self._times(problem, cat, np.array([pos]), device)[0])
            faulty = bool(self._faulty_mask(cat, np.array([pos]))[0])
            out.append((us, emulated_error(problem, int(cat.du[pos]), int(cat.gsu[pos]), faulty,
                                           self.seed)))
        return out

    def sweep(self, problems, library, out_dir, device) -> pd.DataFrame:
        problems = require_problems(self.name, "sweep", problems)
        self._start_job(problems)
        lib = liblogic.load(library)
        cat = solutions_catalogue(lib.gemm_type, list(lib.solutions))
        positions = np.arange(len(cat))
        indices = [lib.solutions.index_of(i) for i in range(len(lib.solutions))]
        rows = []
        for problem in problems:
            times = self._times(problem, cat, positions, device)
            rows.extend({"m": problem.m, "n": problem.n, "batch_count": problem.batch,
                         "k": problem.k, "SolutionIndex": index, "us": float(us),
                         "gflops": problem.flops / us / 1e3}
                        for index, us in zip(indices, times))
        return pd.DataFrame(rows)

    def configure(self, gemm_config, out_dir, arch, options):
        return tuning_configure.configure_for(gemm_config, out_dir, arch, options)

    def optimize(self, tuning_yaml, build_dir, device) -> Path:
        """Evaluate the YAML's kernels with the model (all of them for the Tensile backend, the
        GA for Ductile) and write the best kernel of every size to build_dir/3_LibraryLogic."""
        cfg = TuningConfig.load(tuning_yaml)
        problems = [GemmProblem(cfg.gemm_type, *size) for size in cfg.sizes]
        self._start_job(problems, build_dir)
        if any(c in p.name for p in problems for c in self.disk_full_on):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC),
                          str(Path(build_dir) / "sim_checkpoint.json"))
        space = tune.space_of(cfg, kernel_is_valid(self.arch, cfg.gemm_type))

        def evaluate(batch: list[dict]) -> np.ndarray:
            cat = solutions_catalogue(cfg.gemm_type,
                                      [tuned_solution(cfg.gemm_type, p) for p in batch])
            rows = np.arange(len(cat))
            return np.array([p.flops / self._times(p, cat, rows, device) / 1e3
                             for p in problems])

        n_gen = None if cfg.backend.lower() == "tensile" else \
            int(cfg.backend_config.get("n_gen", ga.GAConfig.n_gen))
        progress = tune.progress_logger(cfg.name, total=n_gen)
        result = tune.search(cfg, space, evaluate, Path(build_dir), seed=self.seed,
                             progress=progress)
        progress.close()
        lib = tune.best_library(cfg, result, self.library_template(cfg.gemm_type),
                                lambda params: tuned_solution(cfg.gemm_type, params))
        tune.write_logic(lib, build_dir, header=MODEL_NOTE)
        return Path(build_dir) / tune.LOGIC_DIR
