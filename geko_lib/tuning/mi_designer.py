"""MatrixInstruction designer: which MI groups a tuning config offers for one GEMM size.

An MI encoding has nine integers ``[MI_M, MI_N, MI_K, MI_B, MIBlockM, waveTileM, waveTileN,
waveM, waveN]``; from it follow the macro tile ``MT0 x MT1``, the thread tile and the work group:

    MT0 = MI_M * MIBlockM * waveTileM * waveM    MT1 = (MI_N / MIBlockM * MI_B) * waveTileN * waveN
    TT0 = waveTileM                              TT1 = waveTileN * MI_N
    WG0 = MI_M * MIBlockM * waveM                WG1 = waveM * waveN * 64 / WG0

The candidate MIs of a GEMM type (``enumerate_mis``) are every MFMA of the arch allow-list (or
an ``MFMA`` override) with MIBlockM 1, the wave shapes ``[4,1] [2,2] [1,4] [1,2] [2,1] [1,1]``
and every wave tile giving ``4 <= MT <= 512`` within ``MT_MAX`` and the LDS bound of
local-split-U.

For one size ``(M, N, B, K)`` (``design``) each MI is combined with LSU in 1, 2, 4 (at most
4 / waves) and GSU in 1 .. max(K // 256, 1) and scored by the granularity model (``granularity``):

    NumTile0 = M / MT0;  Tile0Gran = NumTile0 / ceil(NumTile0)      (Tile1Gran the same for N)
    TotalTiles = ceil(NumTile0) * ceil(NumTile1) * B * GSU * LSU
    TilesPerCU = TotalTiles / CUs;  CUGran = TilesPerCU / ceil(TilesPerCU)
    waveGran = min(1, floor(TilesPerCU + 1) * waveM * waveN * LSU / 4)
    totalGranularity = Tile0Gran * Tile1Gran * CUGran * waveGran

The GSU loop of an (MI, LSU) pair stops at the first GSU whose totalGranularity is 1 and, for
data-parallel (non-StreamK) kernels, before the GSU workspace ``M*N*B*computeBytes*GSU`` passes
128 MiB. Then the level-1 and level-2 filters (``MI_FILTER`` 1 and 2) drop unpromising candidates,
the rest is sorted by ``(ceil(TilesPerCU), 1 - TilesPerCU, 1 - totalGranularity, -GSU)`` (ties
keep enumeration order) and, with StreamK, entries that differ only in GSU are deduplicated (the
best-ranked one stays). The whole model is evaluated with numpy over all candidates at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..errors import GekoError
from ..gemm import BY_NAME, GemmType

MT_DIM_MAX = 512  # largest MT0 / MT1 enumerated (the newest original allows 1024)
WAVE_SHAPES = ((4, 1), (2, 2), (1, 4), (1, 2), (2, 1), (1, 1))
LSU_LDS_BYTES = 65536  # MT0 * MT1 * computeBytes * LSU must fit the LDS when LSU > 1
GSU_WORKSPACE_BYTES = 128 * 2**20  # data-parallel GSU workspace bound
GSU_K_STEP = 256  # GSU up to max(K // 256, 1)
GSU_BLOCK = 128  # GSU values evaluated at once
BIG_TILE = 256 * 256  # "large MT" threshold of the level-2 round buckets
COMPUTE_BOUND_DIM = 256  # 1 / (1/M + 1/N + 1/K) at or above: compute bound (level-2 buckets)
TINY_DIM = 32  # min(M, N) at or below: "tiny" (exempt from the TilesPerCU >= 2 wave filter)

# level-2 CU-round buckets: extra rounds over the minimum a candidate may need
ROUNDS_COMPUTE_BIG, ROUND1 = 1, 2  # compute bound: MT0*MT1 >= 256^2 / smaller
ROUND2, ROUND3 = 3, 5  # memory bound: MT0*MT1 >= 256^2 / smaller

# Largest macro-tile area per MI data-type family.
MT_MAX = {"H": 256 * 464, "B": 256 * 464, "I8": 256 * 464, "X": 256 * 464, "F8": 256 * 464,
          "S": 256 * 256, "D": 256 * 256, "C": 32768, "Z": 16384}

_F16 = ((16, 16, 32, 1), (32, 32, 16, 1))
# Arch allow-lists (the original's ONLY_INCLUDE_MIs). gfx942 S, D and I8 are not in the spec's
# gfx942 table; the hardware MFMAs of those types are listed here so that the types are usable.
ALLOWED_MFMA: dict[str, dict[str, tuple[tuple[int, int, int, int], ...]]] = {
    "gfx950": {
        "H": _F16, "B": _F16, "X": _F16,
        "S": ((16, 16, 4, 1), (32, 32, 2, 1)),
        "D": ((16, 16, 4, 1),), "C": ((16, 16, 4, 1),), "Z": ((16, 16, 4, 1),),
        "F8": ((16, 16, 128, 1), (32, 32, 64, 1)),
        "I8": ((32, 32, 16, 1), (16, 16, 32, 1), (4, 4, 4, 16)),
    },
    "gfx942": {
        "H": ((4, 4, 4, 16), (16, 16, 16, 1), (32, 32, 8, 1)),
        "B": ((4, 4, 4, 16), (16, 16, 16, 1), (32, 32, 8, 1)),
        "F8": ((32, 32, 16, 1), (16, 16, 32, 1)),
        "X": _F16,
        "S": ((16, 16, 4, 1), (32, 32, 2, 1)),
        "D": ((16, 16, 4, 1),),
        "I8": ((32, 32, 16, 1), (16, 16, 32, 1), (4, 4, 4, 16)),
    },
}
# MFMAs an ``MFMA`` override may name (the original's validMFMA): the allow-list plus the other
# instructions of the type on the arch.
VALID_MFMA: dict[str, dict[str, tuple[tuple[int, int, int, int], ...]]] = {
    "gfx950": {
        **{k: v + ((16, 16, 16, 1), (32, 32, 8, 1), (4, 4, 4, 16)) for k, v in
           (("H", _F16), ("B", _F16))},
        "X": _F16 + ((16, 16, 8, 1), (32, 32, 4, 1)),
        "S": ((16, 16, 4, 1), (32, 32, 2, 1), (4, 4, 1, 16), (16, 16, 1, 4), (32, 32, 1, 2)),
        "D": ((16, 16, 4, 1), (4, 4, 4, 4)), "C": ((16, 16, 4, 1),), "Z": ((16, 16, 4, 1),),
        "F8": ((16, 16, 128, 1), (32, 32, 64, 1), (16, 16, 32, 1), (32, 32, 16, 1)),
        "I8": ((32, 32, 16, 1), (16, 16, 32, 1), (4, 4, 4, 16), (16, 16, 64, 1), (32, 32, 32, 1)),
    },
    "gfx942": {
        "H": ((4, 4, 4, 16), (16, 16, 16, 1), (32, 32, 8, 1), (16, 16, 4, 4), (32, 32, 4, 2)),
        "B": ((4, 4, 4, 16), (16, 16, 16, 1), (32, 32, 8, 1), (16, 16, 4, 4), (32, 32, 4, 2)),
        "F8": ((32, 32, 16, 1), (16, 16, 32, 1)),
        "X": _F16 + ((16, 16, 8, 1), (32, 32, 4, 1)),
        "S": ((16, 16, 4, 1), (32, 32, 2, 1), (4, 4, 1, 16), (16, 16, 1, 4), (32, 32, 1, 2)),
        "D": ((16, 16, 4, 1), (4, 4, 4, 4)),
        "I8": ((32, 32, 16, 1), (16, 16, 32, 1), (4, 4, 4, 16)),
    },
}

_FP8_CODES = {"F8", "B8"}  # OCP
_FP8N_CODES = {"F8N", "B8N"}  # FNUZ (gfx942)


class UnsupportedError(GekoError, ValueError):
    """An architecture or data type the tuning-config generator does not handle."""


def mi_family(gemm_type: GemmType, arch_family: str) -> str:
    """The MI data-type family of a GEMM type on an arch family: "B", "H", "S", "X", "F8", ...

    fp8/bf8 inputs (also mixed F8B8/B8F8) share the "F8" MFMAs: OCP types on gfx950, FNUZ and
    OCP spellings on gfx942 (TensileLite's F8 is FNUZ there). Other mixed inputs and F4 (an MX
    format) are rejected."""
    if arch_family not in ALLOWED_MFMA:
        raise UnsupportedError(f"unsupported architecture family {arch_family!r}")
    if gemm_type.is_tf32:
        key = "X"
    else:
        a = BY_NAME[gemm_type.a_type].tensile
        b = BY_NAME[gemm_type.b_type].tensile
        fp8 = _FP8_CODES | (_FP8N_CODES if arch_family == "gfx942" else set())
        if a in fp8 and b in fp8 and (a in _FP8N_CODES) == (b in _FP8N_CODES):
            key = "F8"
        elif a != b:
            raise UnsupportedError(
                f"mixed input types {gemm_type.a_type}/{gemm_type.b_type} are not supported "
                f"for tuning configs (GEMM type {gemm_type.name})")
        else:
            key = a
    if key not in ALLOWED_MFMA[arch_family]:
        raise UnsupportedError(
            f"data type {gemm_type.data_type!r} (GEMM type {gemm_type.name}) is not supported on "
            f"{arch_family} (supported: {', '.join(sorted(ALLOWED_MFMA[arch_family]))}; "
            "F4/MX formats are not supported)")
    return key


def compute_bytes(gemm_type: GemmType) -> int:
    """Bytes of one accumulator element (f32 for TF32)."""
    if gemm_type.is_tf32:
        return 4
    return int(BY_NAME[gemm_type.compute_type.removeprefix("c_")].bytes)


# --------------------------------------------------------------------------------------------
# MI encodings


@dataclass(frozen=True)
class MI:
    """One MatrixInstruction encoding."""

    mi_m: int
    mi_n: int
    mi_k: int
    mi_b: int
    block_m: int
    wave_tile_m: int
    wave_tile_n: int
    wave_m: int
    wave_n: int

    @property
    def encoding(self) -> list[int]:
        return [self.mi_m, self.mi_n, self.mi_k, self.mi_b, self.block_m, self.wave_tile_m,
                self.wave_tile_n, self.wave_m, self.wave_n]

    @property
    def mt0(self) -> int:
        return self.mi_m * self.block_m * self.wave_tile_m * self.wave_m

    @property
    def mt1(self) -> int:
        return (self.mi_n // self.block_m * self.mi_b) * self.wave_tile_n * self.wave_n

    @property
    def tt0(self) -> int:
        return self.wave_tile_m

    @property
    def tt1(self) -> int:
        return self.wave_tile_n * self.mi_n

    @property
    def wg0(self) -> int:
        return self.mi_m * self.block_m * self.wave_m

    @property
    def wg1(self) -> int:
        return self.wave_m * self.wave_n * 64 // self.wg0

    @property
    def waves(self) -> int:
        return self.wave_m * self.wave_n

    @property
    def max_lsu(self) -> int:
        return max(1, 4 // self.waves)


def enumerate_mis(family: str, arch_family: str, mfmas=None, cbytes: int = 4) -> list[MI]:
    """Every MI encoding of an MI family (see the module docstring), in enumeration order:
    MFMA (allow-list order), wave shape, waveTileM, waveTileN."""
    key = tuple(tuple(int(x) for x in m) for m in mfmas) if mfmas is not None else None
    return list(_enumerate(family, arch_family, key, cbytes))


@lru_cache(maxsize=64)
def _enumerate(family, arch_family, mfmas, cbytes) -> tuple[MI, ...]:
    if mfmas is None:
        mfmas = ALLOWED_MFMA[arch_family][family]
    else:
        valid = set(VALID_MFMA[arch_family][family])
        bad = [list(m) for m in mfmas if tuple(m) not in valid]
        if bad or any(len(m) != 4 for m in mfmas):
            raise UnsupportedError(
                f"MFMA override {bad or list(mfmas)} not valid for {family} on {arch_family} "
                f"(valid: {[list(m) for m in VALID_MFMA[arch_family][family]]})")
    mt_max = MT_MAX[family]
    out = []
    for mi_m, mi_n, mi_k, mi_b in mfmas:
        for wave_m, wave_n in WAVE_SHAPES:
            lsu = max(1, 4 // (wave_m * wave_n))
            wtm = 1
            while mi_m * wtm * wave_m <= MT_DIM_MAX:
                wtn = 1
                while mi_n * mi_b * wtn * wave_n <= MT_DIM_MAX:
                    mi = MI(mi_m, mi_n, mi_k, mi_b, 1, wtm, wtn, wave_m, wave_n)
                    area = mi.mt0 * mi.mt1
                    if (min(mi.mt0, mi.mt1) >= 4 and area <= mt_max
                            and not (lsu > 1 and area * cbytes * lsu > LSU_LDS_BYTES)):
                        out.append(mi)
                    wtn += 1
                wtm += 1
    return tuple(out)


# --------------------------------------------------------------------------------------------
# granularity model


@dataclass(frozen=True)
class Granularity:
    tile0: float
    tile1: float
    cu: float
    wave: float
    total: float
    total_tiles: int
    tiles_per_cu: float

    @property
    def rounds(self) -> int:
        return math.ceil(self.tiles_per_cu)


def granularity(mt0: int, mt1: int, waves: int, lsu: int, gsu: int,
                size: tuple[int, int, int, int], cus: int) -> Granularity:
    """The granularity model for one tile shape at one size ``(M, N, B, K)`` (scalar version)."""
    m, n, b, _ = size
    c0, c1 = -(-m // mt0), -(-n // mt1)
    tile0, tile1 = (m / mt0) / c0, (n / mt1) / c1
    total_tiles = c0 * c1 * b * gsu * lsu
    tpc = total_tiles / cus
    cu = tpc / -(-total_tiles // cus)
    wave = min(1.0, (total_tiles // cus + 1) * waves * lsu / 4)
    return Granularity(tile0, tile1, cu, wave, tile0 * tile1 * cu * wave, total_tiles, tpc)


@dataclass(frozen=True)
class MIEntry:
    """One selected (MI, LSU, GSU) candidate of one size with its granularity numbers: the
    metadata the Ductile cost model (``weights``) and clustering need."""

    mi: MI
    lsu: int
    gsu: int
    gran: Granularity

    @property
    def mt(self) -> tuple[int, int]:
        return (self.mi.mt0, self.mi.mt1)

    @property
    def wave(self) -> tuple[int, int]:
        return (self.mi.wave_m, self.mi.wave_n)

    def group_entry(self, stream_k: bool) -> dict:
        """The MI group entry: MatrixInstruction, WorkGroup when LSU > 1, GlobalSplitU when GSU > 1
        and not StreamK."""
        entry = {"MatrixInstruction": self.mi.encoding}
        if self.lsu > 1:
            entry["WorkGroup"] = [self.mi.wg0, self.mi.wg1, self.lsu]
        if self.gsu > 1 and not stream_k:
            entry["GlobalSplitU"] = self.gsu
        return entry

    def comment(self) -> str:
        g = self.gran
        return (f"MT {self.mi.mt0}x{self.mi.mt1} - TT {self.mi.tt0}x{self.mi.tt1} - "
                f"GSU {self.gsu} - LSU {self.lsu} - totalGranularity {g.total:.4f} - "
                f"TilesPerCU {g.tiles_per_cu:.4f}")

    def at(self, size, cus) -> Granularity:
        """This entry's granularity at another size (merged configs)."""
        return granularity(self.mi.mt0, self.mi.mt1, self.mi.waves, self.lsu, self.gsu, size, cus)


