"""cuBLASLt through nvmath-python's low-level bindings: the default heuristic's choice, the
library's own enumeration of configurations (algorithm ids x tiles x stages x split-K x
reduction schemes x CTA swizzling x custom options x cluster shapes), each validated with
cublasLtMatmulAlgoCheck, and graph-capturable calls of any configuration.

A configuration is stored as its attributes (``AlgoConfig``), not as the opaque 64-byte algo
struct: the attributes are readable in a library file and are re-validated with AlgoCheck on the
machine that loads them, so a library made with another cuBLASLt version fails loudly instead of
running something else.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

import numpy as np

from ...gemm import GemmProblem
from .. import PlatformError
from . import timing

SPLIT_K_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16)
CUSTOM_OPTIONS_TRIED = 4  # custom options 0..3 where the algorithm has them
CLUSTER_SHAPES_TRIED = ("SHAPE_AUTO", "SHAPE_1x1x1", "SHAPE_2x1x1", "SHAPE_1x2x1")
DEFAULT_WORKSPACE = 32 * 2**20  # what PyTorch gives cuBLASLt on Hopper


def lt():
    from nvmath.bindings import cublasLt  # imported late: only the cuda platform needs it

    return cublasLt


# cudaDataType_t values (library_types.h); stable across CUDA releases
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77  # cublasComputeType_t
CUDA_TYPES = {"f32_r": 0, "f16_r": 2, "bf16_r": 14, "f64_r": 1, "i8_r": 3, "i32_r": 10,
              "f8_r": 28, "bf8_r": 29}


class CublasLtError(PlatformError):
    """A configuration or problem cuBLASLt does not support."""


@dataclass(frozen=True, order=True)
class AlgoConfig:
    algo_id: int
    tile: int = 0
    stages: int = 0
    split_k: int = 1
    reduction_scheme: int = 0
    cta_swizzling: int = 0
    custom_option: int = 0
    inner_shape: int = 0
    cluster_shape: int = 0

    @property
    def name(self) -> str:
        return (f"lt_a{self.algo_id}_t{self.tile}_s{self.stages}_k{self.split_k}"
                f"_r{self.reduction_scheme}_w{self.cta_swizzling}_c{self.custom_option}"
                f"_i{self.inner_shape}_cl{self.cluster_shape}")

    def to_params(self) -> dict:
        return asdict(self)

    @classmethod
    def from_params(cls, params: dict) -> "AlgoConfig":
        if not isinstance(params, dict) or set(params) - {f.name for f in fields(cls)} \
                or "algo_id" not in params:
            raise CublasLtError(f"cuBLASLt solution parameters {params}: unknown keys or no "
                                f"algo_id (keys: {', '.join(f.name for f in fields(cls))})")
        return cls(**{k: int(v) for k, v in params.items()})


_CONFIG_ATTRS = {"algo_id": "ID", "tile": "TILE_ID", "stages": "STAGES_ID",
                 "split_k": "SPLITK_NUM", "reduction_scheme": "REDUCTION_SCHEME",
                 "cta_swizzling": "CTA_SWIZZLING", "custom_option": "CUSTOM_OPTION",
                 "inner_shape": "INNER_SHAPE_ID", "cluster_shape": "CLUSTER_SHAPE_ID"}


@lru_cache(maxsize=None)
def tile_shape(tile_id: int) -> tuple[int, int] | None:
    """(rows, cols) of a cublasLtMatmulTile_t, from its enum name (TILE_128x256)."""
    try:
        name = lt().MatmulTile(tile_id).name
    except ValueError:
        return None
    match = re.fullmatch(r"TILE_(\d+)x(\d+)", name)
    return (int(match[1]), int(match[2])) if match else None


def predicted_us(problem: GemmProblem, tile: tuple[int, int] | None, split_k: int,
                 sms: int = 132, peak_tflops: float = 800.0, tbps: float = 4.0) -> float:
    """A rough time of one configuration: wave-quantized padded tile work against the matmul
    peak, or the bytes (plus split-K partials) against bandwidth. Only orders candidates."""
    tm, tn = tile or (128, 128)
    tiles = math.ceil(problem.m / tm) * math.ceil(problem.n / tn) * problem.batch * split_k
    waves = math.ceil(tiles / sms)
    tile_flops = 2 * tm * tn * math.ceil(problem.k / split_k)
    efficiency = min(1.0, (tm * tn / (128 * 256)) ** 0.3)
    compute = waves * sms * tile_flops / (peak_tflops * 1e6 * efficiency)
    partials = 0 if split_k == 1 else 8 * problem.m * problem.n * problem.batch * split_k
    memory = (problem.min_bytes + partials) / (tbps * 1e6)
    return max(compute, memory) + 0.1 * min(compute, memory) + (2.0 if split_k > 1 else 0.0)


class Handle:
    """One cuBLASLt handle for the process (created on first use)."""

    _handle = None

    @classmethod
    def get(cls) -> int:
        if cls._handle is None:
            cls._handle = lt().create()
        return cls._handle


def version() -> int:
    return int(lt().get_version())


@lru_cache(maxsize=None)
def _dtype_of(kind: str, attr) -> np.dtype:
    # cached: the search builds and checks thousands of configurations a GEMM, each with its
    # eight attributes set
    getter = {"config": lt().get_matmul_algo_config_attribute_dtype,
              "cap": lt().get_matmul_algo_cap_attribute_dtype,
              "desc": lt().get_matmul_desc_attribute_dtype,
              "layout": lt().get_matrix_layout_attribute_dtype,
              "pref": lt().get_matmul_preference_attribute_dtype}[kind]
    return np.dtype(getter(attr))


def _set(kind: str, setter, target: int, attr, value) -> None:
    buf = np.array([value], dtype=_dtype_of(kind, attr))
    setter(target, int(attr), buf.ctypes.data, buf.itemsize)


def new_algo() -> np.ndarray:
    return np.zeros(1, dtype=lt().matmul_algo_dtype)


def config_of(algo: np.ndarray) -> AlgoConfig:
    """The attributes of an algo struct (e.g. one the heuristic returned)."""
    values = {}
    for field, attr_name in _CONFIG_ATTRS.items():
        attr = lt().MatmulAlgoConfigAttribute[attr_name]
        buf = np.zeros(1, dtype=_dtype_of("config", attr))
        written = np.zeros(1, dtype=np.uint64)
        lt().matmul_algo_config_get_attribute(algo.ctypes.data, int(attr), buf.ctypes.data,
                                              buf.itemsize, written.ctypes.data)
        values[field] = int(buf[0])
    return AlgoConfig(**values)


@dataclass(frozen=True)
class AlgoCapabilities:
    tile_ids: tuple[int, ...]
    stages_ids: tuple[int, ...]
    splitk_support: bool
    reduction_mask: int
    cta_swizzling: bool
    custom_option_max: int


def _cap_scalar(algo: np.ndarray, name: str) -> int:
    attr = lt().MatmulAlgoCapAttribute[name]
    buf = np.zeros(1, dtype=_dtype_of("cap", attr))
    written = np.zeros(1, dtype=np.uint64)
    lt().matmul_algo_cap_get_attribute(algo.ctypes.data, int(attr), buf.ctypes.data,
                                       buf.itemsize, written.ctypes.data)
    return int(buf[0])


def _cap_array(algo: np.ndarray, name: str) -> tuple[int, ...]:
    attr = lt().MatmulAlgoCapAttribute[name]
    item = _dtype_of("cap", attr)
    written = np.zeros(1, dtype=np.uint64)
    lt().matmul_algo_cap_get_attribute(algo.ctypes.data, int(attr), 0, 0, written.ctypes.data)
    count = int(written[0]) // item.itemsize
    if count == 0:
        return ()
    buf = np.zeros(count, dtype=item)
    lt().matmul_algo_cap_get_attribute(algo.ctypes.data, int(attr), buf.ctypes.data,
                                       buf.nbytes, written.ctypes.data)
    return tuple(int(v) for v in buf)


class ProblemDescriptors:
    """cuBLASLt's descriptors of one GEMM problem: operation, four layouts, a preference."""

    def __init__(self, problem: GemmProblem, workspace_bytes: int = DEFAULT_WORKSPACE):
        gt = problem.type
        for name in (gt.a_type, gt.b_type, gt.d_type):
            if name not in ("bf16_r", "f16_r", "f32_r"):
                raise CublasLtError(f"{problem.name}: data type {name} is not supported by "
                                    "geko's cuBLASLt path (bf16, f16, f32)")
        self.problem = problem
        self.workspace_bytes = int(workspace_bytes)
        L = lt()
        self.handle = Handle.get()
        self.compute = COMPUTE_32F_FAST_TF32 if gt.is_tf32 else COMPUTE_32F
        self.scale = CUDA_TYPES["f32_r"]
        self.types = tuple(CUDA_TYPES[t] for t in (gt.a_type, gt.b_type, gt.c_type, gt.d_type))
        self.desc = L.matmul_desc_create(self.compute, self.scale)
        op = {"N": 0, "T": 1}
        _set("desc", L.matmul_desc_set_attribute, self.desc, L.MatmulDescAttribute.TRANSA,
             op[gt.transA])
        _set("desc", L.matmul_desc_set_attribute, self.desc, L.MatmulDescAttribute.TRANSB,
             op[gt.transB])
        m, n, k = problem.m, problem.n, problem.k
        a_rows, a_cols = (k, m) if gt.transA == "T" else (m, k)
        b_rows, b_cols = (n, k) if gt.transB == "T" else (k, n)
        self.layouts = [self._layout(self.types[0], a_rows, a_cols),
                        self._layout(self.types[1], b_rows, b_cols),
                        self._layout(self.types[2], m, n),
                        self._layout(self.types[3], m, n)]
        self.pref = L.matmul_preference_create()
        _set("pref", L.matmul_preference_set_attribute, self.pref,
             L.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, self.workspace_bytes)

    def _layout(self, cuda_type: int, rows: int, cols: int) -> int:
        L = lt()
        layout = L.matrix_layout_create(cuda_type, rows, cols, rows)
        if self.problem.batch > 1:
            _set("layout", L.matrix_layout_set_attribute, layout,
                 L.MatrixLayoutAttribute.BATCH_COUNT, self.problem.batch)
            _set("layout", L.matrix_layout_set_attribute, layout,
                 L.MatrixLayoutAttribute.STRIDED_BATCH_OFFSET, rows * cols)
        return layout

    def close(self) -> None:
        L = lt()
        for layout in self.layouts:
            L.matrix_layout_destroy(layout)
        L.matmul_desc_destroy(self.desc)
        L.matmul_preference_destroy(self.pref)
        self.layouts = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- choosing algorithms -------------------------------------------------------------------
    def heuristic(self, count: int = 16) -> list[tuple[AlgoConfig, np.ndarray]]:
        """The heuristic's ranked list; its first entry is what an application gets."""
        L = lt()
        results = np.zeros(count, dtype=L.matmul_heuristic_result_dtype)
        returned = np.zeros(1, dtype=np.int32)
        a, b, c, d = self.layouts
        L.matmul_algo_get_heuristic(self.handle, self.desc, a, b, c, d, self.pref, count,
                                    results.ctypes.data, returned.ctypes.data)
        out = []
        for i in range(int(returned[0])):
            algo = new_algo()
            algo[0] = results["algo"][i]
            out.append((config_of(algo), algo))
        if not out:
            raise CublasLtError(f"{self.problem.name}: cuBLASLt's heuristic returned nothing")
        return out

    def rebuilt(self, ranked: list) -> list[tuple[AlgoConfig, np.ndarray]]:
        """``ranked`` (the heuristic's (config, struct) pairs) with each struct replaced by the
        one built from its configuration, as a library's solution is run (``checked``); those
        AlgoCheck refuses dropped: a search times what it would ship, and a configuration
        that cannot be rebuilt cannot ship."""
        built = ((cfg, self.valid(cfg)) for cfg, _ in ranked)
        return [(cfg, algo) for cfg, algo in built if algo is not None]

    def algo_ids(self, count: int = 256) -> tuple[int, ...]:
        return tuple(int(i) for i in lt().matmul_algo_get_ids(
            self.handle, self.compute, self.scale, *self.types, count))

    def init(self, algo_id: int) -> np.ndarray:
        algo = new_algo()
        lt().matmul_algo_init(self.handle, self.compute, self.scale, *self.types, algo_id,
                              algo.ctypes.data)
        return algo

    def capabilities(self, algo_id: int) -> AlgoCapabilities:
        algo = self.init(algo_id)
        return AlgoCapabilities(tile_ids=_cap_array(algo, "TILE_IDS"),
                            stages_ids=_cap_array(algo, "STAGES_IDS"),
                            splitk_support=bool(_cap_scalar(algo, "SPLITK_SUPPORT")),
                            reduction_mask=_cap_scalar(algo, "REDUCTION_SCHEME_MASK"),
                            cta_swizzling=bool(_cap_scalar(algo, "CTA_SWIZZLING_SUPPORT")),
                            custom_option_max=_cap_scalar(algo, "CUSTOM_OPTION_MAX"))

    def build(self, cfg: AlgoConfig) -> np.ndarray:
        """An algo struct with every attribute of ``cfg`` set (not yet checked)."""
        L = lt()
        algo = self.init(cfg.algo_id)
        for field, attr_name in _CONFIG_ATTRS.items():
            if field == "algo_id":
                continue
            _set("config", L.matmul_algo_config_set_attribute, algo.ctypes.data,
                 L.MatmulAlgoConfigAttribute[attr_name], getattr(cfg, field))
        return algo

    def check(self, algo: np.ndarray) -> int | None:
        """AlgoCheck: the workspace the configuration needs, or None if it is unsupported
        for this problem (or needs more workspace than we give it)."""
        L = lt()
        result = np.zeros(1, dtype=L.matmul_heuristic_result_dtype)
        a, b, c, d = self.layouts
        try:
            L.matmul_algo_check(self.handle, self.desc, a, b, c, d, algo.ctypes.data,
                                result.ctypes.data)
        except L.cuBLASLtError:
            return None
        need = int(result["workspace_size"][0])
        return need if need <= self.workspace_bytes else None

    def checked(self, cfg: AlgoConfig) -> np.ndarray:
        """The algo struct of a stored configuration, refused clearly if it no longer fits."""
        algo = self.build(cfg)
        if self.check(algo) is None:
            raise CublasLtError(f"{self.problem.name}: cuBLASLt {version()} rejects stored "
                                f"configuration {cfg.name} (AlgoCheck failed)")
        return algo

    def enumerate(self, top: int = 400):
        """Distinct valid configurations from cuBLASLt's own enumeration, breadth first: the
        first variant of each of the ``top`` most promising (algorithm, tile, split-K) by the
        rough model, then the second variant of each, and so on. A generator, so a caller with
        a time budget takes only what it can measure."""
        L = lt()
        coarse = []
        caps_of = {}
        for algo_id in self.algo_ids():
            try:
                caps = caps_of[algo_id] = self.capabilities(algo_id)
            except L.cuBLASLtError:
                continue
            tiles = [t for t in caps.tile_ids if t != 0] or [0]
            splits = SPLIT_K_CHOICES if caps.splitk_support else (1,)
            for tile in tiles:
                for split in splits:
                    if split > 1 and split * 16 > self.problem.k:
                        continue
                    coarse.append((predicted_us(self.problem, tile_shape(tile), split),
                                   algo_id, tile, split))
        coarse.sort()
        pending = [_expansions(a, t, s, caps_of[a]) for _, a, t, s in coarse[:top]]
        seen = set()
        while pending:
            still = []
            for variants in pending:
                cfg = next(variants, None)
                if cfg is None:
                    continue
                still.append(variants)
                if cfg in seen:
                    continue
                seen.add(cfg)
                algo = self.valid(cfg)
                if algo is not None:
                    yield cfg, algo
            pending = still

    def build_quietly(self, cfg: AlgoConfig) -> np.ndarray | None:
        try:
            return self.build(cfg)
        except lt().cuBLASLtError:
            return None

    def valid(self, cfg: AlgoConfig) -> np.ndarray | None:
        """The algo struct of ``cfg`` where it builds and AlgoCheck accepts it, else None."""
        algo = self.build_quietly(cfg)
        return algo if algo is not None and self.check(algo) is not None else None

    # --- running -----------------------------------------------------------------------------
    def call(self, algo: np.ndarray, ops, workspace):
        """A zero-argument launch of D = op(A) op(B) on ``ops`` on torch's current stream."""
        launch = self.prepared(algo, workspace)
        a_ptr, b_ptr, d_ptr = ops.a.data_ptr(), ops.b.data_ptr(), ops.d.data_ptr()

        def run():
            launch(a_ptr, b_ptr, d_ptr)

        run.keep_alive = (launch, ops)
        return run

    def prepared(self, algo: np.ndarray, workspace):
        """``launch(a_ptr, b_ptr, d_ptr)``: D = op(A) op(B) at those addresses on torch's
        current stream, every other argument of cublasLtMatmul fixed now (what an eager caller
        pays per call is the one binding call)."""
        L = lt()
        alpha = np.ones(1, dtype=np.float32)
        beta = np.zeros(1, dtype=np.float32)
        matmul, handle, desc = L.matmul, self.handle, self.desc
        a_desc, b_desc, c_desc, d_desc = self.layouts
        alpha_ptr, beta_ptr, algo_ptr = alpha.ctypes.data, beta.ctypes.data, algo.ctypes.data
        ws_ptr, ws_size = workspace.data_ptr(), workspace.numel()
        stream = timing.current_stream()

        def launch(a_ptr, b_ptr, d_ptr):
            matmul(handle, desc, alpha_ptr, a_ptr, a_desc, b_ptr, b_desc, beta_ptr, d_ptr,
                   c_desc, d_ptr, d_desc, algo_ptr, ws_ptr, ws_size, stream())

        launch.keep_alive = (alpha, beta, algo, workspace)
        return launch


def _cluster_ids() -> tuple[int, ...]:
    shapes = lt().ClusterShape
    return tuple(int(shapes[name]) for name in CLUSTER_SHAPES_TRIED if name in shapes.__members__)


def _expansions(algo_id: int, tile: int, split: int, caps: AlgoCapabilities):
    """Every configuration of one (algorithm, tile, split-K), the cheap attributes varied."""
    stages = (0, *[s for s in caps.stages_ids if s != 0])  # 0: the library picks
    if split > 1:
        schemes = [s for s in (1, 2, 4) if caps.reduction_mask & s] or [0]
    else:
        schemes = [0]
    swizzles = (0, 1) if caps.cta_swizzling else (0,)
    customs = range(min(caps.custom_option_max, CUSTOM_OPTIONS_TRIED - 1) + 1)
    # innermost varies first, so a breadth-first walk tries stages and custom options early
    for cluster in _cluster_ids():
        for swizzle in swizzles:
            for scheme in schemes:
                for custom in customs:
                    for stage in stages:
                        yield AlgoConfig(algo_id, tile, stage, split, scheme, swizzle, custom,
                                         0, cluster)
