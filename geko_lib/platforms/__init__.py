"""The seam to hardware: one protocol, several platforms (sim, rocm, cuda).

Every platform returns pandas tables with the columns in ``RESULT_COLUMNS`` (plus its own extras),
so everything downstream of a measurement is platform-independent. The library-logic YAML is the
common currency between phases; a solution's parameters inside it are platform-specific.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol, Sequence

import pandas as pd

from ..errors import GekoError
from ..gemm import GEMM_FIELDS, GemmProblem

# columns of every bench / search / verify table (docs/FORMATS.md, "results table")
RESULT_COLUMNS = (*GEMM_FIELDS, "us", "gflops", "gbps", "solution_index", "solution_name",
                  "kernel", "platform", "measured", "device")
VERIFY_COLUMNS = (*GEMM_FIELDS, "solution_index", "solution_name", "kernel", "error", "platform",
                  "measured", "device")


class PlatformError(GekoError, RuntimeError):
    """A platform could not do what was asked (missing tool, failed run, unknown solution)."""


class Platform(Protocol):
    name: str
    measured: bool  # False where timings are predictions (sim)
    note: str  # what every artifact made with this platform should say about itself ("" if none)

    def bench(self, problems: Sequence[GemmProblem], out_dir: Path, device: int,
              library: Path | None = None, duration: float | None = None,
              progress: Callable[[int], None] | None = None) -> pd.DataFrame:
        """One timing per problem (``duration`` s of GPU time each at most): the default
        choice, or the solution of the library that ``create_library`` wrote into ``library``.
        ``progress(1)`` is called after each problem (here and in search/verify)."""

    def search(self, problems: Sequence[GemmProblem], out_dir: Path, device: int,
               duration: float | None = None,
               progress: Callable[[int], None] | None = None) -> pd.DataFrame:
        """Timings of every candidate solution of every problem."""

    def extract(self, winners: pd.DataFrame, out_dir: Path) -> list[Path]:
        """Write library-logic files holding the winning solutions of a dense search."""

    def create_library(self, libs_dir: Path, out_dir: Path) -> Path:
        """Turn library-logic files into what the platform loads at run time, inside out_dir."""

    def verify(self, problems: Sequence[GemmProblem], out_dir: Path, device: int,
               library: Path, progress: Callable[[int], None] | None = None) -> pd.DataFrame:
        """Numerical error of the library's solution per problem against a float64 reference."""

    def reference_solution(self, problem: GemmProblem, solution_index: int) -> dict:
        """Library-logic parameters of one of the platform's own solutions (for full_libs)."""

    def sweep(self, problems: Sequence[GemmProblem], library: Path, out_dir: Path,
              device: int) -> pd.DataFrame:
        """Every solution of one library-logic file on every problem (for prune): rows of
        (m, n, batch_count, k, SolutionIndex, us, gflops)."""

    def configure(self, gemm_config, out_dir: Path, arch: str, options: dict) -> list[Path]:
        """Tuning YAMLs for one GEMM type (tune mode)."""

    def optimize(self, tuning_yaml: Path, build_dir: Path, device: int) -> Path:
        """Run one tuning YAML; returns build_dir/3_LibraryLogic."""


def get(config: dict) -> Platform:
    """The platform named by ``config["platform"]``, set up from the rest of the config."""
    name = config.get("platform", "sim")
    if name == "sim":
        from .sim import SimPlatform

        return SimPlatform.from_config(config)
    if name == "rocm":
        from .rocm.platform import RocmPlatform

        return RocmPlatform.from_config(config)
    if name == "cuda":
        from .cuda import CudaPlatform

        return CudaPlatform.from_config(config)
    raise PlatformError(f"unknown platform {name!r} (choose sim, rocm or cuda)")


def ceilings(config: dict) -> dict | None:
    """The hardware ceilings a roofline needs, where the platform knows them: dense matrix peak
    in TFLOP/s per input class ("16" for bf16/f16, "8" for fp8, "32", "64", "tf32", "i8", "4")
    and memory bandwidth in TB/s, with where they come from."""
    name = config.get("platform", "sim")
    if name in ("sim", "rocm"):
        from .sim import ARCH_ALIASES, arch_by_name

        arch_name = config.get("arch", "gfx950")
        if name == "rocm" and ARCH_ALIASES.get(arch_name, arch_name) not in ("gfx942", "gfx950"):
            return None  # no datasheet figures for other AMD GPUs here
        arch = arch_by_name(arch_name)
        source = "datasheet figures in the sim model" if name == "sim" else \
            "AMD datasheet figures (the sim model's table), not measured on this GPU"
        return {"arch": arch.name, "peak_tflops": dict(arch.peak_tflops),
                "hbm_tbps": arch.hbm_tbps, "source": source}
    if name == "cuda":
        measured = (config.get("cuda") or {}).get("ceilings") or {}
        return {"arch": config.get("arch", "h200"),
                "peak_tflops": {"16": float(measured.get("bf16_tflops", 802.0))},
                "hbm_tbps": float(measured.get("copy_tbps", 4.21)),
                "source": measured.get("source", "measured on an H200 (bf16 8192^3 matmul, "
                                       "1 GiB device copy), config cuda.ceilings")}
    return None


def peak_class(gemm_type) -> str:
    """The ceilings key of a GEMM type's input data (see ceilings): every platform states its
    peak rates in these classes."""
    if gemm_type.is_tf32:
        return "tf32"
    if gemm_type.a_type == "i8_r":
        return "i8"
    return {0.5: "4", 1: "8", 2: "16", 4: "32", 8: "64", 16: "64"}[gemm_type.input_bytes]


def describe(platform: Platform, config: dict) -> dict:
    """What metrics and reports record about where numbers came from."""
    return {"name": platform.name, "arch": config.get("arch"), "measured": platform.measured,
            "note": platform.note}


def results_frame(rows: list[dict], columns=RESULT_COLUMNS) -> pd.DataFrame:
    """A table with the canonical columns first, in order, then any extras."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(columns))
    extras = [c for c in frame.columns if c not in columns]
    return frame[[c for c in columns if c in frame.columns] + extras]
