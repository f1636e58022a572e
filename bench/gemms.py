"""The GEMMs the GPU benchmarks take on their command lines: bf16 TN linear layers (M weight
rows, N tokens, K inputs), written M x N x K as in ``1280x16x8192``."""
from __future__ import annotations

from geko_lib.gemm import GemmProblem, GemmType

BF16_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")


def parse_gemm(text: str) -> GemmProblem:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return GemmProblem(BF16_TN, m, n, 1, k)


def probe_arguments(default_gemms: str, compile_only: bool = True, repeats: int | None = None):
    """The command line of a kernel probe: --gemms, --out, --device, and --compile-only (where
    the probe can compile without a GPU) and --repeats (where it takes ``repeats``, the
    default); the parsed GEMMs are ``args.problems``."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("--gemms", default=default_gemms, help="M x N x K, comma-separated")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "out")
    if compile_only:
        parser.add_argument("--compile-only", action="store_true",
                            help="compile for sm_90 without a GPU, launch nothing")
    if repeats is not None:
        parser.add_argument("--repeats", type=int, default=repeats,
                            help="timed replays per variant")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    args.problems = [parse_gemm(g) for g in args.gemms.split(",")]
    return args


def probe_each(args, probe, csv_name: str):
    """``probe(problem, device)``'s rows per GEMM of ``args``, yielded one GEMM at a time;
    every row so far is written to ``args.out / csv_name`` after each GEMM (a run cut short
    keeps what it measured)."""
    import pandas as pd

    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    for problem in args.problems:
        found = probe(problem, args.device)
        rows += found
        pd.DataFrame(rows).to_csv(args.out / csv_name, index=False)
        yield problem, found
