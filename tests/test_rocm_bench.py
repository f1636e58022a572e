"""hipblaslt-bench side of the rocm platform: the rows, argv and environment geko gives it, and
the parser of its output, checked against real recorded outputs (tests/fixtures/hipblaslt_bench)."""

import math

import pytest

from geko_lib.gemm import GemmProblem, GemmType
from geko_lib.platforms import PlatformError
from geko_lib.platforms.rocm import BenchOutputError, parse_bench_output
from geko_lib.platforms.rocm import bench as hb
from tests.conftest import FIXTURES

BENCH_FIXTURES = FIXTURES / "hipblaslt_bench"
needs_fixtures = pytest.mark.skipif(not BENCH_FIXTURES.is_dir(),
                                    reason="tests/fixtures is not here")

BBS_NN = GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
PROBLEM = GemmProblem(BBS_NN, 3584, 2048, 1, 512)


def fixture(name: str):
    path = BENCH_FIXTURES / name
    return parse_bench_output(path.read_text(), source=path.name)


# --- every recorded output ----------------------------------------------------------------------

@needs_fixtures
def test_every_fixture_parses():
    names = sorted(p.name for p in BENCH_FIXTURES.glob("*.txt"))
    assert len(names) == 10
    for name in names:
        frame = fixture(name)
        assert len(frame) >= 1, name
        assert (frame["us"] > 0).all(), name


@needs_fixtures
def test_gfx950_nn_full_output():
    frame = fixture("bench_100200_gfx950_bf16_NN_m3584_n2048_k512.txt")
    row = frame.iloc[0]
    assert (row.transA, row.transB, row.m, row.n, row.k, row.batch_count) == \
        ("N", "N", 3584, 2048, 512, 1)
    assert row.compute_type == "c_f32_r" and row.a_type == "bf16_r"
    assert row.us == pytest.approx(19.8297)
    assert row.gflops == pytest.approx(379037) and row["hipblaslt-Gflops"] == pytest.approx(379037)
    assert row.gbps == pytest.approx(960.324)
    assert row.solution_index == 300582
    assert row.solution_name.startswith("Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x32")
    assert row.kernel.endswith("_WSGRA0_WSGRB0_WS64_WG32_8_1")
    assert row.rotating_buffer == 640 and row.flush == 1 and row.use_gpu_timer == 1
    assert not row.winner and row.line == 11


@needs_fixtures
def test_gfx950_tn_custom_kernel():
    row = fixture("bench_100200_gfx950_bf16_TN_m8192_n8192_k8192_custom_kernel.txt").iloc[0]
    assert (row.transA, row.m) == ("T", 8192)
    assert row.gflops == pytest.approx(1.29211e6) and row.us == pytest.approx(850.941)
    assert row.solution_index == 302286
    assert row.kernel == "Custom_Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_UserArgs_shortname0_gfx950"


@needs_fixtures
def test_verify_columns_readme():
    row = fixture("bench_readme_2024_f32_verify_cpu_columns.txt").iloc[0]
    assert row.us == pytest.approx(10.4)
    assert row.norm_error == pytest.approx(2.44879e-07)
    assert row["CPU-us"] == pytest.approx(43688)
    assert row.atol == pytest.approx(1e-5) and row.rtol == pytest.approx(1e-5)
    assert row.bias_type == "non-supported type"
    assert row.solution_index == -1 and row.kernel == ""  # no --print_kernel_info


@needs_fixtures
def test_legacy_verify_gfx906():
    row = fixture("bench_2023_issue251_gfx906_legacy_verify.txt").iloc[0]
    assert (row.m, row.n, row.k) == (2048, 2048, 2048)  # upper-case M,N,K in this build
    assert row.a_type == row.b_type == row.c_type == row.d_type == "f32_r"  # d_type only
    assert row.us == pytest.approx(6.3) and row.gflops == pytest.approx(2.72763e6)
    assert row.norm_error == pytest.approx(1.08487)  # printed as norm_error_1
    assert row.activation_type == "relu"
    assert row.line == 10


@needs_fixtures
def test_diff_excerpt_gfx1201_mixed_fp8():
    row = fixture("bench_1200_pr1263_gfx1201_verify_solution_diff_excerpt.txt").iloc[0]
    assert (row.a_type, row.b_type, row.c_type, row.compute_type) == \
        ("bf8_r", "f8_r", "bf8_r", "f16_r")
    assert row.us == pytest.approx(676.4)
    assert math.isnan(row.norm_error)
    assert row.solution_index == 1666
    assert row.solution_name.startswith("Cijk_Alik_Bljk_B8F8B8S_BH_BiasSHB_HAS_SAB_SCD_SAV")
    assert row.kernel == ""  # the excerpt ends before --kernel name
    assert hb.verification_error(fixture(
        "bench_1200_pr1263_gfx1201_verify_solution_diff_excerpt.txt")).iloc[0] == hb.FAILED_ERROR


