#!/usr/bin/env bash
# Dense search of one workload with 1, then 2 GPUs of the same machine; prints the wall times.
#   OUT=dir bash bench/h200_fanout.sh WORKLOAD
# The 2-GPU run's workdir (runs/fanout_2) is a complete search campaign (final_libs follows).
set -euo pipefail
workload=${1:?workload log}
out=${OUT:-bench/out}; mkdir -p "$out"
for n in 1 2; do
  config=profiles/h200/h200.yaml; [ "$n" = 2 ] && config=bench/configs/h200_2gpu.yaml
  start=$(date +%s.%N)
  python3 -m snakemake --profile profiles/h200 search --configfile "$config" \
    --config workload_log="$workload" workdir=runs/fanout_$n --resources gpu=$n gpu_slot=$n \
    > "$out/fanout_$n.log" 2>&1
  echo "gpus=$n search_wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")"
done
