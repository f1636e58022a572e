"""One decode layer's kernels in the order a serving engine runs them (RMS norm, q/k/v,
attention over a KV cache, o-proj, residual add, RMS norm, gate/up, SiLU-and-multiply, down,
residual add), captured as one CUDA graph, with torch's linears (cuBLASLt's default) and with
geko's cluster kernels launched plainly and with programmatic dependent launch (issue 39,
"in sequence"):

    python bench/decode_layer.py [--models llama3_70b_tp8,qwen2_5_32b_tp4] [--batches 1,16]
        [--layers 2] [--kv 1024] [--repeats 31] [--out DIR]

Per model shard and batch: each GEMM's cluster kernel is the fastest verified of its tuning
seeds (``cluster_gemm.seed_configs``), timed isolated side by side (timing.time_side_by_side:
graphs, rotating operands, no neighbour); a GEMM no seed runs stays on torch. Then seven graphs
of ``--layers`` layers (distinct weights, more bytes than the L2) are captured: ``torch``,
``cluster``, ``cluster_pdl``, ``mixed_pdl`` (per GEMM whichever of torch and the cluster
kernel was faster isolated, PDL on: what a library that keeps only faster kernels ships),
``chosen_pdl`` and ``mixed_chosen`` (the same, early edges only on the GEMMs whose edge alone
shortened the step in rounds of their own: ``edge_choices``), ``tuned_pdl`` (early edges
where the tune's own test says they pay: ``cluster_gemm.edge_verdict``, the GEMM after an
elementwise kernel and after ``F.rms_norm``, outside the layer; does it choose as the layer
does? Each producer's times: ``*_tune_plain_us`` / ``*_tune_edged_us`` and ``*_norm_plain_us``
/ ``*_norm_edged_us``)
and ``rest`` (the same layer with
every GEMM left out: norms, attention, elementwise). Their
replays are timed interleaved, each round starting one variant later, with CUDA events; the
median is reported. The GEMMs' time inside the step is the step minus ``rest``; their floor
is the sum over the layer's GEMMs of max(read of the operand bytes, FLOPs at the measured
bf16 matmul rate). Every variant's layer output is checked against the torch graph's
(relative error < 1e-2). Writes ``decode_layer.csv`` and ``decode_layer.json`` under --out.
Without a GPU it prints 'no GPU' and exits 0.
"""
import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gemms import BF16_TN  # noqa: E402
from geko_lib.gemm import GemmProblem  # noqa: E402

# published configs: hidden size, attention heads, KV heads, head size, MLP width; the shard's
# GEMMs for tensor parallelism TP (q/k/v and gate/up fused, as serving engines run them)
MODELS = {
    "llama3_70b_tp8": dict(hidden=8192, heads=64, kv_heads=8, head_dim=128,
                           intermediate=28672, tp=8),
    "qwen2_5_32b_tp4": dict(hidden=5120, heads=40, kv_heads=8, head_dim=128,
                            intermediate=27648, tp=4),
    "llama3_8b_tp1": dict(hidden=4096, heads=32, kv_heads=8, head_dim=128,
                          intermediate=14336, tp=1),
}
VARIANTS = ("torch", "cluster", "cluster_pdl", "mixed_pdl", "chosen_pdl", "mixed_chosen",
            "tuned_pdl", "rest")
ERR_THR = 1e-2


