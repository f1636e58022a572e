#!/usr/bin/env bash
# The issue-15 run of the cuda platform on one H200 (kind nvidia-h200), from the repository root:
#   OUT=dir bash bench/h200_decode.sh SEARCH_WORKDIR
# SEARCH_WORKDIR is a finished dense-search campaign of the trace (snakemake final_libs
# --profile profiles/h200 --config workload_log=bench/configs/llama3_8b_serving.yaml workdir=...).
# 1. tune mode of the trace's 30 decode GEMMs (decode family, one GA per GEMM, shipped seeds);
# 2. bench_h200.py on the whole trace with the search and tune runs, writing the combined
#    library (per GEMM the fastest verified of final / tune / default) to $OUT/combined;
# 3. the workflow's own combine target on the search campaign with the tune campaign (a part of
#    the trace: its decode GEMMs) -> SEARCH_WORKDIR/combined_libs, results/combined_results.csv.
set -uo pipefail
search=${1:?search campaign workdir}
out=${OUT:-bench/out}; mkdir -p "$out"
tune=${TUNE_WORKDIR:-runs/tune_decode}
start=$(date +%s.%N)
python3 -m snakemake final_libs --profile profiles/h200 \
  --configfile bench/configs/h200_tune_decode.yaml \
  --config workload_log="$PWD/bench/configs/llama3_8b_decode.yaml" workdir="$tune" \
  > "$out/tune.log" 2>&1
echo "tune rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")"
python3 bench/bench_h200.py --workload bench/configs/llama3_8b_serving.yaml --workdir "$search" \
  --tune-workdir "$tune" --combined-out "$out/combined" --out "$out/bench" > "$out/bench.log" 2>&1
echo "bench rc=$?"; tail -2 "$out/bench.log"
start=$(date +%s.%N)
python3 -m snakemake combine --profile profiles/h200 \
  --config workload_log="$PWD/bench/configs/llama3_8b_serving.yaml" workdir="$search" \
  combine_with="[$tune]" > "$out/combine.log" 2>&1
echo "combine rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")"
cp "$search/results/combined_results.csv" "$out/" 2>/dev/null; grep "combined library" "$out/combine.log"
