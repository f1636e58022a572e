#!/usr/bin/env bash
# Issue 39 criterion 4 after the tenth session, from a copy of the repository root, with the
# wheels of bench/h200_trust.sh in .whl:   RES=dir bash bench/h200_clocks.sh
# 1. bench/clock_trace.py on 8192 x 8192 x 1024 and 7168 x 8192 x 8192: each replay of the
#    default and the heuristic's 8 beside the SM clock, power and clock-event reasons, after
#    20 s of heat, for 60 s (does a kernel's time follow the clock?);
# 2. bench/finals_settle.py on ten GEMMs spread over the trace's sizes: the search's finals
#    with and without the settling replay, the seconds and the picks side by side;
# 3. bench/peer_gap.py on the six large GEMMs of the 2026-12-07 night run, the bench's measure
#    three times each: do its confirmed columns still put nvmath top-8 ahead by > 1%?
# About 8 minutes in all.
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run clocks
for gemm in BBS_TN_M8192_N8192_B1_K1024 BBS_TN_M7168_N8192_B1_K8192; do
  timed "clocks_$gemm" "${CLOCK_S:-120}" python3 bench/clock_trace.py --out "$res/$gemm" \
    --gemm "$gemm" --seconds "${SECONDS_TRACED:-60}" --heat "${HEAT_S:-20}"
done
timed finals_settle "${SETTLE_S:-240}" python3 bench/finals_settle.py --out "$res" --gemms 10
timed peer_gap "${PEER_S:-200}" python3 bench/peer_gap.py --out "$res" --passes 3 --no-rebuilt \
  --gemm BBS_TN_M8192_N8192_B1_K1024 --gemm BBS_TN_M7168_N8192_B1_K8192 \
  --gemm BBS_TN_M8192_N2048_B1_K3584 --gemm BBS_TN_M16032_N2048_B1_K8192 \
  --gemm BBS_TN_M8192_N8192_B1_K3584 --gemm BBS_TN_M16032_N8192_B1_K8192
echo done >> "$res/walls.txt"
