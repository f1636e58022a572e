#!/usr/bin/env bash
# Issue 39 criterion 5 after the tenth session, from a copy of the repository root, with the
# wheels of bench/h200_trust.sh in .whl:   RES=dir bash bench/h200_campaign_times.sh
# 1. search + final_libs of the 65-GEMM TP-8 trace with profiles/h200 as it is now (2.5 s of
#    screening a GEMM): the campaign's time and its rules' times;
# 2. bench/tune_profile.py on the trace's first 8 decode GEMMs (one tuning YAML): where a
#    tune's seconds go, and a fresh job's torch import and CUDA context.
# About 6 minutes. Every step's log goes to $RES; walls.txt has each step's status and wall.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run campaign_times
search_tp8 search_tp8 "${SEARCH_S:-300}" runs/tp8_search
timed tune_profile "${TUNE_S:-200}" python3 bench/tune_profile.py --out "$res/tune_profile" \
  --gemms "${TUNE_GEMMS:-8}"
echo done >> "$res/walls.txt"
