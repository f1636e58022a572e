#!/usr/bin/env bash
# Warm start of the cuda tune mode on one H200 (kind nvidia-h200), from the repository root,
# with the wheels of ../shared/tools/offline_wheels.sh in .whl:
#   OUT=dir bash bench/h200_warm.sh
# The same tune campaign (target `tune`: every optimize job, merged into libs/) of four TP-8
# decode GEMMs (bench/configs/llama3_70b_tp8_warm4.yaml) twice, with an empty warm-start cache
# ($GEKO_CACHE_DIR) and then with the cache the first run filled: wall time of each, configs
# measured and the kernel each shipped (from the optimize jobs' logs).
set -uo pipefail
out=${OUT:-bench/out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl > "$out/pip_warm.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GEKO_CACHE_DIR=/tmp/geko_warm_cache
rm -rf "$GEKO_CACHE_DIR" runs/warm_cold runs/warm_warm
for name in cold warm; do
  t0=$(date +%s.%N)
  timeout "${LIMIT_S:-150}" python3 -m snakemake tune --profile profiles/h200 \
    --configfile bench/configs/h200_tune_decode.yaml \
    --config workload_log="$PWD/bench/configs/llama3_70b_tp8_warm4.yaml" workdir="runs/warm_$name" \
    > "$out/warm_$name.log" 2>&1
  echo "$name rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $t0, 1))")"
  grep -h 'leased\|freed\|warm-start seeds\|configs measured' runs/warm_$name/logs/optimize/*.log \
    | sed 's/^GEKO:INFO //' | tee "$out/warm_${name}_optimize.txt"
done
