#!/usr/bin/env bash
# Issue 39 criterion 5 after the screening's changes, from a copy of the repository root, with
# the wheels of bench/h200_trust.sh in .whl:   RES=dir bash bench/h200_search_time.sh
# 1. the GPU tests of the changed modules (TESTS, default the cuda search's);
# 2. search + final_libs of the 65-GEMM TP-8 trace: the campaign's time and its rules' times.
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run search_time
timed pytest_gpu "${TESTS_S:-150}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= ${TESTS:-tests/test_cuda_gpu.py tests/test_cuda_platform.py}
search_tp8 search_tp8 "${SEARCH_S:-330}" runs/tp8_search
echo done >> "$res/walls.txt"
