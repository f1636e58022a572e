"""Triton GEMM kernels for the cuda platform: three templates, their configs, feasibility
rules, launchers and parallel compilation.

Every template computes ``D_mem = X @ Y`` in the row-major view of ``timing``: X = op(B)^T is
(N x K), Y = op(A)^T is (K x M), D_mem is (N x M) and contiguous; X and Y may have any strides
(they are transposed views for T/N layouts). Accumulation is fp32; D is written in its own
dtype. Inside the kernels *rows* are D_mem's rows (BLAS N, the tokens of a linear layer) and
*columns* are D_mem's columns (BLAS M): ``block_m`` tiles rows, ``block_n`` columns.

Templates:

- ``tiled``: one program per output tile, tiles visited in super-grouped order (``group_m``
  row tiles share a sweep over the columns, so their X rows and Y columns stay in L2).
- ``splitk``: the K loop is split over ``split_k`` programs per tile, in **one launch**. Each
  program writes its fp32 partial tile into a workspace, then bumps the tile's arrival counter;
  the program that arrives last sums the ``split_k`` partials in split order, casts and writes
  D, and puts the counter back to zero. Chosen over fp32 atomics into a zeroed buffer because
  (a) there is no zeroing launch and no separate cast launch (the 3-launch atomic version only
  tied cuBLAS on the H200, see shared/reference/h200_measurements.md), (b) the sum is
  deterministic (same bits on every call), and (c) nothing but the counters carries state
  between calls, and the last program of every tile resets its counter inside the same launch,
  so the kernel can be replayed in a CUDA graph any number of times.
- ``persistent_tma``: a persistent kernel (grid = min(SMs, tiles)) whose programs walk tiles
  with stride ``NUM_SMS`` and load X/Y tiles with TMA through host-side tensor descriptors.
  TMA needs the last dimension contiguous, so a descriptor is made on the *base* tensor (A or
  B as stored) and the tile is transposed in registers (``.T``) where needed; every
  non-contiguous stride must be a multiple of 16 bytes, otherwise the config is infeasible.
  Out-of-range rows/columns/K are zero-filled by TMA on load and clipped on store.
- the **decode family** (``decode_fma``, ``decode_mma``, ``decode_mmaw``) for skinny GEMMs with
  few tokens (N <= 128): each program streams a ``block_n x K-slice`` panel of the weights
  (Y's columns, D's columns) exactly once for ``block_m`` tokens (rows of D), wide K-contiguous
  loads marked ``evict_first`` (weights are read once; the token rows stay in L2), with the same
  in-launch deterministic split-K reduction as ``splitk`` (``split_k`` 1 stores directly).
  Token tiles of one weight panel are neighbouring program ids, so when ``block_m`` < N the
  panel is re-read from L2, not HBM. ``decode_fma`` multiplies on the CUDA cores (``block_m`` 1..8
  tokens, products summed once after the K loop: no tensor core padding); ``decode_mma`` runs
  ``tl.dot`` with the tokens as the MMA's rows (padded to 16), ``decode_mmaw`` with the weights
  as the MMA's rows (D^T = W X^T, so ``block_n`` >= 64 can use Hopper's warpgroup MMA).
  Partial tiles of split-K are parked and summed only over the tile's valid rows and columns
  (tokens padded to a power of two cost no reduction traffic).
  ``decode_tma`` is ``decode_mmaw`` with both panels loaded by the tensor memory accelerator
  (host-side descriptors on W and X as stored; TN layout only): the copy engine keeps
  ``num_stages`` panels in flight per program without spending registers or load instructions.
  The ``_atomic`` variants (``decode_mmaw_atomic``, ``decode_tma_atomic``) reduce split-K with
  fp32 atomic adds into one zeroed tile per output tile, which the last-arriving program
  converts, stores and zeroes again: the tail reads one tile instead of ``split_k`` of them
  (with 1280 weight rows and many tokens the ordered sum's tail is several microseconds), at the
  cost of bitwise determinism (the order of the fp32 adds varies; errors stay at bf16 rounding).

torch and triton are imported lazily: this module imports (and ``TritonConfig`` /
``infeasible_reason`` / ``inductor_like_configs`` work) on a machine without them.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import math
import multiprocessing
import os
import re
import traceback
from dataclasses import asdict, dataclass, fields
from typing import Callable, Iterable, Sequence

from ...errors import GekoError
from ...gemm import BY_NAME, GemmProblem
from ...log_setup import LOGGER

log = logging.getLogger(LOGGER)

DECODE_TEMPLATES = ("decode_fma", "decode_mma", "decode_mmaw", "decode_mmaw_atomic",
                    "decode_tma", "decode_tma_atomic")
TEMPLATES = ("tiled", "splitk", "persistent_tma") + DECODE_TEMPLATES
# the decode kernel's MODE (0 CUDA cores, 1 tokens as the MMA's rows, 2 weights as its rows)
DECODE_MODE = {"decode_fma": 0, "decode_mma": 1, "decode_mmaw": 2, "decode_mmaw_atomic": 2,
               "decode_tma": 2, "decode_tma_atomic": 2}
# split-K partials added into one zeroed fp32 tile by atomics (not parked and summed in order)
ATOMIC_TEMPLATES = ("decode_mmaw_atomic", "decode_tma_atomic")
# weight and token panels loaded by the tensor memory accelerator (host-side descriptors)
TMA_DECODE_TEMPLATES = ("decode_tma", "decode_tma_atomic")
MAX_FMA_REGS = 128  # fp32 product registers per thread (block_m x block_n x block_k) of decode_fma
DECODE_WARPS = (1, 2, 4, 8)
SMEM_LIMIT_H200 = 232448  # bytes of shared memory a block may opt into (sm_90)
H200_SMS = 132
MAX_ACC_REGS = 192  # fp32 accumulator registers per thread above which a config is refused
SMEM_RESERVE = 1024  # barriers and bookkeeping the compiler adds to the pipelined buffers
MAX_WORKSPACE_BYTES = 1 << 30  # split-K partials larger than this are refused
BLOCK_SIZES = (16, 32, 64, 128, 256)
WARPS = (1, 2, 4, 8, 16)

# hipBLASLt type name -> what tl.dot takes on sm_90 (inputs) / what the epilogue writes (output)
INPUT_TYPES = ("bf16_r", "f16_r", "f32_r", "f8_r", "bf8_r")
OUTPUT_TYPES = ("bf16_r", "f16_r", "f32_r")

_NAME = re.compile(r"^triton_(" + "|".join(TEMPLATES) + r")_(\d+)x(\d+)x(\d+)_g(\d+)_k(\d+)"
                   r"_w(\d+)_s(\d+)$")


class TritonConfigError(GekoError, ValueError):
    """A Triton config that cannot be read (unknown template, missing or non-integer field)."""


@dataclass(frozen=True, order=True)
class TritonConfig:
    """One Triton kernel: template and its compile-time parameters."""

    template: str
    block_m: int  # rows of D_mem per tile (BLAS N: tokens)
    block_n: int  # columns of D_mem per tile (BLAS M: output features)
    block_k: int
    group_m: int = 8  # row tiles per super-group (tile ordering)
    split_k: int = 1  # K slices per tile (splitk only)
    num_warps: int = 4
    num_stages: int = 3

    def __post_init__(self):
        if self.template not in TEMPLATES:
            raise TritonConfigError(f"unknown Triton template {self.template!r} "
                                    f"(known: {', '.join(TEMPLATES)})")
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    object.__setattr__(self, f.name, int(value))
                    continue
                raise TritonConfigError(f"Triton config field {f.name} must be an integer, "
                                        f"got {value!r}")

    @property
    def name(self) -> str:
        return (f"triton_{self.template}_{self.block_m}x{self.block_n}x{self.block_k}"
                f"_g{self.group_m}_k{self.split_k}_w{self.num_warps}_s{self.num_stages}")

    def to_params(self) -> dict:
        """The mapping stored under ``Triton`` in a library-logic solution."""
        return asdict(self)

    @classmethod
    def from_params(cls, params: dict) -> "TritonConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(params) - known
        if unknown:
            raise TritonConfigError(f"unknown Triton config keys {sorted(unknown)}")
        missing = [k for k in ("template", "block_m", "block_n", "block_k") if k not in params]
        if missing:
            raise TritonConfigError(f"Triton config lacks {', '.join(missing)}: {params}")
        return cls(**params)

    @classmethod
    def from_name(cls, name: str) -> "TritonConfig":
        match = _NAME.match(name)
        if not match:
            raise TritonConfigError(f"not a Triton config name: {name!r}")
        template, *numbers = match.groups()
        return cls(template, *(int(v) for v in numbers))


# --------------------------------------------------------------------------------------------
# feasibility (pure Python, before any compile)


def _pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _next_pow2(value: int) -> int:
    return 1 << max(0, int(value) - 1).bit_length()


def smem_bytes(cfg: TritonConfig, in_bytes: float, out_bytes: float) -> int:
    """Shared memory the kernel needs: ``num_stages`` buffers of an X and a Y tile; the
    persistent kernel also keeps the output tile staged for its TMA store, while the pointer
    templates reuse the pipeline buffers for the epilogue's layout change (an fp32 tile at
    most). Checked against Triton 3.6's compiled ``metadata.shared`` for sm_90."""
    pipeline = cfg.num_stages * (cfg.block_m * cfg.block_k + cfg.block_k * cfg.block_n) * in_bytes
    tile = cfg.block_m * cfg.block_n
    if cfg.template == "persistent_tma":
        total = pipeline + tile * out_bytes
    else:
        total = max(pipeline, tile * 4)
    return int(math.ceil(total)) + SMEM_RESERVE


