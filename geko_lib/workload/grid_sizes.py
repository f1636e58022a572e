"""``--list`` with ``SIZE_OPTION: 1``: the original generator's grid of library sizes.

The original (``config_generator/sizes.py``) builds the sizes of a grid-based library from the
GPU's compute-unit count:

1. **boundary**: every factorization ``CUs = a * b`` with both factors >= 2 gives the corner
   ``(a * 512, b * 512)`` (a 256 x 256 macro tile, 2 x 2 rounds of tiles per CU: where one
   more row or column of tiles starts another wave); the two extreme corners
   ``(max m, min n)`` and ``(min m, max n)`` close the curve; corners are ordered by n, then m.
2. **candidates**: one axis of sizes, used for both M and N: 16, 32, 64, 96, then steps that
   grow with the size and with ``GRID_DENSITY`` (1 = densest .. 5; default 4): 16·d from 128,
   32·d from 256, 64·d from 512, 256·d from 1024, 512·d from 2048, 1024·d from 4096 and
   2048·d from 16384 up to the boundary's largest coordinate.
3. **filter**: a point (m, n) is kept when it lies left of the boundary: between the two
   corners whose n bracket it (the first corner with a larger n and the one before it), m is
   on the small side of the line joining them (for a vertical segment: m below its m). A point
   above the largest n is dropped. As in the original, a point below the smallest n is tested
   against the line from the last corner to the first.
4. **K ladder**: every kept point at K = 256, 1024, 4096, 8192, 16384, batch 1, except that
   points with both M and N above 1024 skip K above 4096; points ascending by (M, N) within
   each K, K ascending; duplicates dropped.
"""

from __future__ import annotations

import bisect

BOUNDARY_MT = (256, 256)  # the macro tile the boundary is drawn for
BOUNDARY_ROUNDS = (2, 2)  # rounds of tiles per CU along M and N
K_LEVELS = (256, 1024, 4096, 8192, 16384)
DENSITIES = range(1, 6)
DEFAULT_DENSITY = 4
SMALL_DIMS = (16, 32, 64, 96)
# (start of a band, step at density 1); each band ends where the next starts
BANDS = ((128, 16), (256, 32), (512, 64), (1024, 256), (2048, 512), (4096, 1024), (16384, 2048))


def compute_units(arch) -> int:
    """The CU count the grid is drawn for: the tuning arch table's (the original's HARDWARE_MAP,
    e.g. gfx950_128cu: 128), else the GPU models' (SMs of an NVIDIA GPU)."""
    if not arch:
        raise ValueError("no architecture given (ARCH, or the campaign's arch)")
    from .. import archs

    try:
        return archs.ARCHS[str(arch)].cus
    except KeyError:
        raise ValueError(f"no architecture {arch!r} (known: {', '.join(archs.ARCHS)})") from None


def factor_pairs(n: int) -> list[tuple[int, int]]:
    """(a, n // a) for every divisor a of n with both factors at least 2."""
    return [(a, n // a) for a in range(2, n // 2 + 1) if n % a == 0]


def boundary(cus: int) -> list[tuple[int, int]]:
    """The boundary corners (m, n), ordered by n then m."""
    (mt0, mt1), (rx, ry) = BOUNDARY_MT, BOUNDARY_ROUNDS
    corners = [(a * mt0 * rx, b * mt1 * ry) for a, b in factor_pairs(cus)]
    if not corners:
        raise ValueError(f"{cus} compute units have no factorization into two factors >= 2: "
                         "no grid boundary")
    ms, ns = [m for m, _ in corners], [n for _, n in corners]
    corners += [(max(ms), min(ns)), (min(ms), max(ns))]
    return sorted(corners, key=lambda c: (c[1], c[0]))


def axis(limit: int, density: int = DEFAULT_DENSITY) -> list[int]:
    """The candidate sizes of one dimension up to ``limit``, ascending."""
    if density not in DENSITIES:
        raise ValueError(f"GRID_DENSITY must be 1..5, got {density}")
    values = list(SMALL_DIMS)
    for i, (start, step) in enumerate(BANDS):
        last = i + 1 == len(BANDS)
        stop = limit + 1 if last else BANDS[i + 1][0]
        values += range(start, stop, step * density)
    return sorted(set(values))


def inside(m: int, n: int, corners: list[tuple[int, int]]) -> bool:
    """Whether (m, n) lies left of the boundary (see the module docstring, step 3)."""
    ns = [c[1] for c in corners]
    top = bisect.bisect_right(ns, n)
    if top == len(corners):
        return False
    (m_hi, n_hi), (m_lo, n_lo) = corners[top], corners[top - 1]
    if m_hi == m_lo:
        return m < m_hi
    slope = (n_hi - n_lo) / (m_hi - m_lo)
    return m * slope + (n_hi - slope * m_hi) >= n


def grid(cus: int, density: int = DEFAULT_DENSITY) -> list[tuple[int, int, int, int]]:
    """Every (M, N, batch, K) of the grid for a GPU with ``cus`` compute units."""
    corners = boundary(cus)
    limit = max(corners[0][0], corners[-1][1])
    dims = axis(limit, density)
    points = sorted((m, n) for m in dims for n in dims if inside(m, n, corners))
    sizes = [(m, n, 1, k) for k in K_LEVELS for m, n in points
             if not (k > 4096 and m > 1024 and n > 1024)]
    return list(dict.fromkeys(sizes))
