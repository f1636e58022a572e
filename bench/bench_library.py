"""Load + trim + dump of a ~10 MB library-logic file (goal: <= 5 s on a 2-core machine).

    python bench/bench_library.py [--fixture PATH] [--copies N]

Builds the file by replicating a real TensileLite logic file's solutions and sizes (shifted sizes,
so they stay distinct), with every size listed twice so trim has duplicates to drop.
"""
import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path

import yaml

from geko_lib import library

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "fixtures" / "tensile_logic" / \
    "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"


def big_library(fixture: Path, copies: int) -> library.LibraryLogic:
    base = library.load(fixture)
    n = len(base.solutions)
    solutions, sizes = [], []
    for r in range(copies):
        for s in range(n):
            solution = dict(base.solutions[s], SolutionIndex=r * n + s)
            solutions.append(solution)
        for size, (index, gflops) in base.exact_logic:
            shifted = [size[0] + 16 * r, *size[1:]]
            sizes.append([shifted, [r * n + index, gflops]])
            sizes.append([list(shifted), [r * n + index, gflops * 0.9]])
    lib = library.LibraryLogic.from_list(base.to_list())
    lib.solutions, lib.exact_logic = solutions, sizes
    return lib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixture", type=Path, default=DEFAULT)
    parser.add_argument("--copies", type=int, default=180)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="geko-libbench-"))
    source = library.dump(big_library(args.fixture, args.copies), work / "big.yaml")
    megabytes = source.stat().st_size / 1e6
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        lib = library.load(source)
        lib.trim()
        library.dump(lib, work / "trimmed.yaml")
        timings.append(time.perf_counter() - start)
    check = library.load(work / "trimmed.yaml")
    reference = yaml.load((work / "trimmed.yaml").read_text(), Loader=yaml.CSafeLoader)
    assert check.to_list() == reference and len(check.exact_logic) == len(lib.exact_logic)
    start = time.perf_counter()
    yaml.load(source.read_text(), Loader=yaml.CSafeLoader)
    pyyaml = time.perf_counter() - start
    print(f"# library load + trim + dump ({datetime.date.today()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()})")
    print("| file | solutions | sizes | load+trim+dump (best of 3) | PyYAML C load alone |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {megabytes:.1f} MB | {len(lib.solutions)} | {len(lib.exact_logic)} (from "
          f"{2 * len(lib.exact_logic)}) | {min(timings):.2f} s | {pyyaml:.2f} s |")


if __name__ == "__main__":
    main()
