"""Measuring and checking GEMM kernels on a CUDA GPU.

Every timing here follows one method (shared/reference/h200_measurements.md): fresh random
operands (never zeros), rotated over enough copies that together they are at least 4x the L2
cache, a warm-up, then a CUDA graph of many calls replayed several times and timed with device
events; the result is the median replay over the number of calls. Every kernel that can win is
also run once on a NaN-poisoned output and compared with a float32 reference, so a kernel that
skips part of the output or computes the wrong thing is caught.

Operands follow BLAS (column-major) conventions, held as row-major torch tensors of the same
memory: D (M x N, column-major) is D_mem (N x M, row-major) = X @ Y with X = op(B)^T (N x K)
and Y = op(A)^T (K x M). That is PyTorch's ``y = x W^T`` for a TN problem (X = tokens, W = A).
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

from ...gemm import GemmProblem, dtype

L2_BYTES_H200 = 60 * 2**20
# Decisions made near a boundary are re-timed before they are made (issue 23: the same kernel
# measured 2.8% apart in two columns of one run, the keep threshold is 3%): candidates within
# RETIME_BAND of the boundary get RETIME_ROUNDS more side-by-side rounds, each on fresh rotating
# operands; candidates that end within TIE_BAND of the fastest are a tie, broken by a rule that
# does not depend on the measurement, so two campaigns of one workload ship the same kernel.
RETIME_BAND = 0.02
RETIME_ROUNDS = 2
TIE_BAND = 0.01
ROTATING_FACTOR = 4  # operand copies together cover at least this many L2 sizes
MAX_ROTATING_BYTES = 6 * 2**30  # cap on the rotating copies for the largest GEMMs


def torch():
    import torch as _torch  # imported late: the sim/rocm paths and CI never need torch

    return _torch


def current_stream(device: int | None = None) -> Callable[[], int]:
    """A zero-argument getter of the handle of torch's current stream on ``device`` (the
    current device at each call, when None), for the launches' per-call path.
    torch.cuda.current_stream() builds a Stream object per call; the raw getter (what Triton's
    launcher calls) is a fraction of a microsecond (bench/dispatch_parts.py times both)."""
    t = torch()
    raw = getattr(t._C, "_cuda_getCurrentRawStream", None)
    if raw is None:
        return lambda: t.cuda.current_stream(device).cuda_stream
    if device is None:
        current = t.cuda.current_device
        return lambda: raw(current())
    return functools.partial(raw, device)


def torch_dtype(name: str):
    return getattr(torch(), dtype(name).torch)


@dataclass
class Operands:
    """One set of operands of a problem: A, B and D as the memory cuBLASLt sees."""

    problem: GemmProblem
    a: object  # (batch, K, M) if transA == "N" else (batch, M, K), contiguous
    b: object  # (batch, N, K) if transB == "N" else (batch, K, N), contiguous
    d: object  # (batch, N, M), contiguous: column-major M x N per batch

    @classmethod
    def from_rows(cls, problem: GemmProblem, x, y, d) -> "Operands":
        """The operands of the row-major product ``d = x @ y`` (2-D views: x is op(B)^T,
        y is op(A)^T, d is D_mem), as A, B and D are stored."""
        a = y.t() if problem.type.transA == "T" else y
        b = x if problem.type.transB == "N" else x.t()
        return cls(problem, a.unsqueeze(0), b.unsqueeze(0), d.unsqueeze(0))

    @property
    def x(self):
        """op(B)^T, (batch, N, K): the left operand of the row-major product."""
        return self.b if self.problem.type.transB == "N" else self.b.transpose(1, 2)

    @property
    def y(self):
        """op(A)^T, (batch, K, M): the right operand of the row-major product."""
        return self.a.transpose(1, 2) if self.problem.type.transA == "T" else self.a


def operand_bytes(problem: GemmProblem) -> int:
    return int(math.ceil(problem.min_bytes))


def rotating_count(problem: GemmProblem, l2_bytes: int = L2_BYTES_H200) -> int:
    """How many operand sets make the rotation at least ROTATING_FACTOR x L2 (>= 1)."""
    per_set = operand_bytes(problem)
    wanted = math.ceil(ROTATING_FACTOR * l2_bytes / per_set)
    affordable = max(1, MAX_ROTATING_BYTES // per_set)
    return int(max(1, min(max(wanted, 2 if per_set * 2 <= MAX_ROTATING_BYTES else 1),
                          affordable)))


def random_operand(shape, type_name: str, device, generator):
    """Standard-normal values in the operand's type (scaled into range for fp8)."""
    t = torch()
    target = torch_dtype(type_name)
    values = t.randn(shape, device=device, dtype=t.float32, generator=generator)
    if target in (t.int8,):
        return values.mul(16).round().clamp(-127, 127).to(target)
    return values.to(target)


