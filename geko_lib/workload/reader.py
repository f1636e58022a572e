"""``read``: which source a workload file is (mask-64 YAML, mask-32 bench lines, CSV, TunableOp
CSV, aiter CSV), by its suffix and first meaningful line, and that source's reader."""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pandas as pd

from .csv_log import _read_csv
from .errors import WorkloadError
from .mask32 import _bench_rows
from .mask64 import _read_yaml_fast, _read_yaml_reference
from .parsing import (_check_not_trace, _count_lines, _decode, _is_bench_line,
                      _meaningful, _missing_file, _read_text)
from .support import GemmSupport
from .table import _Rows, _normalize
from ..log_setup import LOGGER

log = logging.getLogger(LOGGER)

# --------------------------------------------------------------------------------------------
# public readers


def _read_fast(path, support: GemmSupport, arch: str | None = None) -> pd.DataFrame | None:
    """The fast path of :func:`read`; None where PyYAML must read the whole file."""
    first = _first_meaningful(path)  # it decides the format
    if first is None:
        raise WorkloadError(path, None, "rows", "empty workload: no GEMM rows found")
    number, s = first
    if _is_bench_line(s):
        return _normalize(_bench_rows(path, _count_lines(path)), support, arch)
    _check_not_trace(s, path, number)
    rows = _read_yaml_fast(path)
    return None if rows is None else _normalize(rows, support, arch)


def _first_meaningful(path) -> tuple[int, str] | None:
    """(line number, stripped text) of the first line that is neither blank nor a comment;
    a line before it that is not UTF-8 text is refused, naming it."""
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                s = _decode(raw, path, lambda: number).lstrip("\ufeff").strip()
                if _meaningful(s):
                    return number, s
    except OSError as exc:
        raise WorkloadError(path, None, "file", f"cannot read: {exc.strerror or exc}") from None
    return None


def read(source, *, fast: bool = True, support: GemmSupport, arch: str | None = None
         ) -> pd.DataFrame:
    """Read a workload file into the canonical table (see the module docstring).

    ``.csv`` -> CSV; a file whose first non-blank, non-comment line starts with ``hipblaslt-bench``
    -> mask-32 command lines; anything else -> a mask-64 YAML log. ``fast=False`` parses YAML logs
    with PyYAML as a whole (the reference); the result is the same table. GEMMs beyond
    ``support``, a platform's limits (``geko_lib.platforms.gemm_support(name)``: the data-type
    combinations of its library, the sizes of its devices), or of types ``arch`` cannot run,
    are refused (:mod:`geko_lib.workload.support`). ``support`` has no default and None is a
    TypeError: a caller with no platform to name passes ``gemm_support(None)``, the union of
    every platform's (a campaign re-reading its own ``workload.yaml`` does so too: the check is
    cheap beside the parse).
    """
    path = source
    problem = _missing_file(path)
    if problem:
        raise problem
    if Path(path).suffix.lower() == ".csv":
        from . import tunableop  # PyTorch TunableOp's untuned/results files (no header row)

        if tunableop.is_tunableop_file(path):
            return _normalize(tunableop.workload_rows(path, _Rows), support, arch)
        from . import aiter  # aiter's untuned/tuned GEMM CSVs (vLLM, SGLang on ROCm)

        if aiter.is_aiter_file(path):
            rows = aiter.workload_rows(path, _Rows)  # its errors name its columns already
            with aiter.in_file_terms():
                return _normalize(rows, support, arch)
        return _read_csv(path, support, arch)
    if fast:
        # The fast path builds hundreds of thousands of small lists and no reference cycles; the
        # cyclic garbage collector would repeatedly rescan them all (about a third of the time).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            table = _read_fast(path, support, arch)
        finally:
            if gc_was_enabled:
                gc.enable()
        if table is not None:
            return table
    text = _read_text(path)
    for number, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if _meaningful(s):
            if _is_bench_line(s):
                return _normalize(_bench_rows(path, _count_lines(path)), support, arch)
            _check_not_trace(s, path, number)
            break
    return _normalize(_read_yaml_reference(path, text), support, arch)
