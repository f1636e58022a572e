"""Hardware counters of chosen decode kernels, for Nsight Compute (issue 23: where do the
1280-row q/k/v and 8192 x N x 1024 o-proj kernels lose their time to the copy floor?).

    ncu --clock-control none --nvtx --nvtx-include "geko/" --metrics ... \
        python bench/ncu_decode.py --gemm 1280x1x8192 --variant triton_decode_tma_atomic_...

A GEMM is BLAS M x N x K, bf16 TN (a linear layer: M weight rows, N tokens). A variant is a
Triton config name, a cluster kernel name (``cuda_cluster_...``), ``default`` (cuBLASLt's heuristic choice) or ``copy`` (the elementwise copy
of the GEMM's bytes: the size-aware floor). The variant runs three times over rotating operands
(compile and warm-up), then twice inside the NVTX range ``geko``: ncu profiles only those two.
Without ncu the script prints each variant's mean time over the two launches and exits.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from geko_lib.gemm import GemmProblem  # noqa: E402
from bench.gemms import parse_gemm  # noqa: E402




def calls_of(variant: str, problem: GemmProblem, device: int) -> list:
    from geko_lib.platforms.cuda import cluster_gemm, timing, triton_gemm as tg, tune
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    if variant == "copy":
        return timing.copy_calls(timing.operand_bytes(problem), device)
    platform = CudaPlatform(SearchSettings())
    sets = platform._operands(problem, device, salt=11)
    if variant.startswith(cluster_gemm.NAME_PREFIX):
        cfg = cluster_gemm.ClusterConfig.from_name(variant)
        return [cluster_gemm.launcher(cfg, ops) for ops in sets]
    if variant == "default":
        solution = platform.default_solution(problem, device)
    else:
        solution = tune.solution(tg.TritonConfig.from_name(variant).to_params())
    return platform.launchers(solution, problem, sets, device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gemm", required=True, help="M x N x K, e.g. 1280x1x8192")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    import torch

    calls = calls_of(args.variant, parse_gemm(args.gemm), args.device)
    for i in range(3):
        calls[i % len(calls)]()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.nvtx.range_push("geko")
    start.record()
    for i in range(2):
        calls[(3 + i) % len(calls)]()
    stop.record()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(f"{args.gemm} {args.variant}: {start.elapsed_time(stop) * 1e3 / 2:.2f} us per call "
          "(two eager launches, not a benchmark)")


if __name__ == "__main__":
    main()
