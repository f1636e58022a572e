"""Smoke test of the Triton templates on a CUDA GPU (run on the H200; about a minute).

For a handful of Llama-3-8B linear layers (bf16, TN, M = out_features, N = tokens,
K = in_features) it compiles a few configs of every template in parallel, checks each on a
NaN-poisoned output against the float32 reference, times it with the project's method
(``timing.time_calls``: CUDA graph over rotating operand sets) and prints error, time and the
ratio to torch.matmul on the same operands. Exit status 1 if any feasible config fails to
compile, to run, or gives a wrong result.

    python bench/triton_smoke.py [--device 0] [--workers 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geko_lib.gemm import GemmProblem  # noqa: E402
from bench.gemms import BF16_TN  # noqa: E402
from geko_lib.platforms.cuda import timing  # noqa: E402
from geko_lib.platforms.cuda import triton_gemm as tg  # noqa: E402

# (layer, tokens, out_features, in_features)
LAYERS = [("qkv", 16, 6144, 4096), ("down", 16, 4096, 14336), ("gate_up", 128, 28672, 4096),
          ("o", 2048, 4096, 4096), ("qkv", 2048, 6144, 4096)]
THRESHOLD = 1e-2

C = tg.TritonConfig
DECODE = [C("tiled", 16, 64, 128, 8, 1, 4, 4), C("tiled", 16, 128, 128, 8, 1, 4, 3),
          C("splitk", 16, 64, 128, 8, 4, 4, 4), C("splitk", 16, 64, 256, 8, 8, 4, 3),
          C("splitk", 32, 128, 128, 8, 2, 4, 4),
          C("persistent_tma", 16, 128, 128, 8, 1, 4, 4),
          C("persistent_tma", 64, 128, 128, 8, 1, 4, 3)]
PREFILL = [C("tiled", 128, 128, 64, 8, 1, 8, 3), C("tiled", 128, 256, 64, 8, 1, 8, 3),
           C("splitk", 128, 128, 64, 8, 2, 8, 3),
           C("persistent_tma", 128, 256, 64, 8, 1, 8, 3),
           C("persistent_tma", 128, 128, 64, 8, 1, 8, 4)]


def torch_us(sets) -> float:
    torch = timing.torch()
    calls = [lambda o=o: torch.matmul(o.x[0], o.y[0], out=o.d[0]) for o in sets]
    return timing.time_calls(calls, repeats=5).us


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--workers", type=int, default=tg.default_workers())
    args = parser.parse_args()
    torch = timing.torch()
    torch.cuda.set_device(args.device)
    print(f"{torch.cuda.get_device_name(args.device)}, torch {torch.__version__}, "
          f"triton {__import__('triton').__version__}")
    failures = []
    started = time.time()
    executor = tg.make_executor(args.workers) if args.workers > 1 else None
    try:
        for layer, tokens, out, inner in LAYERS:
            problem = GemmProblem(BF16_TN, out, tokens, 1, inner)
            configs = DECODE if tokens <= 128 else PREFILL
            configs = configs + tg.inductor_like_configs(problem)[:2]
            t0 = time.time()
            compiled = tg.compile_all(configs, problem, args.device, args.workers,
                                      executor=executor)
            sets = timing.make_operands(problem, args.device, seed=7)
            ref = timing.reference(sets[0])
            base = torch_us(sets)
            print(f"\n{layer} {tokens}x{out}x{inner} (M={out} N={tokens} K={inner}): "
                  f"torch.matmul {base:.1f} us; compiled {len(configs)} configs in "
                  f"{time.time() - t0:.1f} s")
            print(f"  {'config':<46} {'error':>9} {'us':>9} {'vs torch':>9}")
            for cfg in configs:
                error_text = compiled[cfg]
                if error_text is not None:
                    line = f"  {cfg.name:<46} {error_text}"
                    if not error_text.startswith("infeasible"):
                        failures.append(f"{layer} {cfg.name}: compile: {error_text}")
                        line += "   <-- COMPILE FAILURE"
                    print(line)
                    continue
                try:
                    calls = [tg.launcher(cfg, ops) for ops in sets]
                    error = timing.checked_error(calls[0], sets[0], ref)
                    us = timing.time_calls(calls, repeats=5).us
                except Exception as exc:
                    failures.append(f"{layer} {cfg.name}: run: {type(exc).__name__}: {exc}")
                    print(f"  {cfg.name:<46} RUN FAILURE {type(exc).__name__}: {exc}")
                    continue
                mark = "" if error < THRESHOLD else "   <-- WRONG"
                if error >= THRESHOLD:
                    failures.append(f"{layer} {cfg.name}: error {error:.3g}")
                print(f"  {cfg.name:<46} {error:>9.2e} {us:>9.1f} {base / us:>8.2f}x{mark}")
            del sets, ref
    finally:
        if executor is not None:
            executor.shutdown(wait=True)
    print(f"\n{time.time() - started:.0f} s; {len(failures)} failure(s)")
    for line in failures:
        print("FAIL", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
