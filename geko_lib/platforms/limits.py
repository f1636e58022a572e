"""The largest GEMM each platform can run: sizes its library can index and operands a device of
it can hold. A workload GEMM beyond either is refused where it enters, naming the field, instead
of being "benchmarked" by a model and shipped in a library no device can run.

- **index**: hipBLASLt's TensileLite kernels take M, N, K and the batch count as 32-bit
  kernel arguments, and geko's cuda kernels (Triton templates) index with 32-bit offsets, so
  every dimension must be below 2^31 on both (cuBLASLt's own wider API does not lift it for the
  kernels geko ships).
- **memory**: A (M x K), B (K x N), C and D (M x N), each times the batch count, must fit the
  memory of the platform's largest device (``MEMORY_GB``: datasheet figures of the devices
  ``geko_lib.archs`` models).

The sim platform answers as the hardware it models: the limits of every platform (it models
AMD and NVIDIA GPUs alike), so a size sim accepts runs on a device of one of them.
"""

from __future__ import annotations

import numpy as np

from ..gemm import BY_NAME

INDEX_MAX = 2**31 - 1  # 32-bit signed kernel arguments (both libraries, see above)
DIMENSIONS = ("M", "N", "K", "batch_count")
# device memory (HBM, GB of 1e9 bytes) of the devices each platform runs on: MI300X (gfx942),
# MI355X (gfx950), H200 SXM
MEMORY_GB = {"gfx942": 192, "gfx950": 288, "h200": 141}
ARCHS_OF = {"rocm": ("gfx942", "gfx950"), "cuda": ("h200",)}
LIBRARY = {"rocm": "hipBLASLt", "cuda": "geko's cuda kernels"}


def _platforms(platform: str | None) -> tuple[str, ...]:
    return (platform,) if platform in ARCHS_OF else tuple(ARCHS_OF)


def memory_bytes(platform: str | None) -> float:
    """The memory of the platform's largest device, in bytes."""
    return max(MEMORY_GB[a] for p in _platforms(platform) for a in ARCHS_OF[p]) * 1e9


def oversized(columns: dict, types: dict, platform: str | None = None
              ) -> tuple[int, str, str] | None:
    """(row, field, message) of the first row no device of ``platform`` can run, or None.
    ``columns``: M, N, K, batch_count as integer arrays; ``types``: a_type, b_type, c_type,
    d_type as lists of type names."""
    dims = {f: np.asarray(columns[f], dtype=np.int64) for f in DIMENSIONS}
    over = np.zeros(len(dims["M"]), dtype=bool)
    for field in DIMENSIONS:
        over |= dims[field] > INDEX_MAX
    libraries = " and ".join(LIBRARY[p] for p in _platforms(platform))
    if over.any():
        row = int(np.flatnonzero(over)[0])
        field = next(f for f in DIMENSIONS if dims[f][row] > INDEX_MAX)
        return row, field, (f"{int(dims[field][row])} is beyond what {libraries} can index "
                            f"(32-bit sizes: at most {INDEX_MAX})")
    size = {f: dims[f].astype(np.float64) for f in DIMENSIONS}
    width = {f: np.array([BY_NAME[t].bytes for t in types[f]]) for f in types}
    m, n, k, b = size["M"], size["N"], size["K"], size["batch_count"]
    need = b * (m * k * width["a_type"] + k * n * width["b_type"]
                + m * n * (width["c_type"] + width["d_type"]))
    have = memory_bytes(platform)
    too_big = need > have
    if not too_big.any():
        return None
    row = int(np.flatnonzero(too_big)[0])
    field = max(DIMENSIONS, key=lambda f: dims[f][row])
    return row, field, (f"{int(dims[field][row])} makes the operands (A, B, C, D) "
                        f"{need[row] / 1e9:,.0f} GB, more than the largest device of "
                        f"{' or '.join(_platforms(platform))} holds ({have / 1e9:,.0f} GB)")
