"""Using a geko library in an application (cuda platform).

    from geko_lib import runtime
    rt = runtime.load("work/final_libs")          # checks cuBLASLt version and GPU per solution
    y = rt.linear(x, weight)                        # == torch.nn.functional.linear(x, weight)
    z = rt.matmul(p, q)                             # == p @ q for 2-D tensors
    print(rt.coverage())                            # hits, misses, the shapes that missed

A call whose (shape, data types, layout) the library holds runs the tuned cuBLASLt algorithm or
Triton kernel; anything else falls through to torch (``x @ y``; torch's own ``F.linear`` for
``rt.linear``). ``rt.patch_linear()`` routes every ``torch.nn.functional.linear`` of a model
through the library for the duration of a ``with``. Under ``torch.compile`` the patched linear
is the custom op ``geko::linear`` (``torch.library.custom_op``, with a fake implementation for
tracing), so dynamo records one opaque call per linear instead of tracing into the dispatch:
``torch.compile(model, fullgraph=True)`` of a model under ``patch_linear`` compiles without
graph breaks, and the compiled model's linears run the library's kernels (and are captured
with it when the compiled model runs under CUDA graphs).

Each operand signature (matmul or linear, shapes, strides, dtypes, device) is looked up once:
its plan (the GEMM, the solution or torch, the prepared cuBLASLt call or Triton launch with its
checks, grid and compile-time arguments) is kept, and a later call only allocates the output
and passes the operands' addresses (a Triton kernel is launched compiled, past Triton's per-call
argument specialization, where the operands are 16-byte aligned).

Tuned kernels pay off under CUDA graphs, where the dispatch is replayed for free. Eagerly, every
call pays its host time, and an eager decode step is bound by host time, not GPU time: a call
costing more host time than torch's own makes the step slower whatever the kernel gains. So the
loader measures it: ``coverage()["eager_us_per_call"]`` is the mean host time of an eager call
of a tuned GEMM (``time.perf_counter`` around the dispatch; a signature's first call, which
builds its plan, is left out) and ``eager_calls`` counts those calls. ``load(path, eager=...)``
says what eager calls of tuned GEMMs do:

- ``"warn"`` (default): run the library, and once ``EAGER_SAMPLE`` of them were measured log one
  warning with their mean host time and what to do (``rt.eager_note()`` gives the text any time);
- ``"library"``: run the library, no warning;
- ``"torch"``: run torch; calls under CUDA graph capture still run the library (a serving
  engine's captured decode gets the tuned kernels, its eager prefill and warm-up torch's). A
  signature's first eager call runs the library in every policy, so that its kernel is compiled
  and its workspace allocated before a capture needs them.

Capturing a workload on an NVIDIA GPU (``HIPBLASLT_LOG_MASK=64`` exists only on AMD):

    with runtime.record("log.yaml") as seen:       # every matmul/linear of the block, counted
        model(inputs)
    # log.yaml: mask-64 rows (``- {function: matmul, M: ..., call_count: 12}``) for geko
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import time
from collections import Counter
from pathlib import Path
from typing import Callable, NamedTuple

from .gemm import GemmProblem, GemmType
from .log_setup import LOGGER
from .platforms import PlatformError

log = logging.getLogger(LOGGER)

EAGER_POLICIES = ("warn", "library", "torch")
EAGER_SAMPLE = 100  # eager tuned calls measured before the "warn" policy says what they cost
# what eager_note() quotes before a call of this process was measured: host time per eager
# rt.linear call on an H200 before the per-signature plans (bench/RESULTS.md, issue 23)
EAGER_RESULTS = ("none measured yet; on an H200, before the per-signature plans, an eager "
                 "rt.linear call took 49-66 us of host time for cuBLASLt solutions and 115-335 "
                 "us for Triton ones (bench/RESULTS.md)")
EAGER_ADVICE = ("eager decode is bound by host time, so a call costing more host time than "
                "torch's own F.linear makes the step slower whatever its kernel gains: capture "
                "the step in a CUDA graph (as serving engines do), or load with eager='torch' "
                "(eager calls run torch, captured ones the library); eager='library' keeps the "
                "library without this warning")
UNSUPPORTED = "unsupported layout/type"

TORCH_TO_TYPE = {"bfloat16": "bf16_r", "float16": "f16_r", "float32": "f32_r"}


class Plan(NamedTuple):
    """What a call of one operand signature (of matmul or linear) runs."""

    name: str  # the GEMM's name (what hits and misses count), or UNSUPPORTED
    launch: Callable | None  # the call's arguments -> its result by the library; None: a miss
    torch: Callable  # the call's arguments -> its result by torch (x @ y, F.linear)


def _rows(x):
    """The 2-D input of a linear layer's GEMM: all leading dims as rows, as F.linear sees it."""
    return x if x.dim() == 2 else x.reshape(-1, x.shape[-1])