@needs_fixtures
def test_winner_block_and_misspelled_index():
    row = fixture("bench_docs_offline_tuning_winner_soulution_index.txt").iloc[0]
    assert row.winner and row.solution_index == 56537
    assert row.us == pytest.approx(16.1189) and row.beta == 1


@needs_fixtures
def test_heuristic_print_with_block_marker_on_its_own_line():
    frame = fixture("bench_docs_offline_tuning_heuristic_print_kernel_info.txt")
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row.us == pytest.approx(28.5758) and row.solution_index == 56537
    assert row.rotating_buffer == 512 and not row.winner


# --- a dense-search output (several solutions, a skipped one, Winner) --------------------------------

HEADER = ("[{i}]:transA,transB,grouped_gemm,batch_count,m,n,k,alpha,a_type,b_type,c_type,d_type,"
          "compute_type,lowest-avg-freq,lowest-median-freq,avg-MCLK,median-MCLK,"
          "hipblaslt-Gflops,hipblaslt-GB/s,us")


def block(i, us, index, name="Cijk_X"):
    return (f"{HEADER.format(i=i)}\n    N,N,0,1,64,64,64,1,bf16_r,bf16_r,bf16_r,bf16_r,f32_r,"
            f"2100,2100,1900,1900,10,1,{us}\n    --Solution index: {index}\n"
            f"    --Solution name:  {name}_{index}\n    --kernel name:    {name}_{index}\n")


def dense_output():
    return ("hipBLASLt version: 100200\nIs supported 3 / Total solutions: 3\n"
            + block(0, 5.5, 11) + "Skip solution: 1 (best warm-up = 5.5 us , warm-up = 30 us, "
            "skip ratio = 0.3)\n" + block(2, 4.25, 13) + "Winner: \n" + block(2, 4.25, 13))


def test_dense_search_output():
    frame = parse_bench_output(dense_output())
    assert list(frame["solution_index"]) == [11, 13, 13]
    assert list(frame["winner"]) == [False, False, True]
    assert frame["lowest_avg_freq"].iloc[0] == 2100 and frame["median_MCLK"].iloc[0] == 1900
    candidates = hb.candidates_only(frame)
    assert list(candidates["solution_index"]) == [11, 13]
    assert hb.chosen_rows(frame)["solution_index"].tolist() == [13]


# --- malformed outputs: refused with the line -----------------------------------------------------

GOOD = block(0, 5.5, 11)


@pytest.mark.parametrize("text, line, words", [
    ("", None, "no hipblaslt-bench result"),
    ("hipBLASLt version: 100200\nIs supported 0 / Total solutions: 0\n", None, "no hipblaslt"),
    (HEADER.format(i=0) + "\n", 1, "no value line"),
    (GOOD.replace(",5.5\n", ",5.5,7\n"), 2, "21 values, but the header (line 1) has 20"),
    (GOOD.replace(",5.5\n", ",abc\n"), 2, "us 'abc' is not a positive time"),
    (GOOD.replace(",5.5\n", ",-1\n"), 2, "us '-1' is not a positive time"),
    (GOOD.replace("N,N,0,1,64", "N,N,0,1,6.5"), 2, "m '6.5' is not a positive integer"),
    (GOOD.replace("bf16_r,bf16_r,bf16_r,bf16_r", "bf16_r,bogus_r,bf16_r,bf16_r"), 2,
     "b_type 'bogus_r' is not a hipBLASLt data type"),
    (GOOD.replace("N,N,0,1,64", "N,X,0,1,64"), 2, "transpose"),
    (GOOD.replace("--Solution index: 11", "--Solution index: eleven"), 3, "not an integer"),
    (GOOD.replace("--kernel name:    Cijk_X_11", "--kernel name:    Cijk;rm -rf /"), 5,
     "characters a Tensile name never has"),
    ("--Solution index: 3\n" + GOOD, 1, "without a result row"),
    (HEADER.format(i=0).replace(",us", "") + "\n", 1, "lacks column(s) us"),
    (HEADER.format(i=0) + "\n" + GOOD, 1, "no value line before the next header"),
    (GOOD.replace(",alpha,", ",al=pha,"), 1, "column 'al=pha' is not a column name"),
    (GOOD.replace("N,N,0,1,64,64,64,1,", "N,N,0,1,64,64,64,\x1b[2J,"), 2,
     "alpha '\\x1b[2J' holds control characters"),
])
def test_malformed_output_is_refused(text, line, words):
    with pytest.raises(BenchOutputError) as err:
        parse_bench_output(text, source="job.out")
    assert err.value.line == line
    assert words in str(err.value)
    assert str(err.value).startswith(f"job.out:{line}:" if line else "job.out:")
    assert isinstance(err.value, PlatformError)