def acc_registers(cfg: TritonConfig) -> float:
    """fp32 accumulator registers per thread."""
    return cfg.block_m * cfg.block_n / (32 * cfg.num_warps)


def k_blocks(cfg: TritonConfig, k: int) -> int:
    return -(-int(k) // cfg.block_k)


def workspace_bytes(cfg: TritonConfig, problem: GemmProblem) -> int:
    """fp32 partial tiles of the split-K reduction (splitk, decode with split_k > 1; else 0):
    one per tile and slice, or one per tile for the atomic variants (kept zeroed)."""
    if cfg.split_k < 2 or cfg.template not in ("splitk",) + DECODE_TEMPLATES:
        return 0
    tiles = -(-problem.n // cfg.block_m) * -(-problem.m // cfg.block_n)
    slices = 1 if cfg.template in ATOMIC_TEMPLATES else cfg.split_k
    return tiles * slices * cfg.block_m * cfg.block_n * 4


def tma_bases(problem: GemmProblem) -> dict:
    """For persistent_tma: the 2-D base tensors as stored, ``(rows, cols)`` with cols
    contiguous, and whether the tile must be transposed after loading (``k_major`` True means
    the base is stored with K contiguous)."""
    t = problem.type
    n, m, k = problem.n, problem.m, problem.k
    return {
        "x": {"shape": (n, k) if t.transB == "N" else (k, n), "k_major": t.transB == "N"},
        "y": {"shape": (m, k) if t.transA == "T" else (k, m), "k_major": t.transA == "T"},
        "d": {"shape": (n, m), "k_major": None},
    }


def infeasible_reason(cfg: TritonConfig, problem: GemmProblem,
                      smem_limit: int = SMEM_LIMIT_H200) -> str | None:
    """Why ``cfg`` cannot run ``problem`` (None if it can), decided without compiling."""
    reason = _type_reason(problem)
    if reason is not None:
        return reason
    if cfg.template in DECODE_TEMPLATES:
        return _decode_reason(cfg, problem, smem_limit)
    return _tile_reason(cfg, problem, smem_limit)


def _type_reason(problem: GemmProblem) -> str | None:
    """Why no template can run ``problem``'s types or batch (None if they can)."""
    t = problem.type
    if problem.batch != 1:
        return f"batch_count {problem.batch} > 1 (Triton templates do one matrix)"
    if t.a_type != t.b_type:
        return f"mixed input types {t.a_type}/{t.b_type}"
    if t.a_type not in INPUT_TYPES:
        return f"input type {t.a_type} not supported by tl.dot here ({', '.join(INPUT_TYPES)})"
    if t.d_type not in OUTPUT_TYPES or t.c_type != t.d_type:
        return f"output type {t.c_type}/{t.d_type} not supported ({', '.join(OUTPUT_TYPES)})"
    compute = t.compute_type
    if compute not in ("f32_r", "xf32_r"):
        return f"compute type {compute} (Triton accumulates in f32)"
    return None


def _pow2_in(cfg: TritonConfig, field: str, low: int, high: int) -> str | None:
    value = getattr(cfg, field)
    if not _pow2(value) or not low <= value <= high:
        return f"{field} {value} is not a power of two in [{low}, {high}]"
    return None


def _beyond_problem(cfg: TritonConfig, problem: GemmProblem, floors: dict) -> str | None:
    """A block larger than its dimension padded to a power of two (at least the template's
    smallest block) only computes padding."""
    for field, dim, label in (("block_m", problem.n, "N (rows of D)"),
                              ("block_n", problem.m, "M (columns of D)"),
                              ("block_k", problem.k, "K")):
        value, padded = getattr(cfg, field), max(floors[field], _next_pow2(dim))
        if value > padded:
            return f"{field} {value} exceeds {label} = {dim} padded to {padded}"
    return None


def _split_reason(cfg: TritonConfig, problem: GemmProblem) -> str | None:
    """split_k must leave no slice empty and keep its workspace bounded."""
    blocks = k_blocks(cfg, problem.k)
    if cfg.split_k > blocks:
        return (f"split_k {cfg.split_k} > {blocks} K blocks of {cfg.block_k} "
                f"(K = {problem.k}): some slices would be empty")
    ws = workspace_bytes(cfg, problem)
    if ws > MAX_WORKSPACE_BYTES:
        return f"split-K workspace {ws} B > {MAX_WORKSPACE_BYTES} B"
    return None


def _decode_reason(cfg: TritonConfig, problem: GemmProblem, smem_limit: int) -> str | None:
    """The decode family's rules: tokens per pass (block_m) 1..8 on the CUDA cores or 16..128
    through tl.dot, weight rows per program (block_n), K block, and the register / shared
    memory each mode holds."""
    t = problem.type
    in_bytes = BY_NAME[t.a_type].bytes
    fma = cfg.template == "decode_fma"
    if in_bytes == 1 and not fma:
        return f"fp8 inputs in {cfg.template} (only decode_fma takes fp8 here)"
    low_m, high_m = (1, 8) if fma else (16, 128)
    # few weight rows per CUDA-core program: the one-token GEMV of the decode probe was
    # fastest with 4 (shared/reference/h200_measurements.md, "Single-launch GEMV")
    low_n = 2 if fma else 16
    for field, low, high in (("block_m", low_m, high_m), ("block_n", low_n, 256),
                             ("block_k", 32, 1024 if fma else 256)):
        reason = _pow2_in(cfg, field, low, high)
        if reason is not None:
            return reason
    if cfg.num_warps not in DECODE_WARPS:
        return f"num_warps {cfg.num_warps} not in {DECODE_WARPS} for {cfg.template}"
    if not 1 <= cfg.num_stages <= 6:
        return f"num_stages {cfg.num_stages} not in [1, 6] for {cfg.template}"
    if cfg.group_m != 1:
        return f"group_m {cfg.group_m} != 1 ({cfg.template} orders programs by weight panel)"
    if cfg.split_k < 1:
        return f"split_k {cfg.split_k} < 1"
    if cfg.template in ATOMIC_TEMPLATES and cfg.split_k < 2:
        return (f"split_k {cfg.split_k} < 2 for {cfg.template} (without split-K it is "
                f"{cfg.template[:-len('_atomic')]})")
    if cfg.template in TMA_DECODE_TEMPLATES:
        reason = _tma_decode_reason(problem, in_bytes)
        if reason is not None:
            return reason
    reason = _beyond_problem(cfg, problem, {"block_m": low_m, "block_n": low_n, "block_k": 32})
    if reason is not None:
        return reason
    threads = 32 * cfg.num_warps
    if fma:
        regs = cfg.block_m * cfg.block_n * cfg.block_k / threads
        if regs > MAX_FMA_REGS:
            return (f"products need {regs:g} fp32 registers per thread ({cfg.block_m}x"
                    f"{cfg.block_n}x{cfg.block_k} over {cfg.num_warps} warps) > {MAX_FMA_REGS}")
    else:
        regs = acc_registers(cfg)
        if regs > MAX_ACC_REGS:
            return (f"accumulator needs {regs:g} fp32 registers per thread "
                    f"({cfg.block_m}x{cfg.block_n} over {cfg.num_warps} warps) > {MAX_ACC_REGS}")
        smem = smem_bytes(cfg, in_bytes, BY_NAME[t.d_type].bytes)
        if smem > smem_limit:
            return (f"shared memory {smem} B ({cfg.num_stages} stages x ({cfg.block_m}+"
                    f"{cfg.block_n}) x {cfg.block_k} x {in_bytes:g} B) > {smem_limit} B")
    return _split_reason(cfg, problem)


def _tma_decode_reason(problem: GemmProblem, in_bytes: float) -> str | None:
    """decode_tma loads W and X through descriptors on the stored matrices, K contiguous."""
    t = problem.type
    if (t.transA, t.transB) != ("T", "N"):
        return (f"decode_tma needs K-contiguous weights and tokens (TN, a linear layer), got "
                f"{t.transA}{t.transB}")
    if (problem.k * in_bytes) % 16:
        return f"TMA needs 16-byte aligned rows: K = {problem.k} elements = " \
               f"{problem.k * in_bytes:g} B"
    return None


def _tile_reason(cfg: TritonConfig, problem: GemmProblem, smem_limit: int) -> str | None:
    """The rules of the tiled, splitk and persistent_tma templates."""
    t = problem.type
    in_bytes, out_bytes = BY_NAME[t.a_type].bytes, BY_NAME[t.d_type].bytes

    for field in ("block_m", "block_n", "block_k"):
        value = getattr(cfg, field)
        if not _pow2(value) or not 16 <= value <= 256:
            return f"{field} {value} is not a power of two in [16, 256]"
    if in_bytes == 1 and cfg.block_k < 32:
        return f"block_k {cfg.block_k} < 32 for fp8 inputs (the fp8 MMA's K step)"
    if cfg.num_warps not in WARPS:
        return f"num_warps {cfg.num_warps} not in {WARPS}"
    if not 1 <= cfg.num_stages <= 8:
        return f"num_stages {cfg.num_stages} not in [1, 8]"
    if cfg.group_m < 1:
        return f"group_m {cfg.group_m} < 1"

    reason = _beyond_problem(cfg, problem, {"block_m": 16, "block_n": 16, "block_k": 16})
    if reason is not None:
        return reason

    regs = acc_registers(cfg)
    if regs > MAX_ACC_REGS:
        return (f"accumulator needs {regs:g} fp32 registers per thread "
                f"({cfg.block_m}x{cfg.block_n} over {cfg.num_warps} warps) > {MAX_ACC_REGS}")
    smem = smem_bytes(cfg, in_bytes, out_bytes)
    if smem > smem_limit:
        return (f"shared memory {smem} B ({cfg.num_stages} stages x ({cfg.block_m}x"
                f"{cfg.block_k} + {cfg.block_k}x{cfg.block_n}) x {in_bytes:g} B + epilogue) "
                f"> {smem_limit} B")

    if cfg.template == "splitk":
        if cfg.split_k < 2:
            return f"split_k {cfg.split_k} < 2 for the splitk template (use tiled)"
        reason = _split_reason(cfg, problem)
        if reason is not None:
            return reason
    elif cfg.split_k != 1:
        return f"split_k {cfg.split_k} != 1 for the {cfg.template} template"

    if cfg.template == "persistent_tma":
        if in_bytes == 1 and not (t.transA == "T" and t.transB == "N"):
            return f"fp8 with TMA needs K-contiguous A and B (TN), got {t.transA}{t.transB}"
        for operand, base in tma_bases(problem).items():
            width = base["shape"][1]
            nbytes = width * (out_bytes if operand == "d" else in_bytes)
            if nbytes % 16:
                return (f"TMA needs 16-byte aligned strides: {operand} rows are {width} elements"
                        f" = {nbytes:g} B")
    return None


# --------------------------------------------------------------------------------------------
# the standard config list (the "Triton autotune" peer)

# (block_m, block_n, block_k, num_stages, num_warps): the kind of list PyTorch Inductor's
# max-autotune tries for mm (shared/reference/peers.md, section 5)
_INDUCTOR_MM = (
    (32, 32, 16, 1, 2), (32, 32, 128, 2, 4), (32, 64, 32, 5, 8), (64, 32, 32, 5, 8),
    (64, 32, 128, 5, 4), (64, 64, 16, 2, 4), (64, 64, 32, 2, 4), (64, 64, 64, 3, 8),
    (64, 64, 128, 5, 4), (64, 128, 32, 3, 4), (64, 128, 32, 4, 8), (64, 128, 64, 3, 4),
    (64, 128, 128, 4, 4), (128, 64, 32, 3, 4), (128, 64, 32, 4, 8), (128, 128, 32, 2, 8),
    (128, 128, 32, 3, 4), (128, 128, 64, 3, 4), (128, 128, 64, 5, 8), (128, 128, 128, 4, 8),
)
_INDUCTOR_PERSISTENT = (
    (128, 256, 64, 3, 8), (128, 128, 64, 3, 8), (128, 128, 128, 3, 8), (128, 128, 128, 3, 4),
    (128, 128, 64, 4, 8), (128, 128, 64, 5, 8), (256, 128, 64, 4, 8), (128, 128, 64, 5, 4),
)


def inductor_like_configs(problem: GemmProblem | None = None) -> list[TritonConfig]:
    """Inductor-style mm autotune list: 20 tiled configs and 8 persistent-TMA configs, group 8.
    With ``problem``, blocks are shrunk to the problem (each block at most its dimension padded
    to a power of two, at least 16), duplicates dropped and infeasible configs left out, as
    Inductor does before benchmarking."""
    out: list[TritonConfig] = []
    for template, table in (("tiled", _INDUCTOR_MM), ("persistent_tma", _INDUCTOR_PERSISTENT)):
        for bm, bn, bk, stages, warps in table:
            if problem is not None:
                bm = min(bm, max(16, _next_pow2(problem.n)))
                bn = min(bn, max(16, _next_pow2(problem.m)))
                bk = min(bk, max(16, _next_pow2(problem.k)))
            cfg = TritonConfig(template, bm, bn, bk, 8, 1, warps, stages)
            if cfg in out:
                continue
            if problem is not None and infeasible_reason(cfg, problem) is not None:
                continue
            out.append(cfg)
    return out


# --------------------------------------------------------------------------------------------
# kernels: plain functions here, wrapped by triton.jit in _jit() (triton is imported lazily;
# the annotations stay strings thanks to `from __future__ import annotations`)


def _grouped_tile(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):  # noqa: F821
    """Row and column tile of linear tile index ``tile`` in super-grouped order."""
    per_group = GROUP_M * tiles_n
    first_m = (tile // per_group) * GROUP_M
    rows_here = tl.minimum(tiles_m - first_m, GROUP_M)  # noqa: F821
    within = tile % per_group
    return first_m + within % rows_here, within // rows_here


def _k_loop(x_ptr, y_ptr, rm, rn, K, kb_start, kb_stop, sxr, sxk, syk, syc,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # noqa: F821
            EVEN_K: tl.constexpr, PRECISION: tl.constexpr):  # noqa: F821
    """fp32 sum over K blocks [kb_start, kb_stop) of X[rm, k] @ Y[k, rn]; rm/rn already wrapped
    into range (rows past the end read valid memory and are never stored)."""
    rk = tl.arange(0, BLOCK_K)  # noqa: F821
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
    x_rows = x_ptr + rm[:, None].to(tl.int64) * sxr  # noqa: F821
    y_cols = y_ptr + rn[None, :].to(tl.int64) * syc  # noqa: F821
    for kb in tl.range(kb_start, kb_stop):  # noqa: F821
        k = kb * BLOCK_K + rk
        if EVEN_K:
            a = tl.load(x_rows + k[None, :].to(tl.int64) * sxk)  # noqa: F821
            b = tl.load(y_cols + k[:, None].to(tl.int64) * syk)  # noqa: F821
        else:
            a = tl.load(x_rows + k[None, :].to(tl.int64) * sxk,  # noqa: F821
                        mask=k[None, :] < K, other=0.0)
            b = tl.load(y_cols + k[:, None].to(tl.int64) * syk,  # noqa: F821
                        mask=k[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)  # noqa: F821
    return acc


def _k_slice(K, split, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):  # noqa: F821
    """K blocks [start, stop) of split-K slice ``split`` (the last slice may be shorter)."""
    kb_total = tl.cdiv(K, BLOCK_K)  # noqa: F821
    per_split = tl.cdiv(kb_total, SPLIT_K)  # noqa: F821
    kb_start = split * per_split
    return kb_start, tl.minimum(kb_start + per_split, kb_total)  # noqa: F821


def _store_tile(d_ptr, acc, rm, rn, R, C, sdr, sdc):
    d = d_ptr + rm[:, None].to(tl.int64) * sdr + rn[None, :].to(tl.int64) * sdc  # noqa: F821
    tl.store(d, acc.to(d_ptr.dtype.element_ty),  # noqa: F821
             mask=(rm[:, None] < R) & (rn[None, :] < C))


def _tiled_kernel(x_ptr, y_ptr, d_ptr, R, C, K, sxr, sxk, syk, syc, sdr, sdc,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # noqa: F821
                  EVEN_K: tl.constexpr, PRECISION: tl.constexpr):  # noqa: F821
    tiles_m = tl.cdiv(R, BLOCK_M)  # noqa: F821
    tiles_n = tl.cdiv(C, BLOCK_N)  # noqa: F821
    pid_m, pid_n = _grouped_tile(tl.program_id(0), tiles_m, tiles_n, GROUP_M)  # noqa: F821
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
    acc = _k_loop(x_ptr, y_ptr, rm % R, rn % C, K, 0, tl.cdiv(K, BLOCK_K),  # noqa: F821
                  sxr, sxk, syk, syc, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, PRECISION)
    _store_tile(d_ptr, acc, rm, rn, R, C, sdr, sdc)


def _splitk_kernel(x_ptr, y_ptr, d_ptr, ws_ptr, count_ptr, R, C, K, sxr, sxk, syk, syc,
                   sdr, sdc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # noqa: F821
                   SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr,  # noqa: F821
                   PRECISION: tl.constexpr):  # noqa: F821
    tile = tl.program_id(0)  # noqa: F821
    split = tl.program_id(1)  # noqa: F821
    tiles_m = tl.cdiv(R, BLOCK_M)  # noqa: F821
    tiles_n = tl.cdiv(C, BLOCK_N)  # noqa: F821
    pid_m, pid_n = _grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
    kb_start, kb_stop = _k_slice(K, split, BLOCK_K, SPLIT_K)
    acc = _k_loop(x_ptr, y_ptr, rm % R, rn % C, K, kb_start, kb_stop, sxr, sxk, syk, syc,
                  BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, PRECISION)

    _reduce_split(acc, ws_ptr, count_ptr, tile, split, d_ptr, rm, rn, R, C, sdr, sdc,
                  BLOCK_M, BLOCK_N, SPLIT_K)


def _reduce_split(acc, ws_ptr, count_ptr, tile, split, d_ptr, rm, rn, R, C, sdr, sdc,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                  SPLIT_K: tl.constexpr):  # noqa: F821
    """Split-K inside the launch: park this slice's fp32 partial tile, and let the program that
    arrives last at the tile's counter sum all slices in split order (deterministic), store D
    and reset the counter (so the launch can be replayed)."""
    # partial tiles of one tile are contiguous: ws[tile, split, BLOCK_M, BLOCK_N]; only the
    # tile's valid cells are parked and summed (padding rows cost no traffic)
    cell = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]  # noqa
    valid = (rm[:, None] < R) & (rn[None, :] < C)
    tile_ws = ws_ptr + tile.to(tl.int64) * (SPLIT_K * BLOCK_M * BLOCK_N)  # noqa: F821
    tl.store(tile_ws + split * (BLOCK_M * BLOCK_N) + cell, acc, mask=valid)  # noqa: F821
    # every thread's partial store precedes the counter's release (CTA barrier, then a
    # gpu-scope acq_rel atomic: the classic threadfence-reduction pattern)
    tl.debug_barrier()  # noqa: F821
    arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")  # noqa: F821
    if arrived == SPLIT_K - 1:
        tl.debug_barrier()  # noqa: F821
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for s in tl.static_range(SPLIT_K):  # noqa: F821
            # .cg: read from L2, never from a possibly stale L1 line
            total += tl.load(tile_ws + s * (BLOCK_M * BLOCK_N) + cell,  # noqa: F821
                             mask=valid, other=0.0, cache_modifier=".cg")
        _store_tile(d_ptr, total, rm, rn, R, C, sdr, sdc)
        tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")  # noqa: F821


def _reduce_atomic(acc, ws_ptr, count_ptr, tile, d_ptr, rm, rn, R, C, sdr, sdc,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                   SPLIT_K: tl.constexpr):  # noqa: F821
    """Split-K inside the launch by fp32 atomics: every slice adds its partial tile into the
    tile's zeroed accumulator ws[tile, BLOCK_M, BLOCK_N]; the program that arrives last reads
    it once, stores D, and zeroes accumulator and counter for the next call."""
    cell = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]  # noqa
    valid = (rm[:, None] < R) & (rn[None, :] < C)
    tile_ws = ws_ptr + tile.to(tl.int64) * (BLOCK_M * BLOCK_N) + cell  # noqa: F821
    tl.atomic_add(tile_ws, acc, mask=valid, sem="relaxed", scope="gpu")  # noqa: F821
    tl.debug_barrier()  # noqa: F821
    arrived = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel", scope="gpu")  # noqa: F821
    if arrived == SPLIT_K - 1:
        tl.debug_barrier()  # noqa: F821
        total = tl.load(tile_ws, mask=valid, other=0.0, cache_modifier=".cg")  # noqa: F821
        _store_tile(d_ptr, total, rm, rn, R, C, sdr, sdc)
        tl.store(tile_ws, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32),  # noqa: F821
                 mask=valid)
        tl.atomic_xchg(count_ptr + tile, 0, sem="relaxed", scope="gpu")  # noqa: F821


def _finish_decode(acc, ws_ptr, count_ptr, tile, split, d_ptr, rm, rn, R, C, sdr, sdc,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                   SPLIT_K: tl.constexpr, ATOMIC: tl.constexpr):  # noqa: F821
    """Store a decode program's [BLOCK_M, BLOCK_N] result, or reduce it over split-K."""
    if SPLIT_K == 1:
        _store_tile(d_ptr, acc, rm, rn, R, C, sdr, sdc)
    elif ATOMIC:
        _reduce_atomic(acc, ws_ptr, count_ptr, tile, d_ptr, rm, rn, R, C, sdr, sdc,
                       BLOCK_M, BLOCK_N, SPLIT_K)
    else:
        _reduce_split(acc, ws_ptr, count_ptr, tile, split, d_ptr, rm, rn, R, C, sdr, sdc,
                      BLOCK_M, BLOCK_N, SPLIT_K)


def _decode_k_loop(x_ptr, y_ptr, rm, rn, K, kb_start, kb_stop, sxr, sxk, syk, syc,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                   BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,  # noqa: F821
                   MODE: tl.constexpr, PRECISION: tl.constexpr,  # noqa: F821
                   UNROLL: tl.constexpr):  # noqa: F821
    """fp32 [BLOCK_M, BLOCK_N] sum over K blocks [kb_start, kb_stop) of X[rm, k] W[rn, k]
    (W = Y^T, the weights). The weight panel is loaded as [BLOCK_N, BLOCK_K] rows, K
    innermost (16-byte loads when K is contiguous), marked evict_first: it is read once. The
    CUDA-core mode has no software pipeline: its loop is unrolled UNROLL times instead, so
    the loads of several K blocks are in flight before their products are summed."""
    rk = tl.arange(0, BLOCK_K)  # noqa: F821
    x_rows = x_ptr + rm[:, None].to(tl.int64) * sxr  # noqa: F821
    w_rows = y_ptr + rn[:, None].to(tl.int64) * syc  # noqa: F821
    if MODE == 0:  # CUDA cores: products kept per K lane, summed once after the loop
        acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)  # noqa: F821
    elif MODE == 1:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
    else:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)  # noqa: F821
    for kb in tl.range(kb_start, kb_stop, loop_unroll_factor=UNROLL):  # noqa: F821
        k = (kb * BLOCK_K + rk)[None, :]
        if EVEN_K:
            x = tl.load(x_rows + k.to(tl.int64) * sxk, eviction_policy="evict_last")  # noqa
            w = tl.load(w_rows + k.to(tl.int64) * syk, eviction_policy="evict_first")  # noqa
        else:
            x = tl.load(x_rows + k.to(tl.int64) * sxk, mask=k < K, other=0.0,  # noqa: F821
                        eviction_policy="evict_last")
            w = tl.load(w_rows + k.to(tl.int64) * syk, mask=k < K, other=0.0,  # noqa: F821
                        eviction_policy="evict_first")
        if MODE == 0:
            acc += (x.to(tl.float32)[:, None, :]  # noqa: F821
                    * w.to(tl.float32)[None, :, :])  # noqa: F821
        elif MODE == 1:
            acc = tl.dot(x, tl.trans(w), acc, input_precision=PRECISION)  # noqa: F821
        else:
            acc = tl.dot(w, tl.trans(x), acc, input_precision=PRECISION)  # noqa: F821
    if MODE == 0:
        out = tl.sum(acc, axis=2)  # noqa: F821
    elif MODE == 1:
        out = acc
    else:
        out = tl.trans(acc)  # noqa: F821
    return out


