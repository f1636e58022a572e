"""Using a geko library in an application (cuda platform).

    from geko_lib import runtime
    rt = runtime.load("work/final_libs")          # checks cuBLASLt version and GPU per solution
    y = rt.linear(x, weight)                        # == torch.nn.functional.linear(x, weight)
    z = rt.matmul(p, q)                             # == p @ q for 2-D tensors
    print(rt.coverage())                            # hits, misses, the shapes that missed

A call whose (shape, data types, layout) the library holds runs the tuned cuBLASLt algorithm or
Triton kernel; anything else falls through to torch. Tuned kernels pay off under CUDA graphs:
dispatched eagerly, a call costs tens of microseconds in Python, so the first eager tuned call
logs a warning saying so and ``rt.eager_calls`` counts them. ``rt.patch_linear()`` routes every
``torch.nn.functional.linear`` of a model through the library for the duration of a ``with``.

Capturing a workload on an NVIDIA GPU (``HIPBLASLT_LOG_MASK=64`` exists only on AMD):

    with runtime.record("log.yaml") as seen:       # every matmul/linear of the block, counted
        model(inputs)
    # log.yaml: mask-64 rows (``- {function: matmul, M: ..., call_count: 12}``) for geko
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from pathlib import Path

from .gemm import GemmProblem, GemmType
from .log_setup import LOGGER
from .platforms import PlatformError

log = logging.getLogger(LOGGER)

# what one tuned call costs in Python dispatch when it is not replayed from a CUDA graph
# (bench/RESULTS.md, issue 23: 49-66 us for cuBLASLt solutions, 115-335 us for Triton ones)
EAGER_NOTE = ("geko runtime: tuned kernels are dispatched eagerly (not under CUDA graph "
              "capture); each call then costs tens of microseconds of Python dispatch, more than "
              "a decode GEMM gains: capture the step in a CUDA graph (as serving engines do) or "
              "leave eager code on torch")

TORCH_TO_TYPE = {"bfloat16": "bf16_r", "float16": "f16_r", "float32": "f32_r"}


class Runtime:
    def __init__(self, solutions: dict, device: int = 0):
        self.solutions = solutions  # (GemmType, (m, n, batch, k)) -> solution dict
        self.device = device
        self.hits: Counter = Counter()
        self.misses: Counter = Counter()
        self._prepared: dict = {}
        self._cuda = None  # the cuda platform, made on first dispatch (it imports torch)
        self.eager_calls = 0  # tuned calls dispatched outside CUDA graph capture

    # --- dispatch -------------------------------------------------------------------------------
    def matmul(self, x, y):
        """x @ y for 2-D tensors x (n, k) and y (k, m), through the library where it can."""
        problem = blas_problem(x, y)
        solution = self.solutions.get((problem.type, problem.size)) if problem else None
        if solution is None or solution.get("Backend") == "default":
            self.misses[problem.name if problem else "unsupported layout/type"] += 1
            return x @ y
        self.hits[problem.name] += 1
        self._note_eager()
        return self._run(problem, solution, x, y)

    def _note_eager(self) -> None:
        """Count tuned calls made outside CUDA graph capture and say once that eager use loses
        (the dispatch costs more than the kernel gains; under a graph it is replayed free)."""
        import torch

        if torch.cuda.is_current_stream_capturing():
            return
        self.eager_calls += 1
        if self.eager_calls == 1:
            log.warning(EAGER_NOTE)

    def linear(self, x, weight, bias=None):
        """torch.nn.functional.linear through the library (2-D or batched-leading-dims x)."""
        lead = x.shape[:-1]
        out = self.matmul(x.reshape(-1, x.shape[-1]), weight.t())
        out = out.reshape(*lead, weight.shape[0])
        return out if bias is None else out + bias

    @contextlib.contextmanager
    def patch_linear(self):
        import torch.nn.functional as F

        original = F.linear
        F.linear = lambda x, w, b=None: self.linear(x, w, b)
        try:
            yield self
        finally:
            F.linear = original

    def coverage(self) -> dict:
        total = sum(self.hits.values()) + sum(self.misses.values())
        return {"hits": sum(self.hits.values()), "misses": sum(self.misses.values()),
                "hit_rate": sum(self.hits.values()) / total if total else 0.0,
                "missed_shapes": dict(self.misses.most_common()),
                "eager_calls": self.eager_calls}

    # --- running one solution ---------------------------------------------------------------------
    def _run(self, problem: GemmProblem, solution: dict, x, y):
        import torch

        from .platforms.cuda import timing

        a = y.t() if problem.type.transA == "T" else y
        b = x if problem.type.transB == "N" else x.t()
        d = torch.empty((x.shape[0], y.shape[1]), dtype=x.dtype, device=x.device)
        ops = timing.Operands(problem, a.unsqueeze(0), b.unsqueeze(0), d.unsqueeze(0))
        self._launcher(problem, solution)(ops)()
        return d

    def _launcher(self, problem: GemmProblem, solution: dict):
        key = (problem, solution["SolutionNameMin"])
        if key not in self._prepared:
            self._prepared[key] = self._platform().launcher_factory(solution, problem,
                                                                    self.device)
        return self._prepared[key]

    def _platform(self):
        if self._cuda is None:
            from .platforms.cuda.platform import CudaPlatform, SearchSettings

            self._cuda = CudaPlatform(SearchSettings())
        return self._cuda


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


def load(path, device: int = 0) -> Runtime:
    """A runtime serving the library-logic files in ``path`` (final_libs or its library/)."""
    from .platforms.cuda.solutions import solutions_in

    path = Path(path)
    solutions = solutions_in(path, validate=True)
    if not solutions:
        raise PlatformError(f"{path}: no library-logic files with sizes")
    return Runtime(solutions, device)


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
