"""Fork parameters: the TensileLite parameter space of one tuning config.

A ``ParamSpace`` is an ordered list of fork axes (``ForkParam``: a name and its value list) plus
correlated ``Group`` dimensions; the first group is always the MatrixInstruction group (from the
MI designer). Kernel count = product of the value-list lengths of the active axes x product of
the entry counts of the active groups (``ParamSpace.count_kernels``).

Profiles, chosen by (arch family, search space):

- ``heuristic`` (Tensile backend default): narrow, size-dependent lists; gfx950 and gfx942 differ
  in DepthU, DirectToVgpr, GlobalReadVectorWidth, WaveSeparateGlobalRead, NonTemporalA/B,
  WorkGroupMapping and VectorWidth. Groups {NonTemporalC, NonTemporalD} and, on gfx950,
  {ClusterLocalRead, LDSTrInst}.
- ``generic`` (Ductile/GA default): broad static ranges; groups {DirectToLds, UseSgprForGRO} and,
  on gfx950 for non-TN layouts, {ClusterLocalRead, LDSTrInst}.

Post-processing: gfx950 heuristic adds ``MIArchVgpr: False`` to big-tile MI entries, prepends
PrefetchGlobalRead 1 for small tiles, shifts DepthU up for large K with small tiles and replaces
WorkGroupMapping 16 by 1 for tiny tiles; gfx942 heuristic only does the MIArchVgpr augmentation.
``apply_mt_du`` is the MT_DU override.

Custom main-loop schedules (CMS): the original queries CMS kernels from TensileLite
(``Tensile.Components.CustomSchedule``) and prepends them as MI groups with
``UseCustomMainLoopSchedule: 1``. TensileLite is not available here, so **CMS groups are never
added**: whatever the CMS option says, ``UseCustomMainLoopSchedule`` is ``[0]`` on gfx950 (what
the original writes with CMS off) and absent (commented) on gfx942.

A parameter is *inactive* when the profile defines it but it does not apply (wrong layout or data
type, StreamK off, or superseded by a group of the same name); inactive parameters are written
commented out and do not count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import GekoError
from ..gemm import BY_NAME, GemmType
from .mi_designer import MT_MAX, MIEntry


@dataclass
class ForkParam:
    name: str
    values: list
    active: bool = True
    note: str = ""  # why inactive


@dataclass
class Group:
    """A correlated dimension: a list of entries (dicts of parameter -> value)."""

    entries: list[dict]
    meta: list[MIEntry | None] | None = None  # MI group only: one MIEntry per entry
    is_mi: bool = False
    active: bool = True
    label: str = ""  # inactive groups: what they would correlate

    @property
    def names(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for entry in self.entries:
            seen.update(dict.fromkeys(entry))
        return tuple(seen) or tuple(self.label.split(" x "))

    def key(self):
        return "MI" if self.is_mi else frozenset(self.names)


def _entry_key(entry: dict):
    return tuple(sorted((name, repr(value)) for name, value in entry.items()))


@dataclass
class ParamSpace:
    params: list[ForkParam] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)

    # access --------------------------------------------------------------------------------
    def param(self, name: str) -> ForkParam | None:
        return next((p for p in self.params if p.name == name), None)

    def values(self, name: str):
        p = self.param(name)
        return p.values if p is not None and p.active else None

    def set(self, name: str, values: list):
        p = self.param(name)
        if p is not None:
            p.values = list(values)

    @property
    def mi_group(self) -> Group | None:
        return next((g for g in self.groups if g.is_mi), None)

    def group(self, *names: str) -> Group | None:
        want = frozenset(names)
        return next((g for g in self.groups if not g.is_mi and frozenset(g.names) == want), None)

    # counting ------------------------------------------------------------------------------
    def count_without_mi(self) -> int:
        n = 1
        for p in self.params:
            if p.active:
                n *= len(p.values)
        for g in self.groups:
            if g.active and not g.is_mi:
                n *= len(g.entries)
        return n

    def count_kernels(self) -> int:
        """Product of active value-list lengths x product of active group sizes."""
        mi = self.mi_group
        return self.count_without_mi() * (len(mi.entries) if mi is not None else 1)

    def permutations(self) -> int:
        """The GA's approximate permutation count: product of the multi-valued active axes and
        multi-entry active groups."""
        n = 1
        for p in self.params:
            if p.active and len(p.values) > 1:
                n *= len(p.values)
        for g in self.groups:
            if g.active and len(g.entries) > 1:
                n *= len(g.entries)
        return n

    # merging -------------------------------------------------------------------------------
    def copy(self) -> "ParamSpace":
        return ParamSpace(
            [replace(p, values=list(p.values)) for p in self.params],
            [replace(g, entries=[dict(e) for e in g.entries],
                     meta=None if g.meta is None else list(g.meta)) for g in self.groups])

    def merged(self, other: "ParamSpace") -> "ParamSpace":
        """Union of fork values (order kept: this space's first) and of group entries (deduped by
        their sorted (name, value) items). A parameter is active if active in either."""
        out = self.copy()
        for p in other.params:
            mine = out.param(p.name)
            if mine is None:
                out.params.append(replace(p, values=list(p.values)))
                continue
            if p.active and not mine.active:
                mine.values, mine.active, mine.note = list(p.values), True, ""
            elif p.active == mine.active:
                mine.values += [v for v in p.values if not _contains(mine.values, v)]
        for g in other.groups:
            mine = next((x for x in out.groups if x.key() == g.key()), None)
            if mine is None:
                out.groups.append(replace(g, entries=[dict(e) for e in g.entries],
                                          meta=None if g.meta is None else list(g.meta)))
                continue
            mine.active = mine.active or g.active
            keys = {_entry_key(e) for e in mine.entries}
            for i, entry in enumerate(g.entries):
                key = _entry_key(entry)
                if key not in keys:
                    keys.add(key)
                    mine.entries.append(dict(entry))
                    if mine.meta is not None:
                        mine.meta.append(g.meta[i] if g.meta is not None else None)
        return out


def _contains(values: list, v) -> bool:
    # 1 == True in Python; keep bools and ints apart
    return any(type(x) is type(v) and x == v for x in values)


# --------------------------------------------------------------------------------------------
# context of one size


@dataclass(frozen=True)
class SizeContext:
    gemm_type: GemmType
    size: tuple[int, int, int, int]  # M, N, B, K
    arch_family: str  # "gfx950" | "gfx942"
    cus: int
    xcc: int
    wgm_unit: int
    stream_k: bool
    mi_family: str  # "B", "H", "S", "X", "F8", ...

    @property
    def m(self):
        return self.size[0]

    @property
    def n(self):
        return self.size[1]

    @property
    def k(self):
        return self.size[3]

    @property
    def layout(self) -> str:
        return self.gemm_type.transA + self.gemm_type.transB

    @property
    def a_bytes(self) -> float:
        return 4 if self.gemm_type.is_tf32 else BY_NAME[self.gemm_type.a_type].bytes

    @property
    def b_bytes(self) -> float:
        return 4 if self.gemm_type.is_tf32 else BY_NAME[self.gemm_type.b_type].bytes

    @property
    def in_bytes(self) -> float:
        return max(self.a_bytes, self.b_bytes)

    @property
    def out_bytes(self) -> float:
        return BY_NAME[self.gemm_type.c_type].bytes

    @property
    def is_dgemm(self) -> bool:
        return self.mi_family in ("D", "C", "Z")


def _grvw_heuristic_gfx950(nbytes: float) -> list[int]:
    return {1: [4, 16], 2: [2, 8], 4: [1, 4], 8: [1, 2], 16: [1]}[max(1, int(nbytes))]


def _stagger_u(ctx: SizeContext) -> list[int]:
    if ctx.m * ctx.n < 2000 ** 2:
        return [0]
    b = ctx.in_bytes
    if ctx.layout == "NT":
        return [32] if b <= 4 else [0, 32]
    if ctx.layout == "TT" and b >= 8:
        return [0, 8]
    return [8]


def _skeleton(ctx: SizeContext) -> list[ForkParam]:
    """The parameters both heuristic profiles share (spec order of the gfx950 profile); the
    arch-specific ones are filled in by the profile functions."""
    m, n, k = ctx.m, ctx.n, ctx.k
    big = m * n >= 2000 ** 2
    tn = ctx.layout == "TN"
    out_b = ctx.out_bytes
    return [
        ForkParam("DepthU", []),
        ForkParam("DirectToVgprA", []),
        ForkParam("DirectToVgprB", []),
        ForkParam("GlobalReadVectorWidthA", []),
        ForkParam("GlobalReadVectorWidthB", []),
        ForkParam("WaveSeparateGlobalReadA", []),
        ForkParam("WaveSeparateGlobalReadB", []),
        ForkParam("NonTemporalA", []),
        ForkParam("NonTemporalB", []),
        ForkParam("WorkGroupMapping", []),
        ForkParam("VectorWidthA", []),
        ForkParam("VectorWidthB", []),
        ForkParam("MIArchVgpr", [True]),
        ForkParam("ClusterLocalRead", [1] if ctx.in_bytes < 4 and not tn else [0]),
        ForkParam("PrefetchLocalRead", [1]),
        ForkParam("SourceSwap", [True]),
        ForkParam("WorkGroupMappingXCC", [1]),
        ForkParam("GlobalSplitUAlgorithm", ["MultipleBuffer"]),
        ForkParam("LocalReadVectorWidth", [-1]),
        ForkParam("StorePriorityOpt", [True] if big else [False]),
        ForkParam("StoreSyncOpt", [4] if big else [0]),
        ForkParam("StaggerU", _stagger_u(ctx)),
        ForkParam("NumElementsPerBatchStore", [16] if out_b <= 2 else [max(1, int(32 // out_b))]),
        ForkParam("1LDSBuffer", [0, 1] if m * n < 256 * 128 * 16 * 16 else [1]),
        ForkParam("StreamK", [3] if ctx.stream_k else [0]),
        ForkParam("StreamKXCCMapping", [0, ctx.xcc] if ctx.stream_k else [0]),
        ForkParam("UseSgprForGRO", [0, 1] if ctx.stream_k and tn else [-1]),
        ForkParam("UseCustomMainLoopSchedule", [0]),
        ForkParam("PrefetchGlobalRead", [1, 2] if tn and k in (8192, 16384) else [2]),
    ]


def _nt_cd_group(ctx: SizeContext) -> Group:
    mn = ctx.m * ctx.n
    if mn >= 2000 ** 2:
        vals = [4]
    elif mn >= 1000 ** 2 or max(ctx.m, ctx.n) >= 10000:
        vals = [0, 3]
    else:
        vals = [0]
    return Group([{"NonTemporalC": v, "NonTemporalD": v} for v in vals])


def heuristic_gfx950(ctx: SizeContext) -> ParamSpace:
    params = _skeleton(ctx)
    sp = ParamSpace(params)
    b = ctx.in_bytes
    if b == 2:
        du = [32, 64, 128, 256]
    elif b == 1:
        du = [64, 128, 256, 512]
    else:  # 4 bytes and wider: the 1-byte list / 4
        du = [16, 32, 64, 128]
    sp.set("DepthU", du)
    sp.set("DirectToVgprA", [False])
    sp.set("DirectToVgprB", [False])
    sp.set("GlobalReadVectorWidthA", _grvw_heuristic_gfx950(ctx.a_bytes))
    sp.set("GlobalReadVectorWidthB", _grvw_heuristic_gfx950(ctx.b_bytes))
    wsgr = [0, 2] if ctx.k > 100000 else [0]
    sp.set("WaveSeparateGlobalReadA", wsgr)
    sp.set("WaveSeparateGlobalReadB", list(wsgr))
    large, small = max(ctx.m, ctx.n), min(ctx.m, ctx.n)
    nt = [4] if large > 1024 and small < 32 and ctx.k > 4096 else [0]
    a_larger = ctx.m >= ctx.n
    sp.set("NonTemporalA", nt if a_larger else [0])
    sp.set("NonTemporalB", [0] if a_larger else nt)
    sp.set("WorkGroupMapping", [6, 8, 16])
    vw = [-1, 8] if b <= 2 else [-1]
    sp.set("VectorWidthA", vw)
    sp.set("VectorWidthB", list(vw))
    clr = sp.param("ClusterLocalRead")
    clr.active, clr.note = False, "set by the ClusterLocalRead/LDSTrInst group"
    if ctx.layout == "TN":
        lds = [(0, False)]
    elif b == 2:
        lds = [(0, True), (1, False)]
    else:
        lds = [(1, False)]
    sp.groups = [_nt_cd_group(ctx),
                 Group([{"ClusterLocalRead": c, "LDSTrInst": t} for c, t in lds])]
    return sp


def gfx942_size_class(ctx: SizeContext) -> int:
    """0 (small) .. 3 (large): M*N against 32*32, 128*128, 256*128 tiles per CU."""
    mn, cus = ctx.m * ctx.n, ctx.cus
    if mn > 256 * 128 * cus:
        return 3
    if mn > 128 * 128 * cus:
        return 2
    if mn > 32 * 32 * cus:
        return 1
    return 0


# gfx942 DepthU per size class for 2-byte inputs; other widths scale by 2 / bytes
_DU_942_16BIT = ([64, 128, 256, 512], [32, 64, 128, 256], [32, 64, 128], [32, 64])


def _tlu(ctx: SizeContext) -> tuple[bool, bool]:
    """Transpose-leading-unroll operands: A when transA == T, B when transB == N."""
    return ctx.gemm_type.transA == "T", ctx.gemm_type.transB == "N"


def heuristic_gfx942(ctx: SizeContext) -> ParamSpace:
    params = _skeleton(ctx)
    sp = ParamSpace(params)
    idx = gfx942_size_class(ctx)
    scale = 2 / ctx.in_bytes
    sp.set("DepthU", [max(8, int(d * scale)) for d in _DU_942_16BIT[idx]])
    tlu_a, tlu_b = _tlu(ctx)
    sp.set("DirectToVgprA", [0, 1] if tlu_a else [0])
    sp.set("DirectToVgprB", [0, 1] if tlu_b else [0])

    def grvw(nbytes: float, tlu: bool) -> list[int]:
        full = max(1, int(16 // nbytes))
        if tlu:  # vector loads along K: no wider than K
            v = full
            while v > 1 and v > ctx.k:
                v //= 2
            return [v]
        return sorted({max(1, int(4 // nbytes)), full})

    sp.set("GlobalReadVectorWidthA", grvw(ctx.a_bytes, tlu_a))
    sp.set("GlobalReadVectorWidthB", grvw(ctx.b_bytes, tlu_b))
    # leading dimensions: A is M x K (lda = K when transposed), B is K x N (ldb = N when
    # transposed)
    lda = ctx.k if ctx.gemm_type.transA == "T" else ctx.m
    ldb = ctx.n if ctx.gemm_type.transB == "T" else ctx.k
    sp.set("WaveSeparateGlobalReadA", [0, 2] if lda >= 65536 / ctx.a_bytes else [0])
    sp.set("WaveSeparateGlobalReadB", [0, 2] if ldb >= 65536 / ctx.b_bytes else [0])
    nt = [0, 4] if min(ctx.m, ctx.n) <= 256 and max(ctx.m, ctx.n) >= 4000 else [0]
    a_larger = ctx.m >= ctx.n
    sp.set("NonTemporalA", nt if a_larger else [0])
    sp.set("NonTemporalB", [0] if a_larger else list(nt))
    u = ctx.wgm_unit
    maxunit = max(1, math.isqrt(max(1, ctx.cus // max(1, ctx.xcc))))
    wgm = ([1], [1, 2 * u], [2 * u, 4 * u], [u * maxunit])[idx]
    if ctx.m > ctx.n:
        wgm = [-w for w in wgm]
    sp.set("WorkGroupMapping", wgm)
    vw = [1, 2, 4] if ctx.in_bytes <= 4 else [1, 2]
    sp.set("VectorWidthA", vw)
    sp.set("VectorWidthB", list(vw))
    if ctx.gemm_type.transB != "T":
        p = sp.param("VectorWidthB")
        p.active, p.note = False, "only for transB = T"
    p = sp.param("UseCustomMainLoopSchedule")
    p.active, p.note = False, "no custom main-loop schedules on gfx942"
    sp.groups = [_nt_cd_group(ctx)]
    return sp


def generic(ctx: SizeContext) -> ParamSpace:
    """The broad GA ranges (same for every size of a GEMM type)."""
    gfx942 = ctx.arch_family == "gfx942"
    tn = ctx.layout == "TN"

    def grvw(nbytes: float) -> list[int]:
        lo, hi = max(1, 4 / nbytes), min(16, 16 / nbytes)
        return [-1, -2] + [v for v in (1, 2, 3, 4, 6, 8, 16) if lo <= v <= hi]

    du = [8, 16, 32, 64, 128, 256] if gfx942 and ctx.mi_family == "D" else \
        [32, 64, 128, 256, 512, 1024]
    sk = ctx.stream_k
    params = [
        ForkParam("DepthU", du),
        ForkParam("1LDSBuffer", [0, 1]),
        ForkParam("WaveSeparateGlobalReadA", [0, 2]),
        ForkParam("WaveSeparateGlobalReadB", [0, 2]),
        ForkParam("NumElementsPerBatchStore", [0, 2, 4, 8, 10, 12, 14, 16]),
        ForkParam("PrefetchGlobalRead", [1, 2, 3, 4]),
        ForkParam("PrefetchLocalRead", [1]),
        ForkParam("SourceSwap", [False, True]),
        ForkParam("StaggerU", [0, 8, 16]),
        ForkParam("StaggerUStride", [64, 128, 256, 512]),
        ForkParam("StorePriorityOpt", [False, True]),
        ForkParam("StoreSyncOpt", [0, 1, 4]),
        ForkParam("WorkGroupMapping",
                  [-48, -32, -24, -16, -8, -6, -4, -2, -1, 0, 2, 4, 6, 8, 16, 24, 32, 48]),
        ForkParam("WorkGroupMappingXCC", [1, 2, 4, 8, 16] if gfx942 else [1, 2, 4, 8, 16, 32]),
        ForkParam("MIArchVgpr", [False, True]),
        ForkParam("GlobalSplitUAlgorithm", ["MultipleBuffer"]),
        ForkParam("GlobalReadVectorWidthA", grvw(ctx.a_bytes)),
        ForkParam("GlobalReadVectorWidthB", grvw(ctx.b_bytes)),
        ForkParam("StreamK", [3], active=sk, note="" if sk else "StreamK off"),
        ForkParam("StreamKXCCMapping", [0, 4, 8], active=sk, note="" if sk else "StreamK off"),
        ForkParam("ClusterLocalRead", [0, 1], active=tn or gfx942,
                  note="" if tn or gfx942 else
                  "non-TN: set by the ClusterLocalRead/LDSTrInst group"),
        ForkParam("NonTemporalA", [0, 4]),
        ForkParam("NonTemporalB", [0, 4]),
        ForkParam("NonTemporalC", [0, 4]),
        ForkParam("NonTemporalD", [0, 4]),
        ForkParam("TransposeLDS", [-1, 0, 1, 2]),
        ForkParam("AdaptiveGemm", [0, 1]),
        ForkParam("TailloopInNll", [False, True]),
        ForkParam("ExtraMiLatencyLeft", [-1, 0]),
        ForkParam("ScheduleGROverBarrier", [0, 1]),
        ForkParam("DtlPlusLdsBuf", [1]),
        ForkParam("UnrollLoopSwapGlobalReadOrder", [0, 1]),
        ForkParam("UsePLRPack", [0, 1], active=ctx.gemm_type.is_tf32,
                  note="" if ctx.gemm_type.is_tf32 else "TF32 (X) only"),
    ]
    if gfx942:
        on = ctx.gemm_type.transA != "T"
        params.append(ForkParam("DirectToVgprA", [False, True], active=on,
                                note="" if on else "only for transA != T"))
    return ParamSpace(params, _generic_groups(gfx942, tn))


def _generic_groups(gfx942: bool, tn: bool) -> list[Group]:
    """The generic profile's parameter groups (values that fork together)."""
    groups = [Group([{"DirectToLds": d, "UseSgprForGRO": s} for d, s in ((0, 0), (0, 1), (1, 0))])]
    if not gfx942 and not tn:
        groups.append(Group([{"ClusterLocalRead": 0, "LDSTrInst": True},
                             {"ClusterLocalRead": 1, "LDSTrInst": False}]))
    # defined in the original but not used
    groups.append(Group([], active=False, label="TailloopInNll x StaggerU"))
    groups.append(Group([], active=False,
                        label="ExtraLatencyForLR x DirectToVgprA x DirectToVgprB"))
    return groups


