"""The original tool's column names beside geko's, so scripts written for its CSVs keep working.

geko's result tables name a measurement ``gflops``, ``gbps``, ``solution_index``,
``solution_name``; the original's (hipblaslt-bench's columns and the ones it adds) are
``hipblaslt-Gflops``, ``hipblaslt-GB/s``, ``solutionIdx``, ``solution``, plus ``lib_source``
(the library directory a solution comes from: ``Equality``, ..., or ``NotFound`` where there is
no MatchTable to ask). :func:`add` writes the original's names as copies next to geko's, also for
the suffixed columns of the comparison (``gflops_reference`` -> ``hipblaslt-Gflops_reference``);
geko's own columns stay, so nothing that reads them breaks. docs/FORMATS.md maps every column.
"""

from __future__ import annotations

import re
from typing import Callable

import pandas as pd

# geko's column -> the original's name for the same value
ALIASES = {"gflops": "hipblaslt-Gflops", "gbps": "hipblaslt-GB/s",
           "solution_index": "solutionIdx", "solution_name": "solution"}
LIB_SOURCE = "lib_source"
NOT_FOUND = "NotFound"  # the original's lib_source where no MatchTable names the solution
SUFFIXES = ("", "_reference", "_tuned")


def add(frame: pd.DataFrame, lib_source: Callable[[int], str] | None = None) -> pd.DataFrame:
    """``frame`` with the original's column names added beside geko's (and ``lib_source``
    wherever a solution is named: ``lib_source(solution_index)`` for the unsuffixed columns of
    results measured with the vendor's own library, as the original asks its MatchTable; else
    ``NotFound``). Columns already present are left as they are."""
    out = frame.copy()
    for suffix in SUFFIXES:
        for ours, theirs in ALIASES.items():
            if f"{ours}{suffix}" in out and f"{theirs}{suffix}" not in out:
                out.insert(out.columns.get_loc(f"{ours}{suffix}") + 1, f"{theirs}{suffix}",
                           out[f"{ours}{suffix}"])
        if f"solution_index{suffix}" in out and f"{LIB_SOURCE}{suffix}" not in out:
            if lib_source is not None and not suffix:
                # asked once per distinct solution: a search table repeats each many times
                sources = {i: lib_source(int(i)) for i in out["solution_index"].unique()}
                out[LIB_SOURCE] = out["solution_index"].map(sources)
            else:
                out[f"{LIB_SOURCE}{suffix}"] = NOT_FOUND
    return out


def without(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the copies :func:`add` made (before tables are joined, so a copy is
    not taken for a column of its own)."""
    copies = [f"{theirs}{suffix}" for suffix in SUFFIXES for theirs in ALIASES.values()]
    return frame.drop(columns=[c for c in copies if c in frame])



# the macro tile and matrix instruction a Tensile kernel name spells (MT256x256x64, MI16x16x1)
SHAPES = {"MT": re.compile(r"MT(\d+x\d+x\d+)"), "MI": re.compile(r"MI(\d+x\d+x\d+)")}
SIDES = ("tuned", "reference")


def add_shapes(raw: pd.DataFrame) -> pd.DataFrame:
    """``MT_tuned``, ``MI_tuned``, ``MT_reference``, ``MI_reference`` (the shapes the kernel
    names spell, e.g. ``256x256x64``; empty where a name spells none: cuBLASLt's, or sim names
    without an MI) and ``solution_changed`` (the solution name differs), as the original's
    raw_results.csv carries them."""
    out = raw.copy()
    for side in SIDES:
        names = out[f"kernel_{side}"].astype("string")
        for shape, pattern in SHAPES.items():
            out[f"{shape}_{side}"] = names.str.extract(pattern, expand=False)
    out["solution_changed"] = out["solution_name_reference"] != out["solution_name_tuned"]
    return out


DASHBOARD_DROPPED = ("lib", "ratio", "error_tuned")


def dashboard(kept: pd.DataFrame) -> pd.DataFrame:
    """dashboard_data.csv from the kept rows of raw_results: the tuned side only, its suffix
    removed, every ``*reference*`` column and ``lib``, ``ratio``, ``error_tuned`` dropped, and
    the original's names: ``kernel`` -> ``solution_name``, ``solutionIdx`` ->
    ``solution_index`` (geko's own ``solution_name`` / ``solution_index`` give way to them: the
    original's ``solution`` column keeps the solution name)."""
    frame = kept.drop(columns=[c for c in kept.columns
                               if "reference" in c or c in DASHBOARD_DROPPED])
    frame = frame.rename(columns={c: c[:-len("_tuned")] for c in frame.columns
                                  if c.endswith("_tuned")})
    frame = frame.drop(columns=[c for c in ("solution_name", "solution_index", "gflops", "gbps")
                                if c in frame])
    return frame.rename(columns={"kernel": "solution_name", "solutionIdx": "solution_index"})
