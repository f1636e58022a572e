"""geko_lib.library: library-logic files (original_tool.md §6.1-6.2, §7.1), on real fixtures and
hand-made libraries."""

import copy
import math

import pandas as pd
import pytest
import yaml

from geko_lib import library
from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.library import LibraryError, LibraryLogic

from .conftest import FIXTURES

LOGIC_DIR = FIXTURES / "tensile_logic"
FIXTURES = sorted(LOGIC_DIR.glob("*.yaml")) if LOGIC_DIR.is_dir() else []
needs_fixtures = pytest.mark.skipif(not FIXTURES, reason="tests/fixtures absent")

TN = "aquavanjaram_Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs.yaml"
NN = "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"
TT_HHS = "gfx950_Cijk_Alik_Bjlk_HHS_BH_BiasSH_HAS_SAV_UserArgs.yaml"

BBS_TN = GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")


def raw(name):
    return yaml.safe_load((LOGIC_DIR / name).read_text())


def type_from_file_name(name: str) -> tuple:
    """(transA, transB, types) from e.g. 'gfx950_Cijk_Alik_Bjlk_HHS_BH_...'."""
    parts = name.split("_")
    i = parts.index("Cijk")
    a, b, types = parts[i + 1], parts[i + 2], parts[i + 3]
    trans_a = {"Alik": "T", "Ailk": "N"}[a]
    trans_b = {"Bjlk": "T", "Bljk": "N"}[b]
    return trans_a, trans_b, types


# --------------------------------------------------------------------------------------------
# real fixtures

@needs_fixtures
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_loads_and_type_matches_file_name(path):
    lib = library.load(path)
    data = raw(path.name)
    ta, tb, types = type_from_file_name(path.name)
    t = lib.gemm_type
    assert (t.transA, t.transB) == (ta, tb)
    assert f"{t.data_type}{t.dest_data_type}{t.compute_data_type}" == types
    assert library.gemm_type_of(data[4]) == t
    assert lib.schedule_name == data[1] == path.name.split("_")[0]
    assert lib.architecture_name == data[2]
    assert lib.solutions == data[5]
    assert lib.library_type == "Equality" and lib.perf_metric == "DeviceEfficiency"
    assert "_" + t.tensile_problem_name + "_" in path.name


@needs_fixtures
def test_fixture_types():
    assert library.load(LOGIC_DIR / TN).gemm_type == BBS_TN
    assert library.load(LOGIC_DIR / NN).gemm_type == GemmType(
        "N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    assert library.load(LOGIC_DIR / TT_HHS).gemm_type == GemmType(
        "T", "T", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")


@needs_fixtures
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_sizes(path):
    data = raw(path.name)
    sizes = library.load(path).size_entries()
    assert sizes == [(tuple(s[:4]), e[0], float(e[1])) for s, e in data[7]]
    assert all(isinstance(v, int) for size, _, _ in sizes for v in size)


@needs_fixtures
def test_fixture_sizes_values():
    assert library.load(LOGIC_DIR / TN).size_entries() == [
        ((18944, 15, 1, 5120), 0, 0.0), ((18944, 16, 1, 5120), 1, 0.0),
        ((18944, 19, 1, 5120), 2, 0.0)]
    nn = library.load(LOGIC_DIR / NN).size_entries()
    assert nn[0] == ((8, 32, 1, 15360), 0, 875.553)
    assert nn[-1] == ((16, 16384, 1, 15360), 7, 99283.2)


@needs_fixtures
def test_solution_for():
    lib = library.load(LOGIC_DIR / TN)
    solution = lib.solution_for(GemmProblem(BBS_TN, 18944, 16, 1, 5120))
    assert solution["SolutionIndex"] == 1
    assert (solution["MacroTile0"], solution["MacroTile1"], solution["DepthU"]) == (64, 16, 256)
    assert lib.solution_for(GemmProblem(BBS_TN, 18944, 17, 1, 5120)) is None
    assert lib.solution_for(GemmProblem(BBS_TN, 18944, 16, 2, 5120)) is None


@needs_fixtures
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_dump_load_round_trip(path, tmp_path):
    lib = library.load(path)
    out = library.dump(lib, tmp_path / path.name)
    again = library.load(out)
    assert again.to_list() == lib.to_list()
    assert yaml.safe_load(out.read_text()) == raw(path.name)
    with_header = library.dump(lib, tmp_path / "h" / path.name, header="line one\nline two")
    text = with_header.read_text()
    assert text.startswith("# line one\n# line two\n")
    assert library.load(with_header).to_list() == lib.to_list()


@needs_fixtures
def test_to_list_matches_file():
    for path in FIXTURES:
        assert library.load(path).to_list() == raw(path.name)


@needs_fixtures
def test_load_dir(tmp_path):
    for path in FIXTURES:
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "notes.txt").write_text("not a library")
    libs = library.load_dir(tmp_path)
    assert sorted(libs) == sorted(p.name for p in FIXTURES)