def _decode_kernel(x_ptr, y_ptr, d_ptr, ws_ptr, count_ptr, R, C, K, sxr, sxk, syk, syc,
                   sdr, sdc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                   BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,  # noqa: F821
                   EVEN_K: tl.constexpr, MODE: tl.constexpr,  # noqa: F821
                   PRECISION: tl.constexpr, UNROLL: tl.constexpr,  # noqa: F821
                   ATOMIC: tl.constexpr):  # noqa: F821
    tile = tl.program_id(0)  # noqa: F821
    split = tl.program_id(1)  # noqa: F821
    tiles_m = tl.cdiv(R, BLOCK_M)  # noqa: F821
    # the token tiles of one weight panel are neighbours: they run together and share it in L2
    pid_m = tile % tiles_m
    pid_n = tile // tiles_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # noqa: F821
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # noqa: F821
    kb_start, kb_stop = _k_slice(K, split, BLOCK_K, SPLIT_K)
    acc = _decode_k_loop(x_ptr, y_ptr, rm % R, rn % C, K, kb_start, kb_stop, sxr, sxk, syk,
                         syc, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, MODE, PRECISION, UNROLL)
    _finish_decode(acc, ws_ptr, count_ptr, tile, split, d_ptr, rm, rn, R, C, sdr, sdc,
                   BLOCK_M, BLOCK_N, SPLIT_K, ATOMIC)


