"""Does a variant's place in ``timing.time_side_by_side``'s round change its time?

    python bench/timing_position.py --out DIR [--gemms 1280x1x8192,8192x16x1024]

issue 23 asks that decisions near a threshold not be made on noise; bench/decode_ablation.py
then timed one kernel twice in one round, first and later, 1.2-3.3% apart. Per GEMM this times
lists of variants in which the same kernel appears several times (the shipped Triton decode
kernel ``A``, cuBLASLt's default ``D``, the copy floor ``C``), once without and once with
``settle`` (every timed replay after an untimed replay of the same variant), and writes each
place's median. Without an effect of the place, every ``A`` of a list reads the same.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from geko_lib.gemm import GemmProblem  # noqa: E402
from bench.gemms import probe_arguments, probe_each  # noqa: E402

KERNELS = {(1280, 1): "triton_decode_tma_atomic_16x128x64_g1_k32_w4_s3",
           (8192, 16): "triton_decode_tma_16x64x128_g1_k1_w4_s6",
           (7168, 16): "triton_decode_tma_16x64x128_g1_k1_w4_s6"}
LISTS = ("AAAA", "AAAC", "DADA", "ADAD")


def probe(problem: GemmProblem, device: int, repeats: int) -> list[dict]:
    from geko_lib.platforms.cuda import timing, triton_gemm as tg
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    platform = CudaPlatform(SearchSettings())
    sets = platform._operands(problem, device, salt=11)
    cfg = tg.TritonConfig.from_name(KERNELS[(problem.m, problem.n)])
    default = platform.default_solution(problem, device)
    # fresh launchers per place: each place is its own captured graph, as separate columns are
    calls = {"A": lambda: [tg.launcher(cfg, ops) for ops in sets],
             "D": lambda: platform.launchers(default, problem, sets, device),
             "C": lambda: timing.copy_calls(timing.operand_bytes(problem), device)}
    rows = []
    for settle in (False, True):
        for order in LISTS:
            timings = timing.time_side_by_side([calls[v]() for v in order], repeats=repeats,
                                               settle=settle)
            for place, (variant, t) in enumerate(zip(order, timings)):
                rows.append({"gemm": problem.name, "settle": settle, "list": order,
                             "place": place, "variant": variant, "us": t.us,
                             "spread": t.spread})
    return rows


def main():
    args = probe_arguments("1280x1x8192,8192x16x1024,7168x16x8192", compile_only=False,
                           repeats=15)
    import pandas as pd

    rows = []
    for _, found in probe_each(args, lambda problem, device: probe(problem, device,
                                                                   args.repeats),
                               "timing_position.csv"):
        rows += found
    table = pd.DataFrame(rows)
    for (gemm, settle, order), group in table.groupby(["gemm", "settle", "list"], sort=False):
        print(gemm, "settle" if settle else "plain ", order,
              " ".join(f"{r.variant}{r.place}={r.us:.3f}" for r in group.itertuples()))


if __name__ == "__main__":
    main()