# --------------------------------------------------------------------------------------------
# problem types

def pt(**kw):
    base = {"DataType": 7, "DestDataType": 7, "ComputeDataType": 0, "TransposeA": True,
            "TransposeB": False}
    base.update(kw)
    return base


def test_gemm_type_of_variants():
    assert library.gemm_type_of(pt()) == BBS_TN
    assert library.gemm_type_of(pt(TransposeA=1, TransposeB=0)) == BBS_TN
    assert library.gemm_type_of(pt(TransposeA=0, TransposeB=1)).name == "BBS_NT"
    assert library.gemm_type_of({"DataType": 7, "DestDataType": 7,
                                 "ComputeDataType": 0}).name == "BBS_NN"
    f16 = library.gemm_type_of(pt(DataType=4, DestDataType=4))
    assert f16.name == "HHS_TN"
    sgemm = library.gemm_type_of(pt(DataType=0, DestDataType=0))
    assert sgemm.name == "SSS_TN" and sgemm.compute_type == "f32_r"
    tf32 = library.gemm_type_of(pt(DataType=0, DestDataType=0, F32XdlMathOp=10))
    assert tf32.name == "XSS_TN" and tf32.compute_type == "xf32_r"
    mixed = library.gemm_type_of(pt(DataType=15, DataTypeA=15, DataTypeB=16, DestDataType=7))
    assert (mixed.a_type, mixed.b_type) == ("f8_r", "bf8_r")
    assert mixed.name == "F8B8BS_TN"
    fnuz = library.gemm_type_of(pt(DataType=11, DataTypeA=11, DataTypeB=12, DestDataType=7))
    assert (fnuz.a_type, fnuz.b_type) == ("f8_fnuz_r", "bf8_fnuz_r")


def test_gemm_type_of_unknown_type():
    with pytest.raises(LibraryError):
        library.gemm_type_of(pt(DataType=99))
    with pytest.raises(LibraryError):
        library.gemm_type_of({"DestDataType": 7, "ComputeDataType": 0})
    with pytest.raises(LibraryError):
        library.gemm_type_of(pt(ComputeDataType="float"))


@pytest.mark.parametrize("value", [2, "yes"])
def test_gemm_type_of_bad_transpose(value):
    with pytest.raises(LibraryError):
        library.gemm_type_of(pt(TransposeA=value))