def shard(model: dict) -> dict:
    """GEMM name -> (out features M, in features K) of one tensor-parallel shard."""
    tp, d = model["tp"], model["head_dim"]
    q, kv = model["heads"] // tp, max(1, model["kv_heads"] // tp)
    return {"qkv": ((q + 2 * kv) * d, model["hidden"]), "o": (model["hidden"], q * d),
            "gate_up": (2 * model["intermediate"] // tp, model["hidden"]),
            "down": (model["hidden"], model["intermediate"] // tp)}


def fastest_seed(problem: GemmProblem, device: int):
    """(config, isolated us, torch's isolated us) of the fastest verified tuning seed."""
    from geko_lib.platforms.cuda import cluster_gemm as cg
    from geko_lib.platforms.cuda import timing

    sets = timing.make_operands(problem, device, seed=17)
    ref = timing.reference(sets[0])
    right = []
    for cfg in cg.seed_configs(problem):
        try:
            if timing.checked_error(cg.launcher(cfg, sets[0]), sets[0], ref) < ERR_THR:
                right.append(cfg)
        except Exception as err:  # a seed that fails to build or launch is named, not used
            print(f"  {cfg.name}: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
    t = timing.torch()

    def torch_call(ops):
        return lambda: t.matmul(ops.x[0], ops.y[0], out=ops.d[0])

    variants = [[torch_call(ops) for ops in sets]]
    variants += [[cg.launcher(cfg, ops) for ops in sets] for cfg in right]
    times = timing.time_side_by_side(variants, repeats=9)
    if not right:
        return None, math.nan, times[0].us
    best = min(range(len(right)), key=lambda i: times[i + 1].us)
    return right[best], times[best + 1].us, times[0].us


class Layer:
    """The weights, caches and static buffers of ``layers`` decode layers of one shard."""

    def __init__(self, model: dict, batch: int, layers: int, kv_len: int, device: int):
        import torch as t

        self.t, self.model, self.batch = t, model, batch
        dev = f"cuda:{device}"
        gen = t.Generator(device=dev)
        gen.manual_seed(5)
        self.gemms = shard(model)
        tp, d = model["tp"], model["head_dim"]
        self.q_heads, self.kv_heads = model["heads"] // tp, max(1, model["kv_heads"] // tp)

        def rand(*shape, scale=1.0):
            return (t.randn(shape, device=dev, generator=gen) * scale).to(t.bfloat16)

        self.weights = [{name: rand(m, k, scale=k ** -0.5) for name, (m, k) in
                         self.gemms.items()} for _ in range(layers)]
        self.caches = [(rand(batch, self.kv_heads, kv_len, d), rand(batch, self.kv_heads,
                                                                     kv_len, d))
                       for _ in range(layers)]
        self.x0 = rand(batch, model["hidden"])
        self.x = t.empty_like(self.x0)
        # one output buffer per (layer, GEMM): captured launches keep their addresses
        self.outs = [{name: t.empty(batch, m, device=dev, dtype=t.bfloat16)
                      for name, (m, _) in self.gemms.items()} for _ in range(layers)]

    def run(self, linears: dict | None) -> None:
        """One pass over the layers; ``linears`` maps GEMM name -> call(x, W, out), or None
        for the ``rest`` variant (the GEMM outputs left as they are)."""
        t, F = self.t, self.t.nn.functional
        b, d = self.batch, self.model["head_dim"]
        self.x.copy_(self.x0)
        for weights, (k_cache, v_cache), outs in zip(self.weights, self.caches, self.outs):
            def gemm(name, inp):
                if linears is not None:
                    linears[name](inp, weights[name], outs[name])
                return outs[name]

            h = F.rms_norm(self.x, (self.x.shape[-1],))
            qkv = gemm("qkv", h)
            q = qkv[:, :self.q_heads * d].reshape(b, self.q_heads, 1, d)
            attn = F.scaled_dot_product_attention(q, k_cache, v_cache, enable_gqa=True)
            o = gemm("o", attn.reshape(b, self.q_heads * d))
            self.x.add_(o)
            h = F.rms_norm(self.x, (self.x.shape[-1],))
            gu = gemm("gate_up", h)
            half = gu.shape[-1] // 2
            act = F.silu(gu[:, :half]) * gu[:, half:]
            self.x.add_(gemm("down", act))


def torch_linear(x, w, out):
    import torch

    torch.matmul(x, w.t(), out=out)


def cluster_linear(cfg, problem: GemmProblem, pdl: bool):
    from geko_lib.platforms.cuda import cluster_gemm as cg

    prepared = cg.PreparedLaunch(cfg, problem, pdl=pdl)
    return lambda x, w, out: prepared(x, w.t(), out)


def capture(layer: Layer, linears):
    t = layer.t
    layer.run(linears)  # warm: compiles, prepares launches, outside the capture
    t.cuda.synchronize()
    graph = t.cuda.CUDAGraph()
    with t.cuda.graph(graph):
        layer.run(linears)
    graph.replay()
    t.cuda.synchronize()
    return graph


def time_graphs(graphs: list, repeats: int, replays: int = 10) -> list[float]:
    """Median us per replay of each graph, the graphs interleaved, each round starting one
    later; an untimed replay before each timed run."""
    import torch

    samples = [[] for _ in graphs]
    for round_ in range(repeats):
        for i in range(len(graphs)):
            index = (round_ + i) % len(graphs)
            graphs[index].replay()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                enable_timing=True)
            start.record()
            for _ in range(replays):
                graphs[index].replay()
            end.record()
            end.synchronize()
            samples[index].append(1000 * start.elapsed_time(end) / replays)
    return [statistics.median(s) for s in samples]


def edge_choices(layer: Layer, plain: dict, edged: dict, repeats: int, row: dict) -> set:
    """The GEMMs whose early edge shortens the step: the plain cluster layer timed beside one
    graph per GEMM with only that GEMM's edges made programmatic (a GEMM on torch has none).
    Each GEMM's gain (us per step) goes into ``row``; the choice is re-timed after, beside the
    other variants, in rounds of its own."""
    names = [g for g in plain if plain[g] is not edged[g]]
    graphs = [capture(layer, plain)] + [
        capture(layer, {h: edged[h] if h == g else plain[h] for h in plain}) for g in names]
    times = time_graphs(graphs, repeats)
    for g, us in zip(names, times[1:]):
        row[f"{g}_edge_gain_us"] = times[0] - us
    del graphs
    return {g for g, us in zip(names, times[1:]) if us < times[0]}


def tuned_edge_choices(configs: dict, problems: dict, device: int, row: dict) -> set:
    """The GEMMs whose early edge the tune keeps (``tune.Measurer.edge_pays``' rule,
    ``cluster_gemm.edge_verdict``), each one's plain and early us after every producer in
    ``row`` (``*_tune_*``: the elementwise kernel, ``*_norm_*``: F.rms_norm)."""
    from geko_lib.platforms.cuda import cluster_gemm as cg
    from geko_lib.platforms.cuda import tune

    kept = set()
    for g, cfg in configs.items():
        pays, timed = cg.edge_verdict(cfg, problems[g], device, 15, tune.EDGE_MARGIN)
        if pays:
            kept.add(g)
        for produce, label in (("elementwise", "tune"), ("rms_norm", "norm")):
            plain, edged = timed[produce]
            row[f"{g}_{label}_plain_us"], row[f"{g}_{label}_edged_us"] = plain.us, edged.us
    return kept


def gemm_floor_us(problem: GemmProblem, device: int, peak_tflops: float) -> float:
    from geko_lib.platforms.cuda import timing

    return max(timing.read_us(timing.operand_bytes(problem), device),
               problem.flops / peak_tflops / 1e6)


def probe(name: str, batch: int, args, peak: float) -> dict:
    import torch

    from geko_lib.platforms.cuda import timing

    model = MODELS[name]
    layer = Layer(model, batch, args.layers, args.kv, args.device)
    row = {"model": name, "batch": batch, "layers": args.layers, "kv_len": args.kv}
    cluster, cluster_pdl, mixed, configs, problems = {}, {}, {}, {}, {}
    floor = 0.0
    for gemm, (m, k) in layer.gemms.items():
        problem = GemmProblem(BF16_TN, m, batch, 1, k)
        cfg, us, torch_us = fastest_seed(problem, args.device)
        f = gemm_floor_us(problem, args.device, peak)
        floor += f
        row.update({f"{gemm}_gemm": problem.name, f"{gemm}_config": cfg.name if cfg else "",
                    f"{gemm}_cluster_us": us, f"{gemm}_torch_us": torch_us,
                    f"{gemm}_floor_us": f})
        print(f"  {name} b{batch} {gemm} {problem.name}: floor {f:.2f} us, torch "
              f"{torch_us:.2f}, cluster {us:.2f} {cfg.name if cfg else '-'}", flush=True)
        cluster[gemm] = cluster_linear(cfg, problem, False) if cfg else torch_linear
        cluster_pdl[gemm] = cluster_linear(cfg, problem, True) if cfg else torch_linear
        mixed[gemm] = cluster_pdl[gemm] if cfg and us < torch_us else torch_linear
        if cfg:
            configs[gemm], problems[gemm] = cfg, problem
    chosen = edge_choices(layer, cluster, cluster_pdl, args.repeats, row)
    with_chosen = {g: cluster_pdl[g] if g in chosen else cluster[g] for g in cluster}
    mixed_chosen = {g: with_chosen[g] if mixed[g] is not torch_linear else torch_linear
                    for g in mixed}
    tuned = tuned_edge_choices(configs, problems, args.device, row)
    row["layer_edges"] = ",".join(sorted(chosen))
    row["tune_edges"] = ",".join(sorted(tuned))
    with_tuned = {g: cluster_pdl[g] if g in tuned else cluster[g] for g in cluster}
    graphs, outputs = [], {}
    for variant, linears in zip(VARIANTS, ({g: torch_linear for g in layer.gemms}, cluster,
                                           cluster_pdl, mixed, with_chosen, mixed_chosen,
                                           with_tuned, None)):
        graphs.append(capture(layer, linears))
        outputs[variant] = layer.x.clone()
    for variant in ("cluster", "cluster_pdl", "mixed_pdl", "chosen_pdl", "mixed_chosen",
                    "tuned_pdl"):
        row[f"{variant}_error"] = timing.relative_error(outputs[variant],
                                                        outputs["torch"].float())
    times = time_graphs(graphs, args.repeats)
    rest = times[VARIANTS.index("rest")]
    row["gemm_floor_us"] = floor * args.layers
    for variant, us in zip(VARIANTS, times):
        row[f"{variant}_step_us"] = us
        if variant != "rest":
            row[f"{variant}_gemm_us"] = us - rest
            row[f"{variant}_gemm_pct_floor"] = 100 * row["gemm_floor_us"] / (us - rest)
            row[f"{variant}_vs_torch"] = times[0] / us
    del graphs
    torch.cuda.synchronize()
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama3_70b_tp8,qwen2_5_32b_tp4")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--kv", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("no GPU")
        return
    import pandas as pd

    from geko_lib.platforms.cuda import timing

    args.out.mkdir(parents=True, exist_ok=True)
    peak = timing.matmul_peak_tflops(args.device)
    print(f"{torch.cuda.get_device_name(args.device)}; bf16 matmul {peak:.0f} TFLOP/s",
          flush=True)
    rows = []
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            rows.append(probe(name, batch, args, peak))
            r = rows[-1]
            print(f"{name} b{batch}: step us torch {r['torch_step_us']:.1f}, cluster "
                  f"{r['cluster_step_us']:.1f}, cluster_pdl {r['cluster_pdl_step_us']:.1f}, "
                  f"mixed_pdl {r['mixed_pdl_step_us']:.1f}, chosen_pdl "
                  f"{r['chosen_pdl_step_us']:.1f}, mixed_chosen {r['mixed_chosen_step_us']:.1f}"
                  f", rest {r['rest_step_us']:.1f}; "
                  f"GEMMs % floor torch {r['torch_gemm_pct_floor']:.1f}, cluster "
                  f"{r['cluster_gemm_pct_floor']:.1f}, cluster_pdl "
                  f"{r['cluster_pdl_gemm_pct_floor']:.1f}, mixed_pdl "
                  f"{r['mixed_pdl_gemm_pct_floor']:.1f}, chosen_pdl "
                  f"{r['chosen_pdl_gemm_pct_floor']:.1f}, mixed_chosen "
                  f"{r['mixed_chosen_gemm_pct_floor']:.1f}, tuned_pdl "
                  f"{r['tuned_pdl_gemm_pct_floor']:.1f} (edges: layer {r['layer_edges']}, "
                  f"tune {r['tune_edges']}); edge gains us "
                  + ", ".join(f"{g} {r.get(g + '_edge_gain_us', math.nan):+.2f}"
                              for g in ("qkv", "o", "gate_up", "down")) + "; errors "
                  f"{r['cluster_error']:.1e}/{r['cluster_pdl_error']:.1e}", flush=True)
            pd.DataFrame(rows).to_csv(args.out / "decode_layer.csv", index=False)
    (args.out / "decode_layer.json").write_text(json.dumps(
        {"device": torch.cuda.get_device_name(args.device), "peak_tflops": peak,
         "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
