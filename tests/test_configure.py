"""Tuning-config generation: MI designer, fork-parameter profiles, clustering/merging, the
tuning-YAML writer. Expected MI lists and numbers below are worked out by hand from the
granularity formulas (comments show the arithmetic)."""

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from geko_lib.gemm import GemmType
from geko_lib.tuning import configure as cf
from geko_lib.tuning import mi_designer as md
from geko_lib.tuning import params as pm

from .conftest import FIXTURES

DATA = Path(__file__).parent / "data" / "tuning"
FIXTURE = FIXTURES / "geko_test_data" / "config.yaml"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
BBS_NN = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
HHS_NT = GemmType("N", "T", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")
SSS_NN = GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r")
XSS_TN = GemmType("T", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r")
F8BS_TN = GemmType("T", "N", "f8_r", "f8_r", "bf16_r", "bf16_r", "c_f32_r")
F8B8SS_TN = GemmType("T", "N", "f8_r", "bf8_r", "f32_r", "f32_r", "c_f32_r")
I8II_TN = GemmType("T", "N", "i8_r", "i8_r", "i32_r", "i32_r", "c_i32_r")
DDD_NN = GemmType("N", "N", "f64_r", "f64_r", "f64_r", "f64_r", "c_f64_r")

SKINNY = (16032, 109, 1, 16384)
SQUARE = (4096, 4096, 1, 4096)
TINY = (128, 128, 1, 128)


def load(path):
    return yaml.load(Path(path).read_text(), Loader=LOADER)


def design(size, gemm=BBS_TN, arch="gfx950", cus=256, stream_k=True, mi_filter=2, mfma=None):
    family = md.mi_family(gemm, arch)
    cb = md.compute_bytes(gemm)
    mis = md.enumerate_mis(family, arch, mfma, cb)
    return md.design(mis, size, family=family, cus=cus, stream_k=stream_k, mi_filter=mi_filter,
                     cbytes=cb)


def solution(doc):
    """(problem type, solution parameters) of a loaded tuning YAML."""
    problem = doc["BenchmarkProblems"][0]
    return problem[0], problem[1]


def forks(doc) -> dict:
    """Active fork parameters (commented ones are absent) -> values; Groups separately."""
    out = {}
    for item in solution(doc)[1]["ForkParameters"]:
        (name, value), = item.items()
        out[name] = value
    return out


def run(tmp_path, gemm=BBS_TN, sizes=(TINY,), arch="gfx950", backend="tensile", **options):
    out = tmp_path / "optimizations"
    paths = cf.configure(gemm, [list(s) for s in sizes], arch, backend, options or None, out)
    return paths, out


# --------------------------------------------------------------------------------------------
# arch table and defaults


def test_arch_table():
    a = cf.TUNING_ARCHS
    assert set(a) == {"gfx950", "gfx950_128cu", "gfx942", "gfx942_80cu", "gfx942_38cu",
                      "gfx942_20cu", "gfx942_228cu"}
    assert (a["gfx950"].cus, a["gfx950"].xcc) == (256, 8)
    assert (a["gfx950_128cu"].cus, a["gfx950_128cu"].xcc) == (128, 4)
    assert [(a[n].cus, a[n].xcc) for n in ("gfx942", "gfx942_80cu", "gfx942_38cu",
                                           "gfx942_20cu", "gfx942_228cu")] == \
        [(304, 8), (80, 4), (38, 8), (20, 4), (228, 6)]
    assert a["gfx950"].schedule_name == a["gfx950"].architecture_name == "gfx950"
    assert a["gfx950"].device_names == ("Device 75a0",)
    assert a["gfx942_20cu"].schedule_name == "aquavanjaram"
    assert a["gfx942_20cu"].architecture_name == "gfx942"
    assert a["gfx942"].device_names == ("Device 0049", "Device 0050")


def test_arch_defaults():
    d950 = cf.arch_defaults("gfx950", "heuristic")
    d942 = cf.arch_defaults("gfx942_80cu", "generic")
    assert d950["StreamK"] is True and d950["CMS"] is True and d950["CMS_PRIORITY"] is False
    assert d942["StreamK"] is False and d942["CMS"] is False
    for d in (d950, d942):
        assert d["MI_FILTER"] == 2 and d["EPILOGUES"] is True and d["CLUSTER"] == 0
        assert d["ONE_SIZE_PER_CONFIG"] is True and d["GA_VALIDATION_PROFILE"] == 1
    assert d950["MAX_NUM_KERNELS_PER_CONFIG"] == 180_000_000
    assert d942["MAX_NUM_KERNELS_PER_CONFIG"] > 10 ** 18  # generic: no cap
    assert (d942["CUs"], d942["XCC"], d942["WGMUnit"]) == (80, 4, 4)
    s = cf.resolve_settings("gfx950", "ductile")
    assert s.search_space == "generic" and s.validation_profile == 1
    assert cf.resolve_settings("gfx942", "tensile").search_space == "heuristic"
    # options are case-insensitive; DUCTILE_VALIDATION_PROFILE is the newer name
    s = cf.resolve_settings("gfx950", "Ductile",
                            {"streamk": "false", "DUCTILE_VALIDATION_PROFILE": 2})
    assert s.stream_k is False and s.validation_profile == 2
    assert cf.resolve_settings("gfx950", "tensile", {"CLUSTER": 7}).cluster == 1  # unknown -> 1


# --------------------------------------------------------------------------------------------
# MI encodings and the granularity model


def test_mi_derived_quantities():
    mi = md.MI(16, 16, 32, 1, 1, 8, 6, 2, 2)  # the spec's example entry
    assert (mi.mt0, mi.mt1) == (256, 192)  # 16*1*8*2, (16/1*1)*6*2
    assert (mi.tt0, mi.tt1) == (8, 96)  # waveTileM, waveTileN*MI_N
    assert (mi.wg0, mi.wg1) == (32, 8)  # 16*1*2, 2*2*64/32
    mi4 = md.MI(4, 4, 4, 16, 1, 2, 1, 1, 4)
    assert (mi4.mt0, mi4.mt1) == (8, 256)  # 4*2*1, 4*16*1*4
    entry = md.MIEntry(md.MI(16, 16, 32, 1, 1, 2, 2, 1, 2), 2, 4, None)
    assert entry.group_entry(stream_k=False) == {
        "MatrixInstruction": [16, 16, 32, 1, 1, 2, 2, 1, 2], "WorkGroup": [16, 8, 2],
        "GlobalSplitU": 4}
    assert entry.group_entry(stream_k=True) == {
        "MatrixInstruction": [16, 16, 32, 1, 1, 2, 2, 1, 2], "WorkGroup": [16, 8, 2]}
    assert md.MIEntry(mi, 1, 1, None).group_entry(False) == {"MatrixInstruction": mi.encoding}


def test_enumeration_rules():
    mis = md.enumerate_mis("B", "gfx950", cbytes=4)
    assert {(m.mi_m, m.mi_n, m.mi_k, m.mi_b) for m in mis} == {(16, 16, 32, 1), (32, 32, 16, 1)}
    assert all(m.block_m == 1 for m in mis)
    assert all(4 <= m.mt0 <= 512 and 4 <= m.mt1 <= 512 for m in mis)
    assert all(m.mt0 * m.mt1 <= 256 * 464 for m in mis)
    # LSU = max(1, 4 // waves): single-wave shapes need MT0*MT1*4*4 <= 65536
    assert max(m.mt0 * m.mt1 for m in mis if m.waves == 1) == 4096
    assert max(m.mt0 * m.mt1 for m in mis if m.waves == 2) == 8192
    assert max(m.mt0 * m.mt1 for m in mis if m.waves == 4) == 256 * 464
    assert md.MI(16, 16, 32, 1, 1, 4, 29, 4, 1) in mis  # 256x464 == MT_MAX
    assert md.MI(16, 16, 32, 1, 1, 4, 30, 4, 1) not in mis  # 256x480 > MT_MAX
    # enumeration order: MFMA, wave shape [4,1] [2,2] [1,4] [1,2] [2,1] [1,1], waveTileM, waveTileN
    assert mis[0] == md.MI(16, 16, 32, 1, 1, 1, 1, 4, 1)
    assert mis[1] == md.MI(16, 16, 32, 1, 1, 1, 2, 4, 1)
    s_mis = md.enumerate_mis("S", "gfx950", cbytes=4)
    assert {(m.mi_m, m.mi_n, m.mi_k, m.mi_b) for m in s_mis} == {(16, 16, 4, 1), (32, 32, 2, 1)}
    assert all(m.mt0 * m.mt1 <= 256 * 256 for m in s_mis)
    g942 = md.enumerate_mis("B", "gfx942", cbytes=4)
    assert {(m.mi_m, m.mi_n, m.mi_k, m.mi_b) for m in g942} == \
        {(4, 4, 4, 16), (16, 16, 16, 1), (32, 32, 8, 1)}
    assert {(m.mi_m, m.mi_n, m.mi_k) for m in md.enumerate_mis("F8", "gfx950", cbytes=4)} == \
        {(16, 16, 128), (32, 32, 64)}
    # MFMA override: must be a valid instruction of the type
    only32 = md.enumerate_mis("B", "gfx950", [[32, 32, 16, 1]], 4)
    assert {m.mi_m for m in only32} == {32}
    with pytest.raises(ValueError, match="MFMA override"):
        md.enumerate_mis("B", "gfx950", [[16, 16, 128, 1]], 4)


def test_granularity_by_hand():
    # 4096^3, MT 256x192, 256 CUs: NT0 = 16, NT1 = 21.33 -> 22, Tile1Gran = 21.333/22 = 0.96970;
    # tiles 16*22 = 352, TilesPerCU 1.375, CUGran 1.375/2 = 0.6875; waveGran min(1, 2*4/4) = 1
    g = md.granularity(256, 192, 4, 1, 1, SQUARE, 256)
    assert g.tile0 == 1.0 and g.tile1 == pytest.approx(4096 / 192 / 22)
    assert g.total_tiles == 352 and g.tiles_per_cu == 1.375 and g.cu == 0.6875 and g.wave == 1.0
    assert g.total == pytest.approx(0.969697 * 0.6875, abs=1e-6)
    # skinny 16032x109, MT 512x112, GSU 8: 32 x 1 tiles x 8 = 256 = CUs
    g = md.granularity(512, 112, 4, 1, 8, SKINNY, 256)
    assert g.tile0 == pytest.approx(16032 / 512 / 32)  # 0.978516
    assert g.tile1 == pytest.approx(109 / 112)  # 0.973214
    assert (g.total_tiles, g.tiles_per_cu, g.cu, g.wave) == (256, 1.0, 1.0, 1.0)
    assert g.total == pytest.approx(0.978516 * 0.973214, abs=1e-5)  # 0.952305
    # 128^3, MT 16x16 single wave, LSU 4: 8*8*4 = 256 tiles; waveGran min(1, 2*1*4/4) = 1
    g = md.granularity(16, 16, 1, 4, 1, TINY, 256)
    assert (g.total_tiles, g.total) == (256, 1.0)
    # same MT, LSU 2: 128 tiles, TPC 0.5, CUGran 0.5, waveGran floor(1.5)*1*2/4 = 0.5 -> 0.25
    g = md.granularity(16, 16, 1, 2, 1, TINY, 256)
    assert (g.tiles_per_cu, g.cu, g.wave, g.total) == (0.5, 0.5, 0.5, 0.25)
    # batch multiplies tiles: 2 x (4096/256)^2 = 512 tiles -> 2 rounds, full
    g = md.granularity(256, 256, 4, 1, 1, (4096, 4096, 2, 4096), 256)
    assert (g.total_tiles, g.rounds, g.total) == (512, 2, 1.0)


# the 18 MIs of 4096^3 with key (1, 0, 0, -1): MT0*MT1 = 4096^2/256 = 65536 with MT0, MT1 dividing
# 4096 and <= 512 -> 128x512, 256x256, 512x128; 4-wave shapes only (M*N > 65536); no GSU > 1
# (area would exceed MT_MAX); enumeration order: MFMA, wave shape, waveTileM
SQUARE_TOP = [
    [16, 16, 32, 1, 1, 2, 32, 4, 1], [16, 16, 32, 1, 1, 4, 16, 4, 1],
    [16, 16, 32, 1, 1, 8, 8, 4, 1], [16, 16, 32, 1, 1, 4, 16, 2, 2],
    [16, 16, 32, 1, 1, 8, 8, 2, 2], [16, 16, 32, 1, 1, 16, 4, 2, 2],
    [16, 16, 32, 1, 1, 8, 8, 1, 4], [16, 16, 32, 1, 1, 16, 4, 1, 4],
    [16, 16, 32, 1, 1, 32, 2, 1, 4], [32, 32, 16, 1, 1, 1, 16, 4, 1],
    [32, 32, 16, 1, 1, 2, 8, 4, 1], [32, 32, 16, 1, 1, 4, 4, 4, 1],
    [32, 32, 16, 1, 1, 2, 8, 2, 2], [32, 32, 16, 1, 1, 4, 4, 2, 2],
    [32, 32, 16, 1, 1, 8, 2, 2, 2], [32, 32, 16, 1, 1, 4, 4, 1, 4],
    [32, 32, 16, 1, 1, 8, 2, 1, 4], [32, 32, 16, 1, 1, 16, 1, 1, 4],
]


def test_design_square_bf16_gfx950():
    d = design(SQUARE)
    top = d.entries[:18]
    assert [e.mi.encoding for e in top] == SQUARE_TOP
    assert all((e.lsu, e.gsu, e.gran.total, e.gran.tiles_per_cu) == (1, 1, 1.0, 1.0) for e in top)
    # next: MT 256x272 (16x16, [4,1], 4x17) and 272x256 ([1,4], 17x4): NT = 15.06 -> 16 tiles,
    # Tile gran 4096/(16*272) = 0.941176, 16*16 = 256 tiles
    assert [e.mi.encoding for e in d.entries[18:20]] == [[16, 16, 32, 1, 1, 4, 17, 4, 1],
                                                         [16, 16, 32, 1, 1, 17, 4, 1, 4]]
    assert d.entries[18].gran.total == pytest.approx(4096 / (16 * 272))
    # then MT 320x224: 13 x 19 = 247 tiles: 0.984615 * 0.962406 * 0.964844 = 0.914286
    e = d.entries[20]
    assert (e.mi.mt0, e.mi.mt1, e.gran.total_tiles) == (320, 224, 247)
    assert e.gran.total == pytest.approx((12.8 / 13) * (4096 / 224 / 19) * (247 / 256))
    # level-2: best is 1.0 and M*N >= 256^2 -> everything below 0.85 dropped: 256x192 at GSU 1
    # (0.6667, see test_granularity_by_hand) is gone; at GSU 2 it has 704 tiles, TPC 2.75,
    # CUGran 2.75/3: 0.969697 * 0.916667 = 0.888889 (3 rounds: allowed for MT < 256^2)
    assert min(x.gran.total for x in d.entries) >= 0.85
    mt192 = [x for x in d.entries if x.mt == (256, 192)]
    assert mt192 and all(x.gsu > 1 for x in mt192)
    g2 = md.granularity(256, 192, 4, 1, 2, SQUARE, 256)
    assert (g2.total_tiles, g2.rounds) == (704, 3)
    assert g2.total == pytest.approx(4096 / 192 / 22 * 2.75 / 3)
    assert any(x.gsu == 2 and x.gran.total == pytest.approx(g2.total) for x in mt192)
    # level-1: only 4-wave shapes (M*N > 65536, M, N >= 64)
    assert {x.mi.waves for x in d.entries} == {4}
    # compute bound: rounds <= min_rounds(1) + 1 for MT >= 256^2, + 2 below
    assert all(x.gran.rounds <= (2 if x.mi.mt0 * x.mi.mt1 >= 65536 else 3) for x in d.entries)
    # sorted by (ceil(TPC), 1 - TPC, 1 - total, -GSU)
    keys = [(x.gran.rounds, 1 - x.gran.tiles_per_cu, 1 - x.gran.total, -x.gsu) for x in d.entries]
    assert keys == sorted(keys, key=lambda k: tuple(round(v, 9) for v in k))


def test_design_skinny():
    d = design(SKINNY)  # gfx950 default: StreamK
    first = d.entries[0]
    # only MT0 = 512 gives a tile count dividing 256 (ceil(16032/512) = 32, x GSU 8); MT1 = 112
    # (16 * 7 on a [4,1] wave) is the tightest 16-multiple over 109 allowed by MT1/2 <= 109
    assert first.mi.encoding == [16, 16, 32, 1, 1, 8, 7, 4, 1]
    assert (first.lsu, first.gsu, first.gran.total_tiles) == (1, 8, 256)
    assert first.gran.total == pytest.approx((16032 / 512 / 32) * (109 / 112))
    assert first.group_entry(stream_k=True) == {"MatrixInstruction": first.mi.encoding}
    # then MT 512x128 (Tile1Gran 109/128) on every 4-wave shape, GSU 8
    assert [e.mi.encoding for e in d.entries[1:7]] == [
        [16, 16, 32, 1, 1, 8, 8, 4, 1], [16, 16, 32, 1, 1, 16, 4, 2, 2],
        [16, 16, 32, 1, 1, 32, 2, 1, 4], [32, 32, 16, 1, 1, 4, 4, 4, 1],
        [32, 32, 16, 1, 1, 8, 2, 2, 2], [32, 32, 16, 1, 1, 16, 1, 1, 4]]
    assert all(e.gsu == 8 and e.gran.total == pytest.approx((16032 / 16384) * (109 / 128))
               for e in d.entries[1:7])
    # StreamK: tiles up to 2x the dim (MT1 <= 218), entries unique up to GSU
    assert max(e.mi.mt1 for e in d.entries) <= 218
    assert len({(tuple(e.mi.encoding), e.lsu) for e in d.entries}) == len(d.entries)
    # data parallel: MT1 <= 109, GSU part of the entry
    dp = design(SKINNY, stream_k=False)
    assert max(e.mi.mt1 for e in dp.entries) <= 109
    top = dp.entries[0]  # 512x64: 32 x 2 tiles x GSU 4 = 256
    assert (top.mi.encoding, top.gsu) == ([16, 16, 32, 1, 1, 8, 4, 4, 1], 4)
    assert top.group_entry(stream_k=False)["GlobalSplitU"] == 4
    assert len({(tuple(e.mi.encoding), e.lsu) for e in dp.entries}) < len(dp.entries)


def test_design_tiny():
    d = design(TINY)
    # 16x16 tiles with one wave and LSU 4: 8*8*4 = 256 tiles -> granularity 1; 16x32 / 32x16 with
    # LSU 4: 128 tiles, 0.5 -- kept (best is 1.0 and M*N < 256^2: threshold 0.5); all else < 0.5
    assert [(e.mi.encoding, e.lsu, e.gran.total) for e in d.entries] == [
        ([16, 16, 32, 1, 1, 1, 1, 1, 1], 4, 1.0),
        ([16, 16, 32, 1, 1, 1, 2, 1, 1], 4, 0.5),
        ([16, 16, 32, 1, 1, 2, 1, 1, 1], 4, 0.5)]
    assert d.entries[0].group_entry(True) == {
        "MatrixInstruction": [16, 16, 32, 1, 1, 1, 1, 1, 1], "WorkGroup": [16, 4, 4]}


def test_filters():
    # 4x4 MFMA (I8 on gfx950) dropped when M, N >= 16, kept below
    big = design((1024, 1024, 1, 1024), gemm=I8II_TN)
    assert big.entries and all(e.mi.mi_m != 4 for e in big.entries)
    assert big.dropped["MI 4x4 with M, N >= 16"] > 0
    nofilter = design((1024, 1024, 1, 1024), gemm=I8II_TN, mi_filter=0)
    assert any(e.mi.mi_m == 4 for e in nofilter.entries)
    assert len(nofilter.entries) > len(big.entries)
    assert "MI 4x4 with M, N >= 16" not in design((8, 1024, 1, 1024), gemm=I8II_TN).dropped
    # non-4-wave shapes: dropped for M*N > 65536 with M, N >= 64 only
    assert {e.mi.waves for e in design((256, 512, 1, 1024)).entries} == {4}
    assert {e.mi.waves for e in design((256, 256, 1, 1024)).entries} != {4}
    # tiles larger than needed: M = 1 -> MT0 == 16 only (MT > 16 and MT/coe > dim)
    d = design((1, 163840, 1, 128))
    assert {e.mi.mt0 for e in d.entries} == {16}
    # < 4 total waves only with wave tile 1x1
    for e in design((256, 256, 1, 1024)).entries + d.entries:
        if e.mi.waves * e.lsu < 4:
            assert (e.mi.wave_tile_m, e.mi.wave_tile_n) == (1, 1)
    # MI_FILTER 1: level-1 only (no granularity thresholds)
    lvl1 = design(SQUARE, mi_filter=1)
    assert min(e.gran.total for e in lvl1.entries) < 0.85
    assert not any(key.startswith("level-2") for key in lvl1.dropped)
    # data parallel: the GSU workspace M*N*B*4*GSU stays within 128 MiB
    dp = design((2304, 1024, 1, 214336), stream_k=False)
    assert max(e.gsu for e in dp.entries) <= (128 << 20) // (2304 * 1024 * 4)  # 14
    # the GSU loop stops at the first granularity 1: no entry after a perfect GSU
    for e in design((2304, 1024, 1, 214336)).entries:
        for g in range(1, e.gsu):
            assert md.granularity(e.mi.mt0, e.mi.mt1, e.mi.waves, e.lsu, g,
                                  (2304, 1024, 1, 214336), 256).total < 1.0


def reference_design(size, stream_k, cus=256):
    """The selection written as the spec's plain loops (scalar), to check the vectorized one."""
    m, n, b, k = size
    mis = md.enumerate_mis("B", "gfx950", cbytes=4)
    g_max = max(k // 256, 1)
    if not stream_k:
        g_max = max(1, min(g_max, (128 << 20) // (m * n * b * 4)))
    cands = []
    for i, mi in enumerate(mis):
        for lsu in (1, 2, 4):
            if lsu > max(1, 4 // mi.waves):
                continue
            for gsu in range(1, g_max + 1):
                g = md.granularity(mi.mt0, mi.mt1, mi.waves, lsu, gsu, size, cus)
                cands.append((mi, lsu, gsu, g))
                if g.total == 1.0:
                    break

    def level1(c):
        mi, lsu, gsu, g = c
        coe, waves = (2 if stream_k else 1), mi.waves * lsu
        return not (
            (m >= 16 and n >= 16 and mi.mi_m == 4)
            or (m * n > 65536 and m >= 64 and n >= 64 and mi.waves != 4)
            or (mi.mt0 > 16 and mi.mt0 / coe > m) or (mi.mt1 > 16 and mi.mt1 / coe > n)
            or (waves < 4 and (mi.wave_tile_m > 1 or mi.wave_tile_n > 1))
            or (min(m, n) > 32 and waves < 4 and g.tiles_per_cu >= 2))

    cands = [c for c in cands if level1(c)]
    best = max(c[3].total for c in cands)
    if best == 1.0:
        thr = 0.85 if m * n >= 65536 else 0.5
        cands = [c for c in cands if c[3].total >= thr]
    if best > 0.2:
        cands = [c for c in cands if c[3].total >= 0.5 * best]
    min_rounds = min(c[3].rounds for c in cands)
    compute_bound = 1 / (1 / m + 1 / n + 1 / k) >= 256
    def extra(mi):
        big = mi.mt0 * mi.mt1 >= 65536
        return (1 if big else 2) if compute_bound else (3 if big else 5)
    cands = [c for c in cands if c[3].rounds <= min_rounds + extra(c[0])]
    cands.sort(key=lambda c: (c[3].rounds, round(1 - c[3].tiles_per_cu, 12),
                              round(1 - c[3].total, 12), -c[2]))
    out, seen = [], set()
    for mi, lsu, gsu, g in cands:
        if stream_k and (mi, lsu) in seen:
            continue
        seen.add((mi, lsu))
        out.append((mi.encoding, lsu, gsu))
    return out


@pytest.mark.parametrize("size", [TINY, (256, 256, 1, 1024), (1, 163840, 1, 128),
                                  (512, 2304, 1, 7680), (100, 3000, 3, 3000)])
@pytest.mark.parametrize("stream_k", [True, False])
def test_design_matches_plain_loops(size, stream_k):
    got = [(e.mi.encoding, e.lsu, e.gsu) for e in design(size, stream_k=stream_k).entries]
    assert got == reference_design(size, stream_k)


def test_mi_log(tmp_path):
    paths, out = run(tmp_path, sizes=[TINY, (16, 32, 1, 64)], MI_LOG=True)
    logs = sorted(p.name for p in (out / "MI_finder_log" / "BBS_TN").iterdir())
    assert logs == ["BBS_TN_M128_N128_B1_K128.log", "BBS_TN_M16_N32_B1_K64.log"]
    text = (out / "MI_finder_log" / "BBS_TN" / logs[0]).read_text()
    assert "[16 16 32 1 1 1 1 1 1]" in text and "selected: 3" in text
    _, out2 = run(tmp_path / "b", sizes=[TINY])
    assert not (out2 / "MI_finder_log").exists()  # only when asked


# --------------------------------------------------------------------------------------------
# fork parameters and kernel counting


def test_kernel_count_by_hand(tmp_path):
    (path,), _ = run(tmp_path, sizes=[TINY])  # gfx950 heuristic, TN, StreamK
    doc = load(path)
    f = forks(doc)
    # multi-valued: DepthU 4, GRVW A/B 2x2, WGM 3, VW A/B 2x2, PGR [1, 2] (prepended: MT < 64),
    # 1LDSBuffer 2 (M*N small), StreamKXCCMapping 2, UseSgprForGRO 2 (StreamK and TN); MI 3
    assert f["PrefetchGlobalRead"] == [1, 2] and f["1LDSBuffer"] == [0, 1]
    assert f["WorkGroupMapping"] == [6, 8, 1]  # 16 -> 1: MT0, MT1 <= 32
    assert f["DepthU"] == [32, 64, 128, 256]  # K <= 1024: no shift
    expected = 4 * 2 * 2 * 3 * 2 * 2 * 2 * 2 * 2 * 2 * 3
    assert expected == 9216
    assert f"# Total #kernels: {expected}" in path.read_text()
    n = 1
    for name, values in f.items():
        if name != "Groups":
            n *= len(values)
    for group in f["Groups"]:
        n *= len(group)
    assert n == expected
    space = pm.ParamSpace([pm.ForkParam("a", [1, 2, 3]), pm.ForkParam("b", [1, 2], active=False)],
                          [pm.Group([{"x": 1}, {"x": 2}]),
                           pm.Group([{"y": 1}] * 5, active=False)])
    assert space.count_kernels() == 6 and space.permutations() == 6


def test_heuristic_gfx950_profile():
    ctx = pm.SizeContext(BBS_NN, (8192, 8192, 1, 8192), "gfx950", 256, 8, 8, True, "B")
    sp = pm.heuristic_gfx950(ctx)
    v = {p.name: p.values for p in sp.params if p.active}
    assert v["DepthU"] == [32, 64, 128, 256] and v["DirectToVgprA"] == [False]
    assert v["GlobalReadVectorWidthA"] == [2, 8] and v["WaveSeparateGlobalReadA"] == [0]
    assert v["StorePriorityOpt"] == [True] and v["StoreSyncOpt"] == [4] and v["StaggerU"] == [8]
    assert v["1LDSBuffer"] == [1] and v["StreamK"] == [3] and v["StreamKXCCMapping"] == [0, 8]
    assert v["UseSgprForGRO"] == [-1] and v["UseCustomMainLoopSchedule"] == [0]  # no CMS groups
    assert v["GlobalSplitUAlgorithm"] == ["MultipleBuffer"] and v["PrefetchGlobalRead"] == [2]
    assert "ClusterLocalRead" not in v  # superseded by its group
    groups = [g.entries for g in sp.groups]
    assert groups == [[{"NonTemporalC": 4, "NonTemporalD": 4}],
                      [{"ClusterLocalRead": 0, "LDSTrInst": True},
                       {"ClusterLocalRead": 1, "LDSTrInst": False}]]
    # fp8, K > 100000, NT skinny: DepthU 1-byte list, WSGR [0, 2], NonTemporal on the long dim
    ctx = pm.SizeContext(F8BS_TN, (64, 20000, 1, 200000), "gfx950", 256, 8, 8, False, "F8")
    v = {p.name: p.values for p in pm.heuristic_gfx950(ctx).params if p.active}
    assert v["DepthU"] == [64, 128, 256, 512] and v["GlobalReadVectorWidthA"] == [4, 16]
    assert v["WaveSeparateGlobalReadB"] == [0, 2] and v["NonTemporalA"] == [0]
    assert v["VectorWidthA"] == [-1, 8] and v["StreamK"] == [0] and v["UseSgprForGRO"] == [-1]
    nt = pm.heuristic_gfx950(pm.SizeContext(F8BS_TN, (16, 20000, 1, 8192), "gfx950", 256, 8, 8,
                                            False, "F8"))
    assert nt.values("NonTemporalB") == [4] and nt.values("NonTemporalA") == [0]
    assert nt.values("PrefetchGlobalRead") == [1, 2]  # TN with K = 8192
    assert nt.groups[0].entries == [{"NonTemporalC": 0, "NonTemporalD": 0},
                                    {"NonTemporalC": 3, "NonTemporalD": 3}]  # max(M,N) >= 10000
    assert nt.groups[1].entries == [{"ClusterLocalRead": 0, "LDSTrInst": False}]  # TN
    s = pm.heuristic_gfx950(pm.SizeContext(SSS_NN, (3000, 3000, 1, 512), "gfx950", 256, 8, 8,
                                           True, "S"))
    assert s.values("DepthU") == [16, 32, 64, 128] and s.values("GlobalReadVectorWidthA") == [1, 4]
    assert s.values("VectorWidthA") == [-1] and s.values("NumElementsPerBatchStore") == [8]
    assert s.groups[1].entries == [{"ClusterLocalRead": 1, "LDSTrInst": False}]  # 4-byte
    stag = pm.heuristic_gfx950(pm.SizeContext(HHS_NT, (3000, 3000, 1, 512), "gfx950", 256, 8, 8,
                                              True, "H"))
    assert stag.values("StaggerU") == [32]  # NT, <= 4 bytes


def test_heuristic_postprocessing_gfx950(tmp_path):
    # K > 1024 with MT area < 64^2: DepthU shifted one step up; PGR 1 prepended; WGM 16 -> 1
    (path,), _ = run(tmp_path, sizes=[(16, 16, 1, 8192)])
    f = forks(load(path))
    assert f["DepthU"] == [64, 128, 256, 512]
    assert f["PrefetchGlobalRead"] == [1, 2, ]
    assert f["WorkGroupMapping"] == [6, 8, 1]
    # big tiles (MT0*MT1 >= MT_MAX/3) get MIArchVgpr: False
    (path,), _ = run(tmp_path / "sq", sizes=[SQUARE])
    groups = forks(load(path))["Groups"]
    for entry in groups[0]:
        mi = md.MI(*entry["MatrixInstruction"])
        assert ("MIArchVgpr" in entry) == (mi.mt0 * mi.mt1 >= 256 * 464 / 3)
        assert entry.get("MIArchVgpr", False) is False
    assert forks(load(path))["DepthU"] == [32, 64, 128, 256]  # no MT area < 64^2


def test_heuristic_gfx942_profile():
    ctx = pm.SizeContext(BBS_TN, SKINNY, "gfx942", 304, 8, 8, False, "B")
    sp = pm.heuristic_gfx942(ctx)
    v = {p.name: p.values for p in sp.params if p.active}
    # M*N = 1.75M > 32*32*304 but <= 128*128*304: class 1
    assert pm.gfx942_size_class(ctx) == 1
    assert v["DepthU"] == [32, 64, 128, 256]
    assert v["DirectToVgprA"] == [0, 1] and v["DirectToVgprB"] == [0, 1]  # TN: both TLU
    assert v["GlobalReadVectorWidthA"] == [8] and v["GlobalReadVectorWidthB"] == [8]
    assert v["NonTemporalA"] == [0, 4] and v["NonTemporalB"] == [0]  # min <= 256, max >= 4000
    assert v["WorkGroupMapping"] == [-1, -16]  # class 1: [1, 2u], u = XCC = 8; M > N: negative
    assert v["VectorWidthA"] == [1, 2, 4] and "VectorWidthB" not in v  # transB = N
    assert "UseCustomMainLoopSchedule" not in v and v["ClusterLocalRead"] == [0]
    assert [g.entries for g in sp.groups] == [[{"NonTemporalC": 0, "NonTemporalD": 0},
                                               {"NonTemporalC": 3, "NonTemporalD": 3}]]
    big = pm.SizeContext(BBS_NN, (8192, 8192, 1, 8192), "gfx942", 304, 8, 8, False, "B")
    v = {p.name: p.values for p in pm.heuristic_gfx942(big).params if p.active}
    assert v["DepthU"] == [32, 64] and v["WorkGroupMapping"] == [48]  # 8 * isqrt(304 // 8)
    assert v["DirectToVgprA"] == [0] and v["DirectToVgprB"] == [0, 1]  # NN: B is TLU
    assert v["GlobalReadVectorWidthA"] == [2, 8]
    small = pm.SizeContext(F8BS_TN, (64, 64, 1, 4), "gfx942", 304, 8, 8, False, "F8")
    v = {p.name: p.values for p in pm.heuristic_gfx942(small).params if p.active}
    assert v["DepthU"] == [128, 256, 512, 1024] and v["WorkGroupMapping"] == [1]
    assert v["GlobalReadVectorWidthA"] == [4]  # 16 B / 1 B = 16, capped by K = 4


def test_generic_profiles():
    g950 = pm.generic(pm.SizeContext(BBS_NN, TINY, "gfx950", 256, 8, 8, True, "B"))
    v = {p.name: p.values for p in g950.params if p.active}
    assert v["DepthU"] == [32, 64, 128, 256, 512, 1024]
    assert v["NumElementsPerBatchStore"] == [0, 2, 4, 8, 10, 12, 14, 16]
    assert v["WorkGroupMapping"] == [-48, -32, -24, -16, -8, -6, -4, -2, -1, 0, 2, 4, 6, 8, 16,
                                     24, 32, 48]
    assert v["WorkGroupMappingXCC"] == [1, 2, 4, 8, 16, 32]
    assert v["GlobalReadVectorWidthA"] == [-1, -2, 2, 3, 4, 6, 8]  # 2 bytes: 2..8
    assert v["StreamK"] == [3] and v["StreamKXCCMapping"] == [0, 4, 8]
    assert "ClusterLocalRead" not in v and "UsePLRPack" not in v and "DirectToVgprA" not in v
    active = [g for g in g950.groups if g.active]
    assert [g.entries for g in active] == [
        [{"DirectToLds": 0, "UseSgprForGRO": 0}, {"DirectToLds": 0, "UseSgprForGRO": 1},
         {"DirectToLds": 1, "UseSgprForGRO": 0}],
        [{"ClusterLocalRead": 0, "LDSTrInst": True}, {"ClusterLocalRead": 1, "LDSTrInst": False}]]
    assert len(g950.groups) == 4  # + two inactive groups
    tn = pm.generic(pm.SizeContext(XSS_TN, TINY, "gfx950", 256, 8, 8, False, "X"))
    v = {p.name: p.values for p in tn.params if p.active}
    assert v["ClusterLocalRead"] == [0, 1] and v["UsePLRPack"] == [0, 1]
    assert "StreamK" not in v and "StreamKXCCMapping" not in v
    assert v["GlobalReadVectorWidthA"] == [-1, -2, 1, 2, 3, 4]
    assert len([g for g in tn.groups if g.active]) == 1  # TN: no LDSTrInst group
    g942 = pm.generic(pm.SizeContext(BBS_NN, TINY, "gfx942", 304, 8, 8, False, "B"))
    v = {p.name: p.values for p in g942.params if p.active}
    assert v["WorkGroupMappingXCC"] == [1, 2, 4, 8, 16] and v["DirectToVgprA"] == [False, True]
    d942 = pm.generic(pm.SizeContext(DDD_NN, TINY, "gfx942", 304, 8, 8, False, "D"))
    assert d942.values("DepthU") == [8, 16, 32, 64, 128, 256]
    f8 = pm.generic(pm.SizeContext(F8BS_TN, TINY, "gfx950", 256, 8, 8, False, "F8"))
    assert f8.values("GlobalReadVectorWidthA") == [-1, -2, 4, 6, 8, 16]


def test_mt_du_override(tmp_path):
    (path,), _ = run(tmp_path, sizes=[SQUARE], MT_DU=[256, 256, 64])
    f = forks(load(path))
    assert f["DepthU"] == [64] and f["WorkGroupMapping"] == [0]
    assert f["WorkGroupMappingXCC"] == [-1] and f["StreamKXCCMapping"] == [0]
    assert f["NonTemporalA"] == [0] and f["NonTemporalB"] == [0]
    groups = f["Groups"]
    assert groups[1] == [{"NonTemporalC": 0, "NonTemporalD": 0}]
    mts = {(md.MI(*e["MatrixInstruction"]).mt0, md.MI(*e["MatrixInstruction"]).mt1)
           for e in groups[0]}
    assert mts == {(256, 256)} and len(groups[0]) == 6  # 2 MFMAs x 3 wave shapes


# --------------------------------------------------------------------------------------------
# timing: EnqueuesPerSync / NumWarmups


def test_enqueues_and_warmups():
    mt = 256 * 464
    # 4096^3: volume >= 1024*1024*8192 -> 10; M*N*B = 16.7M < MT_MAX*256*10 -> x2 (2 bytes)
    assert cf.enqueues_base(SQUARE, 2, mt, 256) == 20
    assert cf.timing([SQUARE], "tensile", 2, mt, 256) == (20, 20, 0)
    # Ductile: iters = round(431 - 12288*0.015) = round(246.68) = 247;
    # EnqueuesPerSync = int(0.75*247) = 185; NumWarmups = int(0.75*max(247, 185)) = 185
    assert cf.ductile_iters(SQUARE) == 247
    assert cf.timing([SQUARE], "ductile", 2, mt, 256) == (185, 185, 50)
    # 128^3: < 64*64*8192 -> 200, x2 -> 400; iters round(431 - 5.76) = 425 -> 318 / 318
    assert cf.timing([TINY], "tensile", 2, mt, 256) == (400, 400, 0)
    assert cf.timing([TINY], "ductile", 2, mt, 256) == (318, 318, 50)
    assert cf.enqueues_base(TINY, 1, mt, 256) == 700  # ceil(200 * 3.5)
    assert cf.enqueues_base(TINY, 4, 256 * 256, 256) == 200
    # 256^2 x 8192 is not < 256*256*8192 -> 20 (x2: 40); 64x64x8192 exactly -> 30 (x2: 60)
    assert cf.enqueues_base((256, 256, 1, 8192), 2, mt, 256) == 40
    assert cf.enqueues_base((64, 64, 1, 8192), 2, mt, 256) == 60
    # huge output: no multiplier; iters floor at 5: EPS int(0.75*10) = 7, warmups int(0.75*7) = 5
    big = (3352, 442368, 1, 488)
    assert cf.enqueues_base(big, 2, mt, 256) == 10 and cf.ductile_iters(big) == 5
    assert cf.timing([big], "ductile", 2, mt, 256) == (7, 5, 50)
    # batched: iters = round(428.12 / 8) = 54
    assert cf.ductile_iters((64, 64, 8, 64)) == 54
    # a config takes the maximum over its sizes
    assert cf.timing([big, SQUARE], "tensile", 2, mt, 256) == (20, 20, 0)
    assert cf.timing([big, TINY], "ductile", 2, mt, 256) == (318, 318, 50)


def test_enqueues_in_yaml(tmp_path):
    (t,), _ = run(tmp_path / "t", sizes=[SQUARE], backend="tensile")
    (d,), _ = run(tmp_path / "d", sizes=[SQUARE], backend="ductile")
    gt, gd = load(t)["GlobalParameters"], load(d)["GlobalParameters"]
    assert (gt["SleepPercent"], gt["EnqueuesPerSync"], gt["NumWarmups"]) == (0, 20, 20)
    assert (gd["SleepPercent"], gd["EnqueuesPerSync"], gd["NumWarmups"]) == (50, 185, 185)


# --------------------------------------------------------------------------------------------
# Ductile backend config


def test_pop_size_rule():
    assert [cf.pop_size(n) for n in (1, 2, 3, 4, 10, 511, 512, 10 ** 9)] == \
        [None, None, 3, 3, 9, 510, 512, 512]


def test_weights_cost_model():
    d = design(TINY)
    # costs: ceil(TPC) + (ceil(TPC) - TPC) + 1e-3 (1 - gran) [+ 1e-11 GSU tie-break]
    # entry 0: 1 + 0 + 0 = 1; entries 1, 2: 1 + 0.5 + 0.0005 = 1.5005 -> normalized by 1
    assert cf.mi_weights(d.entries, [TINY], 256) == [1.0, 1.5005, 1.5005]
    # two sizes: averaged per-size normalized costs; at 256^3 the 16x16 LSU4 tile has
    # 16*16*4 = 1024 tiles -> 4 rounds (cost 4), 16x32 512 tiles -> 2 (cost 2): 2.0, 1.0, 1.0
    w = cf.mi_weights(d.entries, [TINY, (256, 256, 1, 256)], 256)
    assert w == [pytest.approx((1.0 + 2.0) / 2), pytest.approx((1.5005 + 1.0) / 2),
                 pytest.approx((1.5005 + 1.0) / 2)]


# --------------------------------------------------------------------------------------------
# the written YAML


def _check_common(doc, gemm, sizes):
    assert list(doc) == ["GlobalParameters", "BenchmarkProblems", "LibraryLogic", "Backend"]
    g = doc["GlobalParameters"]
    assert g["MinimumRequiredVersion"] == "5.0.0" and g["KernelTime"] is True
    assert g["NumElementsToValidate"] == 0 and g["Device"] == 0 and g["RotatingBufferSize"] == 1024
    assert (g["DataInitTypeA"], g["DataInitTypeB"], g["DataInitTypeC"]) == (12, 13, 12)
    assert g["CSVExportWinner"] is True and g["PreciseKernelTime"] is False
    assert g["SkipSlowSolutionRatio"] == 0.0 and g["UseEffLike"] is False
    pt, sol = solution(doc)
    assert pt["OperationType"] == "GEMM" and pt["Batched"] is True and pt["UseBeta"] is True
    assert pt["TransposeA"] is (gemm.transA == "T") and pt["TransposeB"] is (gemm.transB == "T")
    assert list(sol) == ["InitialSolutionParameters", "BenchmarkCommonParameters",
                         "ForkParameters", "BenchmarkJoinParameters", "BenchmarkFinalParameters"]
    assert sol["InitialSolutionParameters"] is None
    assert sol["BenchmarkCommonParameters"] == [{"KernelLanguage": ["Assembly"]}]
    final = sol["BenchmarkFinalParameters"]
    assert final[0] == {"ProblemSizes": [{"Exact": list(s)} for s in sizes]}
    assert list(sol["ForkParameters"][-1]) == ["Groups"]
    return pt, sol


def test_yaml_ductile_gfx950(tmp_path):
    (path,), _ = run(tmp_path, sizes=[SKINNY], backend="ductile")
    assert path.name == "BBS_TN_0.yaml"
    doc = yaml.safe_load(path.read_text())
    pt, sol = _check_common(doc, BBS_TN, [SKINNY])
    assert pt == {"OperationType": "GEMM", "DataType": "B", "DestDataType": "B",
                  "ComputeDataType": "S", "HighPrecisionAccumulate": True, "TransposeA": True,
                  "TransposeB": False, "UseBeta": True, "Activation": True, "ActivationHPA": True,
                  "ActivationType": "hipblaslt_all", "UseScaleAlphaVec": 1, "UseBias": 1,
                  "Batched": True}
    assert sol["BenchmarkFinalParameters"][1] == {"BiasTypeArgs": ["B"]}
    f = forks(doc)
    assert list(f) == [
        "DepthU", "1LDSBuffer", "WaveSeparateGlobalReadA", "WaveSeparateGlobalReadB",
        "NumElementsPerBatchStore", "PrefetchGlobalRead", "PrefetchLocalRead", "SourceSwap",
        "StaggerU", "StaggerUStride", "StorePriorityOpt", "StoreSyncOpt", "WorkGroupMapping",
        "WorkGroupMappingXCC", "MIArchVgpr", "GlobalSplitUAlgorithm", "GlobalReadVectorWidthA",
        "GlobalReadVectorWidthB", "StreamK", "StreamKXCCMapping", "ClusterLocalRead",
        "NonTemporalA", "NonTemporalB", "NonTemporalC", "NonTemporalD", "TransposeLDS",
        "AdaptiveGemm", "TailloopInNll", "ExtraMiLatencyLeft", "ScheduleGROverBarrier",
        "DtlPlusLdsBuf", "UnrollLoopSwapGlobalReadOrder", "Groups"]
    assert f["SourceSwap"] == [False, True] and f["GlobalSplitUAlgorithm"] == ["MultipleBuffer"]
    mi_group, dtl_group = f["Groups"]
    assert dtl_group == [{"DirectToLds": 0, "UseSgprForGRO": 0},
                         {"DirectToLds": 0, "UseSgprForGRO": 1},
                         {"DirectToLds": 1, "UseSgprForGRO": 0}]
    assert mi_group[0] == {"MatrixInstruction": [16, 16, 32, 1, 1, 8, 7, 4, 1]}  # StreamK: no GSU
    assert all("GlobalSplitU" not in e for e in mi_group)
    assert len(mi_group) == len(design(SKINNY).entries)
    assert doc["LibraryLogic"] == {"ScheduleName": "gfx950", "ArchitectureName": "gfx950",
                                   "DeviceNames": ["Device 75a0"]}
    backend = doc["Backend"]
    assert backend["Name"] == "Ductile"
    config = backend["Config"]
    assert config["soo"] is False and config["n_elements_to_validate"] == 128
    assert config["pop_size"] == 512  # generic space: far more than 512 permutations
    (weights,) = config["weights"]
    assert list(weights) == ["group_0"] and len(weights["group_0"]) == len(mi_group)
    assert min(weights["group_0"]) == 1.0 and weights["group_0"][0] == 1.0


def test_yaml_tensile_gfx950_and_text(tmp_path):
    (path,), _ = run(tmp_path, sizes=[SKINNY], backend="tensile")
    text = path.read_text()
    lines = text.splitlines()
    assert lines[:7] == [
        "#==================================",
        "# This yaml is auto-generated by geko_lib.tuning (layout of geko.config_generator).",
        "# Version: 2.01", "# GEMM Type: BBS_TN",
        f"# Total #kernels: {int(lines[4].split(':')[1])}",
        "#==================================", ""]
    assert lines[-1] == "# End of BBS_TN_0.yaml "
    assert "    HighPrecisionAccumulate: true" in lines and "    TransposeA: True" in lines
    assert "    #ComplexConjugateA: True" in lines and "    #ComplexConjugateB: False" in lines
    assert "      - Exact: [ 16032, 109, 1, 16384 ]" in lines
    assert "#     - ClusterLocalRead: [0] # inactive: set by the ClusterLocalRead/LDSTrInst group" \
        in lines
    assert any(ln.startswith('    - GlobalSplitUAlgorithm: ["MultipleBuffer"] # Default Value: ')
               for ln in lines)
    assert any(ln.startswith("    - DirectToVgprA: [False] # Default Value: False # Range: ")
               for ln in lines)
    assert lines[lines.index("LibraryLogic:") + 1:lines.index("LibraryLogic:") + 5] == [
        '  ScheduleName: "gfx950"', '  ArchitectureName: "gfx950"',
        '  DeviceNames: ["Device 75a0"]', "#LibraryClient: "]
    assert lines[-3:-1] == ["Backend:", "  Name: Tensile"]
    assert re.search(r"^      - - MatrixInstruction: \[16, 16, 32, 1, 1, 8, 7, 4, 1\] #MT 512x112 "
                     r"- TT 8x112 - GSU 8 - LSU 1 - totalGranularity 0\.9523", text, re.M)
    doc = yaml.safe_load(text)
    pt, sol = _check_common(doc, BBS_TN, [SKINNY])
    f = forks(doc)
    assert list(f) == [
        "DepthU", "DirectToVgprA", "DirectToVgprB", "GlobalReadVectorWidthA",
        "GlobalReadVectorWidthB", "WaveSeparateGlobalReadA", "WaveSeparateGlobalReadB",
        "NonTemporalA", "NonTemporalB", "WorkGroupMapping", "VectorWidthA", "VectorWidthB",
        "MIArchVgpr", "PrefetchLocalRead", "SourceSwap", "WorkGroupMappingXCC",
        "GlobalSplitUAlgorithm", "LocalReadVectorWidth", "StorePriorityOpt", "StoreSyncOpt",
        "StaggerU", "NumElementsPerBatchStore", "1LDSBuffer", "StreamK", "StreamKXCCMapping",
        "UseSgprForGRO", "UseCustomMainLoopSchedule", "PrefetchGlobalRead", "Groups"]
    # skinny: larger dim M > 1024, N = 109 not < 32 -> NonTemporalA [0]; K = 16384 TN -> PGR [1, 2]
    assert f["NonTemporalA"] == [0] and f["PrefetchGlobalRead"] == [1, 2]
    assert f["UseSgprForGRO"] == [0, 1] and f["StorePriorityOpt"] == [False]
    mi_group, ntcd, lds = f["Groups"]
    assert ntcd == [{"NonTemporalC": 0, "NonTemporalD": 0}, {"NonTemporalC": 3, "NonTemporalD": 3}]
    assert lds == [{"ClusterLocalRead": 0, "LDSTrInst": False}]
    assert doc["Backend"] == {"Name": "Tensile"}
    kernels = 1
    for values in list(f.values())[:-1]:
        kernels *= len(values)
    kernels *= len(mi_group) * len(ntcd) * len(lds)
    assert f"# Total #kernels: {kernels}" in lines


def test_yaml_gfx942_tensile(tmp_path):
    (path,), _ = run(tmp_path, sizes=[SKINNY], arch="gfx942_80cu", backend="tensile")
    doc = load(path)
    _check_common(doc, BBS_TN, [SKINNY])
    assert doc["LibraryLogic"] == {"ScheduleName": "aquavanjaram", "ArchitectureName": "gfx942",
                                   "DeviceNames": ["Device 0049", "Device 0050"]}
    f = forks(doc)
    assert f["StreamK"] == [0]  # gfx942 default: StreamK off
    assert "UseCustomMainLoopSchedule" not in f and "VectorWidthB" not in f
    assert "#     - VectorWidthB: [1, 2, 4] # inactive: only for transB = T" in path.read_text()
    # 80 CUs: M*N = 1.75M > 128*128*80 -> class 2 -> [2u, 4u] with u = XCC = 4; M > N: negative
    assert f["WorkGroupMapping"] == [-8, -16]
    mi_group = f["Groups"][0]
    assert any("GlobalSplitU" in e for e in mi_group)  # data parallel: GSU in the entries
    assert all(e["MatrixInstruction"][:4] in ([16, 16, 16, 1], [32, 32, 8, 1]) for e in mi_group)


def test_problem_type_variants(tmp_path):
    def pt_of(gemm, **options):
        (path,), _ = run(tmp_path / gemm.name / str(len(options)), gemm=gemm, sizes=[TINY],
                         **options)
        doc = yaml.safe_load(path.read_text())
        return solution(doc)[0], solution(doc)[1]["BenchmarkFinalParameters"], path.read_text()

    pt, final, _ = pt_of(XSS_TN)
    assert (pt["DataType"], pt["DestDataType"], pt["ComputeDataType"]) == ("S", "S", "S")
    assert pt["F32XdlMathOp"] == "X" and pt["HighPrecisionAccumulate"] is False
    assert final[1] == {"BiasTypeArgs": ["S"]}
    pt, final, _ = pt_of(F8BS_TN)
    assert pt["DataType"] == "F8" and pt["UseScaleAB"] == "Scalar"
    assert final[1] == {"BiasTypeArgs": ["B"]}  # fp8 data: the destination type
    pt, final, _ = pt_of(F8B8SS_TN)
    assert pt["DataType"] == "F8B8" and final[1] == {"BiasTypeArgs": ["S"]}  # both fp8-ish
    pt, final, _ = pt_of(HHS_NT)
    assert "UseScaleAB" not in pt and final[1] == {"BiasTypeArgs": ["H"]}
    # epilogues off: the five epilogue keys commented, no BiasTypeArgs
    pt, final, text = pt_of(BBS_TN, EPILOGUES=False)
    for key in ("Activation", "ActivationHPA", "ActivationType", "UseScaleAlphaVec", "UseBias"):
        assert key not in pt and f"    #{key}: " in text
    assert len(final) == 1
    pt, final, _ = pt_of(DDD_NN)  # DGEMM: no epilogues either
    assert "UseBias" not in pt and len(final) == 1
    assert pt["HighPrecisionAccumulate"] is False
    _, _, text = pt_of(I8II_TN)
    assert "  DataInitTypeA: 3" in text and "  DataInitTypeB: 3" in text


def test_pop_size_in_yaml(tmp_path):
    # heuristic space with the Ductile backend and MT_DU: few permutations
    (path,), _ = run(tmp_path, gemm=SSS_NN, sizes=[SQUARE], backend="ductile",
                     search_space="heuristic", StreamK=False, MT_DU=[256, 256, 32],
                     GA_VALIDATION_PROFILE=0)
    doc = load(path)
    f = forks(doc)
    n = 1
    for name, values in f.items():
        if name != "Groups" and len(values) > 1:
            n *= len(values)
    for group in f["Groups"]:
        if len(group) > 1:
            n *= len(group)
    config = doc["Backend"]["Config"]
    assert 3 < n < 512 and config["pop_size"] == n - 1 == cf.pop_size(n)
    assert config["n_elements_to_validate"] == 0
    mi_group = f["Groups"][0]
    assert len(mi_group) > 1 and len(config["weights"][0]["group_0"]) == len(mi_group)
    # one MI entry (MT 256x272 is reachable by the [4,1] wave shape only): no weights, the group
    # is a constant for the GA
    (path,), _ = run(tmp_path / "one", sizes=[SQUARE], backend="ductile", MT_DU=[256, 272, 64],
                     MFMA=[[16, 16, 32, 1]])
    doc = load(path)
    assert forks(doc)["Groups"][0] == [{"MatrixInstruction": [16, 16, 32, 1, 1, 4, 17, 4, 1]}]
    assert "weights" not in doc["Backend"]["Config"]
    assert "weights:" not in path.read_text()


def test_golden_tiny_tensile(tmp_path):
    (path,), _ = run(tmp_path, sizes=[TINY])
    assert path.read_text() == (DATA / "BBS_TN_128_gfx950_tensile.yaml").read_text()


# --------------------------------------------------------------------------------------------
# clustering and merging


SMALL_SIZES = [(256, 256, 1, 1024), TINY, (1024, 1024, 1, 1024), (16, 16, 1, 128)]


def test_one_size_per_config(tmp_path):
    paths, out = run(tmp_path, sizes=SMALL_SIZES + [TINY])  # duplicate dropped
    assert [p.name for p in paths] == [f"BBS_TN_{i}.yaml" for i in range(4)]
    for p, size in zip(paths, SMALL_SIZES):
        assert solution(load(p))[1]["BenchmarkFinalParameters"][0]["ProblemSizes"] == \
            [{"Exact": list(size)}]
    log = (tmp_path / "Config_BBS_TN.log").read_text()
    assert "BBS_TN_0\n#kernels " in log
    assert "# MIs for (128, 128, 1, 128): 3" in log
    # a rerun with fewer sizes removes the stale files
    paths2, _ = run(tmp_path, sizes=[TINY])
    assert sorted(p.name for p in out.iterdir()) == ["BBS_TN_0.yaml"]


def test_cluster_all_in_one(tmp_path):
    paths, _ = run(tmp_path, sizes=SMALL_SIZES, ONE_SIZE_PER_CONFIG=False, CLUSTER=0)
    assert len(paths) == 1
    doc = load(paths[0])
    sizes = [e["Exact"] for e in solution(doc)[1]["BenchmarkFinalParameters"][0]["ProblemSizes"]]
    assert sizes == [list(s) for s in SMALL_SIZES]  # CLUSTER 0 keeps input order
    # merged: union of MI entries of all sizes, union of list values (order kept)
    singles = [design(s) for s in SMALL_SIZES]
    f = forks(doc)
    encodings = {tuple(e["MatrixInstruction"]) + (tuple(e.get("WorkGroup", ())),)
                 for e in f["Groups"][0]}
    for d in singles:
        for e in d.entries:
            wg = (e.mi.wg0, e.mi.wg1, e.lsu) if e.lsu > 1 else ()
            assert tuple(e.mi.encoding) + (wg,) in encodings
    assert f["1LDSBuffer"] == [0, 1]
    assert f["PrefetchGlobalRead"] == [1, 2]  # [1, 2] from the small sizes
    assert f["DepthU"] == [32, 64, 128, 256]
    g = doc["GlobalParameters"]
    assert g["EnqueuesPerSync"] == 400  # max over sizes (128^3 and 16^2x128: 400)


def test_cluster_by_top_mi(tmp_path):
    sizes = [SQUARE, (2048, 8192, 1, 4096), (8192, 2048, 1, 1024), TINY]
    plans = [cf.plan_size(BBS_TN, s, cf.resolve_settings("gfx950", "tensile"),
                          md.enumerate_mis("B", "gfx950", None, 4), "B") for s in sizes]
    keys = [cf.cluster_key(p) for p in plans]
    assert keys[0] == (128, 512, 1, 1) and keys[3] == (16, 16, 4, 1)
    paths, _ = run(tmp_path, sizes=sizes, ONE_SIZE_PER_CONFIG=False, CLUSTER=1)
    got = [[tuple(e["Exact"]) for e in
            solution(load(p))[1]["BenchmarkFinalParameters"][0]["ProblemSizes"]] for p in paths]
    expect: dict = {}
    for s, k in zip(sizes, keys):
        expect.setdefault(k, []).append(s)
    assert got == [sorted(v, key=lambda s: (s[0] * s[1], s[0], s[1])) for v in expect.values()]


def test_kernel_cap_splits_and_truncates(tmp_path):
    settings = cf.resolve_settings("gfx950", "tensile")
    mis = md.enumerate_mis("B", "gfx950", None, 4)
    plans = [cf.plan_size(BBS_TN, s, settings, mis, "B") for s in SMALL_SIZES]
    counts = [p.space.count_kernels() for p in plans]
    cap = max(counts)  # every size fits alone, not all together
    paths, _ = run(tmp_path, sizes=SMALL_SIZES, ONE_SIZE_PER_CONFIG=False, CLUSTER=0,
                   MAX_NUM_KERNELS_PER_CONFIG=cap)
    assert 1 < len(paths) <= len(SMALL_SIZES)
    seen = []
    for p in paths:
        doc = load(p)
        n = int(re.search(r"# Total #kernels: (\d+)", p.read_text()).group(1))
        assert n <= cap
        seen += [tuple(e["Exact"]) for e in
                 solution(doc)[1]["BenchmarkFinalParameters"][0]["ProblemSizes"]]
    assert seen == SMALL_SIZES
    # a cap below one size's count: the MI group is truncated to cap // kernels_without_MI
    big = plans[2]  # 1024^3
    rest = big.space.count_without_mi()
    (path,), _ = run(tmp_path / "trunc", sizes=[SMALL_SIZES[2]],
                     MAX_NUM_KERNELS_PER_CONFIG=rest * 5 + 1)
    mi_group = forks(load(path))["Groups"][0]
    assert len(mi_group) == 5
    assert [e["MatrixInstruction"] for e in mi_group] == \
        [e["MatrixInstruction"] for e in big.space.mi_group.entries[:5]]
    (path,), _ = run(tmp_path / "trunc1", sizes=[SMALL_SIZES[2]], MAX_NUM_KERNELS_PER_CONFIG=1)
    assert len(forks(load(path))["Groups"][0]) == 1  # at least one MI


def test_generic_ignores_cap(tmp_path):
    paths, _ = run(tmp_path, sizes=SMALL_SIZES, backend="ductile", ONE_SIZE_PER_CONFIG=False,
                   MAX_NUM_KERNELS_PER_CONFIG=1000)
    assert len(paths) == 1
    config = load(paths[0])["Backend"]["Config"]
    mi_group = forks(load(paths[0]))["Groups"][0]
    assert len(config["weights"][0]["group_0"]) == len(mi_group)


# --------------------------------------------------------------------------------------------
# sizes without MI, errors, gemms table


def test_sizes_without_mi_are_logged(tmp_path):
    # only the 4x4 MFMA allowed: dropped for M, N >= 16 -> no candidate; 8x8 has none either
    # (MT1 = 64 * waveTileN * waveN, 64 / 2 > 8); 8x32 keeps it (M < 16, 64 / 2 <= 32)
    paths, _ = run(tmp_path, sizes=[(1024, 1024, 1, 1024), (8, 8, 1, 128), (8, 32, 1, 128)],
                   MFMA=[[4, 4, 4, 16]])
    assert [p.name for p in paths] == ["BBS_TN_0.yaml"]
    assert solution(load(paths[0]))[1]["BenchmarkFinalParameters"][0]["ProblemSizes"] == \
        [{"Exact": [8, 32, 1, 128]}]
    log = (tmp_path / "Config_BBS_TN.log").read_text()
    assert "# MIs for (1024, 1024, 1, 1024): 0" in log
    assert "# MIs for (8, 8, 1, 128): 0" in log and "# MIs for (8, 32, 1, 128): 0" not in log
    # every size lacking MIs: no YAML at all, still a log
    paths, _ = run(tmp_path / "none", sizes=[(1024, 1024, 1, 1024)], MFMA=[[4, 4, 4, 16]])
    assert paths == [] and "(1024, 1024, 1, 1024): 0" in \
        (tmp_path / "none" / "Config_BBS_TN.log").read_text()
    # M = N = 6: 16x16 tiles pass every filter (MT > 16 is required to be "too large")
    paths, _ = run(tmp_path / "six", sizes=[(6, 6, 1, 128)])
    assert len(paths) == 1


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="unsupported architecture"):
        run(tmp_path, arch="gfx90a")
    with pytest.raises(ValueError, match="gfx1250 family .* not supported by geko"):
        run(tmp_path, arch="gfx1250")  # newer GEKO revisions' arch: refused by name
    with pytest.raises(ValueError, match="not supported on gfx950"):
        run(tmp_path, gemm=GemmType("T", "N", "f8_fnuz_r", "f8_fnuz_r", "bf16_r", "bf16_r",
                                    "c_f32_r"))
    with pytest.raises(ValueError, match="F4"):
        run(tmp_path, gemm=GemmType("T", "N", "f4_r", "f4_r", "bf16_r", "bf16_r", "c_f32_r"))
    with pytest.raises(ValueError, match="mixed input types"):
        run(tmp_path, gemm=GemmType("T", "N", "bf16_r", "f16_r", "bf16_r", "bf16_r", "c_f32_r"))
    with pytest.raises(ValueError, match="not supported on gfx942"):
        run(tmp_path, arch="gfx942", gemm=GemmType("N", "N", "f32_c", "f32_c", "f32_c", "f32_c",
                                                     "f32_c"))
    with pytest.raises(ValueError, match="backend"):
        run(tmp_path, backend="hipblaslt")
    with pytest.raises(ValueError, match="unknown tuning-config option"):
        run(tmp_path, NOT_AN_OPTION=1)
    with pytest.raises(ValueError, match="MI_FILTER"):
        run(tmp_path, MI_FILTER=3)
    with pytest.raises(ValueError, match="subtile"):
        run(tmp_path, search_space="subtile")
    with pytest.raises(ValueError, match="positive integer"):
        run(tmp_path, sizes=[(0, 16, 1, 16)])
    with pytest.raises(ValueError, match=r"\[M, N, B, K\]"):
        run(tmp_path, sizes=[(16, 16, 16)])
    assert not (tmp_path / "optimizations").exists()


def test_configs_from_gemms():
    rows = [
        dict(transA="T", transB="N", batch_count=1, m=4096, n=4096, k=4096, a_type="bf16_r",
             b_type="bf16_r", c_type="bf16_r", d_type="bf16_r", compute_type="c_f32_r"),
        dict(transA="N", transB="N", batch_count=2, m=128, n=64, k=32, a_type="f16_r",
             b_type="f16_r", c_type="f16_r", d_type="f16_r", compute_type="c_f32_r"),
        dict(transA="T", transB="N", batch_count=1, m=16032, n=109, k=16384, a_type="bf16_r",
             b_type="bf16_r", c_type="bf16_r", d_type="bf16_r", compute_type="f32_r"),
        dict(transA="T", transB="N", batch_count=1, m=4096, n=4096, k=4096, a_type="bf16_r",
             b_type="bf16_r", c_type="bf16_r", d_type="bf16_r", compute_type="c_f32_r"),
    ]
    out = cf.configs_from_gemms(pd.DataFrame(rows))
    assert [(t.name, sizes) for t, sizes in out] == [
        ("BBS_TN", [(4096, 4096, 1, 4096), (16032, 109, 1, 16384)]),
        ("HHS_NN", [(128, 64, 2, 32)])]
    assert out[0][0] == BBS_TN


# --------------------------------------------------------------------------------------------
# the 17-size generator fixture end to end


@pytest.fixture(scope="module")
def fixture_config():
    if not FIXTURE.exists():
        pytest.skip("tests/fixtures/geko_test_data absent")
    return yaml.safe_load(FIXTURE.read_text())


@pytest.mark.parametrize("arch,backend", [("gfx950", "ductile"), ("gfx950", "tensile"),
                                          ("gfx942", "tensile")])
def test_fixture_end_to_end(tmp_path, fixture_config, arch, backend):
    c = fixture_config
    gemm = GemmType.from_tensile(c["TRANSA"], c["TRANSB"], c["DataType"], c["DestDataType"],
                                 c["ComputeDataType"])
    assert gemm.name == "BBS_NN" and len(c["Sizes"]) == 17
    unique = list(dict.fromkeys(tuple(s) for s in c["Sizes"]))
    assert len(unique) == 16
    out = tmp_path / "optimizations"
    paths = cf.configure(gemm, c["Sizes"], arch, backend, None, out)
    log = (tmp_path / "Config_BBS_NN.log").read_text()
    covered = []
    for i, p in enumerate(paths):
        assert p.name == f"BBS_NN_{i}.yaml"
        doc = load(p)
        pt, sol = _check_common(doc, gemm, [tuple(e["Exact"]) for e in
                                            solution(doc)[1]["BenchmarkFinalParameters"][0]
                                            ["ProblemSizes"]])
        sizes = [tuple(e["Exact"]) for e in sol["BenchmarkFinalParameters"][0]["ProblemSizes"]]
        assert len(sizes) == 1  # one size per config by default
        covered += sizes
        kernels = int(re.search(r"# Total #kernels: (\d+)", p.read_text()).group(1))
        assert f"BBS_NN_{i}\n#kernels {kernels}\n" in log
        assert doc["Backend"]["Name"] == backend.capitalize()
        mi_group = forks(doc)["Groups"][0]
        assert mi_group
        if backend == "ductile":
            w = doc["Backend"]["Config"].get("weights")
            assert (w is not None) == (len(mi_group) > 1)
            if w:
                assert len(w[0]["group_0"]) == len(mi_group)
        else:
            assert kernels <= 180_000_000
    for size in unique:
        m = re.search(rf"# MIs for \({size[0]}, {size[1]}, {size[2]}, {size[3]}\): (\d+)", log)
        assert m, size
        assert (size in covered) == (int(m.group(1)) > 0)
    assert sorted(covered) == sorted(s for s in unique if s in covered)
    assert len(covered) + log.count("): 0") == len(unique)