@pytest.mark.parametrize("t", [
    BBS_TN,
    GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r"),
    GemmType("N", "T", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r"),
    GemmType("T", "T", "f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r"),
    GemmType("T", "N", "f8_r", "bf8_r", "bf16_r", "bf16_r", "c_f32_r"),
    GemmType("T", "N", "f8_r", "f8_r", "f16_r", "f16_r", "c_f32_r"),
], ids=lambda t: t.name)
def test_problem_type_round_trip(t):
    p = library.problem_type_for(t)
    assert library.gemm_type_of(p) == t
    assert p["TransposeA"] is (t.transA == "T") and p["TransposeB"] is (t.transB == "T")
    assert p["HighPrecisionAccumulate"] is t.high_precision_accumulate


def test_problem_type_for_tf32_uses_f32_compute_and_xdl_op():
    p = library.problem_type_for(GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r",
                                          "c_xf32_r"))
    assert (p["DataType"], p["DestDataType"], p["ComputeDataType"]) == (0, 0, 0)
    assert p["F32XdlMathOp"] == 10  # Tensile DataType enum XFloat32


def test_file_name():
    assert library.file_name("gfx950", BBS_TN) == "gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml"
    nn = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    assert library.file_name("gfx950", nn) == "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml"


# --------------------------------------------------------------------------------------------
# the minimal list example of §6.1 and hand-made libraries

MINIMAL = [None, None, "gfx950", None,
           {"TransposeA": 0, "TransposeB": 0, "DataType": 0, "DestDataType": 0,
            "ComputeDataType": 0},
           [{"SolutionIndex": 0, "StaggerU": 0}], [2, 3, 0, 1], [[[16, 16, 1, 16], [0, 100.0]]],
           None, None, "DeviceEfficiency", "Equality"]


def test_minimal_list_example(tmp_path):
    path = tmp_path / "min.yaml"
    path.write_text(yaml.safe_dump(MINIMAL))
    lib = library.load(path)
    assert lib.gemm_type.name == "SSS_NN"
    assert lib.architecture_name == "gfx950"
    assert lib.size_entries() == [((16, 16, 1, 16), 0, 100.0)]
    assert lib.to_list() == MINIMAL
    assert library.LibraryLogic.from_list(MINIMAL + ["DefaultSol"]).to_list() == \
        MINIMAL + ["DefaultSol"]


def test_architecture_dict_form():
    data = copy.deepcopy(MINIMAL)
    data[2] = {"Architecture": "gfx942", "CUCount": 304}
    assert LibraryLogic.from_list(data).architecture_name == "gfx942"


def make_lib(problem_type, solutions, exact):
    return LibraryLogic({"MinimumRequiredVersion": "5.0.0"}, "gfx950", "gfx950", ["Device 75a0"],
                        problem_type, solutions, [2, 3, 0, 1], exact)


def sol(index, name):
    return {"SolutionIndex": index, "SolutionNameMin": name, "MacroTile0": 64}


def test_build_dedupes_renumbers_sorts():
    template = make_lib(pt(), [sol(0, "old")], [[[1, 1, 1, 1], [0, 1.0]]])
    sol_a, sol_b = sol(7, "A"), sol(3, "B")
    before = copy.deepcopy([sol_a, sol_b])
    chosen = [(GemmProblem(BBS_TN, 32, 8, 1, 64), sol_a, 10.0),
              (GemmProblem(BBS_TN, 16, 8, 1, 64), sol_b, 5.12345),
              (GemmProblem(BBS_TN, 64, 8, 1, 64), sol_a, 1.0),
              (GemmProblem(BBS_TN, 16, 8, 2, 64), sol_a, 2.0)]
    lib = library.build(template, chosen)
    assert [s["SolutionNameMin"] for s in lib.solutions] == ["B", "A"]
    assert [s["SolutionIndex"] for s in lib.solutions] == [0, 1]
    assert lib.exact_logic == [[[16, 8, 1, 64], [0, 5.123]], [[16, 8, 2, 64], [1, 2.0]],
                               [[32, 8, 1, 64], [1, 10.0]], [[64, 8, 1, 64], [1, 1.0]]]
    assert [sol_a, sol_b] == before  # inputs untouched
    assert template.solutions == [sol(0, "old")]
    assert template.exact_logic == [[[1, 1, 1, 1], [0, 1.0]]]
    assert lib.problem_type == template.problem_type
    assert lib.schedule_name == "gfx950"