def _decode_tma_kernel(x_desc, w_desc, d_ptr, ws_ptr, count_ptr, R, C, K, sdr, sdc,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                       BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,  # noqa: F821
                       PRECISION: tl.constexpr, ATOMIC: tl.constexpr):  # noqa: F821
    """decode_mmaw with both panels loaded by TMA: W [BLOCK_N, BLOCK_K] and X [BLOCK_M,
    BLOCK_K] boxes of the stored (K-contiguous) matrices, zero-filled past their ends."""
    tile = tl.program_id(0)  # noqa: F821
    split = tl.program_id(1)  # noqa: F821
    tiles_m = tl.cdiv(R, BLOCK_M)  # noqa: F821
    r0 = (tile % tiles_m) * BLOCK_M
    c0 = (tile // tiles_m) * BLOCK_N
    kb_start, kb_stop = _k_slice(K, split, BLOCK_K, SPLIT_K)
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)  # noqa: F821
    for kb in tl.range(kb_start, kb_stop):  # noqa: F821
        k0 = kb * BLOCK_K
        w = w_desc.load([c0, k0])
        x = x_desc.load([r0, k0])
        acc = tl.dot(w, tl.trans(x), acc, input_precision=PRECISION)  # noqa: F821
    rm = r0 + tl.arange(0, BLOCK_M)  # noqa: F821
    rn = c0 + tl.arange(0, BLOCK_N)  # noqa: F821
    _finish_decode(tl.trans(acc), ws_ptr, count_ptr, tile, split, d_ptr, rm, rn, R, C,  # noqa
                   sdr, sdc, BLOCK_M, BLOCK_N, SPLIT_K, ATOMIC)