# --- rows ---------------------------------------------------------------------------------------

def test_bench_row_keys():
    row = hb.bench_row(PROBLEM, 250, 250, 512)
    assert row == {"function": "matmul", "transA": "N", "transB": "N", "M": 3584, "N": 2048,
                   "K": 512, "batch_count": 1, "scaleA": 0, "scaleB": 0, "a_type": "bf16_r",
                   "b_type": "bf16_r", "c_type": "bf16_r", "d_type": "bf16_r",
                   "scale_type": "f32_r", "compute_type": "c_f32_r", "alpha": 1.0, "beta": 0.0,
                   "initialization": "trig_float", "rotating": 512, "flush": True,
                   "use_gpu_timer": True, "print_kernel_info": True, "iters": 250,
                   "cold_iters": 250}


def test_iterations_from_budget_and_latency():
    from geko_lib.bench_formats.rows import iterations

    assert iterations(0.5, 20.0) == (25000, 25000)
    assert iterations(0.01, 50.0) == (200, 200)  # the original's worked example
    assert iterations(None, 20.0) == (100, 20)
    assert iterations(0.5, None) == (100, 20)
    assert iterations(0.5, float("nan")) == (100, 20)


def test_search_row_keys():
    row = hb.search_row(PROBLEM, 19.8297, 0.04, 512)
    assert row["algo_method"] == 0 and row["requested_solution_num"] == -1
    assert row["skip_slow_solution_ratio"] == 0.3  # latency <= 20 us
    assert row["iters"] == row["cold_iters"] == math.ceil(0.04e6 / 19.8297)
    assert row["beta"] == 0.0 and row["flush"] is False and row["rotating"] == 512
    assert row["use_gpu_timer"] and row["print_kernel_info"]
    assert hb.search_row(PROBLEM, 25.0, 0.04, 512)["skip_slow_solution_ratio"] == 0.6
    unknown = hb.search_row(GemmProblem(BBS_NN, 4096, 4096, 1, 2048), None, 0.04, 512)
    assert (unknown["iters"], unknown["cold_iters"], unknown["skip_slow_solution_ratio"]) == \
        (100, 20, 0.6)


def test_verify_row_keys():
    row = hb.verify_row(PROBLEM)
    assert {k: row[k] for k in ("norm_check", "norm_check_assert", "allclose_check", "iters",
                                "cold_iters")} == {"norm_check": 1, "norm_check_assert": 0,
                                                   "allclose_check": 1, "iters": 1,
                                                   "cold_iters": 0}
    assert "rotating" not in row and "flush" not in row
    assert row["print_kernel_info"] is True


# --- argv and environment ---------------------------------------------------------------------

def test_command_is_an_argv_list():
    assert hb.command("/hip/bench", "/w/rows.yaml", 3) == ["/hip/bench", "--yaml", "/w/rows.yaml",
                                                          "--device", "3"]


def test_environment_reference_drops_an_inherited_library():
    env = hb.environment({"PATH": "/bin", "HIPBLASLT_TENSILE_LIBPATH": "/stale",
                          "HIPBLASLT_BENCH_FREQ": "1"})
    assert env == {"PATH": "/bin"}


def test_environment_tuned_and_frequency():
    env = hb.environment({"PATH": "/bin"}, "/w/tensile/library/gfx950", bench_freq=True)
    assert env == {"PATH": "/bin", "HIPBLASLT_TENSILE_LIBPATH": "/w/tensile/library/gfx950",
                   "HIPBLASLT_BENCH_FREQ": "1"}


def test_device_ordinal_under_a_pinned_allocation():
    assert hb.device_ordinal(5, {}) == 5
    assert hb.device_ordinal(5, {"HIP_VISIBLE_DEVICES": "4,5"}) == 1
    assert hb.device_ordinal(2, {"ROCR_VISIBLE_DEVICES": "0,1"}) == 2  # not pinned to it


def test_verification_error():
    frame = parse_bench_output(
        "[0]:transA,transB,batch_count,m,n,k,d_type,compute_type,us,norm_error,atol,rtol\n"
        "N,N,4,8,8,8,f32_r,f32_r,1.0,0.08,1e-05,1e-05\n"
        "[0]:transA,transB,batch_count,m,n,k,d_type,compute_type,us,norm_error,atol,rtol\n"
        "N,N,1,16,8,8,f32_r,f32_r,1.0,0.001,failed,failed\n")
    assert hb.verification_error(frame).tolist() == [pytest.approx(0.02), hb.FAILED_ERROR]