def make_operands(problem: GemmProblem, device: int, seed: int, count: int | None = None,
                  l2_bytes: int = L2_BYTES_H200) -> list[Operands]:
    """``count`` fresh operand sets (default: enough to rotate past the L2)."""
    t = torch()
    gt = problem.type
    batch, m, n, k = problem.batch, problem.m, problem.n, problem.k
    a_shape = (batch, m, k) if gt.transA == "T" else (batch, k, m)
    b_shape = (batch, n, k) if gt.transB == "N" else (batch, k, n)
    gen = t.Generator(device=f"cuda:{device}")
    gen.manual_seed(seed)
    sets = []
    for _ in range(count or rotating_count(problem, l2_bytes)):
        a = random_operand(a_shape, gt.a_type, f"cuda:{device}", gen)
        b = random_operand(b_shape, gt.b_type, f"cuda:{device}", gen)
        d = t.empty((batch, n, m), device=f"cuda:{device}", dtype=torch_dtype(gt.d_type))
        sets.append(Operands(problem, a, b, d))
    return sets


def reference(ops: Operands):
    """The product in float32 (no TF32), from the same rounded inputs the kernel saw."""
    t = torch()
    with allow_tf32(False):
        return t.matmul(ops.x.float(), ops.y.float())


class allow_tf32:
    """Context manager pinning torch's float32 matmul precision."""

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        t = torch()
        self.saved = t.backends.cuda.matmul.allow_tf32
        t.backends.cuda.matmul.allow_tf32 = self.on

    def __exit__(self, *exc):
        torch().backends.cuda.matmul.allow_tf32 = self.saved


def relative_error(out, ref) -> float:
    """||out - ref||_F / ||ref||_F in float64; inf when anything is not finite."""
    t = torch()
    out64 = out.to(t.float64)
    if not bool(t.isfinite(out64).all()):
        return math.inf
    ref64 = ref.to(t.float64)
    denom = float(t.linalg.vector_norm(ref64))
    return float(t.linalg.vector_norm(out64 - ref64)) / (denom or 1.0)


CHECKED_CALLS = 2  # consecutive checked calls: a kernel that leaves state behind fails one


def checked_error(call: Callable[[], None], ops: Operands, ref=None,
                  calls: int = CHECKED_CALLS) -> float:
    """Run ``call`` ``calls`` times in a row, each on a NaN-poisoned output; the largest
    relative error (inf if any element was left unwritten or is not finite). More than one
    call because the in-launch split-K reductions carry state from one call to the next (a
    zeroed accumulator, counters): one left dirty shows only on a later call (a stream-K
    kernel of 2026-12-02 was right on its first calls and 4.5% off on a later one)."""
    t = torch()
    ref = reference(ops) if ref is None else ref
    worst = 0.0
    for _ in range(calls):
        ops.d.fill_(float("nan"))
        call()
        t.cuda.synchronize()
        worst = max(worst, relative_error(ops.d, ref))
    return worst


@dataclass(frozen=True)
class Timing:
    us: float  # median time per call
    spread: float  # (max - min) / median over the repeats
    calls: int  # calls per replay
    graph: bool  # False when the calls could not be captured and ran eagerly
    samples: tuple = ()  # time per call of every replay, in the order they ran


def merged(timings: Sequence[Timing]) -> Timing:
    """One variant's timings of several side-by-side rounds as one: median and spread over
    every replay of every round."""
    samples = [s for t in timings for s in t.samples]
    median = statistics.median(samples)
    return Timing(us=median, spread=(max(samples) - min(samples)) / median,
                  calls=timings[0].calls, graph=all(t.graph for t in timings),
                  samples=tuple(samples))


def paired_ratio_spread(reference: Timing, tuned: Timing) -> float:
    """(max - min) / median of the per-replay ratios reference / tuned, replays paired in the
    order they ran (side by side, each pair ran back to back)."""
    ratios = [r / t for r, t in zip(reference.samples, tuned.samples)]
    if not ratios:
        return math.nan
    median = statistics.median(ratios)
    return (max(ratios) - min(ratios)) / median


def _event_pair():
    t = torch()
    return t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)


def _time_region(run: Callable[[], None]) -> float:
    start, end = _event_pair()
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3  # us


def calls_per_replay(estimate_us: float, n_sets: int, target_us: float = 2000.0,
                     most: int = 512) -> int:
    """Enough calls that one replay runs about ``target_us`` (launch gaps and event
    resolution vanish), at least one pass over the operand sets."""
    wanted = math.ceil(target_us / max(estimate_us, 1.0))
    return int(min(max(wanted, n_sets, 4), max(most, n_sets)))


@dataclass
class Prepared:
    """A variant ready to be timed: one replay runs ``calls`` calls."""

    run: Callable[[], None]
    calls: int
    graph: bool


