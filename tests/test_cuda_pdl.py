"""Programmatic dependent launch of the cluster decode kernel (issue 39): the kernel may start
while the kernel before it still runs, so it must stream only weights before
``griddepcontrol.wait`` and read the token panel (and write D) only after it.

Without a GPU: the eager launch config is plain, and the source's
producer issues the weight boxes before the wait and the token boxes after it. On a GPU
(``gpu``): a producer kernel that writes the activations ~200 us after it starts (and lets its
dependents launch at once, or not); the cluster kernel launched after it with PDL must read the
new activations, eagerly (a plain launch) and replayed from a CUDA graph captured by torch, and
a twin of the kernel that reads the activations before the wait (``ablate=3``) must be caught
reading the old ones in the graph (the check can fail), but not when launched plainly. Under
capture the edge from a kernel is programmatic from its launch-order port
(``cluster_gemm.early_edges``): the twin is caught after a producer that never triggers too;
after a copy node the edge stays a full one."""

import math

import pytest

from geko_lib.platforms.cuda import cluster_gemm as cg
from geko_lib.platforms.cuda import cluster_source
from tests.conftest import _has_gpu
from tests.test_cuda_cluster import _nvrtc_available, problem

CFG = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 8)
SHAPE = (1280, 16, 8192)
DELAY_NS = 200_000
ATTR = "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"


def _attribute_names(config) -> list[str]:
    return [a.id.name for a in config.attrs[:config.numAttrs]]