@dataclass
class MIDesign:
    """The outcome for one size: sorted entries plus what each stage removed (for the log)."""

    size: tuple[int, int, int, int]
    family: str
    cus: int
    stream_k: bool
    mi_filter: int
    n_mis: int
    entries: list[MIEntry]
    stages: list[tuple[str, int]] = field(default_factory=list)  # (stage, candidates left)
    dropped: dict[str, int] = field(default_factory=dict)  # filter -> candidates it removed

    def log_text(self, gemm_name: str = "") -> str:
        m, n, b, k = self.size
        lines = [f"# MI finder log {gemm_name} M{m} N{n} B{b} K{k}".rstrip(),
                 f"# MI family {self.family}, CUs {self.cus}, StreamK {self.stream_k}, "
                 f"MI_FILTER {self.mi_filter}, MI encodings {self.n_mis}"]
        for stage, left in self.stages:
            lines.append(f"# {stage}: {left} candidates")
        for name, count in self.dropped.items():
            lines.append(f"#   dropped by {name}: {count}")
        lines.append(f"# selected: {len(self.entries)}")
        lines.append("rank,MatrixInstruction,MT0,MT1,LSU,GSU,Tile0Gran,Tile1Gran,CUGran,waveGran,"
                     "totalGranularity,TotalTiles,TilesPerCU")
        for i, e in enumerate(self.entries):
            g = e.gran
            enc = "[" + " ".join(map(str, e.mi.encoding)) + "]"
            lines.append(f"{i},{enc},{e.mi.mt0},{e.mi.mt1},{e.lsu},{e.gsu},{g.tile0:.6f},"
                         f"{g.tile1:.6f},{g.cu:.6f},{g.wave:.6f},{g.total:.6f},{g.total_tiles},"
                         f"{g.tiles_per_cu:.6f}")
        return "\n".join(lines) + "\n"


