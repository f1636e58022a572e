"""Library operations on small hand-written libraries (expected outputs written out here)."""
import copy

import pandas as pd
import pytest
import yaml

from geko_lib import library
from geko_lib.library import LibraryError, codec, operations

from .conftest import FIXTURES

LOGIC_DIR = FIXTURES / "tensile_logic"
needs_fixtures = pytest.mark.skipif(not LOGIC_DIR.is_dir(), reason="tests/fixtures absent")

PT_BBS_TN = {"DataType": 7, "DestDataType": 7, "ComputeDataType": 0, "TransposeA": True,
             "TransposeB": False, "HighPrecisionAccumulate": True, "UseBias": 0,
             "Activation": False, "ActivationType": "none", "BiasDataTypeList": [],
             "UseScaleAlphaVec": 0}


def sol(index, tile, stagger=8):
    name = f"Cijk_Alik_Bljk_BBS_BH_UserArgs_MT{tile}"
    return {"SolutionIndex": index, "MacroTile0": int(tile.split("x")[0]), "StaggerU": stagger,
            "StaggerUMapping": 3, "StaggerUStride": 256, "_staggerStrideShift": 2,
            "BaseName": name, "KernelNameMin": name, "SolutionNameMin": name,
            "ActivationFuncCall": True, "ProblemType": {"DataType": 7}}


def lib_text(solutions, sizes, pt=PT_BBS_TN, extra=()):
    data = [{"MinimumRequiredVersion": "5.0.0"}, "gfx950", "gfx950", ["Device 75a0"], pt,
            solutions, [2, 3, 0, 1], sizes, None, None, "DeviceEfficiency", "Equality", *extra]
    return yaml.safe_dump(data, default_flow_style=None, sort_keys=False)


def write(path, *args, **kw):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lib_text(*args, **kw))
    return path


# --- codec ---------------------------------------------------------------------------------------

@needs_fixtures
@pytest.mark.parametrize("path", sorted(LOGIC_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_fixture_round_trip_is_byte_identical(path, tmp_path):
    text = path.read_text()
    lib = library.load(path)
    assert lib.to_list() == yaml.load(text, Loader=codec.Loader)
    assert lib.text() == text  # untouched solutions are written back verbatim
    for i in range(len(lib.solutions)):  # parsed and re-dumped: same data, same style
        lib.solutions[i]
    assert lib.text() == text
    assert library.load(lib.dump(tmp_path)).to_list() == lib.to_list()


def test_flow_style_file_takes_the_yaml_path(tmp_path):
    data = yaml.safe_load(lib_text([sol(0, "16x16")], [[[16, 16, 1, 16], [0, 1.5]]]))
    path = tmp_path / "flow.yaml"
    path.write_text(yaml.safe_dump(data, default_flow_style=True))
    assert library.load(path).to_list() == data


def test_dict_layout_round_trip_and_normalize(tmp_path):
    path = write(tmp_path / "a.yaml", [sol(0, "16x16")], [[[16, 16, 1, 16], [0, 1.5]]])
    listed = library.load(path)
    normalized = library.normalize(path, tmp_path / "dict.yaml")
    as_dict = yaml.safe_load(normalized.read_text())
    assert as_dict["ArchitectureName"] == "gfx950" and as_dict["LibraryType"] == "Equality"
    assert as_dict["MinimumRequiredVersion"] == "5.0.0"
    assert as_dict["ExactLogic"] == [[[16, 16, 1, 16], [0, 1.5]]]
    back = library.load(normalized)
    assert back.layout == "dict" and back.to_list() == listed.to_list()
    relisted = library.normalize(normalized, tmp_path / "list.yaml")
    assert yaml.safe_load(relisted.read_text()) == listed.to_list()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop(), "12 or 13 entries"),
    (lambda d: d.__setitem__(7, [[[16, 16, 1, 16], [9, 1.0]]]), "solution 9"),
    (lambda d: d.__setitem__(7, [[[16, 16, 16], [0, 1.0]]]), "entry 0"),
    (lambda d: d.__setitem__(4, "BBS"), "ProblemType"),
])
def test_malformed_library_names_file_and_entry(tmp_path, mutate, message):
    data = yaml.safe_load(lib_text([sol(0, "16x16")], [[[16, 16, 1, 16], [0, 1.5]]]))
    mutate(data)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, default_flow_style=None, sort_keys=False))
    with pytest.raises(LibraryError, match=message) as info:
        library.load(path)
    assert "bad.yaml" in str(info.value)