PROFILES = {
    ("gfx950", "heuristic"): heuristic_gfx950,
    ("gfx942", "heuristic"): heuristic_gfx942,
    ("gfx950", "generic"): generic,
    ("gfx942", "generic"): generic,
}


def mi_group(entries: list[MIEntry], stream_k: bool) -> Group:
    return Group([e.group_entry(stream_k) for e in entries], meta=list(entries), is_mi=True)


def build_space(ctx: SizeContext, search_space: str, entries: list[MIEntry]) -> ParamSpace:
    """The parameter space of one size: profile + MI group first + post-processing."""
    try:
        profile = PROFILES[(ctx.arch_family, search_space)]
    except KeyError:
        raise GekoError(f"no {search_space!r} parameter profile for {ctx.arch_family}") from None
    sp = profile(ctx)
    sp.groups.insert(0, mi_group(entries, ctx.stream_k))
    if search_space == "heuristic":
        add_mi_arch_vgpr(sp, ctx.mi_family)
        if ctx.arch_family == "gfx950":
            postprocess_gfx950(sp, ctx)
    return sp


# --------------------------------------------------------------------------------------------
# post-processing


def add_mi_arch_vgpr(sp: ParamSpace, mi_family: str):
    """``MIArchVgpr: False`` on MI entries with MT0*MT1 >= MT_MAX / 3."""
    g = sp.mi_group
    limit = MT_MAX[mi_family] / 3
    for entry, meta in zip(g.entries, g.meta):
        if meta is not None and meta.mi.mt0 * meta.mi.mt1 >= limit:
            entry["MIArchVgpr"] = False


