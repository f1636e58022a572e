"""How long `snakemake -n` takes on a 2,000-GEMM dense-search workload (sim platform).

    python bench/bench_dryrun.py [--gemms 2000] [--out DIR]

Times (best of 3) a dry run before anything ran (the DAG stops at the search checkpoint), then
runs the workflow up to the search chunks' configuration and times the dry run of the full
fan-out (chunks -> winners -> extract checkpoint).
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "workflow" / "Snakefile"


def workload_rows(n):
    rows, m_values = [], [256 * i for i in range(1, 41)]
    for i in range(n):
        rows.append({"function": "matmul", "M": m_values[i % 40], "N": 16 * (1 + i // 40),
                     "K": 4096, "transA": "T", "transB": "N", "batch_count": 1,
                     "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                     "d_type": "bf16_r", "compute_type": "c_f32_r", "call_count": 1 + i % 7})
    return rows


def snakemake(workdir, config, *args):
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), *args,
           "--configfile", str(config), "--cores", "2", "--resources=gpu=2",
           "--scheduler", "greedy"]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=workdir, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gemms", type=int, default=2000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    base = Path(args.out or tempfile.mkdtemp(prefix="geko-dryrun-"))
    base.mkdir(parents=True, exist_ok=True)
    log = base / "workload.yaml"
    log.write_text("".join("- " + yaml.safe_dump(r, default_flow_style=True, width=5000)
                           for r in workload_rows(args.gemms)))
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({"workdir": str(base / "run"), "workload_log": str(log),
                                      "keep_thr": 0.0, "devices": [0, 1],
                                      "lock_dir": str(base / "locks")}))
    fresh = min(snakemake(base, config, "-n", "final_libs") for _ in range(3))
    snakemake(base, config, "search/chunks")
    chunks = len(list((base / "run" / "search" / "chunks").glob("*.yaml")))
    expanded = min(snakemake(base, config, "-n", "final_libs") for _ in range(3))
    print(f"# snakemake -n, {args.gemms} GEMMs, {chunks} search chunks "
          f"({datetime.date.today()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()})")
    print("| dry run | seconds (best of 3) |\n|---|---|")
    print(f"| fresh (DAG up to the search checkpoint) | {fresh:.2f} |")
    print(f"| after search_configure ({chunks} chunk jobs visible) | {expanded:.2f} |")


if __name__ == "__main__":
    main()