def test_build_empty():
    lib = library.build(make_lib(pt(), [sol(0, "x")], [[[1, 1, 1, 1], [0, 1.0]]]), [])
    assert lib.solutions == [] and lib.exact_logic == []


@needs_fixtures
def test_keep_sizes_drops_unreferenced_solutions():
    lib = library.load(LOGIC_DIR / NN)
    data = raw(NN)
    kept = library.keep_sizes(lib, {(16, 2048, 1, 15360), (8, 32, 1, 15360), (1, 2, 3, 4)})
    assert kept.size_entries() == [((8, 32, 1, 15360), 0, 875.553), ((16, 2048, 1, 15360), 1, 62250.1)]
    assert len(kept.solutions) == 2
    for new, old in zip(kept.solutions, (data[5][0], data[5][6])):
        assert new["SolutionIndex"] in (0, 1)
        assert {k: v for k, v in new.items() if k != "SolutionIndex"} == \
            {k: v for k, v in old.items() if k != "SolutionIndex"}
    assert lib.to_list() == data  # original not modified


def test_keep_sizes_shared_solution():
    lib = make_lib(pt(), [sol(0, "A"), sol(1, "B"), sol(2, "C")],
                   [[[64, 8, 1, 64], [2, 3.0]], [[16, 8, 1, 64], [0, 1.0]],
                    [[32, 8, 1, 64], [2, 2.0]]])
    kept = library.keep_sizes(lib, {(64, 8, 1, 64), (32, 8, 1, 64)})
    assert [s["SolutionNameMin"] for s in kept.solutions] == ["C"]
    assert kept.exact_logic == [[[32, 8, 1, 64], [0, 2.0]], [[64, 8, 1, 64], [0, 3.0]]]


# --------------------------------------------------------------------------------------------
# bench rows (§6.2 create_bench_input, §7.1)

def bench_lib():
    return make_lib(pt(), [sol(0, "A"), sol(1, "B")],
                    [[[1000, 1000, 1, 1000], [0, 2000.0]],   # 2e9 flop / 2000 GFLOPS = 1000 us
                     [[64, 64, 1, 64], [1, 524.288]],          # 524288 flop -> 1 us
                     [[100, 100, 2, 100], [1, 0.0]]])          # unknown latency


def test_bench_rows_iterations():
    rows = library.bench_rows(bench_lib(), 0.5)
    assert [r["iters"] for r in rows] == [500, 500000, 100]
    assert [r["cold_iters"] for r in rows] == [500, 500000, 100]
    rows = library.bench_rows(bench_lib(), 1.0, iters=7, cold_iters=3)
    assert [(r["iters"], r["cold_iters"]) for r in rows] == [(1000, 1000), (1000000, 1000000),
                                                            (7, 3)]


def test_bench_rows_zero_duration_uses_fixed_counts():
    rows = library.bench_rows(bench_lib(), 0.0)
    assert [(r["iters"], r["cold_iters"]) for r in rows] == [(100, 100)] * 3


@needs_fixtures
def test_bench_rows_fixture_latency():
    lib = library.load(LOGIC_DIR / NN)
    rows = library.bench_rows(lib, 1.0)
    for row, ((m, n, b, k), _, gflops) in zip(rows, raw_sizes(NN)):
        expected_us = 2 * m * n * b * k / gflops / 1000
        assert row["iters"] == row["cold_iters"] == math.ceil(1.0 * 1e6 / expected_us)
        assert (row["M"], row["N"], row["batch_count"], row["K"]) == (m, n, b, k)
    # 8x32x15360 at 875.553 GFLOPS = 8.98 us -> 111,328 iterations in one second
    assert rows[0]["iters"] == math.ceil(1e6 / (2 * 8 * 32 * 15360 / 875.553 / 1000))
    assert 111000 < rows[0]["iters"] < 112000
    hhs = library.bench_rows(library.load(LOGIC_DIR / TT_HHS), 1.0)  # gflops 0
    assert [(r["iters"], r["cold_iters"]) for r in hhs] == [(100, 100)]
    assert (hhs[0]["transA"], hhs[0]["transB"], hhs[0]["a_type"]) == ("T", "T", "f16_r")