# --- trim ------------------------------------------------------------------------------------------

def test_trim_keeps_best_duplicate_and_renumbers(tmp_path):
    path = write(tmp_path / "t.yaml", [sol(10, "16x16"), sol(11, "32x32"), sol(12, "64x64")],
                 [[[16, 16, 1, 16], [10, 5.0]], [[32, 32, 1, 32], [12, 7.0]],
                  [[16, 16, 1, 16], [12, 9.0]]])
    lib = library.load(path).trim()
    # the surviving entry of a duplicated size keeps its own position in the table
    assert lib.exact_logic == [[[32, 32, 1, 32], [0, 7.0]], [[16, 16, 1, 16], [0, 9.0]]]
    assert [s["SolutionIndex"] for s in lib.solutions] == [0]
    assert lib.solutions[0]["MacroTile0"] == 64


def test_trim_keeps_positions_of_the_surviving_entries(tmp_path):
    path = write(tmp_path / "t.yaml", [sol(0, "16x16"), sol(1, "32x32"), sol(2, "64x64")],
                 [[[8, 8, 1, 8], [2, 1.0]], [[16, 16, 1, 16], [0, 2.0]],
                  [[8, 8, 1, 8], [0, 0.5]]])
    lib = library.load(path).trim()
    assert lib.exact_logic == [[[8, 8, 1, 8], [1, 1.0]], [[16, 16, 1, 16], [0, 2.0]]]
    assert [(s["SolutionIndex"], s["MacroTile0"]) for s in lib.solutions] == [(0, 16), (1, 64)]


# --- epilogues -------------------------------------------------------------------------------------

def test_add_epilogues_bf16():
    lib = library.LibraryLogic.from_text(lib_text([sol(0, "16x16")], [[[16, 16, 1, 16], [0, 1.0]]]))
    lib.add_epilogues()
    pt = lib.problem_type
    assert (pt["Activation"], pt["ActivationType"], pt["UseBias"], pt["BiasDataTypeList"],
            pt["UseScaleAlphaVec"]) == (True, "hipblaslt_all", 1, [0, 7], 1)
    assert "UseScaleAB" not in pt
    s = lib.solutions[0]
    assert s["SolutionNameMin"] == "Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs_MT16x16"
    assert s["KernelNameMin"] == s["BaseName"] == s["SolutionNameMin"]
    assert s["ActivationFuncCall"] is False
    assert operations.epilogue_file_name("gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml", lib) == \
        "gfx950_Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs.yaml"
    lib.add_epilogues()  # idempotent: tags are replaced, not stacked
    assert lib.solutions[0]["SolutionNameMin"] == \
        "Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs_MT16x16"


def test_add_epilogues_fp8_output_and_f64_untouched():
    fp8 = dict(PT_BBS_TN, DataType=15, DestDataType=15)
    lib = library.LibraryLogic.from_text(lib_text([sol(0, "16x16")], [], pt=fp8)).add_epilogues()
    assert lib.problem_type["BiasDataTypeList"] == [0, 4, 7]
    assert lib.problem_type["UseScaleAB"] == "Scalar"
    assert lib.solutions[0]["SolutionNameMin"].endswith("_BiasSHB_HAS_SAB_SAV_UserArgs_MT16x16")
    f64 = dict(PT_BBS_TN, DataType=1, DestDataType=1, ComputeDataType=1)
    untouched = library.LibraryLogic.from_text(lib_text([sol(0, "16x16")], [], pt=f64))
    before = copy.deepcopy(untouched.to_list())
    assert untouched.add_epilogues().to_list() == before


# --- merge -------------------------------------------------------------------------------------------

NAME = "gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml"


