"""What programmatic dependent launch can give a decode GEMM whose neighbour lets it start
early: back-to-back launches of geko's cluster kernel on rotating operands (each a GEMM of its
own, the one before it a PDL-aware kernel that triggers at once), plain against PDL, side by
side in one graph per variant (timing.time_side_by_side), with the read floor:

    python bench/pdl_chain.py [--gemms 1280x1x8192,...] [--repeats 15]

Per GEMM the config is the fastest verified tuning seed timed isolated. Prints one line per
GEMM (us per call plain, with PDL, their ratio, % of the read floor) and writes
``pdl_chain.csv`` under --out. Without a GPU: 'no GPU'."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.decode_layer import fastest_seed  # noqa: E402
from bench.gemms import probe_arguments  # noqa: E402

GEMMS = "1280x1x8192,1280x16x8192,8192x1x1024,7168x1x8192,8192x1x3584,1792x8x5120"


def main():
    args = probe_arguments(GEMMS, compile_only=False, repeats=15)
    import torch

    if not torch.cuda.is_available():
        print("no GPU")
        return
    import pandas as pd

    from geko_lib.platforms.cuda import cluster_gemm as cg
    from geko_lib.platforms.cuda import timing

    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for problem in args.problems:
        cfg, _, _ = fastest_seed(problem, args.device)
        if cfg is None:
            print(f"{problem.name}: no seed runs it")
            continue
        sets = timing.make_operands(problem, args.device, seed=23)
        plain, pdl, read = timing.time_side_by_side(
            [[cg.launcher(cfg, ops, pdl=False) for ops in sets],
             [cg.launcher(cfg, ops, pdl=True) for ops in sets],
             timing.read_calls(timing.operand_bytes(problem), args.device)],
            repeats=args.repeats)
        rows.append({"gemm": problem.name, "config": cfg.name, "plain_us": plain.us,
                     "pdl_us": pdl.us, "read_floor_us": read.us,
                     "plain_pct_floor": 100 * read.us / plain.us,
                     "pdl_pct_floor": 100 * read.us / pdl.us})
        r = rows[-1]
        print(f"{problem.name} {cfg.name}: plain {plain.us:.2f} us ({r['plain_pct_floor']:.1f}%"
              f" of floor), PDL {pdl.us:.2f} ({r['pdl_pct_floor']:.1f}%), "
              f"{plain.us / pdl.us:.3f}x", flush=True)
    pd.DataFrame(rows).to_csv(args.out / "pdl_chain.csv", index=False)


if __name__ == "__main__":
    main()