def _linear_by(gemm, x, weight, bias=None):
    """F.linear(x, weight, bias) with the GEMM x @ weight^T run by ``gemm(x, weight)``."""
    out = gemm(_rows(x), weight)
    if x.dim() != 2:
        out = out.reshape(*x.shape[:-1], weight.shape[0])
    return out if bias is None else out + bias


def _by_weight(launch, shape):
    linear = getattr(launch, "linear", None)
    if linear is None:
        def linear(x, w, d):
            launch(x, w.t(), d)

    def run(x, w):
        d = x.new_empty(shape)  # x's dtype and device, contiguous: D_mem
        linear(x, w, d)
        return d

    return run


class Runtime:
    def __init__(self, solutions: dict, device: int = 0, eager: str = "warn"):
        if eager not in EAGER_POLICIES:
            raise ValueError(f"eager={eager!r}: one of {', '.join(EAGER_POLICIES)}")
        self.solutions = solutions  # (GemmType, (m, n, batch, k)) -> solution dict
        self.device = device
        self.eager = eager
        self.hits: Counter = Counter()
        self.misses: Counter = Counter()
        self._plans: dict = {}  # operand signature -> Plan
        self._cuda = None  # the cuda platform, made on first dispatch (it imports torch)
        self._capturing = None  # torch.cuda.is_current_stream_capturing, once torch is needed
        self.eager_calls = 0  # tuned calls dispatched outside CUDA graph capture
        self._eager_s = 0.0  # host seconds of the measured ones
        self._eager_timed = 0

    # --- dispatch -------------------------------------------------------------------------------
    def matmul(self, x, y):
        """x @ y for 2-D tensors x (n, k) and y (k, m), through the library where it can."""
        return self._dispatch(time.perf_counter(), (x.shape, x.stride(), y.shape, y.stride(),
                                                    x.dtype, y.dtype, x.device), x, y)

    def linear(self, x, weight, bias=None):
        """torch.nn.functional.linear through the library (2-D or batched-leading-dims x);
        a GEMM the library does not hold runs torch's own F.linear."""
        return self._dispatch(time.perf_counter(), ("linear", x.shape, x.stride(), weight.shape,
                                                    weight.stride(), x.dtype, weight.dtype,
                                                    x.device), x, weight, bias)

    def _dispatch(self, start: float, key: tuple, *args):
        """Run ``args`` (matmul's or linear's) by the plan of their signature ``key``."""
        plan = self._plans.get(key)
        first = plan is None
        if first:
            plan = self._plans[key] = self._plan(key, *args)
        if plan.launch is None:
            self.misses[plan.name] += 1
            return plan.torch(*args)
        self.hits[plan.name] += 1
        if self._capturing():
            return plan.launch(*args)
        self.eager_calls += 1
        if first:
            # the library runs a signature's first eager call whatever the policy: its kernel
            # is compiled and its workspace allocated now, not inside a later graph capture;
            # and the call is left out of the mean (one-time work, not what a call costs)
            return plan.launch(*args)
        out = plan.torch(*args) if self.eager == "torch" else plan.launch(*args)
        self._eager_s += time.perf_counter() - start
        self._eager_timed += 1
        if self._eager_timed == EAGER_SAMPLE and self.eager == "warn":
            log.warning(self.eager_note())
        return out

    @contextlib.contextmanager
    def patch_linear(self):
        import torch
        import torch.nn.functional as F

        op = compiled_linear_op()
        handle = _handle_of(self)
        compiling = torch.compiler.is_compiling

        def linear(x, w, b=None):
            # traced by torch.compile: the custom op (one node, no graph break); eager: the
            # dispatch itself, without the op's dispatcher overhead
            return op(x, w, b, handle) if compiling() else self.linear(x, w, b)

        original = F.linear
        F.linear = linear
        try:
            yield self
        finally:
            F.linear = original

    # --- what it served -------------------------------------------------------------------------
    def eager_us_per_call(self) -> float | None:
        """Mean host microseconds of a measured eager call of a tuned GEMM (None: none yet)."""
        return self._eager_s * 1e6 / self._eager_timed if self._eager_timed else None

    def eager_note(self) -> str:
        """What eager dispatch costs here (measured, or bench/RESULTS.md's figures before any
        call was) and what to do about it."""
        mean = self.eager_us_per_call()
        served = "torch (eager='torch')" if self.eager == "torch" else "the library"
        cost = (f"{self._eager_timed} eager calls of tuned GEMMs, run by {served}, took "
                f"{mean:.1f} us of host time each" if mean is not None else
                f"eager calls of tuned GEMMs: {EAGER_RESULTS}")
        return f"geko runtime: {cost}; {EAGER_ADVICE}"

    def coverage(self) -> dict:
        total = sum(self.hits.values()) + sum(self.misses.values())
        mean = self.eager_us_per_call()
        return {"hits": sum(self.hits.values()), "misses": sum(self.misses.values()),
                "hit_rate": sum(self.hits.values()) / total if total else 0.0,
                "missed_shapes": dict(self.misses.most_common()),
                "eager_calls": self.eager_calls, "eager": self.eager,
                "eager_us_per_call": None if mean is None else round(mean, 2)}

    # --- plans ----------------------------------------------------------------------------------
    def _plan(self, key: tuple, x, y, *bias) -> Plan:
        """The plan of a signature: its GEMM, torch's function for it, and where the library
        holds it the prepared launch (its checks run now, once)."""
        import torch

        self._capturing = torch.cuda.is_current_stream_capturing
        try:
            self._capturing()
        except RuntimeError:  # a CPU-only torch cannot be asked: nothing is captured there
            self._capturing = _never
        linear = key[0] == "linear"
        if linear:  # F.linear itself (torch._C._nn.linear), also while patch_linear replaces it
            fallback, rows, y = torch._C._nn.linear, _rows(x), y.t()
        else:
            fallback, rows = operator.matmul, x
        problem = blas_problem(rows, y)
        solution = self.solutions.get((problem.type, problem.size)) if problem else None
        if solution is None or solution.get("Backend") == "default":
            return Plan(problem.name if problem else UNSUPPORTED, None, fallback)
        gemm = self._gemm(problem, solution, rows, y, by_weight=linear)
        return Plan(problem.name, functools.partial(_linear_by, gemm) if linear else gemm,
                    fallback)

    def _gemm(self, problem: GemmProblem, solution: dict, x, y, by_weight: bool = False):
        """(x, y) -> x @ y by ``solution`` for 2-D operands of the strides of ``x`` and ``y``;
        ``by_weight``: (x, w) -> x @ w^T, F.linear's weight as stored (y = w^T), handed to a
        launch that reads it as it is (its ``linear``: no transposed view per call, 2.1 us of
        an eager hit on one H100, bench/dispatch_parts.py) or else transposed."""
        launch = self._platform().operand_launcher(solution, problem, self.device)
        shape = (x.shape[0], y.shape[1])
        if by_weight:
            return _by_weight(launch, shape)

        def run(x, y):
            d = x.new_empty(shape)  # x's dtype and device, contiguous: D_mem
            launch(x, y, d)
            return d

        return run

    def _platform(self):
        if self._cuda is None:
            from .platforms.cuda.platform import CudaPlatform, SearchSettings

            self._cuda = CudaPlatform(SearchSettings())
        return self._cuda


