#!/usr/bin/env bash
# Issue 39, fifth session, from a copy of the repository root, with the wheels of
# bench/h200_trust.sh in .whl:  RES=dir bash bench/h200_edges.sh
# 1. bench/dispatch_parts.py and bench/bench_runtime_dispatch.py: where an eager hit's host
#    time goes, and the hit beside F.linear;
# 2. the whole GPU test tier, on the tree of the in-process rules;
# 3. search + final_libs of the 65-GEMM TP-8 trace, its rows kept (screen_s: how much of the
#    screening budget the winners needed; bench/search_budget.py replays smaller budgets);
# 4. bench/decode_layer.py, each GEMM's early edge timed alone (edge_choices);
# 5. with CHAIN=1, bench/pdl_chain.py on the layer's GEMMs, back to back (does the chain
#    predict the layer?).
# Every step's log goes to $RES; walls.txt has each step's exit status and wall time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run edges
timed dispatch_parts 120 python3 bench/dispatch_parts.py --out "$res/dispatch_parts.json"
timed dispatch 180 python3 bench/bench_runtime_dispatch.py --out "$res/dispatch.json" --calls 1000
timed pytest_gpu "${TESTS_S:-360}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs \
  -o addopts= tests
search_tp8 search_tp8 "${SEARCH_S:-330}" runs/tp8_search
python3 bench/search_budget.py "$res/search_data" --json "$res/search_budget.json" \
  >> "$res/walls.txt" 2>&1
timed decode_layer "${LAYER_S:-420}" python3 bench/decode_layer.py --out "$res"
gemms=1280x1x8192,8192x1x1024,7168x1x8192,8192x1x3584,1792x1x5120,5120x1x1280,13824x1x5120
gemms=$gemms,5120x1x6912,1280x16x8192,7168x16x8192,8192x16x3584,13824x16x5120
[ "${CHAIN:-0}" = 1 ] && timed pdl_chain "${CHAIN_S:-400}" python3 bench/pdl_chain.py \
  --gemms "$gemms" --out "$res"
echo done >> "$res/walls.txt"
