"""The kernel families of the cuda platform, one description each: a library-logic solution
names its family by ``Backend`` and holds the family's config under the family's key.

A family's module (config class, ``infeasible_reason``, ``launcher``, ``PreparedLaunch``) is
imported on first use: it may need torch, triton or cuda.core, and this module must import on
a machine without them. cuBLASLt's solutions (``cublaslt``, and ``default``: cuBLASLt's own
heuristic) do not run themselves: a launch needs the platform's per-problem descriptors and
workspace (``CudaPlatform._cublaslt_algo``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .. import PlatformError

# a solution's choice of programmatic edges from the kernel before it under graph capture
# (true, false; absent: on, as before the choice was measured): only a family whose kernels
# wait on their grid dependency before reading the activations may hold it
EARLY_EDGE = "EarlyEdge"
# the suffix of a solution name whose early edge did not pay: the same kernel with either
# choice is two solutions of one library, each named for what it does
PLAIN_EDGE_SUFFIX = "_plainedge"


@dataclass(frozen=True)
class Family:
    """What one kernel family's solutions hold and how its kernels are checked and run."""

    name: str  # as refusals name a solution of it
    backend: str  # the solution's Backend
    key: str | None  # the solution's entry holding the config (default: none)
    module: str | None  # the module of its config class and kernels
    config_class: str | None
    needs: tuple[str, ...] = ()  # entries a library's solution must hold besides its key
    # errors of from_params that refuse the solution by name, not propagate as they are
    refused: tuple[type[Exception], ...] = ()
    parsed_on_load: bool = True  # False: Triton's parameters are first read at launch
    runs_itself: bool = True  # False: launched through the platform's cuBLASLt handles
    per_device: bool = False  # its PreparedLaunch loads the kernel on a given device
    takes_edges: bool = False  # its PreparedLaunch takes ``pdl`` (EARLY_EDGE)

    def _module(self):
        return importlib.import_module(f"{__package__}.{self.module}")

    def config_type(self) -> type:
        return getattr(self._module(), self.config_class)

    def from_params(self, solution: dict):
        return self.config_type().from_params(solution[self.key])

    def to_params(self, cfg) -> dict:
        """``cfg`` as a tuned solution (the library files' shape)."""
        return {"SolutionIndex": 0, "SolutionNameMin": cfg.name, "KernelNameMin": cfg.name,
                "Backend": self.backend, self.key: cfg.to_params()}

    def infeasible_reason(self, cfg, problem) -> str | None:
        return self._module().infeasible_reason(cfg, problem)

    def launcher(self, cfg, ops):
        """A zero-argument call of ``cfg`` on ``ops``: what benchmarks time."""
        return self._module().launcher(cfg, ops)

    def prepared(self, cfg, problem, device: int, early_edge: bool | None = None):
        """``launch(x, y, d)`` of ``cfg`` on ``problem``: what the runtime calls per GEMM.
        ``early_edge`` (a solution's EARLY_EDGE) reaches only a family that takes edges."""
        make = self._module().PreparedLaunch
        if not self.per_device:
            return make(cfg, problem)
        if self.takes_edges and early_edge is not None:
            return make(cfg, problem, device, pdl=early_edge and edges_allowed())
        return make(cfg, problem, device)

    def feasible(self, solution: dict, problem):
        """The config of ``solution``, refused where it cannot be read or cannot run
        ``problem``."""
        try:
            cfg = self.from_params(solution)
        except self.refused as exc:
            raise PlatformError(f"{problem.name}: {self.name} solution "
                                f"{solution.get('SolutionNameMin')}: {exc}") from None
        reason = self.infeasible_reason(cfg, problem)
        if reason:
            raise PlatformError(f"{problem.name}: {self.name} solution {cfg.name}: {reason}")
        return cfg


CUBLASLT = Family("cuBLASLt", "cublaslt", "CublasLt", "cublaslt", "AlgoConfig",
                  needs=("CublasLtVersion",), runs_itself=False)
TRITON = Family("Triton", "triton", "Triton", "triton_gemm", "TritonConfig",
                parsed_on_load=False)
CUDA = Family("cuda", "cuda", "CudaKernel", "cluster_gemm", "ClusterConfig",
              refused=(KeyError, TypeError, ValueError), per_device=True, takes_edges=True)
DEFAULT = Family("default", "default", None, None, None, parsed_on_load=False,
                 runs_itself=False)
# the order validate_solution's refusal lists them in
BY_BACKEND = {f.backend: f for f in (CUBLASLT, TRITON, CUDA, DEFAULT)}


def edges_allowed() -> bool:
    """False where ``GEKO_CUDA_PDL=0`` turns every early edge off, whatever a solution says."""
    return importlib.import_module(f"{__package__}.cluster_gemm").pdl_default()


def of(solution: dict) -> Family:
    """The family of ``solution`` (cuBLASLt where it names none: the oldest solutions)."""
    backend = solution.get("Backend", "cublaslt")
    if backend not in BY_BACKEND:
        raise PlatformError(f"unknown solution backend {backend!r} in {solution}")
    return BY_BACKEND[backend]


def of_config(cfg) -> Family:
    """The family whose config ``cfg`` is."""
    for family in BY_BACKEND.values():
        if family.config_class and isinstance(cfg, family.config_type()):
            return family
    raise PlatformError(f"no cuda kernel family has configs like {cfg!r}")