def _never() -> bool:
    return False


def blas_problem(x, y) -> GemmProblem | None:
    """The BLAS problem of x @ y (x: n x k, y: k x m row-major views), or None when the
    layout or types are not ones a library can hold."""
    if x.dim() != 2 or y.dim() != 2 or x.dtype != y.dtype:
        return None
    type_name = TORCH_TO_TYPE.get(str(x.dtype).removeprefix("torch."))
    trans_b = _transpose_of(x)
    trans_a = _transpose_of(y)  # y = op(A)^T: a transposed view means transA = T
    if type_name is None or trans_a is None or trans_b is None:
        return None
    compute = "c_f32_r"
    gemm_type = GemmType(trans_a, trans_b, type_name, type_name, type_name, type_name, compute)
    n, k = x.shape
    m = y.shape[1]
    return GemmProblem(gemm_type, m, n, 1, k)


def _transpose_of(t) -> str | None:
    """"N" for a packed row-major matrix, "T" for the transposed view of one, else None."""
    rows, cols = t.shape
    if t.stride() == (cols, 1):
        return "N"
    if t.stride() == (1, rows):
        return "T"
    return None


# --- the custom op torch.compile sees -------------------------------------------------------------

OP_NAME = "geko::linear"
_RUNTIMES: dict[int, Runtime] = {}  # the op's handle argument -> its runtime


