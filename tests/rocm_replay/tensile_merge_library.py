#!/usr/bin/env python3
"""Test stand-in for TensileMergeLibrary.

Where it stands in a fake hipBLASLt checkout: ``tensilelite/Tensile/bin/TensileMergeLibrary``
(run as ``python tensilelite/Tensile/bin/TensileMergeLibrary [--no_eff] [--force_merge B]
<original dir> <incremental dir> <output dir>`` with ``PYTHONPATH=<tensilelite>``) and, through
the module dispatcher ``tensilelite/tensilelite/__main__.py``, ``python -m tensilelite
merge-library ...``.

Behaviour, as the tool's: incremental ``*.yaml`` files whose name the original directory lacks
are copied; the others are merged file by file (a size in both takes the incremental kernel
when forced or faster, new sizes are added, solutions deduplicated by SolutionNameMin and
renumbered; ``--no_eff`` stores efficiency 0.0 for merged rows). It stops, as the tool does,
when an incremental file's LibraryType differs from the destination folder's name
(Equality/GridBased) or the problem types differ.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from geko_lib.gemm import GemmProblem
from geko_lib.library import logic


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="TensileMergeLibrary")
    for directory in ("original_dir", "incremental_dir", "output_dir"):
        parser.add_argument(directory)
    parser.add_argument("-v", "--verbosity", type=int, default=1)
    parser.add_argument("--force_merge", default="none")
    parser.add_argument("--no_eff", action="store_true")
    return parser.parse_args(argv)


def entries(lib: logic.LibraryLogic, zero_eff: bool) -> dict:
    """Size -> (problem, solution, efficiency) of one library."""
    positions = lib.solution_position()
    return {size: (GemmProblem(lib.gemm_type, *size), lib.solutions[positions[index]],
                   0.0 if zero_eff else eff)
            for size, index, eff in lib.size_entries()}


def merge(orig: logic.LibraryLogic, inc: logic.LibraryLogic, force: bool,
          no_eff: bool) -> logic.LibraryLogic:
    chosen = entries(orig, False)
    for size, entry in entries(inc, no_eff).items():
        old = chosen.get(size)
        if old is None or force or entry[2] > old[2]:
            chosen[size] = entry
    return logic.build(orig, list(chosen.values()),
                       key=lambda s: s.get("SolutionNameMin") or json.dumps(s, sort_keys=True,
                                                                            default=str))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    force = args.force_merge.lower() in ("none", "true", "1")
    orig_dir, out = Path(args.original_dir), Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for inc_path in sorted(Path(args.incremental_dir).glob("*.yaml")):
        orig_path = orig_dir / inc_path.name
        if not orig_path.is_file():
            shutil.copyfile(inc_path, out / inc_path.name)
            print("Copied", inc_path, "to", out / inc_path.name)
            continue
        orig, inc = logic.load(orig_path), logic.load(inc_path)
        folder = orig_dir.resolve().name
        if folder in ("Equality", "GridBased") and inc.library_type != folder:
            sys.exit(f"[Error] Destination folder(={folder}) failed to match YAML "
                     f"LibraryType (={inc.library_type})")
        if orig.gemm_type != inc.gemm_type:
            sys.exit(f"[Error] ProblemType in library logic doesn't match: {inc_path}")
        logic.dump(merge(orig, inc, force, args.no_eff), out / inc_path.name)
        print("File written to", out / inc_path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