def mi_log_name(gemm_name: str, size) -> str:
    m, n, b, k = size
    return f"{gemm_name}_M{m}_N{n}_B{b}_K{k}.log"


def design(mis: list[MI], size: tuple[int, int, int, int], *, family: str, cus: int,
           stream_k: bool, mi_filter: int = 2, cbytes: int = 4) -> MIDesign:
    """Select and rank the MI candidates of one size (module docstring).

    Candidates are evaluated in blocks of GSU values. With ``MI_FILTER`` 2 there are two passes:
    the first finds the best granularity (the level-2 thresholds need it), the second keeps only
    candidates that can survive the CU-round buckets: the minimum round count only falls as more
    candidates are seen, so ``rounds > running minimum + 5`` is dropped for sure, and an
    (MI, LSU) row whose rounds (growing with GSU) pass that bound is closed."""
    size = tuple(int(x) for x in size)
    out = MIDesign(size, family, cus, stream_k, mi_filter, len(mis), [])
    if not mis:
        return out
    space = _Candidates(_arrays(mis), size, cus, stream_k, cbytes, mi_filter, out)
    cand = space.two_passes() if mi_filter >= 2 else space.one_pass()
    if cand is not None:
        out.entries.extend(_ranked_entries(mis, cand, stream_k, out))
    return out