def raw_sizes(name):
    return [(tuple(s[:4]), e[0], e[1]) for s, e in raw(name)[7]]


def test_bench_row_keys():
    row = library.bench_rows(bench_lib(), 0.5, rotating_mb=256)[0]
    assert row["function"] == "matmul"
    assert (row["transA"], row["transB"]) == ("T", "N")
    assert (row["a_type"], row["b_type"], row["c_type"], row["d_type"]) == ("bf16_r",) * 4
    assert row["compute_type"] == "c_f32_r" and row["scale_type"] == "f32_r"
    assert row["alpha"] == 1.0 and row["beta"] == 0.0
    assert (row["M"], row["N"], row["batch_count"], row["K"]) == (1000, 1000, 1, 1000)
    assert row["rotating"] == 256 and row["flush"] is True
    assert row["use_gpu_timer"] is True and row["print_kernel_info"] is True
    for forbidden in ("norm_check", "allclose_check"):
        assert forbidden not in row


def test_verify_rows():
    rows = library.bench_rows(bench_lib(), 0.5, verify=True)
    assert len(rows) == 3
    for row in rows:
        assert row["norm_check"] == 1 and row["norm_check_assert"] == 0
        assert row["allclose_check"] == 1
        assert row["iters"] == 1 and row["cold_iters"] == 0
        assert "flush" not in row and "rotating" not in row
        assert row["function"] == "matmul"
    assert [(r["M"], r["batch_count"]) for r in rows] == [(1000, 1), (64, 1), (100, 2)]


def test_bench_rows_tf32():
    lib = make_lib(pt(DataType=0, DestDataType=0, F32XdlMathOp=10), [sol(0, "A")],
                   [[[64, 64, 1, 64], [0, 0.0]]])
    row = library.bench_rows(lib, 0.5)[0]
    assert row["a_type"] == "f32_r" and row["compute_type"] == "c_xf32_r"
    assert row["scale_type"] == "f32_r"


def test_bench_rows_leading_dimensions():
    lib = make_lib(pt(), [sol(0, "A")], [[[64, 32, 1, 128, 80, 80, 136, 144], [0, 0.0]]])
    row = library.bench_rows(lib, 0.5)[0]
    assert (row["ldc"], row["ldd"], row["lda"], row["ldb"]) == (80, 80, 136, 144)


# --------------------------------------------------------------------------------------------
# dump_rows

def test_dump_rows_one_flow_row_per_line(tmp_path):
    rows = library.bench_rows(bench_lib(), 0.5) + library.bench_rows(bench_lib(), 0.5,
                                                                     verify=True)
    path = library.dump_rows(rows, tmp_path / "sub" / "bench.yaml")
    lines = path.read_text().splitlines()
    assert len(lines) == len(rows)
    assert all(line.startswith("- {") and line.endswith("}") for line in lines)
    loaded = yaml.safe_load(path.read_text())
    assert loaded == rows
    assert [list(r) for r in loaded] == [list(r) for r in rows]  # key order kept


def test_dump_rows_tricky_values(tmp_path):
    rows = [{"transA": "N", "transB": "T", "flag": False, "x": 1.0, "name": "a: b, {c}",
             "yes": "yes", "null_text": "null", "n": 10**12}]
    path = library.dump_rows(rows, tmp_path / "r.yaml")
    assert len(path.read_text().splitlines()) == 1
    assert yaml.safe_load(path.read_text()) == rows


def test_dump_rows_empty(tmp_path):
    path = library.dump_rows([], tmp_path / "empty.yaml")
    assert yaml.safe_load(path.read_text()) == []


