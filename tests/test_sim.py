"""geko_lib.platforms.sim: the analytic GPU model behind the no-GPU workflow."""

import itertools

import numpy as np
import pandas as pd
import pytest
import yaml

from geko_lib import library, platforms, search
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms import RESULT_COLUMNS, VERIFY_COLUMNS, PlatformError
from geko_lib.platforms import sim

from .conftest import ROOT

LLAMA = ROOT / "config" / "workloads" / "llama3_8b_serving.yaml"

BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
HHS_NN = GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")
SSS_NT = GemmType("N", "T", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r")


def platform(**kw):
    return sim.SimPlatform(sim.arch_by_name(kw.pop("arch", "gfx950")), **kw)


def llama_problems():
    rows = yaml.safe_load(LLAMA.read_text())
    return list(dict.fromkeys(GemmProblem.from_row(r) for r in rows))


SMALL = [GemmProblem(BBS_TN, 4096, 8, 1, 4096), GemmProblem(BBS_TN, 1024, 1024, 1, 1024),
         GemmProblem(HHS_NN, 512, 2048, 4, 256)]


# --------------------------------------------------------------------------------------------
# catalogue

def test_catalogue_stable():
    a = sim.catalogue(BBS_TN)
    fresh = sim.catalogue.__wrapped__(GemmType("t", "n", "bf16_r", "bf16_r", "bf16_r", "bf16_r",
                                               "f32_r"))
    assert fresh is not a
    assert np.array_equal(a.index, fresh.index)
    assert a.names == fresh.names
    for field in ("mt0", "mt1", "du", "gsu", "wgm", "quality", "seeds"):
        assert np.array_equal(getattr(a, field), getattr(fresh, field)), field


def test_catalogue_contents():
    cat = sim.catalogue(BBS_TN)
    assert len(cat) == len(set(cat.names)) == len(set(cat.index.tolist()))
    assert len(cat) >= 100
    assert np.array_equal(cat.index, cat.index[0] + np.arange(len(cat)))  # a contiguous block
    assert all(name.startswith("Cijk_Alik_Bljk_BBS_BH_") for name in cat.names)
    assert ((cat.quality > 0.9) & (cat.quality < 1.1)).all()
    for pos in (0, len(cat) // 2, len(cat) - 1):
        params = cat.params(pos)
        assert params["SolutionIndex"] == int(cat.index[pos])
        assert cat.position(params["SolutionIndex"]) == pos
        assert params["MacroTile0"] == cat.mt0[pos] and params["GlobalSplitU"] == cat.gsu[pos]
        assert params["SolutionNameMin"] == cat.names[pos]
    with pytest.raises(PlatformError):
        cat.position(int(cat.index[-1]) + 1)
    with pytest.raises(PlatformError):
        cat.position(int(cat.index[0]) - 1)


def test_catalogue_index_ranges_disjoint_across_types():
    combos = [("bf16_r", "bf16_r", "c_f32_r"), ("f16_r", "f16_r", "c_f32_r"),
              ("f32_r", "f32_r", "c_f32_r"), ("f32_r", "f32_r", "c_xf32_r"),
              ("f8_r", "bf16_r", "c_f32_r"), ("f8_r", "f16_r", "c_f32_r"),
              ("f16_r", "f32_r", "c_f32_r"), ("bf16_r", "f32_r", "c_f32_r"),
              ("f64_r", "f64_r", "c_f64_r"), ("f16_r", "f16_r", "f16_r")]
    types = [GemmType(ta, tb, a, a, c, c, comp)
             for a, c, comp in combos for ta, tb in itertools.product("NT", "NT")]
    ranges = []
    for t in types:
        cat = sim.catalogue(t)
        ranges.append((int(cat.index.min()), int(cat.index.max()), t.name))
    ranges.sort()
    for (_, hi, name), (lo, _, other) in zip(ranges, ranges[1:]):
        assert hi < lo, f"{name} and {other} share solution indices"


def test_position_of_other_type_index_is_rejected():
    other = sim.catalogue(HHS_NN)
    with pytest.raises(PlatformError):
        sim.catalogue(BBS_TN).position(int(other.index[0]))


# --------------------------------------------------------------------------------------------
# timing model

def rows_of(cat, **params):
    mask = np.ones(len(cat), dtype=bool)
    for key, value in params.items():
        mask &= getattr(cat, key) == value
    return np.flatnonzero(mask)


@pytest.mark.parametrize("arch", ["gfx950", "gfx942", "h200"])
@pytest.mark.parametrize("smooth", [True, False])
def test_larger_k_costs_more(arch, smooth):
    a = sim.arch_by_name(arch)
    cat = sim.catalogue(BBS_TN)
    rows = rows_of(cat, mt0=256, mt1=256, gsu=1, wgm=8)
    for k in (1024, 4096):
        t1 = sim.model_us(a, GemmProblem(BBS_TN, 4096, 4096, 1, k), cat, rows, smooth=smooth)
        t4 = sim.model_us(a, GemmProblem(BBS_TN, 4096, 4096, 1, 4 * k), cat, rows,
                          smooth=smooth)
        assert (t4 > 2.0 * t1).all()


def test_bigger_problem_never_faster_for_a_solution():
    a = sim.arch_by_name("gfx950")
    cat = sim.catalogue(BBS_TN)
    small = sim.model_us(a, GemmProblem(BBS_TN, 2048, 2048, 1, 2048), cat, smooth=True)
    large = sim.model_us(a, GemmProblem(BBS_TN, 8192, 8192, 1, 8192), cat, smooth=True)
    assert (large > small).all()
    assert (small >= a.launch_us).all()


def test_split_k_wins_on_tiny_n_huge_k():
    a = sim.arch_by_name("gfx950")
    cat = sim.catalogue(BBS_TN)
    problem = GemmProblem(BBS_TN, 256, 8, 1, 65536)
    for smooth in (True, False):
        us = sim.model_us(a, problem, cat, smooth=smooth)
        assert us[cat.gsu > 1].min() < us[cat.gsu == 1].min()
        # the same tile gets faster with more splits
        tile = [us[rows_of(cat, mt0=64, mt1=16, du=int(np.unique(cat.du)[1]), wgm=8, gsu=g)][0]
                for g in (1, 4, 16)]
        assert tile[0] > tile[1] > tile[2]


def test_model_rows_subset_matches_full():
    a = sim.arch_by_name("gfx950")
    cat = sim.catalogue(BBS_TN)
    problem = GemmProblem(BBS_TN, 1000, 3000, 2, 700)
    full = sim.model_us(a, problem, cat)
    rows = np.array([3, 17, 400])
    assert np.allclose(sim.model_us(a, problem, cat, rows), full[rows])
    assert np.isfinite(full).all() and (full > 0).all()


# --------------------------------------------------------------------------------------------
# determinism and noise

def test_two_instances_identical(tmp_path):
    problems = SMALL
    a, b = platform(), platform()
    pd.testing.assert_frame_equal(a.bench(problems, tmp_path, 0), b.bench(problems, tmp_path, 0))
    pd.testing.assert_frame_equal(a.search(problems, tmp_path, 0),
                                  b.search(problems, tmp_path, 0))


def test_seeded_noise(tmp_path):
    problems = SMALL
    quiet = platform().search(problems, tmp_path, 0)
    n1 = platform(noise=0.05, seed=1).search(problems, tmp_path, 0)
    n1_again = platform(noise=0.05, seed=1).search(problems, tmp_path, 0)
    n2 = platform(noise=0.05, seed=2).search(problems, tmp_path, 0)
    pd.testing.assert_frame_equal(n1, n1_again)
    assert not np.allclose(n1["us"], quiet["us"])
    assert not np.allclose(n1["us"], n2["us"])
    assert list(n1["solution_index"]) == list(quiet["solution_index"])
    ratio = n1["us"] / quiet["us"]
    assert ratio.between(0.5 - 1e-3, 1.5 + 1e-3).all()
    assert abs(float(np.log(ratio).mean())) < 0.02  # unbiased-ish
    bench = platform(noise=0.05, seed=1).bench(problems, tmp_path, 0)
    pd.testing.assert_frame_equal(bench, platform(noise=0.05, seed=1).bench(problems, tmp_path, 0))


# --------------------------------------------------------------------------------------------
# search vs the default heuristic

def test_search_beats_or_matches_default_on_llama(tmp_path):
    problems = llama_problems()
    assert len(problems) == 45
    p = platform()
    table = p.search(problems, tmp_path, 0)
    bench = p.bench(problems, tmp_path, 0)
    assert len(bench) == len(problems)
    keys = ["m", "n", "batch_count", "k"]
    counts = table.groupby(keys).size()
    assert len(counts) == len(problems)
    assert counts.min() >= 50
    best = table.groupby(keys)["us"].min()
    default = bench.set_index(keys)["us"]
    assert (best <= default.loc[best.index] + 1e-9).all()
    assert (best < default.loc[best.index] * 0.99).sum() >= 5
    # the default solution is itself one of the searched candidates
    merged = bench.merge(table, on=keys + ["solution_index"], suffixes=("", "_search"))
    assert len(merged) == len(problems)
    assert np.allclose(merged["us"], merged["us_search"])


# --------------------------------------------------------------------------------------------
# numerics

@pytest.mark.parametrize("t", [BBS_TN, HHS_NN, SSS_NT], ids=lambda t: t.name)
@pytest.mark.parametrize("du, gsu", [(64, 1), (32, 4), (128, 16)])
def test_emulated_error_small_for_healthy_kernels(t, du, gsu):
    problem = GemmProblem(t, 64, 64, 1, 2048)
    error = sim.emulated_error(problem, du, gsu, faulty=False, seed=0)
    assert 0.0 <= error < 0.01


@pytest.mark.parametrize("t", [BBS_TN, HHS_NN, SSS_NT], ids=lambda t: t.name)
@pytest.mark.parametrize("k", [64, 1024, 4096])
def test_emulated_error_large_for_faulty_kernels(t, k):
    problem = GemmProblem(t, 64, 64, 1, k)
    assert sim.emulated_error(problem, 64, 1, faulty=True, seed=0) > 0.03


def test_emulated_error_deterministic():
    problem = GemmProblem(BBS_TN, 32, 16, 1, 512)
    assert sim.emulated_error(problem, 64, 2, False, 5) == sim.emulated_error(problem, 64, 2,
                                                                               False, 5)


def test_verify_with_planted_faulty_solution(tmp_path):
    problem = GemmProblem(BBS_TN, 1024, 1024, 1, 1024)
    healthy = platform()
    name = sim.catalogue(BBS_TN).names[healthy.default_position(problem)]
    faulty = platform(faulty=(name,))
    good = healthy.verify([problem], tmp_path, 0, None)
    bad = faulty.verify([problem], tmp_path, 0, None)
    assert list(good.columns[:len(VERIFY_COLUMNS)]) == list(VERIFY_COLUMNS)
    assert good["error"].iloc[0] < 0.01
    assert bad["error"].iloc[0] > 0.03
    assert bad["solution_name"].iloc[0] == name
    # the planted kernel looks fast, so only verification can reject it
    t_good = healthy.bench([problem], tmp_path, 0)["us"].iloc[0]
    t_bad = faulty.bench([problem], tmp_path, 0)["us"].iloc[0]
    assert t_bad < t_good


# --------------------------------------------------------------------------------------------
# failures

def test_crash_on(tmp_path):
    p = platform(crash_on=("M4096_N8",))
    with pytest.raises(PlatformError):
        p.bench(SMALL, tmp_path, 0)
    with pytest.raises(PlatformError):
        p.search(SMALL, tmp_path, 0)
    with pytest.raises(PlatformError):
        p.verify(SMALL, tmp_path, 0, None)
    assert len(p.bench(SMALL[1:], tmp_path, 0)) == 2


@pytest.mark.parametrize("arch", ["gfx999", "", "GFX950", "mi300"])
def test_unknown_arch(arch):
    with pytest.raises(PlatformError):
        sim.arch_by_name(arch)
    with pytest.raises(PlatformError):
        sim.SimPlatform.from_config({"platform": "sim", "arch": arch})
    with pytest.raises(PlatformError):
        platforms.get({"platform": "sim", "arch": arch})


def test_known_archs_and_aliases():
    assert sim.arch_by_name("gfx950_128cu") is sim.arch_by_name("gfx950")
    assert sim.arch_by_name("gfx942").schedule_name == "aquavanjaram"
    assert sim.arch_by_name("gfx950").schedule_name == "gfx950"


def test_platform_get():
    p = platforms.get({"platform": "sim", "arch": "gfx942",
                       "sim": {"seed": 3, "noise": 0.01, "faulty_solutions": ["X"],
                               "crash_on": ["Y"]}})
    assert isinstance(p, sim.SimPlatform)
    assert (p.arch.name, p.seed, p.noise, p.faulty, p.crash_on) == ("gfx942", 3, 0.01, ("X",),
                                                                    ("Y",))
    for bad in ({"platform": "nope"}, {"platform": "rocm"}):
        with pytest.raises(PlatformError):
            platforms.get(bad)
    described = platforms.describe(p, {"arch": "gfx942"})
    assert described["measured"] is False and described["name"] == "sim"


def test_tune_mode_beats_the_default_kernel(tmp_path):
    p = platform()
    problem = GemmProblem(BBS_TN, 4096, 16, 1, 4096)
    (config,) = p.configure((BBS_TN, [problem.size]), tmp_path / "configs", "gfx950",
                            {"backend": "tensile"})
    logic_dir = p.optimize(config, tmp_path / "build", 0)
    (path,) = logic_dir.glob("*.yaml")
    lib = library.load(path)
    ((size, _, gflops),) = lib.size_entries()
    assert size == problem.size and "_SIMT_" in lib.solutions[0]["SolutionNameMin"]
    assert gflops > p.bench([problem], tmp_path, 0)["gflops"].iloc[0]


# --------------------------------------------------------------------------------------------
# emulated job time (sim.search_seconds_per_gemm / search_seconds_per_ms)

def test_search_seconds_off_by_default(tmp_path, monkeypatch):
    slept = []
    monkeypatch.setattr(sim.time, "sleep", slept.append)
    p = sim.SimPlatform.from_config({"platform": "sim", "arch": "h200"})
    assert p.search_seconds(SMALL[0]) == 0.0
    p.search(SMALL, tmp_path, 0)
    assert slept == []


def test_search_sleeps_per_gemm_and_with_its_modelled_time(tmp_path, monkeypatch):
    slept = []
    monkeypatch.setattr(sim.time, "sleep", slept.append)
    p = sim.SimPlatform.from_config({"platform": "sim", "arch": "h200",
                                     "sim": {"search_seconds_per_gemm": 4.0,
                                             "search_seconds_per_ms": 0.35}})
    problems = llama_problems()
    p.search(problems, tmp_path, 0)
    assert slept == [p.search_seconds(q) for q in problems]  # one sleep per GEMM, in order
    assert min(slept) >= 4.0
    small, large = GemmProblem(BBS_TN, 4096, 1, 1, 4096), GemmProblem(BBS_TN, 28672, 8192, 1,
                                                                      4096)
    assert p.search_seconds(small) < 4.05 < 5.0 < p.search_seconds(large) < 10.0
    fixed = platform(arch="h200", search_seconds_per_gemm=0.5)
    assert fixed.search_seconds(small) == fixed.search_seconds(large) == 0.5
    slept.clear()
    fixed.bench(problems, tmp_path, 0)  # only the dense search sleeps per GEMM
    assert slept == []


# --------------------------------------------------------------------------------------------
# tables

def test_tables_are_predictions(tmp_path):
    p = platform()
    tables = [p.bench(SMALL, tmp_path, 1), p.search(SMALL, tmp_path, 1),
              p.verify(SMALL, tmp_path, 1, None)]
    for table in tables:
        assert len(table) > 0
        assert (table["measured"] == False).all()  # noqa: E712
        assert (table["platform"] == "sim").all()
        assert (table["device"] == 1).all()
    assert p.measured is False
    bench, candidates, _ = tables
    assert list(bench.columns[:len(RESULT_COLUMNS)]) == list(RESULT_COLUMNS)
    assert list(candidates.columns[:len(RESULT_COLUMNS)]) == list(RESULT_COLUMNS)


def test_bench_table_values(tmp_path):
    bench = platform().bench(SMALL, tmp_path, 0)
    for problem, row in zip(SMALL, bench.to_dict("records")):
        assert (row["m"], row["n"], row["batch_count"], row["k"]) == problem.size
        assert row["compute_type"] == "c_f32_r"
        assert (row["scaleA"], row["scaleB"]) == (0, 0)
        assert row["gflops"] == pytest.approx(problem.flops / row["us"] / 1e3, rel=1e-3)
        assert row["kernel"] == row["solution_name"]
        assert row["us"] > 0


def test_empty_problem_list_is_refused_as_hipblaslt_bench_refuses_it(tmp_path):
    """A job without work is a dealing mistake: the sim must not hide it (issue 22)."""
    p = platform()
    for call in (lambda: p.bench([], tmp_path, 0), lambda: p.search([], tmp_path, 0)):
        with pytest.raises(PlatformError, match="sim: (bench|search) of no GEMM"):
            call()


# --------------------------------------------------------------------------------------------
# extract -> create_library -> bench with the library

def test_extract_create_library_bench_uses_winners(tmp_path):
    problems = llama_problems() + [GemmProblem(HHS_NN, 512, 2048, 4, 256)]
    p = platform()
    winners = search.winners(p.search(problems, tmp_path, 0))
    assert len(winners) == len(problems)
    libs = tmp_path / "libs"
    paths = p.extract(winners, libs)
    assert sorted(path.name for path in paths) == sorted(
        [library.file_name("gfx950", BBS_TN), library.file_name("gfx950", HHS_NN)])
    for path in paths:
        assert path.read_text().startswith("#")  # the model note
        lib = library.load(path)
        assert lib.architecture_name == "gfx950"
        referenced = {index for _, index, _ in lib.size_entries()}
        assert referenced == {s["SolutionIndex"] for s in lib.solutions}
    build = tmp_path / "build"
    p.create_library(libs, build)
    assert (build / "library").is_dir()

    tuned = p.bench(problems, tmp_path, 0, library=build)
    keys = ["transA", "transB", "a_type", "m", "n", "batch_count", "k"]
    merged = tuned.merge(winners, on=keys, suffixes=("", "_winner"))
    assert len(merged) == len(problems)
    assert (merged["solution_index"] == merged["solution_index_winner"]).all()
    assert np.allclose(merged["us"], merged["us_winner"])

    default = p.bench(problems, tmp_path, 0)
    assert (tuned["us"].to_numpy() <= default["us"].to_numpy() + 1e-9).all()

    checked = p.verify(problems, tmp_path, 0, build)
    assert list(checked["solution_index"]) == list(tuned["solution_index"])
    assert (checked["error"] < 0.01).all()


def test_library_bench_falls_back_to_default_for_other_sizes(tmp_path):
    p = platform()
    problems = SMALL[:2]
    winners = search.winners(p.search(problems[:1], tmp_path, 0))
    p.extract(winners, tmp_path / "libs")
    p.create_library(tmp_path / "libs", tmp_path / "build")
    tuned = p.bench(problems, tmp_path, 0, library=tmp_path / "build")
    default = p.bench(problems, tmp_path, 0)
    assert tuned["solution_index"].iloc[0] == winners["solution_index"].iloc[0]
    assert tuned["solution_index"].iloc[1] == default["solution_index"].iloc[1]


def test_create_library_rejects_foreign_solutions(tmp_path):
    p = platform()
    lib = library.build(p.library_template(BBS_TN),
                        [(GemmProblem(BBS_TN, 64, 64, 1, 64),
                          {"SolutionIndex": 5, "SimSolutionIndex": 5}, 1.0)])
    library.dump(lib, tmp_path / "libs" / library.file_name("gfx950", BBS_TN))
    with pytest.raises(PlatformError):
        p.create_library(tmp_path / "libs", tmp_path / "build")