class _Candidates:
    """The (MI, LSU, GSU) candidates of one size, enumerated block by block of GSU values and
    filtered (``design``); every candidate field is a numpy array, one element a candidate."""

    def __init__(self, f: dict, size, cus: int, stream_k: bool, cbytes: int, mi_filter: int,
                 out: MIDesign):
        self.f, self.cus, self.stream_k, self.mi_filter, self.out = f, cus, stream_k, \
            mi_filter, out
        self.m, self.n, self.b, self.k = m, n, b, k = size
        self.ri, self.rl = self._rows(cbytes)
        self.g_max = max(k // GSU_K_STEP, 1)
        if not stream_k:  # data parallel: GSU workspace bound
            self.g_max = max(1, min(self.g_max, GSU_WORKSPACE_BYTES // (m * n * b * cbytes)))
        self.coe = 2 if stream_k else 1
        self.compute_bound = 1.0 / (1.0 / m + 1.0 / n + 1.0 / k) >= COMPUTE_BOUND_DIM

    def _rows(self, cbytes: int) -> tuple[np.ndarray, np.ndarray]:
        """(MI index, LSU) of every row in enumeration order: MI, then LSU."""
        f = self.f
        rows_mi, rows_lsu = [], []
        for lsu in (1, 2, 4):
            sel = np.nonzero(lsu <= np.maximum(1, 4 // f["waves"]))[0]
            if not self.stream_k and lsu > 1:  # data parallel: large LSU LDS
                sel = sel[f["area"][sel] * cbytes * lsu <= LSU_LDS_BYTES]
            rows_mi.append(sel)
            rows_lsu.append(np.full(len(sel), lsu))
        ri, rl = np.concatenate(rows_mi), np.concatenate(rows_lsu)
        order = np.lexsort((rl, ri))
        return ri[order], rl[order]

    def _drop(self, cand: dict, name: str, mask, count: bool) -> dict:
        if count:
            self.out.dropped[name] = self.out.dropped.get(name, 0) + int(mask.sum())
        return {key: val[~mask] for key, val in cand.items()} if mask.any() else cand

    def level1(self, cand: dict, count: bool) -> dict:
        """Per-candidate filters (MI_FILTER > 0)."""
        f, m, n, coe = self.f, self.m, self.n, self.coe
        if m >= 16 and n >= 16:
            ci = cand["mi"]
            cand = self._drop(cand, "MI 4x4 with M, N >= 16",
                              (f["mi_m"][ci] == 4) & (f["mi_n"][ci] == 4), count)
        if m * n > 65536 and m >= 64 and n >= 64:
            cand = self._drop(cand, "non-4-wave shape (M*N > 65536, M, N >= 64)",
                              f["waves"][cand["mi"]] != 4, count)
        ci = cand["mi"]
        c_mt0, c_mt1 = f["mt0"][ci], f["mt1"][ci]
        cand = self._drop(cand, "tile larger than needed (MT > 16 and MT/coe > dim)",
                          ((c_mt0 > 16) & (c_mt0 / coe > m)) | ((c_mt1 > 16) & (c_mt1 / coe > n)),
                          count)
        ci = cand["mi"]
        cand = self._drop(cand, "< 4 total waves with wave tile > 1",
                          (f["waves"][ci] * cand["lsu"] < 4)
                          & ((f["wtm"][ci] > 1) | (f["wtn"][ci] > 1)), count)
        if min(m, n) > TINY_DIM:
            ci = cand["mi"]
            cand = self._drop(cand, "< 4 total waves with TilesPerCU >= 2",
                              (f["waves"][ci] * cand["lsu"] < 4) & (cand["tpc"] >= 2), count)
        return cand

    def blocks(self, count: bool, bound=None):
        """Yield the candidates of each GSU block (after level 1 when MI_FILTER > 0); a row
        leaves once it reached granularity 1, or its rounds passed ``bound[0]``."""
        rows = np.arange(len(self.ri))
        for g_start in range(1, self.g_max + 1, GSU_BLOCK):
            if not len(rows):
                return
            gsu = np.arange(g_start, min(self.g_max, g_start + GSU_BLOCK - 1) + 1)
            cand, rounds, done = self._block(rows, gsu)
            if count:
                self.out.stages.append(("enumerated (MI x LSU x GSU)", len(cand["mi"])))
            yield self.level1(cand, count) if self.mi_filter > 0 else cand
            keep = ~done
            if bound is not None:  # rounds grow with GSU: past the bound, the row is finished
                keep &= rounds[:, -1] <= bound[0]
            rows = rows[keep]

    def _block(self, rows: np.ndarray, gsu: np.ndarray) -> tuple[dict, np.ndarray, np.ndarray]:
        """The candidates of ``rows`` x ``gsu`` by the granularity model, each row up to its
        first GSU of granularity 1; the rounds of every (row, GSU) and which rows hit 1."""
        f, m, n, cus = self.f, self.m, self.n, self.cus
        r_mi, r_lsu = self.ri[rows], self.rl[rows]
        mt0, mt1 = f["mt0"][r_mi][:, None], f["mt1"][r_mi][:, None]
        waves, lsu = f["waves"][r_mi][:, None], r_lsu[:, None]
        c0, c1 = -(-m // mt0), -(-n // mt1)
        t0, t1 = (m / mt0) / c0, (n / mt1) / c1
        tiles = c0 * c1 * self.b * lsu * gsu[None, :]  # (rows, block)
        rounds = -(-tiles // cus)
        tpc = tiles / cus
        cug = tpc / rounds
        wg = np.minimum(1.0, (tiles // cus + 1) * waves * lsu / 4)
        total = t0 * t1 * cug * wg
        # the GSU loop stops at the first GSU with totalGranularity == 1
        hit = total == 1.0
        done = hit.any(axis=1)
        first = np.where(done, hit.argmax(axis=1), len(gsu) - 1)
        r_idx, g_idx = np.nonzero(np.arange(len(gsu))[None, :] <= first[:, None])
        cand = {
            "mi": r_mi[r_idx], "lsu": r_lsu[r_idx], "gsu": gsu[g_idx],
            "order": rows[r_idx] * (self.g_max + 1) + gsu[g_idx],  # enumeration order
            "tiles": tiles[r_idx, g_idx], "rounds": rounds[r_idx, g_idx],
            "tpc": tpc[r_idx, g_idx], "t0": np.broadcast_to(t0, tiles.shape)[r_idx, g_idx],
            "t1": np.broadcast_to(t1, tiles.shape)[r_idx, g_idx], "cug": cug[r_idx, g_idx],
            "wg": wg[r_idx, g_idx], "total": total[r_idx, g_idx],
        }
        return cand, rounds, done

    def one_pass(self) -> dict:
        """MI_FILTER 0 or 1: every block's candidates, after level 1 where it is on."""
        cand = _concat(list(self.blocks(count=True)))
        _merge_stages(self.out)
        if self.mi_filter > 0:
            self.out.stages.append(("after level-1 filters", len(cand["mi"])))
        return cand

    def two_passes(self) -> dict | None:
        """MI_FILTER 2: level 1 and the best granularity, then the level-2 filters."""
        best, n_level1 = -1.0, 0
        for c in self.blocks(count=True):
            n_level1 += len(c["mi"])
            if len(c["mi"]):
                best = max(best, float(c["total"].max()))
        _merge_stages(self.out)
        self.out.stages.append(("after level-1 filters", n_level1))
        cand = self._within_rounds(self._granularity_ok(best))
        bound = "compute" if self.compute_bound else "memory"
        left = 0 if cand is None else len(cand["mi"])
        self.out.dropped[f"level-2 (granularity thresholds, {bound}-bound CU rounds)"] = \
            n_level1 - left
        self.out.stages.append(("after level-2 filters", left))
        return cand

    def _granularity_ok(self, best: float):
        """The level-2 granularity thresholds, given the best granularity of level 1."""
        small = 0.85 if self.m * self.n >= 256 * 256 else 0.5

        def ok(c) -> np.ndarray:
            own = c["total"]
            passed = np.ones(len(own), dtype=bool)
            if best == 1.0:
                passed &= own >= small
            if best > 0.2:
                passed &= own >= 0.5 * best
            return passed
        return ok

    def _within_rounds(self, gran_ok) -> dict | None:
        """Pass 2: granularity filters, rounds within the running bound, then the CU-round
        buckets over the minimum rounds left."""
        max_extra = (max(ROUNDS_COMPUTE_BIG, ROUND1) if self.compute_bound
                     else max(ROUND2, ROUND3))
        bound = [np.iinfo(np.int64).max]
        parts = []
        for c in self.blocks(count=False, bound=bound):
            ok = gran_ok(c)
            if ok.any():
                bound[0] = min(bound[0], int(c["rounds"][ok].min()) + max_extra)
            ok &= c["rounds"] <= bound[0]
            parts.append({key: val[ok] for key, val in c.items()})
        cand = _concat(parts) if parts else None
        if cand is None or not len(cand["mi"]):
            return cand
        big = self.f["area"][cand["mi"]] >= BIG_TILE
        extra = (np.where(big, ROUNDS_COMPUTE_BIG, ROUND1) if self.compute_bound
                 else np.where(big, ROUND2, ROUND3))
        ok = cand["rounds"] <= int(cand["rounds"].min()) + extra
        return {key: val[ok] for key, val in cand.items()}


def _concat(parts: list[dict]) -> dict:
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _ranked_entries(mis: list[MI], cand: dict, stream_k: bool, out: MIDesign) -> list[MIEntry]:
    """The candidates sorted by (ceil(TilesPerCU), 1 - TilesPerCU, 1 - totalGranularity, -GSU),
    ties in enumeration order; with StreamK, of entries differing only in GSU the best ranked."""
    keys = (cand["order"], -cand["gsu"], np.round(1.0 - cand["total"], 12),
            np.round(1.0 - cand["tpc"], 12), cand["rounds"])
    idx = np.lexsort(keys)
    if stream_k:
        seen, kept = set(), []
        for i in idx:
            key = (int(cand["mi"][i]), int(cand["lsu"][i]))
            if key not in seen:
                seen.add(key)
                kept.append(i)
        out.dropped["StreamK GSU duplicates"] = len(idx) - len(kept)
        idx = np.array(kept, dtype=int)
    return [MIEntry(mis[int(cand["mi"][i])], int(cand["lsu"][i]), int(cand["gsu"][i]),
                    Granularity(float(cand["t0"][i]), float(cand["t1"][i]),
                                float(cand["cug"][i]), float(cand["wg"][i]),
                                float(cand["total"][i]), int(cand["tiles"][i]),
                                float(cand["tpc"][i])))
            for i in idx]


def _merge_stages(out: MIDesign):
    """Sum the per-block "enumerated" stage entries into one."""
    total = sum(left for stage, left in out.stages if stage.startswith("enumerated"))
    out.stages = [s for s in out.stages if not s[0].startswith("enumerated")]
    out.stages.insert(0, ("enumerated (MI x LSU x GSU)", total))


def _arrays(mis: list[MI]) -> dict[str, np.ndarray]:
    return {
        "mt0": np.array([x.mt0 for x in mis], dtype=np.int64),
        "mt1": np.array([x.mt1 for x in mis], dtype=np.int64),
        "area": np.array([x.mt0 * x.mt1 for x in mis], dtype=np.int64),
        "waves": np.array([x.waves for x in mis], dtype=np.int64),
        "wtm": np.array([x.wave_tile_m for x in mis], dtype=np.int64),
        "wtn": np.array([x.wave_tile_n for x in mis], dtype=np.int64),
        "mi_m": np.array([x.mi_m for x in mis], dtype=np.int64),
        "mi_n": np.array([x.mi_n for x in mis], dtype=np.int64),
    }
