"""What a platform can run, as the workload readers check a GEMM where it enters: the data-type
combinations of its library, the types an ``--arch``'s hardware lacks, the sizes its kernels can
index and the operands its largest device can hold. A GEMM beyond any of them is refused naming
the file, line and field, instead of being "searched", "verified" by a model and shipped in a
library no device can load or hold.

The facts are the platforms' (``geko_lib.platforms.gemm_support`` builds a :class:`GemmSupport`
from ``type_support`` and ``limits``): they are keyed by platform name, which only
``geko_lib/platforms/`` may do, so the readers are handed one platform's as a value and this
module holds only how they are applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..gemm import BY_NAME


class Combo(NamedTuple):
    a_type: str
    b_type: str
    c_type: str
    d_type: str
    compute_type: str


FIELDS = Combo._fields


class ArchLimit(NamedTuple):
    types: frozenset[str]  # a, b, c or d types the arch's instructions cannot take
    why: str  # what the arch runs instead, for the refusal


# hipBLASLt's TensileLite kernels and geko's cuda kernels alike take every dimension as a 32-bit
# signed argument (geko_lib/platforms/limits.py says why)
INDEX_MAX = 2**31 - 1
DIMENSIONS = ("M", "N", "K", "batch_count")


@dataclass(frozen=True)
class GemmSupport:
    """One platform's limits on the GEMMs of a workload; the texts are as refusals name them."""

    combos: frozenset[Combo]  # the (a, b, c, d, compute) type combinations its library runs
    library: str  # that library, in a type refusal ("hipBLASLt")
    arch_limit: Callable[[str | None], ArchLimit | None]  # the types an --arch cannot run
    memory_bytes: float  # the memory of its largest device
    devices: str  # whose devices those are, in a size refusal
    indexers: str  # the libraries whose 32-bit sizes bound every dimension, in a size refusal

    def unsupported(self, combo, arch: str | None = None) -> tuple[str, str] | None:
        """None when ``combo`` (a, b, c, d, compute) is supported, on ``arch`` too; otherwise
        the first field (in a, b, c, d, compute order) that no supported combination allows
        after the fields before it, and a message saying what would be allowed there, or else
        the first field of a type the arch cannot run, and a message naming the arch."""
        combo = Combo(*combo)
        if combo in self.combos:
            return self._arch_problem(combo, arch)
        for k, field in enumerate(FIELDS):
            prefix = combo[:k]
            allowed = sorted({row[k] for row in self.combos if row[:k] == prefix})
            if combo[k] not in allowed:
                after = f" after {_describe_prefix(prefix)}" if prefix else ""
                return field, (f"{combo[k]}{after} is not a type combination {self.library} "
                               f"supports (allowed here: {', '.join(allowed)})")
        raise AssertionError("unreachable: a combination that matches every prefix is supported")

    def _arch_problem(self, combo: Combo, arch: str | None) -> tuple[str, str] | None:
        limit = self.arch_limit(arch)
        if limit is None:
            return None
        for field, value in zip(FIELDS[:4], combo):
            if value in limit.types:
                return field, f"{value} is not a type {arch} can run: {limit.why}"
        return None

    def oversized(self, columns: dict, types: dict) -> tuple[int, str, str] | None:
        """(row, field, message) of the first row beyond what the kernels can index or the
        largest device can hold, or None. ``columns``: M, N, K, batch_count as integer arrays;
        ``types``: a_type, b_type, c_type, d_type as lists of type names."""
        dims = {f: np.asarray(columns[f], dtype=np.int64) for f in DIMENSIONS}
        over = np.zeros(len(dims["M"]), dtype=bool)
        for field in DIMENSIONS:
            over |= dims[field] > INDEX_MAX
        if over.any():
            row = int(np.flatnonzero(over)[0])
            field = next(f for f in DIMENSIONS if dims[f][row] > INDEX_MAX)
            return row, field, (f"{int(dims[field][row])} is beyond what {self.indexers} can "
                                f"index (32-bit sizes: at most {INDEX_MAX})")
        need = _operand_bytes(dims, types)
        too_big = need > self.memory_bytes
        if not too_big.any():
            return None
        row = int(np.flatnonzero(too_big)[0])
        field = max(DIMENSIONS, key=lambda f: dims[f][row])
        return row, field, (f"{int(dims[field][row])} makes the operands (A, B, C, D) "
                            f"{need[row] / 1e9:,.0f} GB, more than the largest device of "
                            f"{self.devices} holds ({self.memory_bytes / 1e9:,.0f} GB)")


class Unchecked:
    """The type of :data:`UNCHECKED` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "geko_lib.workload.support.UNCHECKED"


# ``support=UNCHECKED``: rows made without a platform's limits, by name, where no platform can
# be asked: ``workload.rows_of`` (the original API's ``GemmConfig.workload_log_rows``, rows of
# a GemmType's sizes for its caller to write as a log, which a reader checks as it takes the
# log in; geko_lib.schemas, below geko_lib/platforms/, has no platform to name). Every reader
# takes ``support`` with no default, and None is refused (:func:`require`): a check is never
# skipped by leaving it out.
UNCHECKED = Unchecked()


def require(support) -> GemmSupport | Unchecked:
    """``support`` itself where it is a :class:`GemmSupport` or :data:`UNCHECKED`; anything
    else (None included) is a TypeError, so no GEMM enters unchecked but by name."""
    if isinstance(support, (GemmSupport, Unchecked)):
        return support
    raise TypeError(f"support must be a GemmSupport (geko_lib.platforms.gemm_support(name); "
                    f"None for the union of every platform), got {support!r}")


def _operand_bytes(dims: dict, types: dict) -> np.ndarray:
    """A (M x K), B (K x N), C and D (M x N), each times the batch count, in bytes a row (as
    floats: a product of 32-bit sizes overflows 64-bit integers)."""
    size = {f: dims[f].astype(np.float64) for f in DIMENSIONS}
    width = {f: np.array([BY_NAME[t].bytes for t in types[f]]) for f in types}
    m, n, k, b = size["M"], size["N"], size["K"], size["batch_count"]
    return b * (m * k * width["a_type"] + k * n * width["b_type"]
                + m * n * (width["c_type"] + width["d_type"]))


def _describe_prefix(values: tuple[str, ...]) -> str:
    """How the already-matching leading fields read in a message: 'f8_r x f8_r -> bf16_r'."""
    parts = list(values)
    text = " x ".join(parts[:2])
    if len(parts) > 2:
        text += " -> " + "/".join(parts[2:4])
    if len(parts) > 4:
        text += f" (compute {parts[4]})"
    return text
