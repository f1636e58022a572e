#!/usr/bin/env bash
# The issue-23 whole-trace run of the cuda platform on one H200 (kind nvidia-h200), from the
# repository root, with the wheels of ../shared/tools/offline_wheels.sh in .whl, in two device
# calls (each under the 10-minute limit; runs/ stays on the machine between them):
#   OUT=dir bash bench/h200_tp8_trace.sh campaign   # dense search of the TP-8 trace, then tune
#                                                   # mode of its 50 decode GEMMs (cut by TUNE_S)
#   OUT=dir bash bench/h200_tp8_trace.sh bench      # the tune campaign resumed to its end, then
#                                                   # bench_h200.py on the whole trace
# bench_h200 times every GEMM side by side (cuBLASLt default, torch, nvmath top-8, geko's
# search, tune, final_libs, and the combined library: per GEMM the fastest verified of final /
# tune / default), time-weighted by the trace's call counts, against the run's honest floor.
set -uo pipefail
phase=${1:?campaign or bench}
out=${OUT:-bench/out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl > "$out/pip_$phase.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
trace=$PWD/bench/configs/llama3_70b_tp8_serving.yaml
decode=$PWD/bench/configs/llama3_70b_tp8_decode.yaml
search=runs/tp8_search tune=runs/tp8_tune
timed() {  # label, limit in s, command...
  local label=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$label.log" 2>&1
  echo "$label rc=$? $(($(date +%s) - t0)) s"
}
tune_campaign() {
  timed "tune_$phase" "$1" python3 -m snakemake final_libs --profile profiles/h200 \
    --configfile bench/configs/h200_tune_decode.yaml \
    --config workload_log="$decode" workdir="$tune"
}
if [ "$phase" = campaign ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv > "$out/env.txt"
  timed search "${SEARCH_S:-330}" python3 -m snakemake final_libs --profile profiles/h200 \
    --config workload_log="$trace" workdir="$search"
  tune_campaign "${TUNE_S:-230}"
else
  tune_campaign "${TUNE_S:-300}"
  timed bench "${BENCH_S:-280}" python3 bench/bench_h200.py --workload "$trace" \
    --workdir "$search" --tune-workdir "$tune" --no-triton --combined-out "$out/combined" \
    --out "$out/bench"
  tail -4 "$out/bench.log"
fi
# what a later call needs if the machine was given back in between (carry it as runs/), and
# the campaigns' results and logs
tar -czf "$out/$phase.tgz" -C runs --exclude='*/build*' --exclude='*/.snakemake' \
  tp8_search tp8_tune 2>/dev/null
ls -la "$out"
