#!/usr/bin/env bash
# Issue 39 criterion 5 and this tree's GPU checks, from a copy of the repository root, with the
# wheels of bench/h200_trust.sh in .whl:   RES=dir bash bench/h200_search_profile.sh
# 1. bench/search_profile.py: where a dense search's seconds go (by call path), and three
#    screening ways side by side against a finals-grade truth;
# 2. bench/decode_layer.py: does tuned_pdl (cluster_gemm.edge_verdict, both producers) choose
#    as the layer does?
# 3. the GPU test tier (TESTS: the test files, default all).
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run search_profile
timed search_profile "${PROFILE_S:-170}" python3 bench/search_profile.py --out "$res"
timed decode_layer "${LAYER_S:-120}" python3 bench/decode_layer.py --out "$res"
timed pytest_gpu "${TESTS_S:-280}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= ${TESTS:-tests}
echo done >> "$res/walls.txt"
