"""Which platform a command runs on when it names none: never the model where real hardware is.

The original tool always runs hipBLASLt: its in-tree launchers find the checkout they sit in, and
the installed command needs ``--hipblaslt`` or ``GEKO_HIPBLASLT_PATH``. geko adds two platforms,
so a run that names none is decided here, first match wins:

1. a hipBLASLt checkout around the current directory or around geko itself (geko placed at
   ``projects/hipblaslt/utilities/geko`` as the original is): rocm on that checkout;
2. a ROCm install (``ROCM_PATH``, ``/opt/rocm``, ``/dev/kfd``) without a checkout: refused, as
   the original refuses, saying how to point at one (or to ask for the model);
3. an NVIDIA GPU (``/dev/nvidia0``, ``/proc/driver/nvidia/gpus``): cuda;
4. no GPU stack at all: sim, and the run says so on its first and last line.

Nothing here runs a command; the probes only look at paths under ``ROOT`` (``/``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from ..errors import GekoError

ENV_VAR = "GEKO_HIPBLASLT_PATH"
ROOT = Path("/")  # where the probes look (tests point it elsewhere)


class NoCheckout(GekoError):
    """Real AMD hardware is present, but no hipBLASLt checkout to run it with."""


@dataclass(frozen=True)
class Choice:
    platform: str
    hipblaslt_path: str  # the checkout found (rocm), else ""
    why: str  # one clause for the first line: why this platform


def hipblaslt_checkout(starts: Iterable[Path]) -> Path | None:
    """The hipBLASLt project directory holding one of ``starts`` (itself or a parent): the
    directory with ``tensilelite/`` and ``library/``, as a hipBLASLt source tree has."""
    for start in starts:
        for directory in (Path(start), *Path(start).parents):
            if (directory / "tensilelite").is_dir() and (directory / "library").is_dir():
                return directory
    return None


def rocm_install(environ: Mapping[str, str], root: Path) -> str | None:
    """Where a ROCm install shows itself (None: nowhere)."""
    named = environ.get("ROCM_PATH", "").strip()
    if named and Path(named).is_dir():
        return f"ROCM_PATH={named}"
    for path in ("opt/rocm", "dev/kfd"):
        if (root / path).exists():
            return f"/{path}"
    return None


def nvidia_gpu(root: Path) -> str | None:
    """Where an NVIDIA GPU shows itself (None: nowhere)."""
    if (root / "dev" / "nvidia0").exists():
        return "/dev/nvidia0"
    gpus = root / "proc" / "driver" / "nvidia" / "gpus"
    if gpus.is_dir() and any(gpus.iterdir()):
        return "/proc/driver/nvidia/gpus"
    return None


def choose(environ: Mapping[str, str] | None = None, cwd: Path | None = None,
           package_root: Path | None = None, root: Path | None = None) -> Choice:
    """The platform of a run that names none (no ``--platform``, ``--hipblaslt``,
    ``GEKO_HIPBLASLT_PATH`` or saved campaign); refuses where real AMD hardware has no checkout."""
    environ = os.environ if environ is None else environ
    root = ROOT if root is None else Path(root)
    cwd = Path.cwd() if cwd is None else Path(cwd)
    package_root = Path(__file__).resolve().parents[2] if package_root is None else package_root
    checkout = hipblaslt_checkout((cwd, package_root))
    if checkout is not None:
        return Choice("rocm", str(checkout), f"inside the hipBLASLt checkout {checkout}")
    rocm = rocm_install(environ, root)
    if rocm is not None:
        raise NoCheckout(
            f"a ROCm install is present ({rocm}) but no hipBLASLt checkout was found around "
            f"{cwd} or geko: point at a built one with --hipblaslt PATH or {ENV_VAR}=PATH (or "
            "run from inside it), or pass --platform sim to run the analytic model instead")
    nvidia = nvidia_gpu(root)
    if nvidia is not None:
        return Choice("cuda", "", f"an NVIDIA GPU is present ({nvidia})")
    return Choice("sim", "", "no GPU stack found (no ROCm install, no NVIDIA GPU)")