def test_an_eager_launch_is_plain():
    """No programmatic-stream-serialization attribute: an eager launch cannot tell the work
    before it is a kernel that triggers (torch's never do), and the attribute cost host time
    for no overlap; the cluster dimension is set where a cluster has several CTAs."""
    pytest.importorskip("cuda.bindings")
    p = problem(*SHAPE)
    config = cg.launch_config(CFG, p)
    assert ATTR not in _attribute_names(config)
    assert "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION" in _attribute_names(config)
    assert (config.gridDimX, config.gridDimY) == (1280 // CFG.block_m * CFG.cluster, 1)
    single = cg.ClusterConfig(4, 1, 1, 2, 128, 6, 1)
    assert _attribute_names(cg.launch_config(single, p)) == []


def test_the_runtime_default_follows_the_environment(monkeypatch):
    monkeypatch.delenv("GEKO_CUDA_PDL", raising=False)
    assert cg.pdl_default()
    monkeypatch.setenv("GEKO_CUDA_PDL", "0")
    assert not cg.pdl_default()
    assert not cg.PreparedLaunch(CFG, problem(*SHAPE)).pdl
    assert cg.PreparedLaunch(CFG, problem(*SHAPE), pdl=True).pdl


def test_the_producer_streams_weights_before_the_wait_and_tokens_after():
    src = cluster_source.SOURCE
    producer = src[src.index("if (warp == CONSUMERS)"):src.index("ldmatrix rows")]
    wait = producer.index("grid_dependency_wait()")
    assert producer.index("map_w") < wait < producer.index("map_x")
    epilogue = src[src.index("the ring becomes the partial tile"):]
    assert epilogue.index("grid_dependency_wait()") < epilogue.index("*(uint2*)(d +")
    assert src.index("launch_dependents();") < src.index("if (warp == CONSUMERS)")


def test_an_early_edge_is_kept_only_where_it_pays_after_every_producer(monkeypatch):
    """``edge_verdict``: q/k/v of Qwen2.5-32B TP 4 at batch 16 on an H100 (2026-12-07) gained
    after the elementwise kernel and lost 3.2 us after F.rms_norm: its edge stays off; on
    where it gains more than the margin after both."""
    from geko_lib.platforms.cuda import timing

    times = {"elementwise": (12.54, 12.39), "rms_norm": (17.17, 20.40)}

    def timed(cfg, p, device, repeats, produce):
        return tuple(timing.Timing(us=us, spread=0.0, calls=1, graph=True)
                     for us in times[produce])

    monkeypatch.setattr(cg, "edge_timings", timed)
    pays, seen = cg.edge_verdict(CFG, problem(*SHAPE), 0, 3, 0.005)
    assert not pays and set(seen) == set(cg.PRODUCERS)
    times["rms_norm"] = (17.17, 16.90)
    assert cg.edge_verdict(CFG, problem(*SHAPE), 0, 3, 0.005)[0]
    times["elementwise"] = (12.54, 12.50)  # a gain inside the margin is noise
    assert not cg.edge_verdict(CFG, problem(*SHAPE), 0, 3, 0.005)[0]


LATE_COPY = r"""
extern "C" __global__ void late_copy(unsigned short* dst, const unsigned short* src,
                                     long long n, long long delay_ns, int trigger) {
    if (trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < (unsigned long long)delay_ns);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
"""


def _late_copy():
    """A call (dst, src, trigger) launching LATE_COPY on torch's current stream: it copies
    ``src`` into ``dst`` after DELAY_NS, with ``trigger`` letting its dependents launch at
    once."""
    import numpy as np
    import torch
    from cuda.core import LaunchConfig, Program, ProgramOptions, Stream, launch

    cg._device(0)
    code = Program(LATE_COPY, code_type="c++",
                   options=ProgramOptions(arch=cg.ARCH, std=cg.STD)).compile("cubin")
    kernel = code.get_kernel("late_copy")
    config = LaunchConfig(grid=(32, 1, 1), block=(256, 1, 1))

    def call(dst, src, trigger: bool):
        stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
        launch(stream, config, kernel, np.uint64(dst.data_ptr()), np.uint64(src.data_ptr()),
               np.int64(dst.numel()), np.int64(DELAY_NS), np.int32(trigger))

    return call


@pytest.fixture(scope="module")
def late():
    if not _has_gpu() or not _nvrtc_available():
        pytest.skip("needs a GPU, cuda.core")
    from geko_lib.platforms.cuda import timing

    p = problem(*SHAPE)
    ops = timing.make_operands(p, 0, seed=9, count=1)[0]
    x = ops.x[0]
    assert x.is_contiguous()
    truth = x.clone()
    stale = timing.random_operand(tuple(x.shape), "bf16_r", x.device, None)
    return ops, x, truth, stale, timing.reference(ops), _late_copy()


def _error_after(late, cfg, pdl: bool, graph: bool, trigger: bool = True,
                 copy_between: bool = False) -> float:
    """The GEMM's error after the late producer (and, with ``copy_between``, a device copy
    between the two: a memcpy node in a graph)."""
    import torch

    from geko_lib.platforms.cuda import timing

    ops, x, truth, stale, ref, late_copy = late
    prepared = cg.PreparedLaunch(cfg, ops.problem, 0, pdl=pdl)
    y, d = ops.y[0], ops.d[0]
    spare = torch.empty(1 << 20, dtype=torch.uint8, device=x.device)

    def step():
        x.copy_(stale)
        late_copy(x, truth, trigger)
        if copy_between:
            spare[: spare.numel() // 2].copy_(spare[spare.numel() // 2:])
        prepared(x, y, d)

    step()  # builds the launch outside any capture
    torch.cuda.synchronize()
    ops.d.fill_(math.nan)
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        ops.d.fill_(math.nan)
        g.replay()
    else:
        step()
    torch.cuda.synchronize()
    return timing.relative_error(ops.d, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "cuda_graph"])
def test_a_pdl_launch_reads_the_activations_the_kernel_before_writes(late, graph):
    assert _error_after(late, CFG, pdl=True, graph=graph) < 1e-2


@pytest.mark.gpu
def test_a_kernel_reading_activations_before_the_wait_is_caught(late):
    early = cg.ClusterConfig(**{**CFG.to_params(), "ablate": 3})
    # launched plainly it waits for the kernel before, as every stream launch does
    assert _error_after(late, early, pdl=False, graph=True) < 1e-2
    # eagerly a PDL solution launches plainly too (the runtime cannot tell the neighbour)
    assert _error_after(late, early, pdl=True, graph=False) < 1e-2
    # captured, it starts while the producer sleeps and reads the stale activations: the
    # edge is programmatic
    assert _error_after(late, early, pdl=True, graph=True) > 0.1


@pytest.mark.gpu
def test_in_a_graph_the_kernel_starts_early_after_a_kernel_that_never_triggers(late):
    early = cg.ClusterConfig(**{**CFG.to_params(), "ablate": 3})
    # in a graph the edge from the producer is programmatic from its launch-order port: the
    # early-reading twin is caught, the right kernel reads the new activations
    assert _error_after(late, early, pdl=True, graph=True, trigger=False) > 0.1
    assert _error_after(late, CFG, pdl=True, graph=True, trigger=False) < 1e-2


@pytest.mark.gpu
def test_after_a_copy_node_the_edge_stays_a_full_dependency(late):
    early = cg.ClusterConfig(**{**CFG.to_params(), "ablate": 3})
    assert _error_after(late, early, pdl=True, graph=True, trigger=True,
                        copy_between=True) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("produce", sorted(cg.PRODUCERS))
def test_a_tune_times_the_edge_both_ways_after_a_kernel_that_writes_the_activations(
        late, monkeypatch, produce):
    """``edge_timings``: the same GEMM after a short producer (an elementwise kernel, or a
    norm as before q/k/v), its edge plain and early, side by side; only the early variant
    makes its captured edge programmatic, and both compute the product of the producer's
    activations."""
    import torch

    from geko_lib.platforms.cuda import timing

    made = []
    real = cg.early_edges
    monkeypatch.setattr(cg, "early_edges", lambda stream: made.append(1) or real(stream))
    plain, edged = cg.edge_timings(CFG, problem(*SHAPE), 0, repeats=3, produce=produce)
    assert plain.graph and edged.graph and plain.us > 0 and edged.us > 0
    assert made  # the early variant's captures took early edges
    made.clear()
    ops, *_ = late
    activations = cg.PRODUCERS[produce](ops.x[0].clone(), ops.x[0].clone())
    expected = torch.matmul(activations.float(), ops.y[0].float())
    for pdl in (False, True):
        call = cg.after_producer(CFG, ops, pdl, produce)
        call()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        assert bool(made) == pdl
        ops.d.fill_(math.nan)
        g.replay()
        torch.cuda.synchronize()
        assert timing.relative_error(ops.d[0], expected) < 1e-2