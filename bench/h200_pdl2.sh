#!/usr/bin/env bash
# Issue 39's second device run (graph edges from the launch-order port), from the repository
# root, with the wheels of bench/h200_pdl.sh in .whl:  RES=dir bash bench/h200_pdl2.sh
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run pdl
timed pytest_pdl 300 python3 -m pytest -m gpu -p no:cacheprovider -q -rfs \
  tests/test_cuda_pdl.py tests/test_cuda_cluster.py tests/test_runtime_plans.py \
  tests/test_cuda_compile.py
timed decode_layer 400 python3 bench/decode_layer.py --out "$res"
timed pdl_chain 200 python3 bench/pdl_chain.py --out "$res"
timed dispatch 240 python3 bench/bench_runtime_dispatch.py --out "$res/dispatch.json" --calls 1000
echo done >> "$res/walls.txt"