def prepare(calls: Sequence[Callable[[], None]], target_us: float = 2000.0,
            use_graph: bool = True, side_pass: bool = True) -> Prepared:
    """Warm ``calls`` (one per operand set) up and capture them, rotating through the sets,
    into a CUDA graph that runs about ``target_us``; eager calls where capture fails. With
    ``side_pass`` the replay's calls run once on a side stream before the capture, as torch
    advises for calls that set themselves up lazily (Triton's launchers, torch.matmul); a
    cuBLASLt call given its workspace has nothing left to set up after its first run, and the
    search's screening leaves the pass out (bench/RESULTS.md, ninth session: 15% of a
    candidate's screening, the same candidates ranked first on four GEMMs)."""
    t = torch()
    n_sets = len(calls)
    for call in calls:  # first run: compiles, loads modules, allocates
        call()
    t.cuda.synchronize()
    estimate = _time_region(lambda: [c() for c in calls]) / n_sets
    n_calls = calls_per_replay(estimate, n_sets, target_us)

    def one_pass():
        for i in range(n_calls):
            calls[i % n_sets]()

    if use_graph:
        try:
            return Prepared(captured(one_pass, side_pass).replay, n_calls, True)
        except RuntimeError:
            t.cuda.synchronize()
    return Prepared(one_pass, n_calls, False)


def captured(run: Callable[[], None], side_pass: bool = True):
    """``run`` captured into a CUDA graph. With ``side_pass`` it runs once on a side stream
    first, as torch advises for work that sets itself up lazily."""
    t = torch()
    graph = t.cuda.CUDAGraph()
    if side_pass:
        stream = t.cuda.Stream()
        stream.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(stream):
            run()
        t.cuda.current_stream().wait_stream(stream)
        t.cuda.synchronize()
    with t.cuda.graph(graph):
        run()
    return graph


def _summary(samples: list[float], prepared: Prepared) -> Timing:
    median = statistics.median(samples)
    return Timing(us=median, spread=(max(samples) - min(samples)) / median,
                  calls=prepared.calls, graph=prepared.graph, samples=tuple(samples))


def time_calls(calls: Sequence[Callable[[], None]], repeats: int = 15, warmup: int = 2,
               target_us: float = 2000.0, use_graph: bool = True) -> Timing:
    """Median time per call of ``calls`` (one per operand set), rotating through them."""
    prepared = prepare(calls, target_us, use_graph)
    for _ in range(warmup):
        prepared.run()
    torch().cuda.synchronize()
    samples = [_time_region(prepared.run) / prepared.calls for _ in range(repeats)]
    return _summary(samples, prepared)


@dataclass
class PendingTiming:
    """Replays enqueued by ``start_timing``, each between two recorded events."""

    prepared: Prepared
    events: list

    def result(self) -> Timing:
        """Waits for the replays: their median time per call."""
        self.events[-1].synchronize()
        samples = [start.elapsed_time(end) * 1e3 / self.prepared.calls
                   for start, end in zip(self.events, self.events[1:])]
        return _summary(samples, self.prepared)


def start_timing(calls: Sequence[Callable[[], None]], repeats: int = 3, warmup: int = 1,
                 target_us: float = 300.0, side_pass: bool = False) -> PendingTiming:
    """``time_calls`` without waiting for the GPU: the warm-up and ``repeats`` timed replays
    are enqueued back to back, an event between each two, and ``result()`` waits. The search's
    screening takes its next candidate from cuBLASLt's enumeration (host work: building and
    checking configurations) while the GPU runs the last one's replays."""
    prepared = prepare(calls, target_us, side_pass=side_pass)
    for _ in range(warmup):
        prepared.run()
    t = torch()
    events = [t.cuda.Event(enable_timing=True) for _ in range(repeats + 1)]
    events[0].record()
    for event in events[1:]:
        prepared.run()
        event.record()
    return PendingTiming(prepared, events)


def time_side_by_side(variants: Sequence[Sequence[Callable[[], None]]], repeats: int = 15,
                      warmup: int = 2, target_us: float = 2000.0,
                      settle: bool = True) -> list[Timing]:
    """Median time per call of every variant, their replays interleaved round-robin so each
    variant sees the same clocks and temperature (a GPU that slows under sustained load would
    otherwise favour whichever variant ran first), each round starting one variant later than
    the one before. With ``settle`` every timed replay follows an untimed replay of the same
    variant: on the H200 a replay right after the copy floor's (other buffers, another kernel)
    ran 0.6-2.3% slower than the same kernel's replay after itself, and without ``settle``
    whichever variant followed the round's last one was timed slower
    (bench/timing_position.py, bench/RESULTS.md)."""
    prepared = [prepare(calls, target_us) for calls in variants]
    for _ in range(warmup):
        for p in prepared:
            p.run()
    torch().cuda.synchronize()
    samples: list[list[float]] = [[] for _ in prepared]
    n = len(prepared)
    for round_ in range(repeats):
        for i in range(n):  # each round starts one variant later: no variant keeps a place
            index = (round_ + i) % n
            if settle:
                prepared[index].run()
            samples[index].append(_time_region(prepared[index].run) / prepared[index].calls)
    return [_summary(s, p) for s, p in zip(samples, prepared)]


