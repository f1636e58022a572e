"""The cuda platform's CUDA C++ kernels: the cluster split-K decode GEMM (cluster_source.py),
compiled at run time by NVRTC through cuda.core, the cubins cached on disk.

A config names the kernel's compile-time shape (warps, MMA fragments per warp, K block,
pipeline stages) and its launch-time cluster size (the K split). ``infeasible_reason`` decides
without a GPU whether a config can run a problem; ``cubin`` compiles (or reads from the cache)
one config's machine code; ``launcher`` and ``PreparedLaunch`` run it on torch tensors, on
torch's current stream (so CUDA-graph capture records it), through one prepared
``cuLaunchKernelEx`` each (``Launch``): plain for tuning and benchmarks (a GEMM timed
isolated), and for the runtime with programmatic edges from the kernel before it when
captured in a CUDA graph (``early_edges``, ``pdl_default``).

The cache is ``<cache>/cuda-cubins/<key>.cubin`` beside the warm-start cache (warm.py), the key
hashing the source, the compile parameters, the target arch, and the NVRTC and driver
versions: a cubin built by other software is never read back. A cubin of another SM than the
device's is refused before it is loaded.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import re
import struct
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

from ...errors import GekoError
from ...gemm import GemmProblem
from . import cluster_source, timing, warm

# compile options, in this one place
ARCH = "sm_90a"
STD = "c++17"
SM = 90  # the SM of ARCH: what a cubin's ELF header must name to be loaded
MAX_CLUSTER_PORTABLE = 8  # larger clusters need the non-portable attribute (sm_90: up to 16)
MAX_CLUSTER = 16
SMEM_LIMIT = 232448  # bytes of shared memory a block may opt into (sm_90)
CUBIN_DIR = "cuda-cubins"
TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)
NAME_PREFIX = "cuda_cluster_"
_NAME = re.compile(r"^cuda_cluster_m(\d+)n(\d+)k(\d+)_w(\d+)x(\d+)_s(\d+)_c(\d+)(_f16)?(?:_ablate(\d))?$")
INPUT_TYPES = {"bf16_r": 0, "f16_r": 1}  # input (= output) type -> GEKO_FP16
BLOCK_KS = (64, 128, 256)  # whole tensor-map boxes of 64 elements


class ClusterConfigError(GekoError, ValueError):
    """A cluster kernel config that cannot be read or built."""


@dataclass(frozen=True, order=True)
class ClusterConfig:
    """One cluster split-K kernel: the compile-time shape and the cluster size."""

    warps_m: int  # consumer warps along the weight rows
    warps_n: int  # consumer warps along the tokens
    frag_m: int  # 16-row MMA fragments per warp
    frag_n: int  # 8-token MMA fragments per warp
    block_k: int  # K elements per pipeline stage
    stages: int
    cluster: int  # CTAs of a cluster: the K split
    fp16: int = 0  # 1: f16 inputs and output, 0: bf16
    ablate: int = 0  # benchmarks only (bench/cluster_decode.py): 1 no reduction, 2 no MMA;
    # tests only: 3 reads the activations before the grid dependency wait (a wrong kernel)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ClusterConfigError(f"cluster config field {f.name} must be an integer, "
                                         f"got {value!r}")

    @property
    def block_m(self) -> int:  # weight rows (BLAS M) per cluster
        return self.warps_m * 16 * self.frag_m

    @property
    def block_n(self) -> int:  # tokens (BLAS N) per cluster
        return self.warps_n * 8 * self.frag_n

    @property
    def threads(self) -> int:
        return (self.warps_m * self.warps_n + 1) * 32

    @property
    def name(self) -> str:
        return (f"{NAME_PREFIX}m{self.block_m}n{self.block_n}k{self.block_k}_w{self.warps_m}x"
                f"{self.warps_n}_s{self.stages}_c{self.cluster}{'_f16' if self.fp16 else ''}"
                + (f"_ablate{self.ablate}" if self.ablate else ""))

    @classmethod
    def from_name(cls, name: str) -> "ClusterConfig":
        found = _NAME.match(name)
        if not found:
            raise ClusterConfigError(f"not a cluster kernel name: {name!r}")
        bm, bn, bk, wm, wn, stages, cs = (int(v) for v in found.groups()[:7])
        if bm % (16 * wm) or bn % (8 * wn):
            raise ClusterConfigError(f"{name}: blocks {bm}x{bn} do not split over {wm}x{wn} "
                                     "warps")
        return cls(wm, wn, bm // (16 * wm), bn // (8 * wn), bk, stages, cs,
                   int(found.group(8) is not None), int(found.group(9) or 0))

    def to_params(self) -> dict:
        """The mapping stored under ``CudaKernel`` in a library-logic solution."""
        return asdict(self)

    @classmethod
    def from_params(cls, params: dict) -> "ClusterConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(params) - names
        if unknown:
            raise ClusterConfigError(f"unknown cluster config fields {sorted(unknown)}")
        try:
            return cls(**params)
        except TypeError as err:
            raise ClusterConfigError(f"cluster config {params}: {err}") from None

    def defines(self) -> dict:
        """The source's named compile-time parameters."""
        return {"GEKO_WARPS_M": self.warps_m, "GEKO_WARPS_N": self.warps_n,
                "GEKO_FRAG_M": self.frag_m, "GEKO_FRAG_N": self.frag_n,
                "GEKO_BLOCK_K": self.block_k, "GEKO_STAGES": self.stages,
                "GEKO_FP16": self.fp16, **({"GEKO_ABLATE": self.ablate} if self.ablate else {})}

    def compiled(self) -> "ClusterConfig":
        """The config with the launch-time cluster size cleared: one cubin serves them all."""
        return ClusterConfig(**{**asdict(self), "cluster": 1})


