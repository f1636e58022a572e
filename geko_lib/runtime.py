"""Using a geko library in an application (cuda platform).

    from geko_lib import runtime
    rt = runtime.load("work/final_libs")          # checks cuBLASLt version and GPU per solution
    y = rt.linear(x, weight)                        # == torch.nn.functional.linear(x, weight)
    z = rt.matmul(p, q)                             # == p @ q for 2-D tensors
    print(rt.coverage())                            # hits, misses, the shapes that missed

A call whose (shape, data types, layout) the library holds runs the tuned cuBLASLt algorithm or
Triton kernel; anything else falls through to torch. ``rt.patch_linear()`` routes every
``torch.nn.functional.linear`` of a model through the library for the duration of a ``with``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path

from .gemm import GemmProblem, GemmType
from .platforms import PlatformError

TORCH_TO_TYPE = {"bfloat16": "bf16_r", "float16": "f16_r", "float32": "f32_r"}


class Runtime:
    def __init__(self, solutions: dict, device: int = 0):
        self.solutions = solutions  # (GemmType, (m, n, batch, k)) -> solution dict
        self.device = device
        self.hits: Counter = Counter()
        self.misses: Counter = Counter()
        self._prepared: dict = {}
        self._cuda = None  # the cuda platform, made on first dispatch (it imports torch)

    # --- dispatch -------------------------------------------------------------------------------
    def matmul(self, x, y):
        """x @ y for 2-D tensors x (n, k) and y (k, m), through the library where it can."""
        problem = blas_problem(x, y)
        solution = self.solutions.get((problem.type, problem.size)) if problem else None
        if solution is None or solution.get("Backend") == "default":
            self.misses[problem.name if problem else "unsupported layout/type"] += 1
            return x @ y
        self.hits[problem.name] += 1
        return self._run(problem, solution, x, y)

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
                "missed_shapes": dict(self.misses.most_common())}

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
    from .platforms.cuda.platform import solutions_in

    path = Path(path)
    solutions = solutions_in(path, validate=True)
    if not solutions:
        raise PlatformError(f"{path}: no library-logic files with sizes")
    return Runtime(solutions, device)
