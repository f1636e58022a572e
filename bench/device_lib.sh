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
