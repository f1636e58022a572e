#!/usr/bin/env bash
# Issue 39's second device run (graph edges from the launch-order port), from the repository
# root, with the wheels of bench/h200_pdl.sh in .whl:  RES=dir bash bench/h200_pdl2.sh
set -uo pipefail
res=${RES:-bench/out}; mkdir -p "$res"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl > "$res/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GEKO_CACHE_DIR=/tmp/geko_cache_pdl
run() {  # label, limit in s, command...
  local label=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout "$limit" "$@" > "$res/$label.log" 2>&1
  echo "$label rc=$? wall_s=$(($(date +%s) - t0))" | tee -a "$res/walls.txt"
}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$res/env.txt"
run pytest_pdl 300 python3 -m pytest -m gpu -p no:cacheprovider -q -rfs \
  tests/test_cuda_pdl.py tests/test_cuda_cluster.py tests/test_runtime_plans.py \
  tests/test_cuda_compile.py
run decode_layer 400 python3 bench/decode_layer.py --out "$res"
run pdl_chain 200 python3 bench/pdl_chain.py --out "$res"
run dispatch 240 python3 bench/bench_runtime_dispatch.py --out "$res/dispatch.json" --calls 1000
echo done >> "$res/walls.txt"
