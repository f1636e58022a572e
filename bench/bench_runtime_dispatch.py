"""Host time per eager call of the runtime loader (issue 23, "A real client": eager dispatch
overhead <= 2 us per call, or the loader says when eager use loses).

    python bench/bench_runtime_dispatch.py --out bench/results/h200_runtime_dispatch.json
        [--shapes 1x4096x4096,16x8192x1024,16x1024x8192] [--calls 2000]
        [--templates decode_mmaw,decode_tma] [--device 0]

A shape is tokens x in_features x out_features, bf16: ``F.linear(x, W)`` with x (tokens x in)
and W (out x in), the TN GEMM M = out, N = tokens, K = in. For each shape a tiny library is
written in a temp dir per solution kind: the shape's ``default`` entry (rt.linear of a GEMM the
library does not hold: the lookup, then torch), one cuBLASLt solution (the heuristic's choice,
stored as a tuned one) and one Triton config per template (tune's first rule seed of that
template) and one cluster CUDA kernel (the first of its tuning seeds, where cuda.core is
installed). Columns: F.linear, rt.linear miss, rt.linear cuBLASLt hit, rt.linear Triton hit per
template, rt.linear cuda cluster hit. Each call is timed on its own with time.perf_counter; the columns take turns in
rounds of 100 calls, with torch.cuda.synchronize between rounds, outside the timed calls (so
the launch queue never fills), for --calls calls each; the median is reported, beside the
runtime's own measure (``coverage()["eager_us_per_call"]``: its matmul, without linear's
views). Every hit's result is checked against F.linear in float32 once. Prints a table and
writes JSON to --out. Without a GPU it prints 'no GPU' and exits 0.
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from geko_lib import runtime  # noqa: E402
from geko_lib.gemm import GemmProblem  # noqa: E402
from bench.gemms import BF16_TN  # noqa: E402

ROUND = 100  # calls per column per round


def gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def parse_shape(text: str) -> GemmProblem:
    tokens, inner, outer = (int(v) for v in text.lower().split("x"))
    return GemmProblem(BF16_TN, outer, tokens, 1, inner)


def solutions_of(problem: GemmProblem, templates: list[str], device: int) -> dict:
    """Column name -> the library solution serving ``problem`` in that column."""
    from geko_lib.platforms.cuda import combine, cublaslt
    from geko_lib.platforms.cuda import tune as ctune
    from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings

    with cublaslt.ProblemDescriptors(problem) as lt:
        heuristic = lt.heuristic(1)[0][0]
    out = {"miss": combine.DEFAULT,
           "cublaslt": CudaPlatform(SearchSettings()).cublaslt_solution(heuristic, device)}
    seeds = ctune.rule_seeds(problem)
    for template in templates:
        cfg = next((c for c in seeds if c.template == template), None)
        if cfg is None:
            print(f"{problem.name}: no rule seed of {template}; column left out",
                  file=sys.stderr)
            continue
        out[f"triton {template}"] = ctune.solution(cfg.to_params())
    from geko_lib.platforms.cuda import cluster_gemm

    cluster = cluster_gemm.seed_configs(problem)[:1] if cluster_gemm.available() else []
    for cfg in cluster:  # geko's CUDA C++ kernel: the first of its tuning seeds
        out["cuda cluster"] = ctune.solution_of(cfg)
    return out


def runtimes(problem: GemmProblem, solutions: dict, tmp: Path, device: int) -> dict:
    """Column name -> a runtime loading a library that holds ``problem`` with that solution."""
    from geko_lib.platforms.cuda import combine

    out = {}
    for i, (name, solution) in enumerate(solutions.items()):
        lib = tmp / f"{problem.name}_{i}"
        combine.write([(problem, solution, 1.0)], lib)
        out[name] = runtime.load(lib, device=device, eager="library")
    return out


def host_times(columns: dict, calls: int) -> dict:
    """Column name -> host seconds of each of its calls, the columns in turn by round."""
    import torch

    for fn in columns.values():  # plans built, kernels compiled, caches warm
        for _ in range(10):
            fn()
    torch.cuda.synchronize()
    times = {name: [] for name in columns}
    for _ in range(max(1, calls // ROUND)):
        for name, fn in columns.items():
            torch.cuda.synchronize()
            for _ in range(ROUND):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return times


def measure_shape(problem: GemmProblem, templates: list[str], calls: int, device: int,
                  tmp: Path) -> dict:
    import torch
    import torch.nn.functional as F

    from geko_lib.platforms.cuda import timing

    solutions = solutions_of(problem, templates, device)
    served = runtimes(problem, solutions, tmp, device)
    x = torch.randn(problem.n, problem.k, device=f"cuda:{device}", dtype=torch.bfloat16)
    w = torch.randn(problem.m, problem.k, device=f"cuda:{device}", dtype=torch.bfloat16)
    reference = F.linear(x.float(), w.float())
    errors = {name: timing.relative_error(rt.linear(x, w), reference)
              for name, rt in served.items() if name != "miss"}
    columns = {"F.linear": lambda: F.linear(x, w)}
    columns.update({name: (lambda rt=rt: rt.linear(x, w)) for name, rt in served.items()})
    times = host_times(columns, calls)
    host = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    return {
        "shape": f"{problem.n}x{problem.k}x{problem.m}", "gemm": problem.name,
        "solutions": {name: s["SolutionNameMin"] for name, s in solutions.items()},
        "host_us": {name: round(us, 3) for name, us in host.items()},
        "overhead_us": {name: round(us - host["F.linear"], 3) for name, us in host.items()
                        if name != "F.linear"},
        "runtime_eager_us_per_call": {name: rt.coverage()["eager_us_per_call"]
                                      for name, rt in served.items()},
        "relative_error": errors,
        "calls": {name: len(t) for name, t in times.items()}}


def table(rows: list[dict]) -> str:
    names = list(rows[0]["host_us"]) if rows else []
    lines = ["| shape (tokens x in x out) | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for row in rows:
        cells = []
        for name in names:
            us = row["host_us"].get(name)
            extra = row["overhead_us"].get(name)
            cells.append("-" if us is None else f"{us:.2f}" + (
                "" if extra is None else f" ({extra:+.2f})"))
        lines.append(f"| {row['shape']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def environment(device: int) -> dict:
    import torch
    import triton

    from geko_lib.platforms.cuda import cublaslt

    return {"date": time.strftime("%Y-%m-%d %H:%M"), "gpu": torch.cuda.get_device_name(device),
            "torch": torch.__version__, "triton": triton.__version__,
            "cublaslt": cublaslt.version(), "python": sys.version.split()[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" /
                        "runtime_dispatch.json")
    parser.add_argument("--shapes", default="1x4096x4096,16x8192x1024,16x1024x8192")
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per column")
    parser.add_argument("--templates", default="decode_mmaw,decode_tma")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args(argv)
    if not gpu_available():
        print("no GPU")
        return 0
    import torch

    torch.cuda.set_device(args.device)
    problems = [parse_shape(s) for s in args.shapes.split(",") if s]
    templates = [t for t in args.templates.split(",") if t]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure_shape(p, templates, args.calls, args.device, Path(tmp))
                for p in problems]
    report = {**environment(args.device), "method": "median host us per call, "
              f"{ROUND}-call rounds interleaved, synchronized between rounds", "rows": rows}
    print("host us per eager call (in parentheses: more than F.linear)")
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