def test_merge_appends_repoints_and_cleans(tmp_path):
    write(tmp_path / "build_BBS_TN_0" / "3_LibraryLogic" / NAME, [sol(0, "16x16"), sol(1, "32x32")],
          [[[16, 16, 1, 16, 16, 16, 16, 16], [1, 3.0]]])
    write(tmp_path / "build_BBS_TN_1" / "3_LibraryLogic" / NAME,
          [sol(0, "64x64", stagger=0), sol(1, "128x128")], [[[64, 64, 1, 64], [0, 8.0]]])
    merged = library.merge_solutions(tmp_path, epilogues=False)
    assert list(merged) == [NAME]
    lib = merged[NAME]
    assert lib.exact_logic == [[[16, 16, 1, 16], [0, 3.0]], [[64, 64, 1, 64], [1, 8.0]]]
    assert [(s["SolutionIndex"], s["MacroTile0"]) for s in lib.solutions] == [(0, 32), (1, 64)]
    appended = lib.solutions[1]
    assert "ProblemType" not in appended
    assert (appended["StaggerUMapping"], appended["StaggerUStride"],
            appended["_staggerStrideShift"]) == (0, 0, 0)
    assert lib.solutions[0]["StaggerUMapping"] == 3  # the base keeps its own


def test_merge_with_epilogues_renames_the_file(tmp_path):
    write(tmp_path / "b0" / "3_LibraryLogic" / NAME, [sol(0, "16x16")], [[[16, 16, 1, 16], [0, 1.0]]])
    merged = library.merge_solutions(tmp_path)
    assert list(merged) == ["gfx950_Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs.yaml"]


@pytest.mark.parametrize("extra_a, extra_b, pt_b, message", [
    ((0,), (1,), PT_BBS_TN, "DefaultSolution"),
    ((), (), dict(PT_BBS_TN, TransposeA=False), "ProblemType"),
])
def test_merge_refuses_mismatches(tmp_path, extra_a, extra_b, pt_b, message):
    write(tmp_path / "b0" / "3_LibraryLogic" / NAME, [sol(0, "16x16")],
          [[[16, 16, 1, 16], [0, 1.0]]], extra=extra_a)
    write(tmp_path / "b1" / "3_LibraryLogic" / NAME, [sol(0, "16x16")],
          [[[32, 32, 1, 32], [0, 1.0]]], pt=pt_b, extra=extra_b)
    with pytest.raises(LibraryError, match=message):
        library.merge_solutions(tmp_path)


# --- MatchTable extract ------------------------------------------------------------------------------

def test_extract_through_match_table(tmp_path):
    write(tmp_path / "logic" / NAME, [sol(5, "16x16"), sol(6, "32x32"), sol(7, "64x64")], [])
    (tmp_path / "MatchTable.yaml").write_text(
        yaml.safe_dump({1000: [f"logic/{NAME}", 7], 1001: [f"logic/{NAME}", 5]}))
    winners = pd.DataFrame([
        {"m": 64, "n": 8, "batch_count": 1, "k": 64, "solution_index": 1000},
        {"m": 16, "n": 8, "batch_count": 1, "k": 16, "solution_index": 1001},
        {"m": 32, "n": 8, "batch_count": 1, "k": 32, "solution_index": 1000},
    ])
    libs = library.extract_solutions(winners, tmp_path / "MatchTable.yaml")
    lib = libs[NAME]
    assert lib.exact_logic == [[[16, 8, 1, 16], [0, 0.0]], [[32, 8, 1, 32], [1, 0.0]],
                               [[64, 8, 1, 64], [1, 0.0]]]
    assert [s["MacroTile0"] for s in lib.solutions] == [16, 64]
    assert (lib.library_type, lib.perf_metric, lib.index_order) == \
        ("Equality", "DeviceEfficiency", [2, 3, 0, 1])
    with pytest.raises(LibraryError, match="1234"):
        library.extract_solutions(winners.assign(solution_index=1234), tmp_path / "MatchTable.yaml")


