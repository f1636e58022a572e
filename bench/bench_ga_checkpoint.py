"""What the GA's per-generation checkpoint costs: one GA of Ductile's defaults (512 x 30
generations) on a synthetic space with a cheap score, run without a checkpoint, with the
checkpoint geko writes (compact JSON), and with it indented as before 2026-12-06, alternated.

    python bench/bench_ga_checkpoint.py [--repeats 3] [--vars 12]

Prints each variant's median wall time and its ratio to the run without a checkpoint.
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

from geko_lib import files
from geko_lib.tuning import ga


def space(n_vars: int) -> ga.Space:
    return ga.Space({f"P{i}": list(range(8)) for i in range(n_vars)})


def score(batch: list[dict]) -> np.ndarray:
    """Deterministic, cheap: the GA's own work and the checkpoint are what is timed."""
    return np.array([1.0 + (sum(v * (i + 1) for i, v in enumerate(p.values())) % 97) / 97
                     for p in batch])


def one_run(n_vars: int, variant: str) -> float:
    """One GA's wall time; ``indented`` writes its checkpoints with files.write_json's
    indented form, as the GA did before."""
    write_json = files.write_json
    indented = (lambda path, data, compact=False: write_json(path, data)) \
        if variant == "indented" else write_json
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(files, "write_json", indented):
        checkpoint = None if variant == "none" else Path(tmp) / "ga.checkpoint.json"
        began = time.perf_counter()
        ga.run(space(n_vars), score, checkpoint=checkpoint)
        return time.perf_counter() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vars", type=int, default=12)
    args = parser.parse_args()
    variants = ("none", "compact", "indented")
    times = {v: [] for v in variants}
    for _ in range(args.repeats):
        for variant in variants:  # alternated, so a slow moment hits each variant alike
            times[variant].append(one_run(args.vars, variant))
    base = statistics.median(times["none"])
    for variant in variants:
        median = statistics.median(times[variant])
        print(f"{variant:>9}: median {median:6.2f} s over {args.repeats}  "
              f"({median / base:.2f}x the run without a checkpoint)")


if __name__ == "__main__":
    main()
