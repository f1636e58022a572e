"""How a dense search's GEMMs are dealt to chunk jobs: chunk bounds balanced over the devices,
chunk names, and a deal by baseline cost so every chunk gets a like mix of long and short GEMMs.
Small GEMMs are batched so thousands of GEMMs do not become thousands of scheduler jobs."""

from __future__ import annotations

import math


def chunk_bounds(n_gemms: int, chunk_size: int, n_devices: int = 1) -> list[tuple[int, int]]:
    """[first, last] GEMM positions of each chunk: at most chunk_size GEMMs each, a multiple of
    the device count of them (while there are enough GEMMs) and sizes differing by at most one,
    so devices finish together instead of one device running a short last chunk alone."""
    if n_gemms <= 0:
        return []
    devices = max(n_devices, 1)
    rounds = math.ceil(n_gemms / (max(chunk_size, 1) * devices))
    n_chunks = min(n_gemms, rounds * devices)
    base, extra = divmod(n_gemms, n_chunks)
    bounds, start = [], 0
    for i in range(n_chunks):
        size = base + (1 if i < extra else 0)
        bounds.append((start, start + size - 1))
        start += size
    return bounds


def chunk_name(first: int, last: int) -> str:
    return f"gemms_{first}" if first == last else f"gemms_{first}-{last}"


def deal_by_cost(rows: list, latencies: list[float | None],
                 bounds: list[tuple[int, int]]) -> list:
    """``rows`` reordered so that each chunk of ``bounds`` gets a like mix of long and short
    GEMMs: rows dealt to the chunks in snake order of decreasing baseline latency (a chunk of
    all the largest GEMMs would otherwise keep one device busy long after the others), each
    chunk keeping the rows' original order. Without latencies the order is unchanged."""
    if not bounds or any(us is None for us in latencies):
        return list(rows)
    sizes = [last - first + 1 for first, last in bounds]
    chunks: list[list[int]] = [[] for _ in bounds]
    by_cost = sorted(range(len(rows)), key=lambda i: (-float(latencies[i]), i))
    turn, step = 0, 1
    for i in by_cost:
        while len(chunks[turn]) == sizes[turn]:  # full chunks are skipped
            turn, step = _next_turn(turn, step, len(chunks))
        chunks[turn].append(i)
        turn, step = _next_turn(turn, step, len(chunks))
    return [rows[i] for chunk in chunks for i in sorted(chunk)]


def _next_turn(turn: int, step: int, n: int) -> tuple[int, int]:
    """The next chunk in snake order 0, 1, .., n-1, n-1, .., 0, 0, 1, .."""
    if 0 <= turn + step < n:
        return turn + step, step
    return turn, -step
