"""geko_lib.gemm: data-type tables, GEMM type naming, problems.

Expected values come from original_tool.md §1.3-1.4 (hipBLASLt name <-> Tensile code <-> bytes,
INDEX_TYPE_MAP enums, GemmType naming), from Tensile's DataType enum and from the names of the
real library-logic fixtures.
"""

import math

import numpy as np
import pytest

from geko_lib import gemm
from geko_lib.gemm import GemmError, GemmProblem, GemmType

from .conftest import FIXTURES

LOGIC_DIR = FIXTURES / "tensile_logic"


def bf16(ta="T", tb="N"):
    return GemmType(ta, tb, "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")


# --------------------------------------------------------------------------------------------
# data-type tables (§1.3)

# hipBLASLt name, Tensile code, bytes (DTYPE_BYTES)
SPEC_TABLE = [
    ("bf16_r", "B", 2),
    ("f16_r", "H", 2),
    ("f32_r", "S", 4),
    ("f64_r", "D", 8),
    ("f8_r", "F8", 1),
    ("bf8_r", "B8", 1),
    ("xf32_r", "X", 4),
    ("f32_c", "C", 8),
    ("f64_c", "Z", 16),
]


@pytest.mark.parametrize("name, code, nbytes", SPEC_TABLE)
def test_dtype_name_code_bytes(name, code, nbytes):
    d = gemm.BY_NAME[name]
    assert d.tensile == code
    assert d.bytes == nbytes
    assert gemm.BY_CODE[code].hipblaslt == name
    assert gemm.dtype(name) is d


def test_f8_fnuz_code():
    assert gemm.BY_NAME["f8_fnuz_r"].tensile == "F8N"
    assert gemm.BY_CODE["F8N"].hipblaslt == "f8_fnuz_r"


@pytest.mark.parametrize("name, nbytes", [("i8_r", 1), ("i32_r", 4)])
def test_integer_bytes(name, nbytes):
    assert gemm.BY_NAME[name].bytes == nbytes


def test_f4_code():
    assert gemm.BY_NAME["f4_r"].tensile == "F4"


def test_f4_bytes_are_packed():
    # the original counts f4 as 1 byte; two values share a byte, which is what traffic models need
    assert gemm.BY_NAME["f4_r"].bytes == 0.5


# Tensile numeric DataType enum in library-logic ProblemType (INDEX_TYPE_MAP, §1.3)
@pytest.mark.parametrize("enum, name", [
    (0, "f32_r"), (1, "f64_r"), (2, "f32_c"), (3, "f64_c"), (4, "f16_r"), (5, "i8_r"),
    (6, "i32_r"), (7, "bf16_r"), (10, "xf32_r"), (8, "i8_r"), (11, "f8_fnuz_r"), (12, "bf8_fnuz_r"), (21, "f4_r"),
])
def test_enum_to_name(enum, name):
    assert gemm.BY_ENUM[enum].hipblaslt == name


@pytest.mark.parametrize("enum, name", [(15, "f8_r"), (16, "bf8_r")])
def test_enum_ocp_fp8(enum, name):
    assert gemm.BY_ENUM[enum].hipblaslt == name


def test_enum_int8():
    assert gemm.BY_ENUM[8].hipblaslt == "i8_r"


def test_enum_table_consistent():
    for d in gemm.DTYPES:
        assert gemm.BY_NAME[d.hipblaslt] is d
        assert gemm.BY_CODE[d.tensile] is d


def test_dtype_unknown():
    with pytest.raises(GemmError):
        gemm.dtype("q16_r")
    assert issubclass(GemmError, ValueError)


def test_dtype_accepts_compute_prefix():
    assert gemm.dtype("c_f32_r").hipblaslt == "f32_r"


# --------------------------------------------------------------------------------------------
# compute / scale types (§1.5 rules 5 and 7)

@pytest.mark.parametrize("given, expected", [
    ("f32_r", "c_f32_r"), ("c_f32_r", "c_f32_r"), ("f16_r", "f16_r"), ("bf16_r", "bf16_r"),
    ("f64_r", "c_f64_r"), ("xf32_r", "c_xf32_r"), ("c_xf32_r", "c_xf32_r"), ("i32_r", "c_i32_r"),
])
def test_normalize_compute_type(given, expected):
    assert gemm.normalize_compute_type(given) == expected


