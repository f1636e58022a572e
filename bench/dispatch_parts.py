"""Where the host time of an eager runtime hit on a cluster kernel goes (issue 39, "eager launch
<= 3 us over F.linear"): each step of ``Runtime.linear``'s path timed on its own, beside
F.linear and the whole hit, in one process:

    python bench/dispatch_parts.py [--shapes 16x1024x8192,1x4096x4096] [--calls 5000]
        [--out FILE.json]

A shape is tokens x in x out, bf16 (bench_runtime_dispatch.py's). Each part is run in rounds
of 100 calls timed together (time.perf_counter), torch.cuda.synchronize between rounds; the
median round gives us per call. The parts overlap (the hit contains them all); their sum is not
the hit. Without a GPU it prints 'no GPU' and exits 0."""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_runtime_dispatch import gpu_available, parse_shape  # noqa: E402
from geko_lib import runtime  # noqa: E402

ROUND = 100


def per_call_us(fn, calls: int) -> float:
    import torch

    for _ in range(20):
        fn()
    samples = []
    for _ in range(max(1, calls // ROUND)):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(ROUND):
            fn()
        samples.append((time.perf_counter() - start) / ROUND * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


def parts(problem, device: int, tmp: Path) -> dict:
    """Part name -> a zero-argument call doing that step of a cluster hit."""
    import torch
    import torch.nn.functional as F
    from cuda.bindings import driver

    from geko_lib.platforms.cuda import cluster_gemm as cg
    from geko_lib.platforms.cuda import combine
    from geko_lib.platforms.cuda import tune as ctune

    cfg = cg.seed_configs(problem)[0]
    combine.write([(problem, ctune.solution_of(cfg), 1.0)], tmp)
    rt = runtime.load(tmp, device=device, eager="library")
    x = torch.randn(problem.n, problem.k, device=f"cuda:{device}", dtype=torch.bfloat16)
    w = torch.randn(problem.m, problem.k, device=f"cuda:{device}", dtype=torch.bfloat16)
    rt.linear(x, w)
    wt, d = w.t(), x.new_empty((problem.n, problem.m))
    prepared = cg.PreparedLaunch(cfg, problem, device, pdl=False)
    prepared(x, wt, d)
    launch = prepared.launch
    maps, stream = prepared.maps_of(x, wt), torch.cuda.current_stream().cuda_stream
    key = ("linear", x.shape, x.stride(), w.shape, w.stride(), x.dtype, w.dtype, x.device)
    return {
        "F.linear": lambda: F.linear(x, w),
        "rt.linear hit": lambda: rt.linear(x, w),
        "signature key": lambda: ("linear", x.shape, x.stride(), w.shape, w.stride(), x.dtype,
                                  w.dtype, x.device),
        "plan lookup": lambda: rt._plans.get(key),
        "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
        "w.t()": lambda: w.t(),
        "x.new_empty": lambda: x.new_empty((problem.n, problem.m)),
        "current_stream().cuda_stream": lambda: torch.cuda.current_stream().cuda_stream,
        "_cuda_getCurrentRawStream": lambda: torch._C._cuda_getCurrentRawStream(device),
        "maps_of (known pair)": lambda: prepared.maps_of(x, wt),
        "PreparedLaunch (plain)": lambda: prepared(x, wt, d),
        "Launch (plain)": lambda: launch(maps, d.data_ptr(), stream),
        "cuLaunchKernelEx": lambda: driver.cuLaunchKernelEx(launch.config, launch.function,
                                                            launch.address, 0),
        "Launch.capturing": launch.capturing,
        "data_ptr x3": lambda: (x.data_ptr(), w.data_ptr(), d.data_ptr()),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="16x1024x8192,1x4096x4096")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" /
                        "dispatch_parts.json")
    args = parser.parse_args()
    if not gpu_available():
        print("no GPU")
        return
    import torch

    out = {"gpu": torch.cuda.get_device_name(args.device), "shapes": {}}
    for text in args.shapes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            calls = parts(parse_shape(text), args.device, Path(tmp))
            times = {name: round(per_call_us(fn, args.calls), 3) for name, fn in calls.items()}
        out["shapes"][text] = times
        print(text, json.dumps(times, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