def postprocess_gfx950(sp: ParamSpace, ctx: SizeContext):
    mts = [m.mt for m in sp.mi_group.meta if m is not None]
    pgr = sp.param("PrefetchGlobalRead")
    if any(a < 64 and b < 64 for a, b in mts) and 1 not in pgr.values:
        pgr.values = [1] + pgr.values
    du = sp.param("DepthU")
    if ctx.k > 1024 and any(a * b < 64 * 64 for a, b in mts):
        du.values = du.values[1:] + [2 * du.values[-1]]
    if any(a <= 32 and b <= 32 for a, b in mts):
        wgm = sp.param("WorkGroupMapping")
        out = []
        for v in (1 if v == 16 else v for v in wgm.values):
            if v not in out:
                out.append(v)
        wgm.values = out


def apply_mt_du(sp: ParamSpace, mt_du) -> ParamSpace:
    """MT_DU override: DepthU [DU], WorkGroupMapping [0], WorkGroupMappingXCC [-1],
    NonTemporalA..D [0], StreamKXCCMapping [0]; only MI entries with MT == (MT0, MT1)."""
    mt0, mt1, du = (int(x) for x in mt_du)
    for name, vals in (("DepthU", [du]), ("WorkGroupMapping", [0]), ("WorkGroupMappingXCC", [-1]),
                       ("NonTemporalA", [0]), ("NonTemporalB", [0]), ("NonTemporalC", [0]),
                       ("NonTemporalD", [0]), ("StreamKXCCMapping", [0])):
        sp.set(name, vals)
    g = sp.group("NonTemporalC", "NonTemporalD")
    if g is not None:
        g.entries = [{"NonTemporalC": 0, "NonTemporalD": 0}]
    mi = sp.mi_group
    keep = [i for i, m in enumerate(mi.meta) if m is not None and m.mt == (mt0, mt1)]
    mi.entries = [mi.entries[i] for i in keep]
    mi.meta = [mi.meta[i] for i in keep]
    return sp