def _buffer_count(read_bytes: int, held_bytes: int) -> int:
    """How many rotating buffers a floor kernel takes: enough that the bytes it reads pass
    ROTATING_FACTOR x L2, at least two, and all of them (``held_bytes`` each) within
    MAX_ROTATING_BYTES."""
    count = max(2, math.ceil(ROTATING_FACTOR * L2_BYTES_H200 / read_bytes))
    return min(count, max(2, MAX_ROTATING_BYTES // held_bytes))


def copy_calls(n_bytes: int, device: int) -> list[Callable[[], None]]:
    """Calls of an elementwise kernel moving ``n_bytes`` in total (half read, half written),
    over rotating buffers > 4x L2: what a kernel that must move that many bytes cannot beat."""
    t = torch()
    half = max(int(n_bytes // 2), 1 << 12)
    count = _buffer_count(half, 2 * half)  # a source and a destination of half each
    src = [t.randn(half // 4, dtype=t.float32, device=f"cuda:{device}") for _ in range(count)]
    dst = [t.empty_like(s) for s in src]
    # an elementwise kernel, not copy_: captured in a graph, copy_ becomes a memcpy node; that
    # version measured 2.71 TB/s on an H200 (2026-11-30) where shared/reference found 4.21 TB/s
    return [lambda s=s, d=d: t.mul(s, 1.0, out=d) for s, d in zip(src, dst)]


def copy_us(n_bytes: int, device: int, repeats: int = 15) -> float:
    """Time of the copy of ``copy_calls``: the size-aware memory floor of that many bytes."""
    return time_calls(copy_calls(n_bytes, device), repeats=repeats).us


READ_BLOCK = 4096  # bf16 elements each program of the read floor reads (8 KB)


@functools.lru_cache(maxsize=1)
def _read_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def read_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(src_ptr + offs, mask=offs < n, other=0.0, eviction_policy="evict_first")
        tl.store(out_ptr + tl.program_id(0), tl.sum(v.to(tl.float32), axis=0))
    return read_kernel


def read_calls(n_bytes: int, device: int) -> list[Callable[[], None]]:
    """Calls of a kernel that reads ``n_bytes`` once (8 KB a program, one float written per
    program) over rotating buffers > 4x L2. A GEMM must read its operands at least once, and
    on the H200 reading each GEMM's bytes of two serving traces took 2.5-9.8% less time than
    the copy of ``copy_calls`` moving them (half read, half written; bench/RESULTS.md), so
    the floor counts the read too."""
    t = torch()
    elements = max(int(n_bytes // 2), READ_BLOCK)
    count = _buffer_count(2 * elements, 2 * elements)
    programs = -(-elements // READ_BLOCK)
    src = [t.randn(elements, dtype=t.bfloat16, device=f"cuda:{device}") for _ in range(count)]
    out = t.empty(programs, dtype=t.float32, device=f"cuda:{device}")
    run = _read_kernel()[(programs,)]
    return [lambda s=s: run(s, out, elements, BLOCK=READ_BLOCK, num_warps=4) for s in src]


def read_us(n_bytes: int, device: int, repeats: int = 15) -> float:
    """Time of the read of ``read_calls``: the read floor of that many bytes."""
    return time_calls(read_calls(n_bytes, device), repeats=repeats).us


def matmul_peak_tflops(device: int, size: int = 8192) -> float:
    """bf16 dense matmul rate of the device's own library on random data, TFLOP/s."""
    t = torch()
    a = t.randn(size, size, device=f"cuda:{device}", dtype=t.bfloat16)
    b = t.randn(size, size, device=f"cuda:{device}", dtype=t.bfloat16)
    out = t.empty_like(a)
    timing = time_calls([lambda: t.matmul(a, b, out=out)], repeats=10, target_us=20000)
    return 2 * size**3 / timing.us / 1e6


def measure_ceilings(device: int) -> dict:
    """Copy bandwidth (1 GiB, read + write) and the bf16 matmul rate, measured now."""
    gib = 2**30
    copy = copy_us(2 * gib, device)
    return {"hbm_tbps": 2 * gib / copy / 1e6, "peak_tflops": {"16": matmul_peak_tflops(device)},
            "source": "measured on this device in this run (copy of 1 GiB; bf16 8192^3 matmul)"}
