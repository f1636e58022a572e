#!/usr/bin/env bash
# Issue 30's campaign times and GPU tier on one H200 (kind nvidia-h200), from the repository
# root, with the wheels of ../shared/tools/offline_wheels.sh (plus nvmath-python and
# pytest-xdist) in .whl, in two device calls (each under the 10-minute limit):
#   OUT=dir bash bench/h200_campaigns.sh search   # the GPU test tier, then search + final_libs
#                                                 # of the 65-GEMM TP-8 trace
#   OUT=dir bash bench/h200_campaigns.sh tune     # tune of 25 TP-8 decode GEMMs with an empty
#                                                 # warm-start cache, then again with the cache
#                                                 # the first filled; e2e_decode compiled
# Each campaign's wall time, and per rule where it went (bench/campaign_times.py, from
# Snakemake's own log), go to $OUT.
set -uo pipefail
phase=${1:?search or tune}
out=${OUT:-bench/out}; mkdir -p "$out"
res=$out
. bench/device_lib.sh
install_wheels "$out/pip_$phase.txt"
export GEKO_CACHE_DIR=/tmp/geko_cache_$phase
campaign() {  # label, limit, workdir, snakemake arguments...
  local label=$1 limit=$2 workdir=$3; shift 3
  timed "$label" "$limit" python3 -m snakemake final_libs --profile profiles/h200 "$@" \
    --config workdir="$workdir" "${CONFIG[@]}"
  python3 bench/campaign_times.py "$out/$label.log" --json "$out/${label}_times.json" \
    >> "$out/walls.txt" 2>&1
  tail -3 "$workdir/logs/combine_libs.log" "$workdir"/logs/*final*.log 2>/dev/null \
    >> "$out/walls.txt"
}
record_gpu "$out/env_$phase.txt"
if [ "$phase" = search ]; then
  timed pytest_gpu "${TESTS_S:-260}" python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q \
    -o addopts= tests
  tail -15 "$out/pytest_gpu.log"
  CONFIG=(workload_log="$PWD/bench/configs/llama3_70b_tp8_serving.yaml")
  campaign search_tp8 "${SEARCH_S:-300}" runs/tp8_search
else
  CONFIG=(workload_log="$PWD/bench/configs/llama3_70b_tp8_decode25.yaml")
  rm -rf "$GEKO_CACHE_DIR"
  campaign tune_cold "${TUNE_S:-240}" runs/tune_cold --configfile bench/configs/h200_tune_decode.yaml
  campaign tune_warm "${WARM_S:-150}" runs/tune_warm --configfile bench/configs/h200_tune_decode.yaml
  if [ "${E2E_S:-0}" -gt 0 ]; then
    timed e2e "$E2E_S" python3 bench/e2e_decode.py --out "$out" --shape llama3-70b-tp8 \
      --batch 1 --workdir runs/e2e_tp8
  fi
fi
cat "$out/walls.txt"
