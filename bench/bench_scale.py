"""Benchmark: ``geko --bench`` of many distinct GEMMs on the sim platform, and the peak memory
of ingesting a large log (issue 24's scale goals: 100k distinct GEMMs through --bench in
<= 120 s on 2 cores, a 1M-row log ingested or refused within 1 GB).

Generates mask-64 logs of N distinct bf16 TN GEMMs (M 64..8048, N 1..200, K from 1024 in
steps of 64 every 100k rows), runs ``geko --bench --workload-log LOG -w DIR`` in a fresh
workdir per size and reports its wall time, the time of each workflow phase (from Snakemake's
log) and the peak RSS of the largest process; then ``workload.read`` of a 1M-row log in a
child process with its peak RSS.

    python bench/bench_scale.py [--sizes 10000 100000] [--ingest-rows 1000000] [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROW = ("- {{function: matmul, M: {m}, N: {n}, K: {k}, lda: {k}, ldb: {k}, ldc: {m}, ldd: {m}, "
       "transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, "
       "d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r, call_count: {calls}}}\n")


def write_log(path: Path, rows: int) -> Path:
    with open(path, "w") as out:
        for i in range(rows):
            out.write(ROW.format(m=64 + 16 * (i % 500), n=1 + (i // 500) % 200,
                                 k=1024 + 64 * (i // 100_000), calls=1 + i % 7))
    return path


def phases(workdir: Path) -> dict[str, float]:
    """Seconds from each rule's start to its 'Finished' line in Snakemake's log."""
    log = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))[-1].read_text()
    stamps = re.findall(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]\n(?:local)?(?:rule|checkpoint) "
                        r"(\w+):|\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]\nFinished jobid: \d+ "
                        r"\(Rule: (\w+)\)", log)
    start, out = {}, {}
    for began, rule, ended, done in stamps:
        if rule:
            start[rule] = time.mktime(time.strptime(began, "%a %b %d %H:%M:%S %Y"))
        elif done in start:
            out[done] = time.mktime(time.strptime(ended, "%a %b %d %H:%M:%S %Y")) - start[done]
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--ingest-rows", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="geko-bench-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    print("| distinct GEMMs | geko --bench wall s | phases (s) |")
    print("|---:|---:|---|")
    for n in args.sizes:
        log = write_log(root / f"w{n}.yaml", n)
        workdir = root / f"run{n}"
        began = time.perf_counter()
        subprocess.run(["geko", "--bench", "--workload-log", str(log), "-w", str(workdir)],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - began
        detail = ", ".join(f"{k} {v:.0f}" for k, v in phases(workdir).items())
        print(f"| {n:,} | {wall:.0f} | {detail} |")
    if args.ingest_rows:
        log = write_log(root / "ingest.yaml", args.ingest_rows)
        code = (f"from geko_lib import workload; t = workload.read({str(log)!r}, "
                "platform='sim'); print(len(t))")
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
        print(f"\ningest of {args.ingest_rows:,} distinct rows: "
              f"{time.perf_counter() - began:.1f} s, peak RSS {peak_rss_mb():,.0f} MB "
              "(the largest child so far)")


if __name__ == "__main__":
    main()