def _persistent_tma_kernel(x_desc, y_desc, d_desc, R, C, K,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # noqa: F821
                           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # noqa: F821
                           NUM_SMS: tl.constexpr, X_KMAJOR: tl.constexpr,  # noqa: F821
                           Y_KMAJOR: tl.constexpr, PRECISION: tl.constexpr):  # noqa: F821
    tiles_m = tl.cdiv(R, BLOCK_M)  # noqa: F821
    tiles_n = tl.cdiv(C, BLOCK_N)  # noqa: F821
    n_kb = tl.cdiv(K, BLOCK_K)  # noqa: F821
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):  # noqa: F821
        pid_m, pid_n = _grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
        r0 = pid_m * BLOCK_M
        c0 = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # noqa: F821
        for kb in tl.range(0, n_kb):  # noqa: F821
            k0 = kb * BLOCK_K
            if X_KMAJOR:
                a = x_desc.load([r0, k0])
            else:
                a = x_desc.load([k0, r0]).T
            if Y_KMAJOR:
                b = y_desc.load([c0, k0]).T
            else:
                b = y_desc.load([k0, c0])
            acc = tl.dot(a, b, acc, input_precision=PRECISION)  # noqa: F821
        d_desc.store([r0, c0], acc.to(d_desc.dtype))