def _handle_of(rt: Runtime) -> int:
    """A small integer naming ``rt`` for the custom op (ops take tensors and numbers only)."""
    for handle, known in _RUNTIMES.items():
        if known is rt:
            return handle
    handle = len(_RUNTIMES)
    _RUNTIMES[handle] = rt
    return handle


@functools.lru_cache(maxsize=1)
def compiled_linear_op():
    """``geko::linear(x, weight, bias, handle)``: F.linear by runtime ``handle``, registered
    once per process; its fake implementation gives the output's shape and dtype to tracing."""
    import torch

    @torch.library.custom_op(OP_NAME, mutates_args=(),
                             schema="(Tensor x, Tensor weight, Tensor? bias, int handle) -> Tensor")
    def geko_linear(x, weight, bias, handle):
        return _RUNTIMES[handle].linear(x, weight, bias)

    @geko_linear.register_fake
    def _(x, weight, bias, handle):
        return x.new_empty((*x.shape[:-1], weight.shape[0]))

    return geko_linear


def load(path, device: int = 0, eager: str = "warn") -> Runtime:
    """A runtime serving the library-logic files in ``path`` (final_libs or its library/);
    ``eager``: what eager (not graph-captured) calls of tuned GEMMs do, one of
    ``EAGER_POLICIES`` (see the module's docstring)."""
    from .platforms.cuda.solutions import solutions_in

    path = Path(path)
    solutions = solutions_in(path, validate=True)
    if not solutions:
        raise PlatformError(f"{path}: no library-logic files with sizes")
    return Runtime(solutions, device, eager)


# --- recording a workload -------------------------------------------------------------------------

class _View:
    """Shape, strides and dtype of a 2-D operand as ``blas_problem`` reads them."""

    def __init__(self, shape, strides, dtype):
        self.shape, self._strides, self.dtype = tuple(shape), tuple(strides), dtype

    def dim(self) -> int:
        return len(self.shape)

    def stride(self):
        return self._strides


def _rows_view(t) -> _View:
    """A tensor's trailing dimension against all the others flattened (as torch reshapes the
    input of a linear layer); packed row-major unless the tensor is a transposed 2-D view."""
    if t.dim() == 2:
        return _View(t.shape, t.stride(), t.dtype)
    inner = t.shape[-1]
    rows = 1
    for size in t.shape[:-1]:
        rows *= size
    return _View((rows, inner), (inner, 1), t.dtype)


def _matrix(t, index) -> _View:
    """The 2-D matrix ``index`` of a batched operand (its last two dims)."""
    return _View(t.shape[index:], t.stride()[index:], t.dtype)


