#!/usr/bin/env bash
# Issue 39, from a copy of the repository root, with the wheels of bench/h200_trust.sh in .whl:
#   RES=dir bash bench/h200_keep_all.sh
# The steps whose answers are new first, the checks of the tree after them, so that a run cut
# by the device's time still brings back what no earlier run has:
# 1. bench/decode_layer.py: the layer with the tune's per-solution early edges (tuned_pdl)
#    beside the edges chosen in the layer itself, and each edge timed after F.rms_norm;
# 2. search + final_libs of the 65-GEMM TP-8 trace with the keep rule's thresholds off
#    (keep_thr 0: every GEMM searched; up_thr 1.0: any faster kernel kept), then
#    bench/bench_h200.py on it: does any GEMM still ship > 1% slower than nvmath top-8 when
#    the original's thresholds do not leave it to the default (criterion 4)? SEARCH=0 skips it;
# 3. the whole GPU test tier; DISPATCH=1 adds bench/bench_runtime_dispatch.py after it.
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run keep_all
timed decode_layer "${LAYER_S:-420}" python3 bench/decode_layer.py --out "$res"
if [ "${SEARCH:-1}" = 1 ]; then
  search_tp8 search_tp8 "${SEARCH_S:-360}" runs/tp8_keep_all keep_thr=0 up_thr=1.0
  timed bench "${BENCH_S:-330}" python3 bench/bench_h200.py --workload "$tp8_trace" \
    --workdir runs/tp8_keep_all --no-triton --out "$res/bench"
  tail -8 "$res/bench.log" >> "$res/walls.txt"
fi
timed pytest_gpu "${TESTS_S:-400}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= tests
[ "${DISPATCH:-0}" = 1 ] && timed dispatch 180 python3 bench/bench_runtime_dispatch.py \
  --out "$res/dispatch.json" --calls 1000
echo done >> "$res/walls.txt"
