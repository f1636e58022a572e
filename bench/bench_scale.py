"""Benchmark: ``geko --bench`` of many distinct GEMMs on the sim platform, and the peak memory
of ingesting a large log (issue 24's scale goals: 100k distinct GEMMs through --bench in
<= 120 s on 2 cores, a 1M-row log ingested or refused within 1 GB).

Generates mask-64 logs of N distinct bf16 TN GEMMs (M 64..8048, N 1..200, K from 1024 in
steps of 64 every 100k rows), runs ``geko --bench --workload-log LOG -w DIR`` in a fresh
workdir per size and reports its wall time, the time of each workflow phase (from Snakemake's
log); then ``workload.read`` of a 1M-row log (hipBLASLt's own 36-key rows; ``--row-form
short``: 17 keys), of the same log with its last row refused, and the whole ingest job (read,
workload.yaml written and stamped), each in a fresh process with its own peak RSS.

    python bench/bench_scale.py [--sizes 10000 100000] [--ingest-rows 1000000]
                                [--row-form real|short] [--out DIR]
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


# hipBLASLt's own mask-64 row: 36 keys, no call_count (what an application's log holds)
REAL_ROW = ("- {{function: matmul, M: {m}, N: {n}, K: {k}, lda: {k}, ldb: {k}, ldc: {m}, "
            "ldd: {m}, stride_a: 0, stride_b: 0, stride_c: 0, stride_d: 0, alpha: 1.0, "
            "beta: 0.0, transA: T, transB: N, batch_count: 1, scaleA: 0, scaleB: 0, "
            "scaleAlpha_vector: false, gradient: false, use_e: false, bias_vector: false, "
            "bias_source: d, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
            "scale_type: f32_r, bias_type: f32_r, compute_type: c_f32_r, "
            "activation_type: none, flush: false, rotating: 512, cold_iters: 0, iters: 0}}\n")
ROWS = {"short": ROW, "real": REAL_ROW}


def write_log(path: Path, rows: int, form: str = "short") -> Path:
    with open(path, "w") as out:
        for i in range(rows):
            out.write(ROWS[form].format(m=64 + 16 * (i % 500), n=1 + (i // 500) % 200,
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


# a child's own peak: VmHWM is its address space's; ru_maxrss would keep the forking parent's
PEAK = '''
import re
def peak_mb():
    with open("/proc/self/status") as status:
        return int(re.search(r"VmHWM:\\s+(\\d+)", status.read()).group(1)) / 1024
'''
INGEST = PEAK + '''
import sys
from geko_lib import platforms, workload
try:
    outcome = f"{len(workload.read(sys.argv[1], support=platforms.gemm_support('sim'))):,} rows"
except workload.WorkloadError as exc:
    outcome = f"refused: {exc}"
print(peak_mb(), outcome, sep="\\t")
'''


JOB = PEAK + '''
import os, sys
from geko_lib import phases
from geko_lib.campaign import layout, state
log = sys.argv[1]
os.makedirs(sys.argv[2])
os.chdir(sys.argv[2])
config = state.with_defaults({"platform": "sim", "arch": "gfx950", "devices": [0],
                              "mode": "search", "workload_log": log})
phases.run(phases.Job("ingest", phases.Paths(log), phases.Paths(layout.WORKLOAD), config,
                      params=phases.Paths(kind="log", value=log), log=["logs/ingest.log"]),
           "ingest")
print(peak_mb(), "workload.yaml written", sep="\t")
'''


def ingest_peak(path: Path, job_dir: Path | None = None) -> tuple[float, str]:
    """``workload.read`` of ``path`` in a fresh process (with ``job_dir``: the whole ingest job,
    read, workload.yaml written and stamped, run there): its own peak RSS (MB) and what it read
    or why it refused."""
    script, args = (INGEST, [str(path)]) if job_dir is None else (JOB, [str(path), str(job_dir)])
    out = subprocess.run([sys.executable, "-c", script, *args], check=True,
                         capture_output=True, text=True).stdout.strip().split("\t", 1)
    return float(out[0]), out[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--ingest-rows", type=int, default=1_000_000)
    ap.add_argument("--row-form", choices=sorted(ROWS), default="real",
                    help="the ingested log's rows: hipBLASLt's own 36 keys, or 17 short ones")
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
        log = write_log(root / "ingest.yaml", args.ingest_rows, args.row_form)
        bad = root / "ingest_refused.yaml"  # the same log with its last row refused (M < 1)
        lines = log.read_text().splitlines(keepends=True)
        bad.write_text("".join(lines[:-1]) + lines[-1].replace("M: ", "M: -", 1))
        for what, path, job in (("read", log, None), ("refusal", bad, None),
                                ("ingest job", log, root / "ingest_job")):
            began = time.perf_counter()
            rss, outcome = ingest_peak(path, job)
            print(f"\n{what} of {args.ingest_rows:,} distinct rows ({args.row_form} form): "
                  f"{time.perf_counter() - began:.1f} s, peak RSS {rss:,.0f} MB ({outcome})")


if __name__ == "__main__":
    main()
