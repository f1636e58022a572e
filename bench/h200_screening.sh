#!/usr/bin/env bash
# Issue 39 criterion 5 in a short call, from a copy of the repository root, with the wheels of
# bench/h200_trust.sh in .whl:   RES=dir bash bench/h200_screening.sh
# 1. the GPU tests of the cuda search (TESTS, default those of test_cuda_gpu.py naming the
#    search or the screening);
# 2. bench/search_profile.py on the ten GEMMs of the 2026-12-07 profile: each step's seconds
#    after the screening's change, and the old and new screening side by side.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run screening
timed pytest_gpu "${TESTS_S:-90}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= tests/test_cuda_gpu.py -k "${TESTS_K:-(search or screening or time_calls) and not combines}"
timed search_profile "${PROFILE_S:-150}" python3 bench/search_profile.py --out "$res" \
  --ab "${AB:-2}" --ab-candidates "${AB_N:-80}"
echo done >> "$res/walls.txt"
