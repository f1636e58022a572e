# Sourced by the bench/h200_*.sh device scripts, from the repository root: the wheels in .whl
# installed for the device image's python3, and timed steps. Set $res (the results dir) first.
install_wheels() {  # the pip log's path
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl > "$1" 2>&1
  export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
}
timed() {  # label, limit in s, command...: its log in $res/<label>.log, rc and wall in walls.txt
  local label=$1 limit=$2; shift 2; local t0=$(date +%s.%N)
  timeout "$limit" "$@" > "$res/$label.log" 2>&1
  local rc=$?
  echo "$label rc=$rc wall_s=$(python3 -c "import time; print(round(time.time() - $t0, 1))")" \
    | tee -a "$res/walls.txt"
}
record_gpu() {  # the card, its driver and its state before the run, into the file given
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv > "$1"
}
begin_run() {  # the run's name: $res made, the wheels installed, a cache of the run's own
  mkdir -p "$res"
  install_wheels "$res/pip.txt"
  export GEKO_CACHE_DIR=/tmp/geko_cache_$1
  record_gpu "$res/env.txt"
}
tp8_trace=$PWD/bench/configs/llama3_70b_tp8_serving.yaml  # the in-repo 65-GEMM TP-8 trace
search_tp8() {  # label, limit in s, workdir, extra --config items...: search + final_libs of
  # the 65-GEMM TP-8 trace (its log $res/<label>.log), its rules' times, and its search rows
  # kept in $res/search_data (bench/search_budget.py replays them)
  local label=$1 limit=$2 workdir=$3; shift 3
  timed "$label" "$limit" python3 -m snakemake final_libs --profile profiles/h200 \
    --config workload_log="$tp8_trace" \
    workdir="$workdir" "$@"
  python3 bench/campaign_times.py "$res/$label.log" --json "$res/${label}_times.json" \
    >> "$res/walls.txt" 2>&1
  mkdir -p "$res/search_data" && cp "$workdir"/search/data/*.csv "$res/search_data/"
}
