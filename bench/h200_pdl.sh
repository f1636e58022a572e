#!/usr/bin/env bash
# Issue 39's device run, from the repository root, with the wheels of
# ../shared/tools/offline_wheels.sh (plus nvmath-python and pytest-xdist) in .whl:
#   RES=dir bash bench/h200_pdl.sh
# 1. the PDL and cluster-kernel GPU tests; 2. bench_runtime_dispatch (eager host time per
# call); 3. decode_layer (one decode layer in sequence, torch / cluster / cluster with PDL);
# 4. cluster_decode on the worst shards (isolated); 5. the whole GPU tier.
# Every step's log and figures go to $RES; walls.txt has each step's exit status and time.
set -uo pipefail
res=${RES:-bench/out}
. bench/device_lib.sh
begin_run pdl
python3 -c "import torch, triton, cuda.core, cuda.bindings; print(torch.__version__, \
triton.__version__, cuda.core.__version__, cuda.bindings.__version__)" >> "$res/env.txt" 2>&1
timed pytest_pdl 300 python3 -m pytest -m gpu -p no:cacheprovider -q -rfs \
  tests/test_cuda_pdl.py tests/test_cuda_cluster.py
timed dispatch 240 python3 bench/bench_runtime_dispatch.py --out "$res/dispatch.json" \
  --calls 1000
timed decode_layer 600 python3 bench/decode_layer.py --out "$res"
timed cluster_decode 400 python3 bench/cluster_decode.py --out "$res" \
  --gemms 1280x1x8192,1280x16x8192 --repeats 9
timed pytest_gpu 400 python3 -m pytest -m gpu -n 4 -p no:cacheprovider -q -rfs
echo done >> "$res/walls.txt"
