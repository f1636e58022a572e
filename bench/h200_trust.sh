#!/usr/bin/env bash
# Issue 39's trust run on one H100/H200, from a copy of the repository root, with the wheels of
# ../shared/tools/offline_wheels.sh (plus nvmath-python and pytest-xdist) in .whl:
#   RES=dir bash bench/h200_trust.sh
# 1. the whole GPU test tier; 2. search + final_libs of the 65-GEMM TP-8 trace (campaign time,
# criterion 5); 3. bench_h200.py on that run: every GEMM beside cuBLASLt's default and nvmath's
# top 8 in one process (criterion 4: no GEMM shipped > 1% slower than nvmath top-8).
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run trust
timed pytest_gpu "${TESTS_S:-300}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= tests
search_tp8 search_tp8 "${SEARCH_S:-330}" runs/tp8_search
timed bench "${BENCH_S:-300}" python3 bench/bench_h200.py --workload "$tp8_trace" \
  --workdir runs/tp8_search --no-triton --out "$res/bench"
tail -6 "$res/bench.log" >> "$res/walls.txt"
echo done >> "$res/walls.txt"