@functools.lru_cache(maxsize=1)
def _jit() -> dict:
    """Import triton and wrap the kernels (once per process)."""
    global tl, triton
    import triton  # noqa: F811
    import triton.language as tl  # noqa: F811

    module = globals()
    for helper in ("_grouped_tile", "_k_loop", "_k_slice", "_store_tile", "_reduce_split",
                   "_reduce_atomic", "_finish_decode", "_decode_k_loop"):
        if not isinstance(module[helper], triton.JITFunction):
            module[helper] = triton.jit(module[helper])
    decode, decode_tma = triton.jit(_decode_kernel), triton.jit(_decode_tma_kernel)
    return {"tiled": triton.jit(_tiled_kernel), "splitk": triton.jit(_splitk_kernel),
            "persistent_tma": triton.jit(_persistent_tma_kernel),
            **{name: decode_tma if name in TMA_DECODE_TEMPLATES else decode
               for name in DECODE_TEMPLATES}}


# --------------------------------------------------------------------------------------------
# arguments and launch


def precision(problem: GemmProblem) -> str:
    """tl.dot input precision: exact fp32 for f32 compute, TF32 for xf32 (ignored otherwise)."""
    t = problem.type
    return "ieee" if t.a_type == "f32_r" and t.compute_type == "f32_r" else "tf32"


def geometry(problem: GemmProblem) -> dict:
    """Rows, columns, K and element strides of X, Y and D_mem as ``timing.make_operands``
    lays them out (batch index 0)."""
    t, n, m, k = problem.type, problem.n, problem.m, problem.k
    sx = (k, 1) if t.transB == "N" else (1, n)
    sy = (1, k) if t.transA == "T" else (m, 1)
    return {"R": n, "C": m, "K": k, "sx": sx, "sy": sy, "sd": (m, 1)}


def _tiles(cfg: TritonConfig, rows: int, cols: int) -> int:
    return -(-rows // cfg.block_m) * -(-cols // cfg.block_n)


def _constexprs(cfg: TritonConfig, problem: GemmProblem) -> dict:
    out = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k,
           "GROUP_M": cfg.group_m, "PRECISION": precision(problem)}
    if cfg.template in TMA_DECODE_TEMPLATES:
        del out["GROUP_M"]
        out.update(SPLIT_K=cfg.split_k, ATOMIC=cfg.template in ATOMIC_TEMPLATES)
    elif cfg.template in DECODE_TEMPLATES:
        del out["GROUP_M"]
        # decode_fma: num_stages is the K loop's unroll factor (no pipeline to deepen)
        out.update(SPLIT_K=cfg.split_k, EVEN_K=problem.k % cfg.block_k == 0,
                   MODE=DECODE_MODE[cfg.template],
                   UNROLL=cfg.num_stages if cfg.template == "decode_fma" else 1,
                   ATOMIC=cfg.template in ATOMIC_TEMPLATES)
    elif cfg.template == "splitk":
        out.update(SPLIT_K=cfg.split_k, EVEN_K=problem.k % cfg.block_k == 0)
    elif cfg.template == "tiled":
        out["EVEN_K"] = problem.k % cfg.block_k == 0
    return out


def _call(cfg: TritonConfig, problem: GemmProblem, x, y, d, ws=None, counts=None,
          num_sms: int = H200_SMS, strides: dict | None = None) -> tuple[tuple, tuple, dict]:
    """(grid, positional args, keyword args) of one launch. ``x``/``y``/``d`` are tensors (or
    MockTensors for compile-only); for persistent_tma they are the descriptor *bases*."""
    g = strides or geometry(problem)
    rows, cols, k = g["R"], g["C"], g["K"]
    kwargs = _constexprs(cfg, problem) | {"num_warps": cfg.num_warps,
                                         "num_stages": cfg.num_stages}
    tiles = _tiles(cfg, rows, cols)
    if cfg.template in TMA_DECODE_TEMPLATES:
        # x is X (rows x K) and y is W (cols x K) as stored, K contiguous
        from triton.tools.tensor_descriptor import TensorDescriptor

        descs = [TensorDescriptor(base, [extent, k], [k, 1], [block, cfg.block_k])
                 for base, extent, block in ((x, rows, cfg.block_m), (y, cols, cfg.block_n))]
        args = (*descs, d, ws, counts, rows, cols, k, *g["sd"])
        return (tiles, cfg.split_k), args, kwargs
    if cfg.template == "tiled":
        args = (x, y, d, rows, cols, k, *g["sx"], *g["sy"], *g["sd"])
        return (tiles,), args, kwargs
    if cfg.template == "splitk" or cfg.template in DECODE_TEMPLATES:
        args = (x, y, d, ws, counts, rows, cols, k, *g["sx"], *g["sy"], *g["sd"])
        return (tiles, cfg.split_k), args, kwargs
    from triton.tools.tensor_descriptor import TensorDescriptor

    bases = tma_bases(problem)
    blocks = {"x": (cfg.block_m, cfg.block_k) if bases["x"]["k_major"]
              else (cfg.block_k, cfg.block_m),
              "y": (cfg.block_n, cfg.block_k) if bases["y"]["k_major"]
              else (cfg.block_k, cfg.block_n),
              "d": (cfg.block_m, cfg.block_n)}
    descs = []
    for name, base in (("x", x), ("y", y), ("d", d)):
        shape = list(bases[name]["shape"])
        descs.append(TensorDescriptor(base, shape, [shape[1], 1], list(blocks[name])))
    kwargs.update(NUM_SMS=num_sms, X_KMAJOR=bases["x"]["k_major"],
                  Y_KMAJOR=bases["y"]["k_major"])
    return (min(num_sms, tiles),), (*descs, rows, cols, k), kwargs


