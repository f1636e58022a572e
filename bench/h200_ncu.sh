#!/usr/bin/env bash
# Nsight Compute counters of the issue-23 decode kernels on one H200 (kind nvidia-h200), from
# the repository root:   OUT=dir bash bench/h200_ncu.sh [GEMM:VARIANT ...]
# Each pair runs bench/ncu_decode.py under ncu (clocks left alone, caches flushed between
# kernels: ncu's default) with the SpeedOfLight, memory, warp-state, occupancy and launch
# sections; one CSV per pair lands in $OUT/ncu/, and $OUT/ncu/summary.txt holds the headline
# figures (duration, DRAM and L2 throughput, tensor and issue activity, top stall reasons).
set -uo pipefail
out=${OUT:-bench/out}/ncu; mkdir -p "$out"
export PYTHONUNBUFFERED=1
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
pairs=("$@")
if [ ${#pairs[@]} -eq 0 ]; then
  pairs=(1280x1x8192:copy 1280x1x8192:triton_decode_tma_atomic_16x128x64_g1_k32_w4_s3
         1280x1x8192:triton_decode_tma_16x64x256_g1_k4_w4_s4
         1280x16x8192:triton_decode_tma_atomic_16x64x128_g1_k16_w4_s3
         1280x96x8192:copy 1280x96x8192:triton_decode_tma_atomic_128x64x128_g1_k4_w8_s4
         1280x96x8192:triton_decode_mmaw_32x128x128_g1_k4_w8_s4 1280x96x8192:default
         8192x1x1024:copy 8192x1x1024:triton_decode_tma_16x64x256_g1_k1_w4_s3
         8192x48x1024:default 8192x48x1024:triton_decode_mmaw_32x128x128_g1_k1_w4_s4)
fi
for pair in "${pairs[@]}"; do
  gemm=${pair%%:*}; variant=${pair#*:}
  timeout 60 "$ncu" --clock-control none --nvtx --nvtx-include "geko/" --csv --page details \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
    python3 bench/ncu_decode.py --gemm "$gemm" --variant "$variant" \
    > "$out/${gemm}_${variant}.csv" 2> "$out/${gemm}_${variant}.err"
  echo "$gemm $variant rc=$?"
done
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import csv, io, pathlib, sys
wanted = ("Duration", "Elapsed Cycles", "SM Active Cycles", "DRAM Throughput",
          "L2 Cache Throughput", "Memory Throughput",
          "Compute (SM) Throughput", "Grid Size", "Registers Per Thread",
          "Achieved Occupancy", "Theoretical Occupancy", "Issue Slots Busy",
          "Warp Cycles Per Issued Instruction", "L2 Hit Rate", "Mem Busy", "Max Bandwidth")
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.csv")):
    text = path.read_text()
    start = text.find('"ID"')
    if start < 0:
        print(path.stem, "no ncu rows"); continue
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    kernels = {}
    for r in rows:
        kernels.setdefault((r["ID"], r["Kernel Name"][:40]), {})[r["Metric Name"]] = \
            f'{r["Metric Value"]} {r["Metric Unit"]}'
    for (kid, name), m in kernels.items():
        print(path.stem, kid, name, "; ".join(f"{k}={m[k]}" for k in wanted if k in m))
PY