def test_match_table_as_list(tmp_path):
    (tmp_path / "MatchTable.yaml").write_text(yaml.safe_dump([["a.yaml", 0], None, ["b.yaml", 3]]))
    table = library.load_match_table(tmp_path / "MatchTable.yaml")
    assert table == {0: (tmp_path / "a.yaml", 0), 2: (tmp_path / "b.yaml", 3)}


# --- from_dataframe and full_libs ---------------------------------------------------------------------

def test_full_libs_mixes_tuned_and_reference(tmp_path):
    write(tmp_path / "libs" / NAME, [sol(0, "16x16"), sol(1, "32x32")],
          [[[16, 8, 1, 16], [0, 2.0]], [[32, 8, 1, 32], [1, 4.0]]])
    results = pd.DataFrame([
        {"lib": NAME, "m": 16, "n": 8, "batch_count": 1, "k": 16, "winner": "tuned",
         "gflops_tuned": 2.5, "solution_index_reference": 900},
        {"lib": NAME, "m": 32, "n": 8, "batch_count": 1, "k": 32, "winner": "reference",
         "gflops_reference": 3.0, "solution_index_reference": 901},
    ])
    reference = {900: sol(0, "128x128"), 901: sol(0, "256x256")}
    libs = library.full_libs(results, tmp_path / "libs",
                             lambda row: reference[row["solution_index_reference"]])
    lib = libs[NAME]
    assert lib.exact_logic == [[[16, 8, 1, 16], [0, 2.5]], [[32, 8, 1, 32], [1, 3.0]]]
    assert [s["MacroTile0"] for s in lib.solutions] == [16, 256]
    kept = library.from_dataframe(results[results["winner"] == "tuned"], tmp_path / "libs")
    assert kept[NAME].exact_logic == [[[16, 8, 1, 16], [0, 2.0]]]


def test_create_bench_input_method(tmp_path):
    path = write(tmp_path / NAME, [sol(0, "16x16")], [[[1024, 1024, 1, 1024], [0, 2147.483648]]])
    bench, verify = library.load_library(path).create_bench_input(tmp_path / "b", verify=True,
                                                                  duration=0.5)
    assert bench.name == "gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs_bench.yaml"
    row = yaml.safe_load(bench.read_text())[0]
    assert row["iters"] == row["cold_iters"] == 500  # 2*1024^3 flop / 2147.48 gflops = 1000 us
    assert yaml.safe_load(verify.read_text())[0]["allclose_check"] == 1


# --- prune_library ---------------------------------------------------------------------------------

def test_prune_library_keeps_every_size_within_tolerance():
    # three 64x64x64 solutions (one cluster) serving four sizes, one 128x128x64 alone
    solutions = [dict(sol(i, "64x64"), MacroTile1=64, DepthU=64) for i in range(3)]
    solutions.append(dict(sol(3, "128x128"), MacroTile1=128, DepthU=64))
    sizes = [[[64 * (i + 1), 64, 1, 4096], [i % 3, 0.0]] for i in range(4)]
    sizes.append([[4096, 4096, 1, 4096], [3, 0.0]])
    lib = library.LibraryLogic.from_text(lib_text(solutions, sizes))
    # measured gflops: solution 0 is within 2 % of the best on every size, 1 and 2 win by 1 %
    gflops = {0: [100, 100, 100, 100], 1: [101, 90, 80, 70], 2: [60, 101, 90, 80]}

    def sweep(cluster):
        indices = [s["SolutionIndex"] for s in cluster.solutions]
        assert sorted(indices) == [0, 1, 2]
        return pd.DataFrame([{"m": size[0], "n": size[1], "batch_count": size[2], "k": size[3],
                              "SolutionIndex": i, "gflops": gflops[i][n]}
                             for n, (size, _) in enumerate(cluster.exact_logic) for i in indices])

    pruned, report = library.prune_library(lib, sweep, tol=0.02, scale_tol=False)
    assert [s["MacroTile0"] for s in pruned.solutions] == [64, 128]
    assert [entry for _, entry in pruned.exact_logic] == [[0, 100.0]] * 4 + [[1, 0.0]]
    assert report[0]["solutions_before"] == 3 and report[0]["solutions_after"] == 1
    assert report[1]["method"] == "single"
