"""The seam to hardware: one protocol, several platforms (sim, rocm, cuda).

Every platform returns pandas tables with the columns in ``RESULT_COLUMNS`` (plus its own extras),
so everything downstream of a measurement is platform-independent. The library-logic YAML is the
common currency between phases; a solution's parameters inside it are platform-specific.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import pandas as pd

from ..errors import PlatformError  # noqa: F401 (platforms.PlatformError, as it always was)
from ..gemm import GEMM_FIELDS, GemmProblem
from ..log_setup import LOGGER
from ..workload.support import GemmSupport
from . import limits, type_support

# columns of every bench / search / verify table (docs/FORMATS.md, "results table")
RESULT_COLUMNS = (*GEMM_FIELDS, "us", "gflops", "gbps", "solution_index", "solution_name",
                  "kernel", "platform", "measured", "device")
VERIFY_COLUMNS = (*GEMM_FIELDS, "solution_index", "solution_name", "kernel", "error", "platform",
                  "measured", "device")


class Platform(Protocol):
    name: str
    RESULT_OPTIONS: tuple[str, ...]  # keys of its config section that shape its results
    ARCH_MODELS: tuple[str, ...]  # the device models of archs.MODELS it runs (--arch choices)
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

    def lib_source(self, solution_index: int) -> str:
        """Which directory of the vendor library one of its own solutions comes from
        (``Equality``, ...: the original's ``lib_source``), ``NotFound`` where unknown."""

    def race(self, problem: GemmProblem, solutions: Sequence[dict | None], device: int
             ) -> list[tuple[float, float]]:
        """(us, error) of each solution on one problem, timed side by side on the same
        operands and checked against the higher-precision reference (None: the platform's
        default choice); (inf, inf) for a solution that cannot run. Platforms with the
        ``combine`` capability only."""

    def sweep(self, problems: Sequence[GemmProblem], library: Path, out_dir: Path,
              device: int) -> pd.DataFrame:
        """Every solution of one library-logic file on every problem (for prune): rows of
        (m, n, batch_count, k, SolutionIndex, us, gflops)."""

    def configure(self, gemm_config, out_dir: Path, arch: str, options: dict) -> list[Path]:
        """Tuning YAMLs for one GEMM type (tune mode)."""

    def optimize(self, tuning_yaml: Path, build_dir: Path, device: int) -> Path:
        """Run one tuning YAML; returns build_dir/3_LibraryLogic."""


# name -> (module under geko_lib.platforms, class): imported only when a campaign asks for it,
# so one platform's dependencies (torch, a hipBLASLt checkout) never burden another
REGISTRY = {"sim": ("sim", "SimPlatform"), "rocm": ("rocm.platform", "RocmPlatform"),
            "cuda": ("cuda", "CudaPlatform")}

# the integration files an application loads without rebuilding a library (rule exports)
EXPORT_FORMATS = ("hipblaslt_override", "tunableop", "aiter_tuned")


@dataclass(frozen=True)
class Capabilities:
    """What a platform can do, asked by rules and scripts instead of testing its name."""

    measured: bool  # False where timings are predictions (sim)
    note: str  # what every artifact made with the platform says about itself ("" if none)
    epilogues: bool  # tuned libraries get bias/activation epilogue variants
    exports: tuple[str, ...]  # the EXPORT_FORMATS whose files are valid for this platform
    integrate: bool  # final_libs can be merged into a vendor checkout (rule integrate)
    combine: bool  # kernels of several campaigns can be raced side by side (target combine)
    ceilings: dict | None  # roofline ceilings (see ceilings()), None where unknown


# the analytic model: what estimates a GEMM's time where nothing was measured (coverage)
MODEL = "sim"


@dataclass(frozen=True)
class Checkout:
    """The vendor checkout that selects its platform, as the original's hipBLASLt path does:
    where it is given (a config key, an environment variable) and which platform it selects."""

    platform: str
    key: str  # config key (section.key)
    env: str  # environment variable


CHECKOUT = Checkout("rocm", "rocm.hipblaslt_path", "GEKO_HIPBLASLT_PATH")


def checkout_path(config: dict) -> str | None:
    """The checkout a config names (None where none)."""
    section, _, key = CHECKOUT.key.partition(".")
    return (config.get(section) or {}).get(key) or None


def check_ready(config: dict, environ=None) -> None:
    """Refuse, before anything runs, a campaign its platform cannot run here (rocm: a missing,
    unbuilt or client-less checkout); platforms with nothing to check accept every config."""
    check = getattr(platform_class(name_of(config)), "check_ready", None)
    if check is not None:
        check(config, environ)


def name_of(config: dict) -> str:
    """The campaign's platform: its config's, else the schema default."""
    from ..config_schema import default

    return str(config.get("platform") or default("platform"))


def arch_choices(name: str) -> tuple[str, ...]:
    """The --arch names a platform runs: those of archs.ARCHS whose device model it declares
    (``ARCH_MODELS``); every one for a name the registry does not hold."""
    from ..archs import ARCHS

    try:
        models = platform_class(name).ARCH_MODELS
    except PlatformError:
        return tuple(ARCHS)
    return tuple(arch for arch, spec in ARCHS.items() if spec.model in models)


def gemm_support(name: str | None) -> GemmSupport:
    """What the workload readers check a GEMM against on the platform ``name``: its library's
    type combinations (``type_support``) and its devices' sizes (``limits``); every platform's
    (the union, as sim models them all) for None, as before a campaign names one, or for a name
    without tables."""
    return GemmSupport(combos=type_support.table(name), library=type_support.library_name(name),
                       arch_limit=type_support.arch_limit,
                       memory_bytes=limits.memory_bytes(name), devices=limits.devices(name),
                       indexers=limits.indexers(name))


def platform_class(name: str):
    """The class registered under ``name``, imported on first use."""
    try:
        module, cls = REGISTRY[name]
    except KeyError:
        raise PlatformError(f"unknown platform {name!r} (choose {', '.join(REGISTRY)})") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def get(config: dict) -> Platform:
    """The platform named by ``config["platform"]``, set up from the rest of the config."""
    return platform_class(name_of(config)).from_config(config)


def capabilities(config: dict) -> Capabilities:
    """The capabilities of the campaign's platform (no device or checkout is touched)."""
    return platform_class(name_of(config)).capabilities(config)


def ceilings(config: dict) -> dict | None:
    """The hardware ceilings a roofline needs, where the platform knows them: dense matrix peak
    in TFLOP/s per input class ("16" for bf16/f16, "8" for fp8, "32", "64", "tf32", "i8", "4")
    and memory bandwidth in TB/s, with where they come from."""
    return capabilities(config).ceilings


def resolve(hipblaslt_path=None, platform=None, **config) -> Platform:
    """The platform an API call runs on, as the original's functions are called:
    ``hipblaslt_path`` (their first argument) selects rocm on that checkout, ``platform=``
    names one ("sim", "rocm", "cuda"); with neither the call runs on the sim platform and says
    so. Other keywords are config keys (``arch``, ``devices`` ...)."""
    if platform is not None and not isinstance(platform, str):
        return platform  # a Platform already set up
    if platform is None and hipblaslt_path is None:
        logging.getLogger(LOGGER).warning(
            "no hipblaslt_path or platform= given: running on the sim platform (an analytic "
            "GPU model; its times are predictions)")
    platform = requested_name(hipblaslt_path, platform) or "sim"
    if platform == "rocm" and hipblaslt_path is not None:
        return platform_class("rocm").for_checkout(hipblaslt_path, dict(config, platform="rocm"))
    return get(dict(config, platform=platform))


def requested_name(hipblaslt_path=None, platform=None) -> str | None:
    """The platform an API call names (see :func:`resolve`) without setting it up: ``platform``'s
    name, else rocm for a ``hipblaslt_path``; None when neither is given."""
    if platform is not None:
        return platform if isinstance(platform, str) else platform.name
    return "rocm" if hipblaslt_path is not None else None


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
    caps = capabilities(config)
    return {"name": platform.name, "arch": config.get("arch"), "measured": caps.measured,
            "note": caps.note}


def require_problems(platform_name: str, phase: str, problems) -> list[GemmProblem]:
    """``problems`` as a list, refused when empty on every platform alike: a job without work
    is a dealing mistake upstream (hipblaslt-bench answers an empty problem list with no result,
    and the sim and cuda platforms refuse it too, so no test on them can hide one)."""
    problems = list(problems)
    if not problems:
        raise PlatformError(f"{platform_name}: {phase} of no GEMM: a job was given no work "
                            "(hipblaslt-bench prints no result for an empty problem list)")
    return problems


def results_frame(rows: list[dict], columns=RESULT_COLUMNS) -> pd.DataFrame:
    """A table with the canonical columns first, in order, then any extras."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(columns))
    extras = [c for c in frame.columns if c not in columns]
    return frame[[c for c in columns if c in frame.columns] + extras]