def gemm_of_call(name: str, args: tuple) -> GemmProblem | None:
    """The BLAS problem a torch matmul-like call runs (None where it is not one geko tunes:
    vectors, broadcast batches, unsupported types). ``name``: linear, matmul, mm, bmm, addmm."""
    if name == "linear":
        x, weight = args[0], args[1]
        if weight.dim() != 2 or x.dim() < 1:
            return None
        w_t = _View((weight.shape[1], weight.shape[0]),
                    (weight.stride()[1], weight.stride()[0]), weight.dtype)
        return blas_problem(_rows_view(x), w_t) if x.dim() >= 2 else None
    if name == "addmm":
        args = args[1:3]
    x, y = args[0], args[1]
    if x.dim() < 2 or y.dim() < 2:
        return None
    if y.dim() == 2:  # (..., n, k) @ (k, m): one GEMM over all the leading rows
        return blas_problem(_rows_view(x) if x.dim() > 2 else x, y)
    if x.dim() != y.dim() or tuple(x.shape[:-2]) != tuple(y.shape[:-2]):
        return None  # broadcast batches: torch expands them first
    one = blas_problem(_matrix(x, -2), _matrix(y, -2))
    if one is None:
        return None
    batch = 1
    for size in x.shape[:-2]:
        batch *= size
    return GemmProblem(one.type, one.m, one.n, batch, one.k)


class Recorder:
    """Counts the BLAS problem of every call it is shown; writes them as a mask-64 log."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.skipped: Counter = Counter()  # calls that are no GEMM geko tunes, by function

    def see(self, name: str, args: tuple, tf32: bool = False) -> None:
        problem = gemm_of_call(name, args)
        if problem is None:
            self.skipped[name] += 1
            return
        if tf32 and problem.type.a_type == "f32_r":  # torch runs float32 matmuls as TF32
            t = problem.type
            problem = GemmProblem(GemmType(t.transA, t.transB, t.a_type, t.b_type, t.c_type,
                                           t.d_type, "c_xf32_r"), *problem.size)
        self.counts[problem] += 1

    def rows(self) -> list[dict]:
        """One mask-64 row per distinct problem, in first-seen order, with its call count."""
        out = []
        for problem, count in self.counts.items():
            t, m, n, k = problem.type, problem.m, problem.n, problem.k
            out.append({
                "function": "matmul", "M": m, "N": n, "K": k,
                "lda": k if t.transA == "T" else m, "ldb": n if t.transB == "T" else k,
                "ldc": m, "ldd": m, "stride_a": m * k, "stride_b": k * n, "stride_c": m * n,
                "stride_d": m * n, "alpha": 1.0, "beta": 0.0, "transA": t.transA,
                "transB": t.transB, "batch_count": problem.batch, "a_type": t.a_type,
                "b_type": t.b_type, "c_type": t.c_type, "d_type": t.d_type,
                "compute_type": t.log_compute_type, "call_count": count})
        return out

    def write(self, path) -> Path:
        import pandas as pd

        from . import workload

        return workload.write(pd.DataFrame(self.rows()), path)


_RECORDED = {"linear": ("nn.functional.linear",), "matmul": ("matmul", "Tensor.matmul",
                                                               "Tensor.__matmul__"),
             "mm": ("mm", "Tensor.mm"), "bmm": ("bmm", "Tensor.bmm"), "addmm": ("addmm",)}


def _recorded_functions() -> dict:
    """torch function object -> the name ``gemm_of_call`` knows."""
    import torch

    out = {}
    for name, paths in _RECORDED.items():
        for dotted in paths:
            target = torch
            for part in dotted.split("."):
                target = getattr(target, part)
            out[target] = name
    return out


@contextlib.contextmanager
def record(path):
    """Inside the block, count every torch matmul/linear (``F.linear``, ``nn.Linear``,
    ``torch.matmul``/``@``, ``mm``, ``bmm``, ``addmm``) by BLAS problem; at its end write
    ``path`` as a mask-64 log with call counts (what ``HIPBLASLT_LOG_MASK=64`` writes on AMD),
    a workload geko reads. Yields the :class:`Recorder`. Bias additions are not part of the
    GEMM rows (the runtime adds a bias after the GEMM); vectors and broadcast batches are
    counted in ``recorder.skipped`` only."""
    import torch
    from torch.overrides import TorchFunctionMode

    recorder = Recorder()
    functions = _recorded_functions()

    class _Recording(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = functions.get(func)
            if name is not None:
                recorder.see(name, tuple(args), torch.backends.cuda.matmul.allow_tf32)
            return func(*args, **(kwargs or {}))

    try:
        with _Recording():
            yield recorder
    finally:
        if recorder.counts:
            recorder.write(path)
