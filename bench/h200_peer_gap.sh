#!/usr/bin/env bash
# Issue 39 criterion 4, from a copy of the repository root, with the wheels of
# bench/h200_trust.sh in .whl:   RES=dir bash bench/h200_peer_gap.sh
# 1. bench/peer_gap.py: for the GEMMs that shipped > 1% slower than nvmath top-8 with the keep
#    rule's thresholds off (2026-12-07), the search's finalists, the 8 peers run by the
#    heuristic's own structs beside the same 8 rebuilt from their configurations, and the
#    bench's columns, in one process;
# 2. bench/decode_layer.py: the tune's edge rule now asks for a gain after F.rms_norm too
#    (cluster_gemm.edge_verdict): does tuned_pdl now choose as the layer does?
# 3. the GPU test tier (TESTS: the test files, default all).
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run peer_gap
timed peer_gap "${GAP_S:-240}" python3 bench/peer_gap.py --out "$res"
timed decode_layer "${LAYER_S:-120}" python3 bench/decode_layer.py --out "$res"
timed pytest_gpu "${TESTS_S:-400}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= ${TESTS:-tests}
echo done >> "$res/walls.txt"