@pytest.mark.parametrize("given, expected", [
    ("c_f32_r", "f32_r"), ("c_xf32_r", "f32_r"), ("f32_r", "f32_r"), ("f16_r", "f16_r"),
    ("c_f64_r", "f64_r"), ("xf32_r", "f32_r"),
])
def test_scale_type_for(given, expected):
    assert gemm.scale_type_for(given) == expected


# --------------------------------------------------------------------------------------------
# split_codes

@pytest.mark.parametrize("codes, names", [
    ("B", ["bf16_r"]),
    ("BH", ["bf16_r", "f16_r"]),
    ("F8B8", ["f8_r", "bf8_r"]),
    ("B8F8", ["bf8_r", "f8_r"]),
    ("F8N", ["f8_fnuz_r"]),
    ("F8", ["f8_r"]),
    ("SS", ["f32_r", "f32_r"]),
])
def test_split_codes(codes, names):
    assert [d.hipblaslt for d in gemm.split_codes(codes)] == names


@pytest.mark.parametrize("codes", ["Q", "BQ", "F9", "b"])
def test_split_codes_unknown(codes):
    with pytest.raises(GemmError):
        gemm.split_codes(codes)


# --------------------------------------------------------------------------------------------
# GemmType naming (§1.4)

def test_name_bbs_tn():
    t = bf16("T", "N")
    assert (t.data_type, t.dest_data_type, t.compute_data_type) == ("B", "B", "S")
    assert t.name == "BBS_TN"


def test_name_hhs_nn():
    t = GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")
    assert t.name == "HHS_NN"


def test_name_f8_in_bf16_out():
    t = GemmType("T", "N", "f8_r", "f8_r", "bf16_r", "bf16_r", "c_f32_r")
    assert t.name == "F8BS_TN"


def test_name_mixed_inputs_concatenate():
    t = GemmType("T", "N", "f8_r", "bf8_r", "bf16_r", "bf16_r", "c_f32_r")
    assert t.data_type == "F8B8"
    assert t.name == "F8B8BS_TN"
    t = GemmType("N", "T", "bf16_r", "f16_r", "f32_r", "f32_r", "c_f32_r")
    assert t.data_type == "BH"
    assert t.name == "BHSS_NT"


def test_name_tf32():
    t = GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_xf32_r")
    assert t.is_tf32
    assert (t.data_type, t.dest_data_type, t.compute_data_type) == ("X", "S", "S")
    assert t.name == "XSS_NN"


def test_name_sgemm():
    t = GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r", "f32_r")
    assert t.name == "SSS_NN"
    assert t.compute_type == "f32_r"  # as the original holds it
    assert t.log_compute_type == "c_f32_r" and t.log_fields()["compute_type"] == "c_f32_r"
    assert GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r") == t


