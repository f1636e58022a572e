#!/usr/bin/env bash
# The issue-23 shard run of the cuda platform on one H200 (kind nvidia-h200), from the
# repository root, with the wheels of ../shared/tools/offline_wheels.sh in .whl:
#   OUT=dir [CONFIGS=shard|wide] bash bench/h200_tp8.sh
# 1. the software (torch, triton, transformers, nvmath, cuBLASLt) and the GPU's state;
# 2. the Triton GPU tests (every template, the shard kernels included, against float32);
# 3. bench/decode_sweep.py --configs $CONFIGS (default shard: tune mode's rule seeds + the shard
#    grid; wide: the shard kernels over wider axes) on the TP-8 trace's decode GEMMs, side by
#    side with cuBLASLt's default, geko's dense-search best 2 and the copy floor, writing the
#    fastest verified Triton config per GEMM as a seed library.
# Everything lands in $OUT/tp8.tgz (and the summaries in $OUT/summary.txt).
set -uo pipefail
out=${OUT:-bench/out}; w=/tmp/tp8; rm -rf "$w"; mkdir -p "$w" "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl > "$w/pip.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  python3 -c "import transformers; print('transformers', transformers.__version__)"
  python3 -c "import nvmath; print('nvmath', nvmath.__version__)"
  python3 -c "from geko_lib.platforms.cuda import cublaslt; print('cublaslt', cublaslt.version())"
} > "$w/env.txt" 2>&1
cat "$w/env.txt"
start=$(date +%s)
timeout 120 python3 -m pytest -q -m gpu -n 8 -rfs tests/test_cuda_triton.py > "$w/pytest_triton.txt" 2>&1
echo "pytest rc=$? $(($(date +%s) - start)) s: $(tail -1 "$w/pytest_triton.txt")"
sweep() {  # name, then decode_sweep's filters
  local name=$1; shift; local t0=$(date +%s)
  timeout "${SWEEP_S:-140}" python3 bench/decode_sweep.py --workload bench/configs/llama3_70b_tp8_decode.yaml \
    --max-n 96 --configs "${CONFIGS:-shard}" --out "$w/$name" --seed-library-out "$w/$name/seeds" "$@" \
    > "$w/$name.log" 2>&1
  echo "sweep $name rc=$? $(($(date +%s) - t0)) s"
}
SWEEP_S=${QKV_S:-170} sweep qkv --rows 1280 --n 1,4,16,48,96
SWEEP_S=${OPROJ_S:-140} sweep oproj --rows 8192 --k 1024 --n 1,16,48,96
SWEEP_S=${MLP_S:-120} sweep mlp --rows 7168,8192 --k 8192,3584 --n 16,96
for f in "$w"/*/decode_sweep_summary.csv; do
  python3 - "$f" <<'PY' >> "$out/summary.txt"
import sys, pandas as pd
f = pd.read_csv(sys.argv[1])
cols = [c for c in ("gemm", "copy_us", "default_us", "search_us", "triton_us", "search_pct_floor",
                    "triton_pct_floor", "triton_name") if c in f]
print(f[cols].to_string(index=False))
PY
done
cat "$out/summary.txt"
tar -czf "$out/tp8.tgz" -C "$w" .