# --------------------------------------------------------------------------------------------
# Tensile metadata for the fork-parameter comments: (default value, valid values). Written from
# TensileLite's documented parameter ranges; cosmetic only.

PARAM_META: dict[str, tuple[object, list]] = {
    "DepthU": (-1, [-1] + list(range(2, 1025))),
    "DirectToVgprA": (False, [False, True]),
    "DirectToVgprB": (False, [False, True]),
    "DirectToLds": (False, [False, True]),
    "GlobalReadVectorWidthA": (-1, [-2, -1, 1, 2, 3, 4, 6, 8, 16]),
    "GlobalReadVectorWidthB": (-1, [-2, -1, 1, 2, 3, 4, 6, 8, 16]),
    "WaveSeparateGlobalReadA": (0, [0, 1, 2]),
    "WaveSeparateGlobalReadB": (0, [0, 1, 2]),
    "NonTemporalA": (0, list(range(8))),
    "NonTemporalB": (0, list(range(8))),
    "NonTemporalC": (0, list(range(8))),
    "NonTemporalD": (0, list(range(8))),
    "WorkGroupMapping": (8, list(range(-1024, 1025))),
    "WorkGroupMappingXCC": (1, [-1, 1, 2, 4, 8, 16, 32]),
    "VectorWidthA": (-1, [-1, 1, 2, 3, 4, 6, 8]),
    "VectorWidthB": (-1, [-1, 1, 2, 3, 4, 6, 8]),
    "MIArchVgpr": (False, [False, True]),
    "ClusterLocalRead": (1, [0, 1]),
    "LDSTrInst": (False, [False, True]),
    "PrefetchLocalRead": (1, list(range(129))),
    "PrefetchGlobalRead": (1, [0, 1, 2, 3, 4]),
    "SourceSwap": (False, [False, True]),
    "GlobalSplitUAlgorithm": ("MultipleBuffer",
                              ["SingleBuffer", "MultipleBuffer", "MultipleBufferSingleKernel"]),
    "LocalReadVectorWidth": (-1, [-1, 1, 2, 4, 8, 16]),
    "StorePriorityOpt": (False, [False, True]),
    "StoreSyncOpt": (0, list(range(256))),
    "StaggerU": (32, [0, 2, 4, 8, 16, 32, 64]),
    "StaggerUStride": (256, [16, 32, 64, 128, 256, 512, 1024, 2048]),
    "NumElementsPerBatchStore": (0, list(range(-1, 257))),
    "1LDSBuffer": (0, [-1, 0, 1]),
    "StreamK": (0, [0, 1, 2, 3]),
    "StreamKXCCMapping": (0, list(range(33))),
    "UseSgprForGRO": (-1, [-1, 0, 1]),
    "UseCustomMainLoopSchedule": (0, [-1, 0, 1]),
    "TransposeLDS": (-1, [-1, 0, 1, 2]),
    "AdaptiveGemm": (0, [0, 1]),
    "TailloopInNll": (False, [False, True]),
    "ExtraMiLatencyLeft": (-1, list(range(-1, 9))),
    "ScheduleGROverBarrier": (0, [0, 1]),
    "DtlPlusLdsBuf": (0, [0, 1]),
    "UnrollLoopSwapGlobalReadOrder": (0, [0, 1]),
    "UsePLRPack": (0, [0, 1]),
}