def test_tf32_needs_f32_data():
    with pytest.raises(GemmError):
        GemmType("N", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_xf32_r")


@pytest.mark.parametrize("ta, tb, expected", [
    ("T", "N", "Cijk_Alik_Bljk_BBS_BH"),
    ("N", "N", "Cijk_Ailk_Bljk_BBS_BH"),
    ("N", "T", "Cijk_Ailk_Bjlk_BBS_BH"),
    ("T", "T", "Cijk_Alik_Bjlk_BBS_BH"),
])
def test_tensile_problem_name_bf16(ta, tb, expected):
    assert bf16(ta, tb).tensile_problem_name == expected


def test_tensile_problem_name_hhs_tt():
    t = GemmType("T", "T", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")
    assert t.tensile_problem_name == "Cijk_Alik_Bjlk_HHS_BH"
    assert t.high_precision_accumulate


def test_tensile_problem_name_sgemm():
    t = GemmType("N", "N", "f32_r", "f32_r", "f32_r", "f32_r", "c_f32_r")
    assert t.tensile_problem_name == "Cijk_Ailk_Bljk_S_B"


def test_tensile_problem_names_of_fixtures():
    if not LOGIC_DIR.is_dir():
        pytest.skip("tests/fixtures absent")
    expected = {
        "aquavanjaram_Cijk_Alik_Bljk_BBS_BH_BiasSB_HAS_SAV_UserArgs.yaml": bf16("T", "N"),
        "gfx950_Cijk_Ailk_Bljk_BBS_BH_UserArgs.yaml": bf16("N", "N"),
        "gfx950_Cijk_Alik_Bjlk_HHS_BH_BiasSH_HAS_SAV_UserArgs.yaml":
            GemmType("T", "T", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r"),
    }
    for name, t in expected.items():
        assert (LOGIC_DIR / name).is_file()
        assert "_" + t.tensile_problem_name + "_" in name


def test_transpose_normalization():
    t = GemmType(True, False, "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    assert (t.transA, t.transB) == ("T", "N")
    assert GemmType("t", "n", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r") == bf16("T", "N")


@pytest.mark.parametrize("bad", ["C", "X", "", "TN", None, 1])
def test_bad_transpose(bad):
    with pytest.raises(GemmError):
        GemmType(bad, "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")


def test_unknown_dtype_in_type():
    with pytest.raises(GemmError):
        GemmType("T", "N", "bf17_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    with pytest.raises(GemmError):
        GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_q32_r")


def test_gemm_type_is_hashable_value():
    assert bf16() == bf16()
    assert hash(bf16()) == hash(bf16())
    assert len({bf16(), bf16(), bf16("N", "N")}) == 2


def test_log_fields():
    assert bf16().log_fields() == {
        "transA": "T", "transB": "N", "a_type": "bf16_r", "b_type": "bf16_r",
        "c_type": "bf16_r", "d_type": "bf16_r", "compute_type": "c_f32_r"}


# --------------------------------------------------------------------------------------------
# from_tensile round trips

@pytest.mark.parametrize("codes, ab, c, compute, name", [
    (("B", "B", "S"), ("bf16_r", "bf16_r"), "bf16_r", "c_f32_r", "BBS"),
    (("H", "H", "S"), ("f16_r", "f16_r"), "f16_r", "c_f32_r", "HHS"),
    (("S", "S", "S"), ("f32_r", "f32_r"), "f32_r", "c_f32_r", "SSS"),
    (("X", "S", "S"), ("f32_r", "f32_r"), "f32_r", "c_xf32_r", "XSS"),
    (("BH", "S", "S"), ("bf16_r", "f16_r"), "f32_r", "c_f32_r", "BHSS"),
    (("F8B8", "B", "S"), ("f8_r", "bf8_r"), "bf16_r", "c_f32_r", "F8B8BS"),
    (("F8", "H", "S"), ("f8_r", "f8_r"), "f16_r", "c_f32_r", "F8HS"),
    (("H", "H", "H"), ("f16_r", "f16_r"), "f16_r", "f16_r", "HHH"),
])
@pytest.mark.parametrize("ta, tb", [("N", "T"), ("T", "N")])
def test_from_tensile_round_trip(codes, ab, c, compute, name, ta, tb):
    t = GemmType.from_tensile(ta, tb, *codes)
    assert (t.a_type, t.b_type) == ab
    assert t.c_type == t.d_type == c
    assert t.log_compute_type == compute
    assert (t.transA, t.transB) == (ta, tb)
    assert t.name == f"{name}_{ta}{tb}"
    assert (t.data_type, t.dest_data_type, t.compute_data_type) == codes
    assert GemmType.from_tensile(t.transA, t.transB, t.data_type, t.dest_data_type,
                                 t.compute_data_type) == t


@pytest.mark.parametrize("args", [
    ("Q", "S", "S", "N", "N"),
    ("B", "Q", "S", "N", "N"),
    ("B", "B", "Q", "N", "N"),
    ("BHS", "S", "S", "N", "N"),  # three input types
    ("B", "BH", "S", "N", "N"),  # dest must be one type
    ("B", "B", "SS", "N", "N"),
    ("X", "B", "S", "N", "N"),  # TF32 needs f32 output
    ("B", "B", "S", "C", "N"),
    ("B", "B", "S", "N", "Y"),
])
def test_from_tensile_errors(args):
    with pytest.raises(GemmError):
        GemmType.from_tensile(*args[3:], *args[:3])


# --------------------------------------------------------------------------------------------
# GemmProblem

def test_problem_basic():
    p = GemmProblem(bf16(), 128, 64, 2, 256)
    assert p.size == (128, 64, 2, 256)
    assert p.flops == 2 * 128 * 64 * 256 * 2
    # bf16: (128*256 + 256*64) * 2 bytes read + 128*64 * 2 bytes written, per batch
    assert p.min_bytes == 2 * (2 * (128 * 256 + 256 * 64) + 2 * 128 * 64)
    assert p.name == "BBS_TN_M128_N64_B2_K256"


def test_min_bytes_f32_out_f16_in():
    t = GemmType("N", "N", "f16_r", "f16_r", "f32_r", "f32_r", "c_f32_r")
    p = GemmProblem(t, 10, 20, 1, 30)
    assert p.min_bytes == 2 * (10 * 30 + 30 * 20) + 4 * 10 * 20


def test_min_bytes_mixed_input_widths():
    t = GemmType("N", "N", "f8_r", "f16_r", "f16_r", "f16_r", "c_f32_r")
    p = GemmProblem(t, 10, 20, 1, 30)
    assert p.min_bytes == 1 * 10 * 30 + 2 * 30 * 20 + 2 * 10 * 20


def test_problem_accepts_numpy_ints():
    p = GemmProblem(bf16(), np.int64(16), np.int32(8), np.int64(1), np.int64(32))
    assert p.size == (16, 8, 1, 32)
    assert all(type(v) is int for v in p.size)


@pytest.mark.parametrize("bad", [0, -1, -128, 1.5, 0.5, True, False])
@pytest.mark.parametrize("field", range(4))
def test_problem_rejects_bad_sizes(bad, field):
    sizes = [16, 16, 1, 16]
    sizes[field] = bad
    with pytest.raises(GemmError):
        GemmProblem(bf16(), *sizes)


@pytest.mark.parametrize("bad", [None, math.nan, "abc"])
def test_problem_rejects_missing_sizes(bad):
    with pytest.raises(GemmError):
        GemmProblem(bf16(), 16, bad, 1, 16)


def test_problem_rejects_numpy_bool():
    with pytest.raises(GemmError):
        GemmProblem(bf16(), 16, np.True_, 1, 16)


def test_problem_ordering_and_hash():
    a = GemmProblem(bf16(), 16, 16, 1, 16)
    b = GemmProblem(bf16(), 16, 16, 1, 16)
    assert a == b and hash(a) == hash(b)


ROW = {"transA": "T", "transB": "N", "batch_count": 3, "a_type": "bf16_r", "b_type": "bf16_r",
       "c_type": "bf16_r", "d_type": "bf16_r", "compute_type": "c_f32_r"}


def test_from_row_upper_case():
    p = GemmProblem.from_row({**ROW, "M": 4096, "N": 8, "K": 1024})
    assert p == GemmProblem(bf16(), 4096, 8, 3, 1024)


def test_from_row_lower_case():
    p = GemmProblem.from_row({**ROW, "m": 4096, "n": 8, "k": 1024})
    assert p == GemmProblem(bf16(), 4096, 8, 3, 1024)


def test_from_row_defaults_and_normalization():
    row = {k: v for k, v in ROW.items() if k not in ("batch_count", "d_type")}
    row.update(M=64, N=32, K=16, compute_type="f32_r")
    p = GemmProblem.from_row(row)
    assert p.batch == 1
    assert p.type.d_type == "bf16_r"
    assert p.type.compute_type == "f32_r" and p.gemm_fields()["compute_type"] == "c_f32_r"


def test_from_row_pandas_series():
    import pandas as pd

    p = GemmProblem.from_row(pd.Series({**ROW, "m": 4096, "n": 8, "k": 1024}))
    assert p.size == (4096, 8, 3, 1024)


def test_gemm_fields():
    p = GemmProblem(bf16(), 4096, 8, 3, 1024)
    fields = p.gemm_fields()
    assert fields == {"transA": "T", "transB": "N", "batch_count": 3, "m": 4096, "n": 8,
                      "k": 1024, "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r",
                      "d_type": "bf16_r", "compute_type": "c_f32_r"}
    assert GemmProblem.from_row(fields) == p


def test_field_sets_match_spec():
    assert set(gemm.GEMM_LOG_FIELDS) == {"transA", "transB", "batch_count", "M", "N", "K",
                                         "a_type", "b_type", "c_type", "d_type", "compute_type"}
    assert set(gemm.GEMM_FIELDS) - {"scaleA", "scaleB"} == {
        "transA", "transB", "batch_count", "m", "n", "k", "a_type", "b_type", "c_type",
        "d_type", "compute_type"}
    assert gemm.GEMM_TYPE_FIELDS == ("transA", "transB", "a_type", "b_type", "c_type",
                                     "compute_type")
    assert gemm.LOG_FIELDS[0] == "function" and gemm.LOG_FIELDS[-1] == "call_count"
