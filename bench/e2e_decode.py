"""A real client of a geko library: a Llama decode step from transformers, eager and under CUDA
graphs, with and without the library.

    python bench/e2e_decode.py --out DIR [--shape llama3-8b|llama3-70b-tp8] [--layers 4]
                               [--batch 1,16] [--context 512] [--workdir W] [--no-campaign]
                               [--mode tune|search]

1. A ``LlamaForCausalLM`` of ``transformers`` at real dimensions (Llama-3-8B, or one GPU's
   shard of Llama-3-70B at tensor parallelism 8: the same per-layer GEMMs, 8 query heads and
   1 KV head of 128) with ``--layers`` layers and random bf16 weights, on the GPU.
2. The decode step: every sequence of the batch adds one token to a ``--context`` token KV cache
   (a ``StaticCache``, so the step can be captured; without one the step runs without a cache
   and says so). ``runtime.record`` writes its GEMMs with call counts (``workload.yaml``).
3. A geko campaign on them (``snakemake final_libs --profile profiles/h200``; ``--mode tune``,
   the default, tunes the decode family with ``bench/configs/h200_tune_decode.yaml``,
   ``search`` runs the dense cuBLASLt search) in ``--workdir`` (skipped with
   ``--no-campaign``: the workdir's final_libs are used).
4. ``runtime.load`` of final_libs; the step timed with ``rt.patch_linear()`` against the plain
   step, interleaved round by round: eagerly (host wall time per step), as a CUDA graph and
   compiled by ``torch.compile`` then captured (replays timed with device events; the compiled
   columns count dynamo's graph breaks). Beside them: the time-weighted GEMM ratio the campaign
   predicted (``metrics.json``), the same ratio re-measured here (default and shipped kernel of
   every recorded GEMM side by side), and the loader's per-call dispatch overhead in eager mode
   (``rt.linear`` against ``F.linear`` on each recorded GEMM, host time per call).

Writes ``e2e_decode.json`` into --out and prints it.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from geko_lib import runtime  # noqa: E402
from geko_lib.gemm import GemmProblem  # noqa: E402
from geko_lib.platforms.cuda import timing  # noqa: E402
from geko_lib.platforms.cuda.platform import CudaPlatform, SearchSettings  # noqa: E402

SHAPES = {  # published model dimensions
    "llama3-8b": dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, vocab_size=128256),
    # one GPU's shard of Llama-3-70B at TP 8: q 1024 x 8192, k/v 128 x 8192, o 8192 x 1024,
    # gate/up 3584 x 8192, down 8192 x 3584 (the lm-head is left whole: 128256 x 8192)
    "llama3-70b-tp8": dict(hidden_size=8192, intermediate_size=3584, num_attention_heads=8,
                           num_key_value_heads=1, head_dim=128, vocab_size=128256),
}


EAGER_STEPS = 512  # steps of one batch size: recording, eager rounds, graph warm-ups and capture


def build_model(shape: str, layers: int, device: str):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**SHAPES[shape], num_hidden_layers=layers, max_position_embeddings=8192,
                         rope_theta=500000.0, torch_dtype="bfloat16")
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    for p in model.parameters():  # random weights of a trained model's scale, never zeros
        p.data.normal_(0.0, 0.02)
    return model.eval()


class DecodeStep:
    """One decode step of ``batch`` sequences on a ``context``-token KV cache (StaticCache)."""

    def __init__(self, model, batch: int, context: int):
        import torch

        self.model, self.torch = model, torch
        device = next(model.parameters()).device
        self.tokens = torch.randint(0, model.config.vocab_size, (batch, 1), device=device)
        self.mode = "static KV cache"
        if context == 0:
            self.cache, self.mode = None, "no KV cache"
            return
        try:
            from transformers import StaticCache

            # room for every step this script runs eagerly: a transformers that places the new
            # token by the cache's own length (not by cache_position) appends one per step,
            # and a cache of context + 1 overflowed on the second eager step (index_copy_ out
            # of bounds, 2026-12-01); a captured step replays the slot it was captured with
            length = context + 1 + EAGER_STEPS
            try:
                self.cache = StaticCache(config=model.config, max_cache_len=length)
            except TypeError:
                self.cache = StaticCache(config=model.config, max_batch_size=batch,
                                         max_cache_len=length, device=device,
                                         dtype=torch.bfloat16)
            prompt = torch.randint(0, model.config.vocab_size, (batch, context), device=device)
            with torch.no_grad():
                model(input_ids=prompt, past_key_values=self.cache, use_cache=True,
                      cache_position=torch.arange(context, device=device))
            self.position = torch.tensor([context], device=device)
        except Exception as err:  # a transformers without a capturable cache: no cache
            print(f"StaticCache unavailable ({type(err).__name__}: {err}); decode without a "
                  "KV cache", file=sys.stderr)
            self.cache, self.mode = None, "no KV cache"

    @classmethod
    def without_cache(cls, model, tokens):
        step = cls.__new__(cls)
        step.model, step.tokens, step.cache, step.mode = model, tokens, None, "no KV cache"
        import torch

        step.torch = torch
        return step

    def __call__(self):
        with self.torch.no_grad():
            if self.cache is None:
                return self.model(input_ids=self.tokens, use_cache=False).logits
            return self.model(input_ids=self.tokens, past_key_values=self.cache, use_cache=True,
                              cache_position=self.position).logits


def graph_of(step, patch=None):
    """The step captured in a CUDA graph (inside ``patch``, a context manager, if given)."""
    import contextlib

    import torch

    ctx = patch if patch is not None else contextlib.nullcontext()
    with ctx:
        for _ in range(2):  # compile, load, allocate outside the capture
            step()
        torch.cuda.synchronize()
        return timing.captured(step)


def interleaved(runs: dict, rounds: int, per_round: int, events: bool) -> dict:
    """Median per-step time (us) of each run, rounds interleaved: device events around
    ``per_round`` replays (graphs) or host wall time over ``per_round`` steps (eager)."""
    import torch

    samples = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            torch.cuda.synchronize()
            if events:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                for _ in range(per_round):
                    run()
                end.record()
                end.synchronize()
                samples[name].append(start.elapsed_time(end) * 1e3 / per_round)
            else:
                t0 = time.perf_counter()
                for _ in range(per_round):
                    run()
                torch.cuda.synchronize()
                samples[name].append((time.perf_counter() - t0) * 1e6 / per_round)
    return {name: {"us": statistics.median(s), "spread_pct": 100 * (max(s) - min(s))
                   / statistics.median(s)} for name, s in samples.items()}


TUNE_CONFIG = ROOT / "bench" / "configs" / "h200_tune_decode.yaml"


def run_campaign(log: Path, workdir: Path, mode: str) -> float:
    """snakemake final_libs of the recorded GEMMs: a dense search, or tune mode (the decode
    family's GA, bench/configs/h200_tune_decode.yaml)."""
    started = time.time()
    extra = ["--configfile", str(TUNE_CONFIG)] if mode == "tune" else []
    subprocess.run([sys.executable, "-m", "snakemake", "final_libs", "--profile", "profiles/h200",
                    *extra, "--config", f"workload_log={log.resolve()}",
                    f"workdir={workdir.resolve()}"], cwd=ROOT, check=True)
    return time.time() - started


def predicted_ratio(workdir: Path) -> float | None:
    """The time-weighted GEMM ratio the campaign predicts: 1 / (1 - its e2e uplift share)."""
    path = workdir / "results" / "metrics.json"
    if not path.is_file():
        return None
    uplift = (json.loads(path.read_text()).get("e2e") or {}).get("e2e_uplift_pct")
    return None if uplift is None else 1.0 / (1.0 - float(uplift) / 100.0)


def measured_ratio(rt, problems: list, counts: list, device: int) -> dict:
    """Default and shipped kernel of every recorded GEMM side by side (the campaign's method);
    the call-count-weighted ratio and each GEMM's pair."""
    platform = CudaPlatform(SearchSettings())
    per_gemm, default_total, shipped_total = [], 0.0, 0.0
    for problem, count in zip(problems, counts):
        sets = platform._operands(problem, device, salt=23)
        default = platform.default_solution(problem, device)
        shipped = rt.solutions.get((problem.type, problem.size)) or default
        timings = timing.time_side_by_side([platform.launchers(s, problem, sets, device)
                                            for s in (default, shipped)])
        default_total += count * timings[0].us
        shipped_total += count * timings[1].us
        per_gemm.append({"gemm": problem.name, "calls_per_step": count,
                         "default_us": round(timings[0].us, 3),
                         "shipped_us": round(timings[1].us, 3),
                         "shipped": shipped["SolutionNameMin"]})
        del sets
    return {"ratio": default_total / shipped_total, "gemms": per_gemm,
            "gemm_us_per_step_default": default_total, "gemm_us_per_step_shipped": shipped_total}


def dispatch_overhead(rt, problems: list, device: int, calls: int = 200) -> list:
    """Host time per call of rt.linear and F.linear, eagerly, on each recorded GEMM."""
    import torch
    import torch.nn.functional as F

    out = []
    for problem in problems:
        x = torch.randn(problem.n, problem.k, device=f"cuda:{device}", dtype=torch.bfloat16)
        w = torch.randn(problem.m, problem.k, device=f"cuda:{device}", dtype=torch.bfloat16)
        result = {}
        for name, fn in (("torch", F.linear), ("geko", rt.linear)):
            for _ in range(3):
                fn(x, w)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(x, w)
            host = (time.perf_counter() - t0) * 1e6 / calls
            torch.cuda.synchronize()
            result[f"{name}_host_us"] = round(host, 2)
        result["overhead_us"] = round(result["geko_host_us"] - result["torch_host_us"], 2)
        out.append({"gemm": problem.name, **result})
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", default="1,16")
    parser.add_argument("--context", type=int, default=512,
                        help="KV cache length (0: the step runs without a cache)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "runs" / "e2e_decode")
    parser.add_argument("--no-campaign", action="store_true")
    parser.add_argument("--mode", choices=("search", "tune"), default="tune")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--no-compiled", dest="compiled", action="store_false",
                        help="skip the torch.compile + CUDA graph columns")
    args = parser.parse_args()
    import torch
    import transformers

    args.out.mkdir(parents=True, exist_ok=True)
    model = build_model(args.shape, args.layers, f"cuda:{args.device}")
    steps = {int(b): DecodeStep(model, int(b), args.context) for b in args.batch.split(",")}
    log = args.out / "workload.yaml"
    with runtime.record(log):
        for step in steps.values():
            step()
    report = {"date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(args.device),
              "torch": torch.__version__, "transformers": transformers.__version__,
              "shape": args.shape, "layers": args.layers, "context": args.context,
              "cache": {b: s.mode for b, s in steps.items()}}
    rows = [r for r in yaml.safe_load(log.read_text())  # the mask-64 rows runtime.record wrote
            if r["a_type"] == "bf16_r"]  # the weights' GEMMs (not rotary's fp32 outer product)
    log = args.out / "workload_bf16.yaml"
    log.write_text("# the bf16 GEMMs of one decode step per batch size (runtime.record)\n"
                   + "".join("- " + yaml.safe_dump(r, default_flow_style=True, sort_keys=False,
                                                     width=10**6) for r in rows))
    if not args.no_campaign:
        report["campaign_s"] = round(run_campaign(log, args.workdir, args.mode), 1)
        report["campaign_mode"] = args.mode
    rt = runtime.load(args.workdir / "final_libs", device=args.device)
    problems = [GemmProblem.from_row(r) for r in rows]
    counts = [int(r.get("call_count", 1)) for r in rows]
    report["predicted_gemm_ratio"] = predicted_ratio(args.workdir)
    report["measured_gemm_ratio"] = measured_ratio(rt, problems, counts, args.device)
    report["dispatch"] = dispatch_overhead(rt, problems, args.device)
    for batch, step in steps.items():
        eager = interleaved({"default": step, "geko": lambda s=step: _patched(rt, s)},
                            rounds=5, per_round=10, events=False)
        try:
            graphs = {"default": graph_of(step), "geko": graph_of(step, rt.patch_linear())}
            graph_mode = step.mode
        except RuntimeError as err:  # the cached step does not capture: the step without one
            print(f"batch {batch}: capture failed ({err}); graphs of the step without a KV "
                  "cache", file=sys.stderr)
            torch.cuda.synchronize()
            plain = DecodeStep.without_cache(model, step.tokens)
            graphs = {"default": graph_of(plain), "geko": graph_of(plain, rt.patch_linear())}
            graph_mode = plain.mode
        runs = {n: g.replay for n, g in graphs.items()}
        compiled = compiled_graphs(step, rt) if args.compiled else {}
        runs.update({f"compiled_{n}": g.replay for n, g in compiled.get("graphs", {}).items()})
        replay = interleaved(runs, rounds=9, per_round=20, events=True)
        row = report[f"batch_{batch}"] = {
            "eager": eager, "graph": replay, "graph_step": graph_mode,
            "eager_speedup": eager["default"]["us"] / eager["geko"]["us"],
            "graph_speedup": replay["default"]["us"] / replay["geko"]["us"]}
        if "graphs" in compiled:
            row["compiled_graph_speedup"] = (replay["compiled_default"]["us"]
                                             / replay["compiled_geko"]["us"])
            row["compiled_graph_breaks"] = compiled["graph_breaks"]
        elif compiled:
            row["compiled_error"] = compiled["error"]
        gemm = report["measured_gemm_ratio"]
        if len(steps) == 1:  # Amdahl: the step gains the GEMM ratio on the GEMMs' share of it
            for name in ("default", "compiled_default"):
                if name in replay:
                    share = gemm["gemm_us_per_step_default"] / replay[name]["us"]
                    row[f"{name}_gemm_share"] = share
                    row[f"{name}_predicted_speedup"] = 1.0 / (1.0 - share * (
                        1.0 - 1.0 / gemm["ratio"]))
    report["coverage"] = rt.coverage()
    (args.out / "e2e_decode.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report, indent=1, default=str))


def compiled_graphs(step, rt) -> dict:
    """The step's model under torch.compile (inductor), captured in a CUDA graph, without and
    with the library (its F.linear is the custom op geko::linear while patched): the graphs and
    dynamo's graph-break count, or the error that stopped the compile."""
    import copy

    import torch

    from torch._dynamo.utils import counters

    graphs, breaks = {}, {}
    try:
        for name, patch in (("default", None), ("geko", rt.patch_linear())):
            torch._dynamo.reset()  # each traces its own F.linear
            counters.clear()
            compiled = copy.copy(step)
            compiled.model = torch.compile(step.model, dynamic=False)
            graphs[name] = graph_of(compiled, patch)
            breaks[name] = sum(counters["graph_break"].values())
        return {"graphs": graphs, "graph_breaks": breaks}
    except Exception as err:  # report it beside the eager and graph columns
        return {"error": f"{type(err).__name__}: {err}"[:500]}


def _patched(rt, step):
    with rt.patch_linear():
        return step()


if __name__ == "__main__":
    main()
