#!/usr/bin/env bash
# The headline run of the cuda platform on a two-H200 machine (kind nvidia-h200-x2):
#   OUT=dir bash bench/h200_headline.sh WORKLOAD TUNE_SUBSET
# 1. dense search of WORKLOAD with both GPUs (wall time printed; the 1-GPU time comes from
#    bench/h200_fanout.sh), then final_libs of that campaign;
# 2. tune mode on TUNE_SUBSET on GPU 1 while bench_h200.py times every peer on GPU 0;
# 3. bench_h200.py on TUNE_SUBSET with the tuned libraries beside the search's.
set -uo pipefail
workload=${1:?workload log}; subset=${2:?tune subset log}
out=${OUT:-bench/out}; mkdir -p "$out"
two=(--profile profiles/h200 --configfile bench/configs/h200_2gpu.yaml
     --config workload_log="$workload" workdir=runs/fanout_2 --resources gpu=2 gpu_slot=2)
start=$(date +%s.%N)
python3 -m snakemake search "${two[@]}" > "$out/fanout_2.log" 2>&1
echo "gpus=2 search rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")"
python3 -m snakemake final_libs "${two[@]}" > "$out/final_2.log" 2>&1; echo "final_libs rc=$?"
start=$(date +%s.%N)
python3 -m snakemake final_libs --profile profiles/h200 \
  --configfile bench/configs/h200_tune_gpu1.yaml --config workload_log="$subset" \
  workdir=runs/tune > "$out/tune.log" 2>&1 &
tune=$!
python3 bench/bench_h200.py --workload "$workload" --workdir runs/fanout_2 --out "$out" \
  > "$out/bench.log" 2>&1; echo "bench rc=$?"
wait $tune; echo "tune rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")"
python3 bench/bench_h200.py --workload "$subset" --workdir runs/fanout_2 --tune-workdir runs/tune \
  --no-triton --out "$out/tune_bench" > "$out/tune_bench.log" 2>&1; echo "tune bench rc=$?"
