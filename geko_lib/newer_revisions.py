"""Inputs of newer GEKO revisions that geko refuses by name, each with one line saying why.

The original moves fast; its newest revisions take inputs geko cannot honour correctly, and a
run that silently read them as something else would tune or ship the wrong GEMMs:

- **MX formats**: a workload row with ``scaleA`` or ``scaleB`` >= 3 is a block-scaled (MX)
  GEMM, which the newest GEKO tunes under its own type tag (``F8BS_MXE8B32_TN``): the scale
  blocks are part of the kernel (``MXBlockA/B``), and geko has no MX kernels, parameter spaces,
  hipblaslt-bench rows or model for them. The newest ``--list`` keys ``MX``, ``MX_BLOCK`` and
  ``MX_SCALE_TYPE`` are refused for the same reason.
- **the gfx1250 family** (``gfx1250``, ``gfx1250_96cu``, ``gfx1250_192cu`` and the ``-strict``
  variants): geko has no MatrixInstruction table, tuning profiles (ClusterDim, its StreamK and
  CMS defaults) or device model for it.
- ``--custom-lib-src`` / ``--custom-lib-dir`` (a reference library other than the installed
  hipBLASLt's, built by TensileCreateLibrary or prebuilt): geko's baseline, search and
  comparison all measure against the platform's installed library and look winners up in its
  MatchTable; a foreign reference would need its own MatchTable for both.

Refusals happen before anything is written (the ``geko`` command and the launchers exit 2
with one ``geko: error:`` line; the API raises :class:`NewerRevisionInput`, also for
``search.run(..., custom_lib_dir=...)``).
"""

from __future__ import annotations

import re

from .errors import GekoError

MX_MIN_SCALE = 3  # hipBLASLt scale modes: 0 none, 1 scalar, 2 vector; >= 3 block (MX)
MX_LIST_KEYS = ("MX", "MX_BLOCK", "MX_SCALE_TYPE")
MX_WHY = ("MX (block-scaled) formats are not supported by geko (the newer GEKO's MXE8B32 GEMM "
          "types): it has no MX kernels, tuning spaces or benchmark rows for them")
_GFX1250 = re.compile(r"^gfx1250(?:_\d+cu)?(?:-strict)?$")
CUSTOM_LIB_FLAGS = ("--custom-lib-src", "--custom-lib-dir")


class NewerRevisionInput(GekoError, ValueError):
    """An input of a newer GEKO revision that geko refuses."""


def mx_scale_message(value) -> str | None:
    """Why a ``scaleA``/``scaleB`` value is refused (None: a scale mode geko runs)."""
    try:
        mode = int(value)
    except (TypeError, ValueError):
        return None
    if mode < MX_MIN_SCALE:
        return None
    return f"{mode} (>= {MX_MIN_SCALE}): {MX_WHY}"


def is_gfx1250(arch) -> bool:
    return bool(_GFX1250.match(str(arch)))


def refuse_arch(arch, where: str = "arch") -> None:
    """A gfx1250-family name is refused, naming where it came from."""
    if is_gfx1250(arch):
        raise NewerRevisionInput(
            f"{where}: {arch!r}: the gfx1250 family (gfx1250, gfx1250_96cu, gfx1250_192cu, "
            "-strict) of newer GEKO revisions is not supported by geko: it has no "
            "MatrixInstruction table, tuning profiles or device model for it")


def custom_lib_message(name: str) -> str:
    return (f"{name}: a reference library other than the installed hipBLASLt's (newer GEKO "
            "revisions) is not supported by geko: its baseline, search and comparison measure "
            "the platform's own library and find winners in its MatchTable; point --hipblaslt "
            "at a hipBLASLt checkout built with that library instead")


def refused_flag(argv) -> str | None:
    """The one-line refusal of a ``--custom-lib-src``/``--custom-lib-dir`` on a command line
    (also as ``--flag=value``), None if neither is given."""
    for arg in argv:
        flag = str(arg).split("=", 1)[0]
        if flag in CUSTOM_LIB_FLAGS:
            return custom_lib_message(flag)
    return None


def refuse_reference_library(options: dict) -> None:
    """The API's form (``search.run(..., custom_lib_dir=...)`` of the newest revision): a
    reference library is refused rather than silently ignored."""
    for name in ("custom_lib_dir", "custom_lib_src"):
        if options.get(name) is not None:
            raise NewerRevisionInput(custom_lib_message(name))