# --------------------------------------------------------------------------------------------
# ship_kept

@needs_fixtures
def test_ship_kept(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    for name in (TN, NN):
        (libs / name).write_text((LOGIC_DIR / name).read_text())
    kept = pd.DataFrame([
        {"lib": NN, "m": 16, "n": 128, "batch_count": 1, "k": 15360},
        {"lib": NN, "m": 8, "n": 16384, "batch_count": 1, "k": 15360},
    ])
    written = library.ship_kept(libs, kept, tmp_path / "final", header="sim predictions")
    assert [p.name for p in written] == [NN]
    assert sorted(p.name for p in (tmp_path / "final").iterdir()) == [NN]
    assert written[0].read_text().startswith("# sim predictions\n")
    lib = library.load(written[0])
    assert lib.size_entries() == [((8, 16384, 1, 15360), 0, 49899.9), ((16, 128, 1, 15360), 1, 6735.23)]
    data = raw(NN)
    assert lib.solutions[0]["SolutionNameMin"] == data[5][3]["SolutionNameMin"]
    assert lib.solutions[1]["SolutionNameMin"] == data[5][5]["SolutionNameMin"]
    assert lib.problem_type == data[4]


@needs_fixtures
def test_ship_kept_refuses_unknown_library(tmp_path):
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / NN).write_text((LOGIC_DIR / NN).read_text())
    kept = pd.DataFrame([{"lib": "other.yaml", "m": 16, "n": 16, "batch_count": 1, "k": 16}])
    with pytest.raises(LibraryError, match="other.yaml"):
        library.ship_kept(tmp_path / "libs", kept, tmp_path / "final")


@needs_fixtures
def test_ship_kept_nothing(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / NN).write_text((LOGIC_DIR / NN).read_text())
    kept = pd.DataFrame(columns=["lib", "m", "n", "batch_count", "k"])
    assert library.ship_kept(libs, kept, tmp_path / "final") == []


# --------------------------------------------------------------------------------------------
# malformed files

@pytest.mark.parametrize("text", [
    "",
    "just a string\n",
    "{a: 1}\n",
    "- 1\n- 2\n- 3\n",
    "[unclosed\n",
    "- {MinimumRequiredVersion: 5.0.0}\n- gfx950\n- gfx950\n- []\n- not a mapping\n- []\n"
    "- [2, 3, 0, 1]\n- []\n- null\n- null\n- DeviceEfficiency\n- Equality\n",
    "- {MinimumRequiredVersion: 5.0.0}\n- gfx950\n- gfx950\n- []\n- {DataType: 7}\n- {}\n"
    "- [2, 3, 0, 1]\n- []\n- null\n- null\n- DeviceEfficiency\n- Equality\n",
])
def test_malformed_files(tmp_path, text):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(LibraryError):
        library.load(path)


def test_from_list_errors():
    with pytest.raises(LibraryError):
        LibraryLogic.from_list(MINIMAL[:11])
    with pytest.raises(LibraryError):
        LibraryLogic.from_list({"ProblemType": {}})
    assert issubclass(LibraryError, ValueError)


def test_unknown_type_in_problem_type(tmp_path):
    data = copy.deepcopy(MINIMAL)
    data[4]["DataType"] = 99
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(LibraryError):
        library.load(path).gemm_type


def test_dangling_solution_reference(tmp_path):
    data = copy.deepcopy(MINIMAL)
    data[7] = [[[16, 16, 1, 16], [5, 100.0]]]
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(LibraryError):
        lib = library.load(path)
        library.keep_sizes(lib, {(16, 16, 1, 16)})


@pytest.mark.parametrize("entry", [[[16, 16, 1], [0, 1.0]], [[16, 16, 1, 16]]])
def test_malformed_exact_logic(tmp_path, entry):
    data = copy.deepcopy(MINIMAL)
    data[7] = [entry]
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(LibraryError):
        library.load(path).size_entries()
