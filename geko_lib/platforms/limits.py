"""The largest GEMM each platform can run: sizes its library can index and operands a device of
it can hold. A workload GEMM beyond either is refused where it enters, naming the field, instead
of being "benchmarked" by a model and shipped in a library no device can run. The workload
readers are handed these limits by ``geko_lib.platforms.gemm_support`` and apply them
(:meth:`geko_lib.workload.support.GemmSupport.oversized`).

- **index**: hipBLASLt's TensileLite kernels take M, N, K and the batch count as 32-bit
  kernel arguments, and geko's cuda kernels (Triton templates) index with 32-bit offsets, so
  every dimension must be below 2^31 on both (cuBLASLt's own wider API does not lift it for the
  kernels geko ships; ``INDEX_MAX`` of geko_lib.workload.support).
- **memory**: A (M x K), B (K x N), C and D (M x N), each times the batch count, must fit the
  memory of the platform's largest device (``MEMORY_GB``: datasheet figures of the devices
  ``geko_lib.archs`` models).

The sim platform answers as the hardware it models: the limits of every platform (it models
AMD and NVIDIA GPUs alike), so a size sim accepts runs on a device of one of them.
"""

from __future__ import annotations

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


def devices(platform: str | None) -> str:
    """Whose largest device ``memory_bytes`` is, as a size refusal names it."""
    return " or ".join(_platforms(platform))


def indexers(platform: str | None) -> str:
    """The libraries whose 32-bit sizes bound the platform's GEMMs, as a refusal names them."""
    return " and ".join(LIBRARY[p] for p in _platforms(platform))