def smem_bytes(cfg: ClusterConfig) -> int:
    """Dynamic shared memory of one CTA, as the source lays it out: 1024 bytes of slack to
    align the boxes for the swizzle, the ring of stages (or the fp32 partial tile, whichever
    is larger; BAR_OFFSET), then a full and an empty mbarrier per stage."""
    box = cluster_source.BOX_K * 2  # bytes of one box row
    pipe = cfg.stages * (cfg.block_k // cluster_source.BOX_K) * (cfg.block_m + cfg.block_n) * box
    part = cfg.block_m * cfg.block_n * 4
    return 1024 + -(-max(pipe, part) // 16) * 16 + 16 * cfg.stages


def infeasible_reason(cfg: ClusterConfig, problem: GemmProblem) -> str | None:
    """Why ``cfg`` cannot run ``problem`` (None if it can), decided without compiling."""
    t = problem.type
    if problem.batch != 1:
        return f"batch_count {problem.batch} > 1 (the cluster kernel does one matrix)"
    if (t.transA, t.transB) != ("T", "N"):
        return f"the cluster kernel needs K-contiguous weights and tokens (TN), got " \
               f"{t.transA}{t.transB}"
    if t.a_type != t.b_type or t.a_type not in INPUT_TYPES or t.d_type != t.a_type \
            or t.c_type != t.d_type:
        return f"types {t.a_type}/{t.b_type}->{t.d_type}: the cluster kernel takes bf16 or " \
               "f16 in and out"
    if INPUT_TYPES[t.a_type] != cfg.fp16:
        return f"config built for {'f16' if cfg.fp16 else 'bf16'}, problem is {t.a_type}"
    if t.compute_type not in ("f32_r", "xf32_r"):
        return f"compute type {t.compute_type} (the cluster kernel accumulates in f32)"
    for field, allowed in (("warps_m", (1, 2, 4, 8)), ("warps_n", (1, 2, 4)),
                           ("frag_m", (1, 2, 4)), ("frag_n", tuple(range(1, 17))),
                           ("block_k", BLOCK_KS), ("stages", tuple(range(1, 13)))):
        if getattr(cfg, field) not in allowed:
            return f"{field} {getattr(cfg, field)} not in {allowed}"
    if cfg.warps_m * cfg.warps_n > 8:
        return f"{cfg.warps_m * cfg.warps_n} consumer warps > 8"
    if not 1 <= cfg.cluster <= MAX_CLUSTER:
        return f"cluster {cfg.cluster} not in [1, {MAX_CLUSTER}]"
    if cfg.frag_m * cfg.frag_n * 4 > 128:
        return f"accumulator {cfg.frag_m * cfg.frag_n * 4} fp32 registers per thread > 128"
    if problem.m % 4:
        return f"M = {problem.m} is not a multiple of 4 (the epilogue writes 4 columns)"
    if problem.k % cfg.block_k:
        return f"K = {problem.k} is not a multiple of block_k {cfg.block_k}"
    if cfg.cluster > problem.k // cfg.block_k:
        return f"cluster {cfg.cluster} > {problem.k // cfg.block_k} K blocks: a CTA idles"
    if cfg.block_n > 8 and cfg.block_n - problem.n >= 8 and problem.n <= 128:
        return f"block of {cfg.block_n} tokens for N = {problem.n}: a whole MMA of padding"
    if cfg.block_m > 2 * problem.m:
        return f"block of {cfg.block_m} weight rows for M = {problem.m}"
    smem = smem_bytes(cfg)
    if smem > SMEM_LIMIT:
        return f"shared memory {smem} B > {SMEM_LIMIT} B"
    return None


# --------------------------------------------------------------------------------------------
# compiling and the cubin cache


def cubin_dir() -> Path:
    return warm.cache_dir().parent / CUBIN_DIR


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """Whether cuda.core and NVRTC are installed (the kernels can be built here)."""
    try:
        import cuda.core  # noqa: F401

        nvrtc_version()
        return True
    except Exception:
        return False


def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def cache_key(cfg: ClusterConfig, nvrtc: str, driver: str, arch: str = ARCH) -> str:
    """What a cubin depends on, hashed: the source, the parameters, the arch and the
    compiler and driver versions."""
    source = hashlib.sha256(cluster_source.SOURCE.encode()).hexdigest()
    params = ",".join(f"{k}={v}" for k, v in sorted(cfg.compiled().defines().items()))
    text = "|".join((source, params, arch, STD, f"nvrtc{nvrtc}", f"driver{driver}"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def program_options(cfg: ClusterConfig):
    from cuda.core import ProgramOptions

    return ProgramOptions(arch=ARCH, std=STD,
                          define_macro=[(k, str(v)) for k, v in cfg.defines().items()])


def compile_cubin(cfg: ClusterConfig) -> bytes:
    """The cubin of ``cfg``'s compile-time shape, built by NVRTC (no GPU needed)."""
    from cuda.core import Program

    program = Program(cluster_source.SOURCE, code_type="c++",
                      options=program_options(cfg.compiled()))
    return bytes(program.compile("cubin").code)


def cubin(cfg: ClusterConfig) -> bytes:
    """``cfg``'s cubin from the cache, or compiled now and cached (written atomically)."""
    key = cache_key(cfg, nvrtc_version(), warm._driver_version())
    path = cubin_dir() / f"{key}.cubin"
    try:
        return path.read_bytes()
    except OSError:
        pass
    code = compile_cubin(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        out.write(code)
    os.replace(tmp, path)
    return code


def cubin_sm(code: bytes) -> int:
    """The SM a cubin was built for, from its ELF header (e_flags bits 8-15 in the CUDA ELF
    ABI NVRTC writes; checked on cubins of sm_80, sm_86, sm_90 and sm_100)."""
    if len(code) < 0x34 or code[:4] != b"\x7fELF" or code[4] != 2:
        raise ClusterConfigError("not a 64-bit ELF cubin")
    return (struct.unpack_from("<I", code, 0x30)[0] >> 8) & 0xFF


def check_arch(code: bytes, device_sm: int) -> None:
    sm = cubin_sm(code)
    if sm != device_sm:
        raise ClusterConfigError(f"cubin built for sm_{sm}, the device is sm_{device_sm}: "
                                 "refused (clear the cubin cache or rebuild)")


# --------------------------------------------------------------------------------------------
# launching


@functools.lru_cache(maxsize=None)
def _device(index: int):
    from cuda.core import Device

    dev = Device(index)
    dev.set_current()
    return dev


@functools.lru_cache(maxsize=None)
def kernel(cfg: ClusterConfig, device: int):
    """The loaded kernel of ``cfg``'s shape on ``device``, its dynamic shared memory and
    non-portable cluster sizes allowed."""
    from cuda.bindings import driver
    from cuda.core import ObjectCode

    dev = _device(device)
    major, minor = dev.compute_capability
    code = cubin(cfg.compiled())
    check_arch(code, 10 * major + minor)
    loaded = ObjectCode.from_cubin(code).get_kernel(cluster_source.KERNEL_NAME)
    attrs = ((driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              smem_bytes(cfg)),
             (driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
              1))
    for attr, value in attrs:
        handle = loaded.handle
        if type(handle).__name__ == "CUkernel":
            err, = driver.cuKernelSetAttribute(attr, value, handle, dev.device_id)
        else:
            err, = driver.cuFuncSetAttribute(handle, attr, value)
        if int(err) != 0:
            raise ClusterConfigError(f"{cfg.name}: setting {attr.name} to {value}: {err}")
    return loaded


def grid_blocks(cfg: ClusterConfig, problem: GemmProblem) -> tuple[int, int, int]:
    """The grid in CTAs: a cluster of ``cfg.cluster`` CTAs per weight block, along x."""
    return (-(-problem.m // cfg.block_m) * cfg.cluster, -(-problem.n // cfg.block_n), 1)


def pdl_default() -> bool:
    """Whether the runtime launches cluster kernels with programmatic dependent launch:
    on unless ``GEKO_CUDA_PDL=0``."""
    return os.environ.get("GEKO_CUDA_PDL", "1").strip() != "0"


def launch_config(cfg: ClusterConfig, problem: GemmProblem):
    """The driver's launch config of ``cfg`` on ``problem`` (its stream set per call): grid,
    block, shared memory and the cluster dimension (clusters of more than one CTA). No
    programmatic-stream-serialization attribute: an eager launch cannot tell that the work
    before it is a kernel that triggers its dependents (torch's never do), and on the H100 the
    attribute and its check cost 1.3-1.6 us of host time per eager call for no overlap
    (bench/RESULTS.md, issue 39); under capture ``early_edges`` makes the edges programmatic."""
    from cuda.bindings import driver

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid_blocks(cfg, problem)
    config.blockDimX, config.blockDimY, config.blockDimZ = cfg.threads, 1, 1
    config.sharedMemBytes = smem_bytes(cfg)
    ids = driver.CUlaunchAttributeID
    attrs = []
    if cfg.cluster > 1:
        cluster = driver.CUlaunchAttribute()
        cluster.id = ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        cluster.value.clusterDim.x, cluster.value.clusterDim.y = cfg.cluster, 1
        cluster.value.clusterDim.z = 1
        attrs.append(cluster)
    config.attrs, config.numAttrs = attrs, len(attrs)
    return config


def early_edges(stream) -> bool:
    """Under stream capture, make the next captured node's edges to the kernels before it
    programmatic from their launch-order port: the node may start once every block of those
    kernels has begun (CUDA graphs' ``CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER``), and must wait
    (griddepcontrol.wait) before it reads what they write. A stream launch with the PDL
    attribute starts early only after a kernel that triggers its dependents, which torch's
    kernels never do; a graph edge needs nothing of the kernel before. Returns False (the
    edges left as they are: a plain launch) where the stream is not capturing or a node before
    is no kernel (a copy, a memset, an event): only a kernel can be overlapped."""
    from cuda.bindings import driver

    err, status, _, _, deps, _, count = driver.cuStreamGetCaptureInfo(stream)
    if int(err) or status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE \
            or not count:
        return False
    kernel_type = driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL
    if any(driver.cuGraphNodeGetType(node)[1] != kernel_type for node in deps[:count]):
        return False
    edges = []
    for _ in range(count):
        edge = driver.CUgraphEdgeData()
        edge.type = driver.CUgraphDependencyType.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC
        edge.from_port = driver.CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER
        edges.append(edge)
    err, = driver.cuStreamUpdateCaptureDependencies(
        stream, list(deps[:count]), edges, count,
        driver.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES)
    if int(err):
        raise ClusterConfigError(f"cuStreamUpdateCaptureDependencies: {err}")
    return True


class Launch:
    """One prepared ``cuLaunchKernelEx`` of a cluster kernel: the launch config (grid, block,
    shared memory, the cluster dimension) and the kernel's argument block are built once; a
    call writes the two pointers and the stream and launches. (cuda.core's ``launch`` builds
    its config and converts every argument on each call: the host time of an eager decode
    step.) With ``pdl``, a launch under graph capture first takes ``early_edges``; an eager
    one is plain."""

    def __init__(self, loaded, cfg: ClusterConfig, problem: GemmProblem, ldd: int,
                 pdl: bool):
        from cuda.bindings import driver

        err, self.function = driver.cuKernelGetFunction(loaded.handle) \
            if type(loaded.handle).__name__ == "CUkernel" else (0, loaded.handle)
        if int(err) != 0:
            raise ClusterConfigError(f"{cfg.name}: cuKernelGetFunction: {err}")
        self.pdl, self.config, self.stream = pdl, launch_config(cfg, problem), None
        # the kernel's parameters (W's and X's tensor maps by value, d, M, N, K, ldd) and the
        # void* array pointing at them; the driver copies them at each launch
        self.maps_buffer = (ctypes.c_ubyte * (2 * TENSOR_MAP_BYTES))()
        self.d = ctypes.c_uint64(0)
        self.values = (self.d, ctypes.c_int32(problem.m), ctypes.c_int32(problem.n),
                       ctypes.c_int32(problem.k), ctypes.c_int64(ldd))
        base = ctypes.addressof(self.maps_buffer)
        self.params = (ctypes.c_void_p * (2 + len(self.values)))(
            base, base + TENSOR_MAP_BYTES, *(ctypes.addressof(v) for v in self.values))
        self.address = ctypes.addressof(self.params)
        self.maps, self.name = None, cfg.name
        # per call: the driver's bindings looked up once, and torch's own capture check of its
        # current stream (the stream every call launches on): on one H100 0.7 us a call against
        # 1.8 us for cuStreamIsCapturing through ctypes (bench/dispatch_parts.py, 2026-12-07)
        self.driver, self.capturing = driver, timing.torch().cuda.is_current_stream_capturing

    def __call__(self, maps: bytes, d: int, stream: int) -> None:
        if stream != self.stream:
            self.config.hStream, self.stream = self.driver.CUstream(stream), stream
        if maps is not self.maps:
            ctypes.memmove(self.maps_buffer, maps, 2 * TENSOR_MAP_BYTES)
            self.maps = maps
        self.d.value = d
        if self.pdl and self.capturing():
            early_edges(self.config.hStream)
        err, = self.driver.cuLaunchKernelEx(self.config, self.function, self.address, 0)
        if int(err):
            raise ClusterConfigError(f"{self.name}: cuLaunchKernelEx: {err}")


def _check_operand(name: str, t, rows: int, cols: int, cfg: ClusterConfig) -> None:
    if tuple(t.shape) != (rows, cols) or t.stride(1) != 1 or t.stride(0) % 8 \
            or t.data_ptr() % 16:
        raise ValueError(f"{cfg.name}: {name} must be a {rows}x{cols} matrix, rows contiguous, "
                         f"16-byte aligned (shape {tuple(t.shape)}, strides {t.stride()})")


def tensor_map(t, box_rows: int, fp16: int) -> bytes:
    """The 128 bytes of a 2-D tensor map of ``t`` (rows x K, K contiguous): boxes of
    ``box_rows`` rows x 64 elements, the 128-byte swizzle, rows past the end read as zero."""
    from cuda.bindings import driver

    types = driver.CUtensorMapDataType
    dtype = types.CU_TENSOR_MAP_DATA_TYPE_FLOAT16 if fp16 else \
        types.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    rows, cols = t.shape
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    err, tmap = driver.cuTensorMapEncodeTiled(
        dtype, 2, t.data_ptr(), [u64(cols), u64(rows)], [u64(t.stride(0) * 2)],
        [u32(cluster_source.BOX_K), u32(box_rows)], [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise ClusterConfigError(f"cuTensorMapEncodeTiled on a {rows}x{cols} tensor: {err}")
    return ctypes.string_at(tmap.getPtr(), TENSOR_MAP_BYTES)


class PreparedLaunch:
    """``launch(x, y, d)`` on ``timing``'s 2-D row-major views (X = tokens N x K, Y = W^T
    K x M, D = N x M) of one problem, D's strides those of the first call: kernel and
    ``Launch`` built on the first call (which must not be under graph capture). The kernel
    reads W and X through tensor maps passed by value, encoded once per pair of operands
    (addresses, strides, shapes), whose layout is checked then: a call with operands seen
    before only looks them up. ``pdl`` (default ``pdl_default()``): under graph capture the
    kernel may start while the kernel before it finishes, streaming its first weight stages
    (``early_edges``)."""

    MOST_MAPS = 4096  # operand pairs remembered (then forgotten all at once)

    def __init__(self, cfg: ClusterConfig, problem: GemmProblem, device: int | None = None,
                 pdl: bool | None = None):
        reason = infeasible_reason(cfg, problem)
        if reason is not None:
            raise ValueError(f"{cfg.name} cannot run {problem.name}: {reason}")
        self.cfg, self.problem, self.device = cfg, problem, device
        self.pdl = pdl_default() if pdl is None else pdl
        self.launch = None
        self.maps: dict = {}

    def _prepare(self, d) -> None:
        device = d.device.index if self.device is None else self.device
        p = self.problem
        if d.stride(1) != 1 or d.stride(0) % 4 or d.stride(0) < p.m:
            raise ValueError(f"{self.cfg.name}: D rows must be contiguous, the row stride a "
                             f"multiple of 4 (strides {d.stride()})")
        self.d_shape, self.d_strides = (p.n, p.m), tuple(d.stride())
        self.current_stream = timing.current_stream(device)
        self.launch = Launch(kernel(self.cfg, device), self.cfg, p, d.stride(0), self.pdl)

    def maps_of(self, x, y) -> bytes:
        """W's and X's tensor maps (made on first sight of the pair, whose operands are
        checked then: a known pair was checked when it was new)."""
        key = (y.data_ptr(), x.data_ptr(), y.stride(1), x.stride(0), tuple(x.shape),
               tuple(y.shape))
        found = self.maps.get(key)
        return self._new_maps(key, x, y.T) if found is None else found

    def weight_maps_of(self, x, w) -> bytes:
        """``maps_of(x, w.T)`` without making the view: the same key (y = w^T has w's
        address, its row stride as column stride and the reversed shape)."""
        m, k = w.shape
        key = (w.data_ptr(), x.data_ptr(), w.stride(0), x.stride(0), tuple(x.shape), (k, m))
        found = self.maps.get(key)
        return self._new_maps(key, x, w) if found is None else found

    def _new_maps(self, key: tuple, x, w) -> bytes:
        cfg, p = self.cfg, self.problem
        _check_operand("W", w, p.m, p.k, cfg)  # the weights as stored, M x K
        _check_operand("X", x, p.n, p.k, cfg)
        if len(self.maps) >= self.MOST_MAPS:
            self.maps.clear()
        found = self.maps[key] = tensor_map(w, cfg.block_m, cfg.fp16) + \
            tensor_map(x, cfg.block_n, cfg.fp16)
        return found

    def _checked_d(self, d) -> int:
        if self.launch is None:
            self._prepare(d)
        address = d.data_ptr()
        if address % 16 or d.stride() != self.d_strides or tuple(d.shape) != self.d_shape:
            raise ValueError(f"{self.cfg.name}: D must be {self.d_shape}, rows contiguous "
                             f"(stride {self.d_strides[0]}), 16-byte aligned")
        return address

    def __call__(self, x, y, d) -> None:
        address = self._checked_d(d)
        self.launch(self.maps_of(x, y), address, self.current_stream())

    def linear(self, x, w, d) -> None:
        """``self(x, w.T, d)`` for F.linear's weight as stored (M x K)."""
        address = self._checked_d(d)
        self.launch(self.weight_maps_of(x, w), address, self.current_stream())


def launcher(cfg: ClusterConfig, ops, pdl: bool = False) -> Callable[[], None]:
    """A zero-argument call of the whole GEMM on ``ops`` (a ``timing.Operands``): nothing
    allocated per call, capturable in a CUDA graph. Plain launches by default: a tuning or a
    benchmark times a GEMM isolated, and back-to-back launches of one kernel with
    programmatic dependent launch would overlap each one's weight stream with the call before."""
    prepared = PreparedLaunch(cfg, ops.problem, ops.d.device.index, pdl=pdl)
    x, y, d = ops.x[0], ops.y[0], ops.d[0]
    return lambda: prepared(x, y, d)


def _rewrite(source, x):
    """X rewritten with its own values by one elementwise kernel."""
    return timing.torch().mul(source, 1.0, out=x)


def _rms_norm(source, x):
    """The activations as a decode layer makes those of q/k/v and gate/up: a row reduction
    over the hidden size, then the scaled row."""
    return timing.torch().nn.functional.rms_norm(source, (source.shape[-1],))


# the short kernels a decode GEMM follows in a layer: an elementwise one (the down projection
# after SiLU-and-multiply) and a norm (q/k/v and gate/up). An early edge that gained 0.8-1.7%
# after the elementwise kernel cost 5.6-6.3 us in the layer after the norm on one H100 (qkv
# of Qwen2.5-32B TP 4, batch 16), and 17.2 -> 20.4 us timed after F.rms_norm alone
# (bench/RESULTS.md, 2026-12-07): a tune keeps an edge only where it pays after each
PRODUCERS = {"elementwise": _rewrite, "rms_norm": _rms_norm}


def after_producer(cfg: ClusterConfig, ops, pdl: bool,
                   produce: str = "elementwise") -> Callable[[], None]:
    """A zero-argument call of a short kernel that makes the GEMM's activations from a copy of
    X (the token panel), then of the GEMM on them: a decode step's norm and the q/k/v after
    it. ``produce`` names one of PRODUCERS. Captured in a graph with ``pdl``, the GEMM's edge
    from that kernel is programmatic (``early_edges``): what a tune times to choose a
    solution's ``EarlyEdge``."""
    prepared = PreparedLaunch(cfg, ops.problem, ops.d.device.index, pdl=pdl)
    x, y, d = ops.x[0], ops.y[0], ops.d[0]
    source = x.clone()
    make = PRODUCERS[produce]

    def call():
        prepared(make(source, x), y, d)

    return call


def edge_timings(cfg: ClusterConfig, problem: GemmProblem, device: int,
                 repeats: int = 15, produce: str = "elementwise") -> tuple:
    """(plain, edged) ``timing.Timing`` of ``after_producer`` with the GEMM's edge left plain
    and made programmatic, side by side on rotating operands. In one decode layer on an H100
    the early edge shortened the step for 14 of 16 GEMMs and lengthened it 5.6 us for one
    (bench/RESULTS.md, 2026-12-07): whether it pays is a property of the kernel, the shape and
    the kernel before it, measured, not assumed."""
    sets = timing.make_operands(problem, device, seed=3000)
    plain, edged = timing.time_side_by_side(
        [[after_producer(cfg, ops, pdl, produce) for ops in sets] for pdl in (False, True)],
        repeats=repeats)
    del sets
    return plain, edged


def edge_verdict(cfg: ClusterConfig, problem: GemmProblem, device: int, repeats: int,
                 margin: float) -> tuple[bool, dict]:
    """Whether ``cfg``'s early edge shortens it by more than ``margin`` after every one of
    PRODUCERS, and {producer: (plain, edged)}, the timings that say so."""
    timed = {produce: edge_timings(cfg, problem, device, repeats, produce)
             for produce in PRODUCERS}
    return all(edged.us < plain.us * (1 - margin) for plain, edged in timed.values()), timed


# --------------------------------------------------------------------------------------------
# the candidates of a problem

MAX_TOKENS = 128  # tokens of one block at most
# (warps_m, frag_m): 16-128 rows (warps of 2-4 fragments with 1-2 warps along the rows, fewer
# re-reads of the token panel, gained nothing on the H200: bench/RESULTS.md, issue 30)
ROW_SPLITS = ((1, 1), (2, 1), (4, 1), (2, 2), (4, 2), (8, 1))
CLUSTERS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16)
MAX_STAGES = 8
SMS = 132  # H200
CTA_RANGE = (SMS * 3 // 4, 8 * SMS)  # candidates launch this many CTAs (fewer idle SMs)


def _token_splits(tokens: int):
    """(warps_n, frag_n) of a block of ``tokens`` (a multiple of 8)."""
    return [(wn, tokens // (8 * wn)) for wn in (1, 2, 4)
            if tokens % (8 * wn) == 0 and 1 <= tokens // (8 * wn) <= 16]


def deepest_stages(cfg: ClusterConfig, most: int = MAX_STAGES) -> int:
    """The most pipeline stages (at most ``most``) that fit in shared memory (0: none fit)."""
    for stages in range(most, 0, -1):
        if smem_bytes(ClusterConfig(**{**asdict(cfg), "stages": stages})) <= SMEM_LIMIT:
            return stages
    return 0


def candidate_configs(problem: GemmProblem) -> list[ClusterConfig]:
    """The configs worth measuring on ``problem``: one token block (the tokens rounded up to a
    multiple of 8, at most 128), weight blocks of 32-128 rows, K blocks of 64-256, the deepest
    pipeline that fits and a 4-stage one, clusters of 1-16; those that launch too few or too
    many CTAs are left out."""
    fp16 = INPUT_TYPES.get(problem.type.a_type, 0)
    tokens = min(MAX_TOKENS, -(-problem.n // 8) * 8)
    out = []
    for wn, fn in _token_splits(tokens):
        for wm, fm in ROW_SPLITS:
            for bk in BLOCK_KS:
                probe = ClusterConfig(wm, wn, fm, fn, bk, 1, 1, fp16)
                deepest = deepest_stages(probe)
                for stages in sorted({deepest, min(4, deepest)} - {0}):
                    for cs in CLUSTERS:
                        cfg = ClusterConfig(wm, wn, fm, fn, bk, stages, cs, fp16)
                        ctas = -(-problem.m // cfg.block_m) * -(-problem.n // cfg.block_n) * cs
                        if CTA_RANGE[0] <= ctas <= CTA_RANGE[1] \
                                and infeasible_reason(cfg, problem) is None:
                            out.append(cfg)
    return out


SEED_COUNT = 12
SEED_CTAS = 1.5 * SMS  # the CTA count the seeds aim at: a wave and a half


def _ctas(cfg: ClusterConfig, problem: GemmProblem) -> int:
    return -(-problem.m // cfg.block_m) * -(-problem.n // cfg.block_n) * cfg.cluster


def seed_configs(problem: GemmProblem, most: int = SEED_COUNT) -> list[ClusterConfig]:
    """The few candidates a tuning races beside its Triton finalists: 128-element K blocks and
    a 4-stage ring (the fastest of bench/cluster_decode.py on the issue-30 shards, RESULTS.md),
    one per block shape, its cluster size the one that launches nearest SEED_CTAS CTAs; the
    block shapes nearest that aim first."""
    best: dict = {}
    for cfg in candidate_configs(problem):
        if cfg.block_k != 128 or cfg.stages != min(4, deepest_stages(cfg)):
            continue
        shape = (cfg.warps_m, cfg.frag_m, cfg.warps_n, cfg.frag_n)
        miss = abs(math.log(_ctas(cfg, problem) / SEED_CTAS))
        if shape not in best or miss < best[shape][0]:
            best[shape] = (miss, cfg)
    return [cfg for _, cfg in sorted(best.values(), key=lambda mc: (mc[0], mc[1].name))][:most]