_WORKSPACES: dict = {}


def _workspace(device, numel: int, dtype_name: str, zero: bool):
    """A buffer shared by every launcher on ``device`` (launches on one stream run one after
    another, and the split-K kernel leaves its counters at zero)."""
    t = _torch()
    key = (str(device), dtype_name, zero)
    buf = _WORKSPACES.get(key)
    if buf is None or buf.numel() < numel:
        dtype = getattr(t, dtype_name)
        buf = (t.zeros if zero else t.empty)(max(numel, 1), dtype=dtype, device=device)
        _WORKSPACES[key] = buf
    return buf


def _torch():
    import torch

    return torch


def num_sms(device) -> int:
    t = _torch()
    return int(t.cuda.get_device_properties(device).multi_processor_count)


def launcher(cfg: TritonConfig, ops) -> Callable[[], None]:
    """A zero-argument call doing the whole GEMM on ``ops`` (a ``timing.Operands``): workspace
    allocated now, nothing allocated per call, capturable in a CUDA graph. Raises ValueError
    for a config that ``infeasible_reason`` refuses."""
    problem = ops.problem
    reason = infeasible_reason(cfg, problem)
    if reason is not None:
        raise ValueError(f"{cfg.name} cannot run {problem.name}: {reason}")
    kernel = _jit()[cfg.template]
    x, y, d = ops.x[0], ops.y[0], ops.d[0]
    device = d.device
    if d.stride(1) != 1 or d.stride(0) != problem.m:
        raise ValueError(f"{cfg.name}: D must be contiguous (N x M), strides {d.stride()}")
    ws = counts = None
    strides = {"R": problem.n, "C": problem.m, "K": problem.k, "sx": tuple(x.stride()),
               "sy": tuple(y.stride()), "sd": tuple(d.stride())}
    if workspace_bytes(cfg, problem) or cfg.template in DECODE_TEMPLATES:
        # (decode with split_k 1 never touches them, but takes the same argument types; the
        # atomic variants accumulate into a zeroed buffer that every launch leaves zeroed)
        ws = _workspace(device, workspace_bytes(cfg, problem) // 4, "float32",
                        zero=cfg.template in ATOMIC_TEMPLATES)
        counts = _workspace(device, _tiles(cfg, problem.n, problem.m), "int32", zero=True)
    if cfg.template in TMA_DECODE_TEMPLATES:
        y = y.T  # W as stored (M x K); infeasible_reason has checked the TN layout
        for name, base in (("x", x), ("w", y)):
            if base.stride(1) != 1 or base.stride(0) != problem.k:
                raise ValueError(f"{cfg.name}: TMA base {name} must be K-contiguous, strides "
                                 f"{tuple(base.stride())}")
    if cfg.template == "persistent_tma":
        # descriptors on the stored tensors, last dimension contiguous
        x = x if tma_bases(problem)["x"]["k_major"] else x.T
        y = y.T if tma_bases(problem)["y"]["k_major"] else y
        for name, base in (("x", x), ("y", y), ("d", d)):
            rows, cols = tma_bases(problem)[name]["shape"]
            if tuple(base.shape) != (rows, cols) or tuple(base.stride()) != (cols, 1):
                raise ValueError(f"{cfg.name}: TMA base {name} must be a contiguous "
                                 f"{rows}x{cols} matrix, got shape {tuple(base.shape)} strides "
                                 f"{tuple(base.stride())}")
        sms = num_sms(device)
    else:
        sms = H200_SMS
    grid, args, kwargs = _call(cfg, problem, x, y, d, ws, counts, sms, strides)
    run = kernel[grid]

    def call():
        run(*args, **kwargs)

    call.parts = (kernel, grid, args, kwargs)  # what PreparedLaunch re-binds per call
    return call


# --------------------------------------------------------------------------------------------
# prepared launches: the runtime's eager calls


DIRECT_LAUNCH_TRITON = ("3.6",)  # Triton major.minor versions PreparedLaunch launches directly


class PreparedLaunch:
    """``launch(x, y, d)``: one config on ``timing``'s 2-D row-major views (X, Y, D_mem) of one
    problem, every call's operands with the strides of the first call's. The first call runs
    ``launcher`` (its checks, workspace, grid and compile-time arguments); a later call builds
    only the arguments that hold an operand's address, the kernel's first three (the operand
    itself, or a TMA descriptor on it), and, where the operands are 16-byte aligned as the
    compiled kernel assumes, launches the compiled kernel without Triton's per-call argument
    specialization (on the H200's host 31 us a launch through it, 14 us without)."""

    def __init__(self, cfg: TritonConfig, problem: GemmProblem):
        self.cfg, self.problem = cfg, problem
        self.makers = None  # per operand: None (passed as is) or its TMA descriptor's maker

    def __call__(self, x, y, d) -> None:
        if self.makers is None:
            self._prepare(x, y, d)
            return
        aligned = x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0 and d.data_ptr() % 16 == 0
        make_x, make_y, make_d = self.makers
        head = (x if make_x is None else make_x(base=x), y if make_y is None else make_y(base=y),
                d if make_d is None else make_d(base=d))
        if aligned and self.direct is not None:
            self.direct(*head, *self.direct_tail)
            return
        compiled = self.run(*head, *self.tail, **self.kwargs)
        if aligned and self.direct is None:
            self._keep_direct(compiled)

    def _prepare(self, x, y, d) -> None:
        from triton.tools.tensor_descriptor import TensorDescriptor

        from .timing import Operands

        call = launcher(self.cfg, Operands.from_rows(self.problem, x, y, d))
        kernel, grid, args, self.kwargs = call.parts
        call()
        addresses = [_address(a.base if isinstance(a, TensorDescriptor) else a)
                     for a in args[:3]]
        if addresses != [x.data_ptr(), y.data_ptr(), d.data_ptr()] or addresses[0] == addresses[1]:
            return  # not (x, y, d) first, or x @ x.T: every call is prepared, as launcher does
        self.makers = tuple(_descriptor_maker(a) if isinstance(a, TensorDescriptor) else None
                            for a in args[:3])
        self.tail = tuple(args[3:])  # workspace, sizes, strides: no operand of this call
        self.run = kernel[grid]
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        # the compiled kernel takes every parameter in order, the constexprs last
        constexprs = tuple(self.kwargs.get(name) for name in kernel.arg_names[len(args):])
        self.direct_tail = self.tail + constexprs if None not in constexprs else None
        self.direct = None

    def _keep_direct(self, compiled) -> None:
        import triton
        from triton.compiler import CompiledKernel

        # the compiled kernel's calling convention is Triton's internal: only on the versions
        # whose GPU tests (tests/test_runtime_plans.py) passed, otherwise Triton's own launch
        if triton.__version__.rsplit(".", 1)[0] not in DIRECT_LAUNCH_TRITON:
            return
        if isinstance(compiled, CompiledKernel) and self.direct_tail is not None:
            self.direct = compiled[self.grid]


def _address(arg) -> int | None:
    return arg.data_ptr() if hasattr(arg, "data_ptr") else None


def _descriptor_maker(desc):
    """base -> a TMA descriptor like ``desc`` (shape, strides, block, padding) on ``base``."""
    return functools.partial(type(desc), **{f.name: getattr(desc, f.name) for f in fields(desc)
                                            if f.name != "base"})


