"""Benchmark: ``geko --bench`` of many distinct GEMMs on the sim platform, and the peak memory
of ingesting a large log (issue 24's scale goals: 100k distinct GEMMs through --bench in
<= 120 s on 2 cores, a 1M-row log ingested or refused within 1 GB).

Generates mask-64 logs of N distinct bf16 TN GEMMs (M 64..8048, N 1..200, K from 1024 in
steps of 64 every 100k rows), runs ``geko --bench --workload-log LOG -w DIR`` in a fresh
workdir per size and reports its wall time, the time of each workflow phase (from Snakemake's
log); then ``workload.read`` of a 1M-row log, and of
the same log with its last row refused, each in a fresh process with its own peak RSS.

    python bench/bench_scale.py [--sizes 10000 100000] [--ingest-rows 1000000] [--out DIR]
"""

from __future__ import annotations

import argparse
import re
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


INGEST = '''
import resource, sys
from geko_lib import workload
try:
    outcome = f"{len(workload.read(sys.argv[1], platform='sim')):,} rows"
except workload.WorkloadError as exc:
    outcome = f"refused: {exc}"
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, outcome, sep="\\t")
'''


def ingest_peak(path: Path) -> tuple[float, str]:
    """``workload.read`` of ``path`` in a fresh process: its own peak RSS (MB) and what it
    read or why it refused."""
    out = subprocess.run([sys.executable, "-c", INGEST, str(path)], check=True,
                         capture_output=True, text=True).stdout.strip().split("\t", 1)
    return float(out[0]), out[1]


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
        bad = root / "ingest_refused.yaml"  # the same log with its last row refused (M < 1)
        lines = log.read_text().splitlines(keepends=True)
        bad.write_text("".join(lines[:-1]) + lines[-1].replace("M: ", "M: -", 1))
        for what, path in (("ingest", log), ("refusal", bad)):
            began = time.perf_counter()
            rss, outcome = ingest_peak(path)
            print(f"\n{what} of {args.ingest_rows:,} distinct rows: "
                  f"{time.perf_counter() - began:.1f} s, peak RSS {rss:,.0f} MB ({outcome})")


if __name__ == "__main__":
    main()