# --------------------------------------------------------------------------------------------
# compiling before timing


def _mock_args(cfg: TritonConfig, problem: GemmProblem, sms: int):
    """Launch arguments with MockTensors (dtype only, pointer 0): specialize exactly as the
    real operands of ``timing.make_operands`` do, so the real launch hits the compiled kernel
    in Triton's cache."""
    from triton.runtime.jit import MockTensor

    from .timing import torch_dtype

    t = problem.type
    x, y = MockTensor(torch_dtype(t.b_type)), MockTensor(torch_dtype(t.a_type))
    d = MockTensor(torch_dtype(t.d_type))
    torch = _torch()
    ws, counts = MockTensor(torch.float32), MockTensor(torch.int32)
    return _call(cfg, problem, x, y, d, ws, counts, sms)


def compile_one(params: dict, problem_row: dict, device: int, sms: int) -> str | None:
    """Compile one config for one problem in this process: None, or why it failed."""
    try:
        cfg = TritonConfig.from_params(params)
        problem = GemmProblem.from_row(problem_row)
        reason = infeasible_reason(cfg, problem)
        if reason is not None:
            return f"infeasible: {reason}"
        torch = _torch()
        torch.cuda.set_device(device)
        grid, args, kwargs = _mock_args(cfg, problem, sms)
        compiled = _jit()[cfg.template].warmup(*args, grid=grid, **kwargs)
        if compiled is not None and hasattr(compiled, "result"):  # async compile mode
            compiled = compiled.result()
        init = getattr(compiled, "_init_handles", None)
        if init is not None:
            init()  # loads the module: shared-memory and register limits are checked here
        return None
    except Exception as exc:  # every compiler failure becomes a reported string
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return text.splitlines()[-1][:400] if text else type(exc).__name__


TRITON_TYPES = {"bf16_r": "bf16", "f16_r": "fp16", "f32_r": "fp32", "f8_r": "fp8e4nv",
                "bf8_r": "fp8e5"}


def compile_offline(cfg: TritonConfig, problem: GemmProblem, capability: int = 90):
    """Compile for a CUDA target without a GPU (nothing can be launched): catches front-end and
    compiler errors and tells the real shared memory (``.metadata.shared``). Integer arguments
    are not specialized, so the code differs in details from what a launch compiles."""
    import triton
    from triton.backends.compiler import GPUTarget

    reason = infeasible_reason(cfg, problem)
    if reason is not None:
        raise ValueError(f"{cfg.name}: {reason}")
    kernel = _jit()[cfg.template]
    t = problem.type
    types = {"x": TRITON_TYPES[t.b_type], "y": TRITON_TYPES[t.a_type],
             "d": TRITON_TYPES[t.d_type], "ws": "fp32", "count": "i32"}
    grid, args, kwargs = _call(cfg, problem, *[_Typed(types[n]) for n in ("x", "y", "d")],
                               _Typed("fp32"), _Typed("i32"))
    kwargs = dict(kwargs)
    options = {"num_warps": kwargs.pop("num_warps"), "num_stages": kwargs.pop("num_stages")}
    signature, constexprs, attrs = {}, {}, {}
    divisible = [["tt.divisibility", 16]]
    for i, (name, arg) in enumerate(zip(kernel.arg_names,
                                        list(args) + [None] * len(kernel.arg_names))):
        if name in kwargs:
            signature[name], constexprs[name] = "constexpr", kwargs[name]
        elif isinstance(arg, _Typed):
            signature[name], attrs[(i,)] = "*" + arg.name, divisible
        elif hasattr(arg, "block_shape"):
            signature[name] = f"tensordesc<{arg.base.name}{list(arg.block_shape)}>"
        elif arg == 1:  # as a launch specializes it
            signature[name], constexprs[name] = "constexpr", 1
        else:
            signature[name] = "i32"
            if arg % 16 == 0:
                attrs[(i,)] = divisible
    source = triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs,
                                       attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32), options=options)


class _Typed:
    """A stand-in tensor for compile_offline: a Triton type name and a null pointer."""

    def __init__(self, name: str):
        self.name = name
        self.dtype = self

    @property
    def itemsize(self) -> int:
        return {"bf16": 2, "fp16": 2, "fp32": 4, "fp8e4nv": 1, "fp8e5": 1, "i32": 4}[self.name]

    @staticmethod
    def data_ptr() -> int:
        return 0


def _problem_row(problem: GemmProblem) -> dict:
    return problem.gemm_fields()


def _compile_job(job: tuple) -> str | None:
    return compile_one(*job)


def make_executor(workers: int) -> concurrent.futures.Executor:
    """A pool of ``workers`` spawned processes for ``compile_all`` (keep it across calls:
    each worker imports torch/triton and opens a CUDA context once)."""
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def default_workers() -> int:
    return max(1, (os.cpu_count() or 2) - 2)


def compile_all(configs: Iterable[TritonConfig], problem: GemmProblem, device: int,
                workers: int | None = None, *,
                executor: concurrent.futures.Executor | None = None
                ) -> dict[TritonConfig, str | None]:
    """Compile every config for ``problem`` before any timing; per config None (compiled, now
    in Triton's on-disk cache) or an error string (``infeasible: ...`` for configs refused
    without compiling). ``workers`` > 1 compiles in that many spawned processes (or on
    ``executor``); 1 compiles here, one after another."""
    configs = list(dict.fromkeys(configs))
    out: dict[TritonConfig, str | None] = {}
    todo = []
    for cfg in configs:
        reason = infeasible_reason(cfg, problem)
        if reason is not None:
            out[cfg] = f"infeasible: {reason}"
        else:
            todo.append(cfg)
    if not todo:
        return out
    sms = num_sms(device) if any(c.template == "persistent_tma" for c in todo) else H200_SMS
    row = _problem_row(problem)
    jobs = [(cfg.to_params(), row, device, sms) for cfg in todo]
    workers = default_workers() if workers is None else int(workers)
    if executor is None and (workers <= 1 or len(todo) == 1):
        for cfg, job in zip(todo, jobs):
            out[cfg] = compile_one(*job)
        return out
    own = executor is None
    pool = make_executor(min(workers, len(todo))) if own else executor
    try:
        results = _run_jobs(pool, todo, jobs)
    finally:
        if own:
            pool.shutdown(wait=True)
    out.update(results)
    return {cfg: out[cfg] for cfg in configs}


def _run_jobs(pool, todo: Sequence[TritonConfig], jobs: Sequence[tuple]) -> dict:
    """Results of the jobs; when a worker dies (a compiler crash takes the process with it),
    the unfinished configs are retried one per fresh process, so only the culprit fails."""
    results: dict = {}
    futures = {pool.submit(_compile_job, job): (cfg, job) for cfg, job in zip(todo, jobs)}
    retry = []
    for future in concurrent.futures.as_completed(futures):
        cfg, job = futures[future]
        try:
            results[cfg] = future.result()
        except concurrent.futures.process.BrokenProcessPool:
            retry.append((cfg, job))
        except Exception as exc:
            results[cfg] = f"compile job failed: {type(exc).__name__}: {exc}"[:400]
    for cfg, job in retry:
        single = make_executor(1)
        try:
            results[cfg] = single.submit(_compile_job, job).result()
        except concurrent.futures.process.BrokenProcessPool:
            results[cfg] = "the compiler process died (crash in the Triton compiler or ptxas)"
        finally:
            single.shutdown(wait=True)
    return results
