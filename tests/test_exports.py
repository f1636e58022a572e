"""geko_lib.library.exports: hipBLASLt tuning override files and PyTorch TunableOp results files,
on the real fixtures (fixtures/tuning_override) and hand-written tables."""

import itertools
import math
import warnings

import pandas as pd
import pytest

from geko_lib.library import exports
from geko_lib.library.exports import (IDENTITY, ExportError, default_validators, read_tunableop,
                                      read_tuning_override, tunableop_style, write_tunableop,
                                      write_tuning_override)

from .conftest import FIXTURES

FIXDIR = FIXTURES / "tuning_override"
OVERRIDE_FILES = sorted(FIXDIR.glob("*.txt")) if FIXDIR.is_dir() else []
TUNABLEOP_FILES = sorted(FIXDIR.glob("*.csv")) if FIXDIR.is_dir() else []
needs_fixtures = pytest.mark.skipif(not (OVERRIDE_FILES and TUNABLEOP_FILES),
                                    reason="tests/fixtures/tuning_override absent")

DTK = "hipblaslt_tuning_file_dtk_gfx938_i8_git_a6254b89.txt"
PR131078 = "tunableop_pytorch_pr131078_gfx942_bf16_TN.csv"
README = "tunableop_pytorch_readme_example_gfx_unspecified.csv"
DOCS = "tunableop_results0_rocm_docs_gfx942_float_TN.csv"
BLOGS = "tunableop_matmul_result0_rocm_blogs_gfx90a_float_NN.csv"

VALIDATORS = {"PT_VERSION": "2.7.1", "ROCM_VERSION": "6.4.1.0-83-0f0a83c",
              "HIPBLASLT_VERSION": "100201-5b515cf1bc", "GCN_ARCH_NAME": "gfx942:sramecc+:xnack-"}
LEGACY_VALIDATORS = {**VALIDATORS, "PT_VERSION": "2.5.1"}


# ------------------------------------------------------------------------------------------------
# real files


@needs_fixtures
@pytest.mark.parametrize("path", OVERRIDE_FILES, ids=lambda p: p.name)
def test_every_override_fixture_reads(path):
    frame = read_tuning_override(path)
    assert len(frame) > 0
    assert list(frame.columns[:len(IDENTITY)]) == list(IDENTITY)
    assert frame["solution_index"].dtype == "int64"


@needs_fixtures
@pytest.mark.parametrize("path", TUNABLEOP_FILES, ids=lambda p: p.name)
def test_every_tunableop_fixture_reads(path):
    frame = read_tunableop(path)
    assert len(frame) > 0
    assert frame.attrs["validators"]["PT_VERSION"]
    assert set(frame["op"]) == {"GemmTunableOp"}


@needs_fixtures
def test_override_fixture_values():
    frame = read_tuning_override(FIXDIR / DTK)
    assert frame.attrs["version"] == "a6254b89-dirty"
    assert len(frame) == 11
    assert "solution_name" not in frame.columns  # this build writes gcnArchName,CUs instead
    # "    T,N,0,1,28672,512,512,1,512,14680064,0,...,i8_r,i8_r,i32_r,bf16_r,i32_r,2,2,...,5223,..."
    first = frame.iloc[0]
    assert (first["transA"], first["transB"], first["batch_count"]) == ("T", "N", 1)
    assert (first["m"], first["n"], first["k"]) == (28672, 512, 512)
    assert (first["a_type"], first["b_type"], first["c_type"], first["d_type"]) == \
        ("i8_r", "i8_r", "i32_r", "bf16_r")
    assert first["compute_type"] == "c_i32_r"  # written without the c_ prefix in the file
    assert (first["scaleA"], first["scaleB"]) == (2, 2)
    assert first["solution_index"] == 5223
    assert first["us"] == pytest.approx(99.8581)
    # last entry: "    T,N,0,1,2624,120,6144,...,89438,43.2618,5195,gfx938:sramecc+:xnack-,72"
    last = frame.iloc[-1]
    assert (last["m"], last["n"], last["k"], last["solution_index"]) == (2624, 120, 6144, 5195)
    assert frame["solution_index"].tolist() == [5223, 5195, 5162, 5172, 5223, 5214, 5233, 5202,
                                                5211, 5202, 5195]


@needs_fixtures
def test_tunableop_fixture_pr131078():
    frame = read_tunableop(FIXDIR / PR131078)
    assert frame.attrs["validators"] == {
        "PT_VERSION": "2.5.0", "ROCBLAS_VERSION": "4.0.0-72e57364-dirty",
        "HIPBLASLT_VERSION": "800-bf2c3184", "ROCM_VERSION": "6.0.0.0-12969-1544e39",
        "GCN_ARCH_NAME": "gfx942:sramecc+:xnack-"}
    # GemmTunableOp_BFloat16_TN,tn_8192_2_3584,Gemm_Hipblaslt_TN_572,0.0240676: a decode linear
    # layer, hipBLASLt transA=T, transB=N, M = out_features 8192, N = 2 tokens, K = 3584
    row = frame.iloc[0]
    assert (row["transA"], row["transB"], row["m"], row["n"], row["k"]) == ("T", "N", 8192, 2, 3584)
    assert row["a_type"] == row["d_type"] == "bf16_r" and row["compute_type"] == "c_f32_r"
    assert row["batch_count"] == 1
    assert row["solution"] == "Gemm_Hipblaslt_TN_572" and row["backend"] == "hipblaslt"
    assert row["solution_index"] == 572
    assert row["time_ms"] == pytest.approx(0.0240676) and row["us"] == pytest.approx(24.0676)
    assert pd.isna(row["lda"])  # legacy params: no leading dimensions
    # GemmTunableOp_BFloat16_TN,tn_8192_2_1024,Default,0.0173723
    default = frame.iloc[2]
    assert default["solution"] == "Default" and default["backend"] == "default"
    assert pd.isna(default["solution_index"]) and pd.isna(default["backend_index"])
    assert frame["solution_index"].tolist()[:2] == [572, 482]
    assert frame["solution_index"].iloc[3] == 491


@needs_fixtures
def test_tunableop_fixture_other_libraries():
    readme = read_tunableop(FIXDIR / README)
    # GemmTunableOp_float_NT,nt_25088_4096_64,1219,1.262 (the README's bare-number form)
    assert "GCN_ARCH_NAME" not in readme.attrs["validators"]
    assert readme.attrs["validators"]["HIPBLASLT_VERSION"] == "0.6.0-a9c5cc7"
    row = readme.iloc[0]
    assert row[["transA", "transB", "m", "n", "k"]].tolist() == ["N", "T", 25088, 4096, 64]
    assert row["a_type"] == "f32_r" and row["compute_type"] == "c_f32_r"
    assert row["backend"] == "unknown" and pd.isna(row["solution_index"])
    assert row["backend_index"] == 1219 and row["time_ms"] == pytest.approx(1.262)

    docs = read_tunableop(FIXDIR / DOCS)
    # GemmTunableOp_float_TN,tn_200_100_20,Gemm_Rocblas_32323,0.00669595
    row = docs.iloc[0]
    assert (row["transA"], row["transB"], row["m"], row["n"], row["k"]) == ("T", "N", 200, 100, 20)
    assert row["backend"] == "rocblas" and row["backend_index"] == 32323
    assert pd.isna(row["solution_index"])  # a rocBLAS index is not a hipBLASLt one

    blogs = read_tunableop(FIXDIR / BLOGS)
    # GemmTunableOp_float_NN,nn_1024_512_2048,Gemm_Hipblaslt_NN_52565,0.0653662
    row = blogs.iloc[0]
    assert row[["transA", "transB", "m", "n", "k"]].tolist() == ["N", "N", 1024, 512, 2048]
    assert row["solution_index"] == 52565
    assert blogs.attrs["validators"]["GCN_ARCH_NAME"] == "gfx90a:sramecc+:xnack-"


# ------------------------------------------------------------------------------------------------
# round trips

def winners_table(dtypes=("bf16_r", "f16_r", "f32_r"), compute="c_f32_r") -> pd.DataFrame:
    rows = []
    for i, (dt, (ta, tb), batch) in enumerate(
            itertools.product(dtypes, [("N", "N"), ("N", "T"), ("T", "N"), ("T", "T")], [1, 3])):
        rows.append({"transA": ta, "transB": tb, "batch_count": batch,
                     "m": 128 * (i + 1), "n": 64 + i, "k": 256 * (i % 5 + 1),
                     "a_type": dt, "b_type": dt, "c_type": dt, "d_type": dt,
                     "compute_type": compute, "solution_index": 1000 + 7 * i,
                     "solution_name": f"Cijk_X_{dt}_{ta}{tb}_MT{i}", "us": 10.0 + i})
    return pd.DataFrame(rows)


def same_identity(read: pd.DataFrame, winners: pd.DataFrame):
    cols = list(IDENTITY)
    got = read[cols + ["solution_index"]].astype({"solution_index": "int64"})
    want = winners[cols + ["solution_index"]]
    pd.testing.assert_frame_equal(got.reset_index(drop=True).astype(object),
                                  want.reset_index(drop=True).astype(object))


def test_override_round_trip(tmp_path):
    winners = winners_table()
    path = write_tuning_override(winners, tmp_path / "tuning.txt", version="d5f81531-dirty",
                                 arch="gfx942:sramecc+:xnack-")
    read = read_tuning_override(path)
    same_identity(read, winners)
    assert read["solution_name"].tolist() == winners["solution_name"].tolist()
    assert read["us"].tolist() == pytest.approx(winners["us"].tolist())
    assert read.attrs["version"] == "d5f81531-dirty"


def test_override_round_trip_other_types(tmp_path):
    int8 = winners_table(("i8_r",), "c_i32_r").assign(c_type="i32_r", d_type="bf16_r")
    winners = pd.concat([winners_table(("f32_r",), "c_xf32_r"),
                         winners_table(("f64_r",), "c_f64_r"), int8], ignore_index=True)
    winners["solution_index"] = range(1, len(winners) + 1)
    read = read_tuning_override(write_tuning_override(winners, tmp_path / "t.txt"))
    same_identity(read, winners)
    assert read.attrs["version"] is None


@pytest.mark.parametrize("style", ["current", "legacy"])
def test_tunableop_round_trip(tmp_path, style):
    winners = winners_table()
    validators = VALIDATORS if style == "current" else LEGACY_VALIDATORS
    path = write_tunableop(winners, tmp_path / "tunableop_results0.csv", validators=validators)
    read = read_tunableop(path)
    same_identity(read, winners)
    assert read.attrs["validators"] == validators
    assert set(read["backend"]) == {"hipblaslt"}
    assert read["us"].tolist() == pytest.approx(winners["us"].tolist())
    assert read["op"].tolist() == ["GemmTunableOp" if b == 1 else "GemmStridedBatchedTunableOp"
                                   for b in winners["batch_count"]]
    if style == "current":
        # packed column-major leading dimensions, as hipBLASLt sees them
        lda = [m if ta == "N" else k for m, k, ta in zip(winners.m, winners.k, winners.transA)]
        assert read["lda"].tolist() == lda
        assert read["ldc"].tolist() == winners["m"].tolist()
    else:
        assert read["lda"].isna().all()


def test_tunableop_round_trip_tf32_and_double(tmp_path):
    winners = pd.concat([winners_table(("f32_r",), "c_xf32_r"),
                         winners_table(("f64_r",), "c_f64_r")], ignore_index=True)
    read = read_tunableop(write_tunableop(winners, tmp_path / "r.csv", validators=VALIDATORS))
    same_identity(read, winners)
    assert read["op_signature"].str.contains("_tf32_").sum() == 8
    assert read["op_signature"].str.contains("_double_").sum() == 8


def test_tunableop_time_is_optional(tmp_path):
    winners = winners_table(("bf16_r",)).drop(columns=["us", "solution_name"])
    path = write_tunableop(winners, tmp_path / "r.csv", validators=VALIDATORS)
    assert all(line.count(",") == 2 for line in path.read_text().splitlines()[4:])
    read = read_tunableop(path)
    assert read["time_ms"].isna().all()
    same_identity(read, winners.assign(d_type=winners["c_type"]))


# ------------------------------------------------------------------------------------------------
# exact output for a tiny table

TINY = pd.DataFrame([
    {"transA": "T", "transB": "N", "batch_count": 1, "m": 4096, "n": 128, "k": 2048,
     "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r", "d_type": "bf16_r",
     "compute_type": "c_f32_r", "solution_index": 1234,
     "solution_name": "Cijk_Alik_Bljk_BBS_BH_MT64x64x64", "us": 20.0},
    {"transA": "N", "transB": "T", "batch_count": 2, "m": 256, "n": 512, "k": 64,
     "a_type": "f16_r", "b_type": "f16_r", "c_type": "f16_r", "d_type": "f16_r",
     "compute_type": "c_f32_r", "solution_index": 77,
     "solution_name": "Cijk_Ailk_Bjlk_HHS_BH_MT32x32x32", "us": float("nan")},
])

HEADER = ("    transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,"
          "ldc,stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,"
          "scaleC,scaleD,amaxD,activation_type,bias_vector,bias_type,rotating_buffer,"
          "hipblaslt-Gflops,hipblaslt-GB/s,us,solution_index,gcnArchName,solution_name\n")
EXPECTED_OVERRIDE = (
    "Git Version: a6254b89-dirty\n"
    + HEADER
    + "    T,N,0,1,4096,128,2048,1,2048,8388608,0,2048,262144,4096,524288,4096,524288,"
      "bf16_r,bf16_r,bf16_r,bf16_r,f32_r,0,0,0,0,0,none,0,f32_r,0,107374,917.504,20,1234,"
      "gfx942:sramecc+:xnack-,Cijk_Alik_Bljk_BBS_BH_MT64x64x64\n"
    + HEADER
    + "    N,T,0,2,256,512,64,1,256,16384,0,512,32768,256,131072,256,131072,"
      "f16_r,f16_r,f16_r,f16_r,f32_r,0,0,0,0,0,none,0,f32_r,0,,,,77,"
      "gfx942:sramecc+:xnack-,Cijk_Ailk_Bjlk_HHS_BH_MT32x32x32\n"
)
EXPECTED_TUNABLEOP = (
    "Validator,PT_VERSION,2.7.1\n"
    "Validator,ROCM_VERSION,6.4.1.0-83-0f0a83c\n"
    "Validator,HIPBLASLT_VERSION,100201-5b515cf1bc\n"
    "Validator,GCN_ARCH_NAME,gfx942:sramecc+:xnack-\n"
    "GemmTunableOp_BFloat16_TN,tn_4096_128_2048_ld_2048_2048_4096,Gemm_Hipblaslt_1234,0.02\n"
    "GemmStridedBatchedTunableOp_Half_NT,nt_256_512_64_B_2_ld_256_512_256,Gemm_Hipblaslt_77\n"
)
EXPECTED_TUNABLEOP_LEGACY = (
    "Validator,PT_VERSION,2.5.1\n"
    "Validator,ROCM_VERSION,6.4.1.0-83-0f0a83c\n"
    "Validator,HIPBLASLT_VERSION,100201-5b515cf1bc\n"
    "Validator,GCN_ARCH_NAME,gfx942:sramecc+:xnack-\n"
    "GemmTunableOp_BFloat16_TN,tn_4096_128_2048,Gemm_Hipblaslt_TN_1234,0.02\n"
    "GemmStridedBatchedTunableOp_Half_NT,nt_256_512_64_B_2,Gemm_Hipblaslt_NT_77\n"
)


def test_override_exact_text(tmp_path):
    path = write_tuning_override(TINY, tmp_path / "tuning.txt", version="a6254b89-dirty",
                                 arch="gfx942:sramecc+:xnack-")
    assert path.read_text() == EXPECTED_OVERRIDE
    read = read_tuning_override(path)
    assert read["solution_index"].tolist() == [1234, 77]
    assert read["us"].iloc[0] == 20.0 and math.isnan(read["us"].iloc[1])


def test_tunableop_exact_text(tmp_path):
    path = write_tunableop(TINY, tmp_path / "current.csv", validators=VALIDATORS)
    assert path.read_text() == EXPECTED_TUNABLEOP
    path = write_tunableop(TINY, tmp_path / "legacy.csv", validators=LEGACY_VALIDATORS)
    assert path.read_text() == EXPECTED_TUNABLEOP_LEGACY
    # an explicit style wins over PT_VERSION
    path = write_tunableop(TINY, tmp_path / "forced.csv", validators=VALIDATORS, style="legacy")
    assert path.read_text().splitlines()[4:] == EXPECTED_TUNABLEOP_LEGACY.splitlines()[4:]


def _cpp_split(line: str) -> list[str]:
    """Fields as std::getline(stream, field, ',') yields them: a trailing empty field is lost."""
    fields = line.split(",")
    if fields and fields[-1] == "":
        fields.pop()
    return fields


def _positional_parser(text: str) -> list[tuple]:
    """Entries as hipBLASLt's 2024 positional parser keys them: exactly 37 fields, batch/m/n/k
    at 3-6, types at 17-19, compute type at 21, index at 34; other lines are skipped."""
    out = []
    for line in text.splitlines():
        line = line.lstrip()
        if "," not in line or "Git Version" in line:
            continue
        f = _cpp_split(line)
        if len(f) != 37 or not f[34].isdigit() or not f[4].isdigit():
            continue
        if f[21] not in ("f32_r", "xf32_r", "f64_r", "i32_r"):
            continue  # string_to_hip_datatype would give None: entry dropped
        out.append((f[0], f[1], int(f[3]), int(f[4]), int(f[5]), int(f[6]), f[17], f[18], f[19],
                    f[21], int(f[34])))
    return out


def _header_parser(text: str) -> list[tuple]:
    """Entries as hipBLASLt's 2025 header-driven parser keys them: a line containing transA is
    a header, the next line its values; named fields are picked in a fixed order."""
    order = ("transA", "transB", "batch_count", "m", "n", "k", "a_type", "b_type", "c_type",
             "compute_type", "solution_index", "solution_name")
    lines = [line.lstrip() for line in text.splitlines()]
    out = []
    for i, line in enumerate(lines[:-1]):
        if "transA" not in line:
            continue
        entries, want = [], 0
        for name, value in zip(_cpp_split(line), _cpp_split(lines[i + 1])):
            if name == order[want]:
                entries.append(value)
                want += 1
                if want == len(order):
                    break
        if len(entries) in (11, 12):
            out.append(tuple(entries[:11]) + ((entries[11],) if len(entries) == 12 else ()))
    return out


def test_override_layout_suits_both_hipblaslt_parsers(tmp_path):
    winners = winners_table()
    text = write_tuning_override(winners, tmp_path / "t.txt", version="abc").read_text()
    expected = [(r.transA, r.transB, r.batch_count, r.m, r.n, r.k, r.a_type, r.b_type, r.c_type,
                 r.compute_type.removeprefix("c_"), r.solution_index)
                for r in winners.itertuples()]
    assert _positional_parser(text) == expected
    named = _header_parser(text)
    assert [tuple(int(v) if v.isdigit() else v for v in e[:11]) for e in named] == expected
    assert [e[11] for e in named] == winners["solution_name"].tolist()


def test_atomic_write_leaves_no_temporary(tmp_path):
    write_tunableop(TINY, tmp_path / "r.csv", validators=VALIDATORS)
    write_tuning_override(TINY, tmp_path / "t.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "t.txt"]


# ------------------------------------------------------------------------------------------------
# malformed files


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD_ROW = ("    T,N,0,1,4096,128,2048,1,2048,8388608,0,2048,262144,4096,524288,4096,524288,"
            "bf16_r,bf16_r,bf16_r,bf16_r,f32_r,0,0,0,0,0,none,0,f32_r,0,107374,917.504,20,1234,"
            ",Cijk_A\n")


@pytest.mark.parametrize("text, where", [
    # data before any header
    ("Git Version: abc\n" + GOOD_ROW, ":2: header:"),
    # header without the solution index column
    ("Git Version: abc\n    transA,transB,batch_count,m,n,k,a_type,b_type,c_type,compute_type\n"
     "    T,N,1,2,3,4,f16_r,f16_r,f16_r,f32_r\n", ":2: header: missing column(s) solution_index"),
    # wrong field count
    ("Git Version: abc\n" + HEADER + GOOD_ROW.replace(",917.504", ""), ":3: fields:"),
    # non-integer index
    ("Git Version: abc\n" + HEADER + GOOD_ROW.replace(",1234,", ",12x4,"),
     ":3: solution_index: not an integer"),
    # unknown dtype
    ("Git Version: abc\n" + HEADER + GOOD_ROW.replace("bf16_r,bf16_r,bf16_r,bf16_r",
                                                     "bf16_r,q8_r,bf16_r,bf16_r"),
     ":3: b_type: unknown data type 'q8_r'"),
    ("Git Version: abc\n" + HEADER + GOOD_ROW.replace(",f32_r,0,0,0", ",f33_r,0,0,0"),
     ":3: compute_type: unknown compute type"),
    ("Git Version: abc\n" + HEADER + GOOD_ROW.replace("T,N,0,1", "X,N,0,1"), ":3: transA:"),
    ("Git Version: abc\n" + HEADER + GOOD_ROW.replace(",4096,128,", ",0,128,"),
     ":3: m: must be >= 1"),
    (HEADER + GOOD_ROW + "Git Version: abc\n", ":3: Git Version: must be the first line"),
])
def test_override_malformed(tmp_path, text, where):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(ExportError) as err:
        read_tuning_override(path)
    assert f"{path}{where}" in str(err.value)


def test_override_reader_accepts_doc_layout(tmp_path):
    # the ROCm doc's "Winner" block: no indentation, hipblaslt-GB/s, misspelt soulution_index
    text = ("Git Version: d5f81531\n"
            "transA,transB,grouped_gemm,batch_count,m,n,k,alpha,lda,stride_a,beta,ldb,stride_b,"
            "ldc,stride_c,ldd,stride_d,a_type,b_type,c_type,d_type,compute_type,scaleA,scaleB,"
            "scaleC,scaleD,amaxD,activation_type,bias_vector,bias_type,rotating_buffer,"
            "hipblaslt-Gflops,hipblaslt-GB/s,us,soulution_index\n"
            "N,N,0,1,1024,512,1024,1,1024,1048576,1,1024,524288,1024,524288,1024,524288,f16_r,"
            "f16_r,f16_r,f16_r,f32_r,0,0,0,0,0,none,0,f32_r,512,66613.8,363.509,16.1189,56537\n")
    frame = read_tuning_override(write(tmp_path, "doc.txt", text))
    assert frame[["m", "n", "k", "solution_index"]].iloc[0].tolist() == [1024, 512, 1024, 56537]
    assert frame["compute_type"].iloc[0] == "c_f32_r"


VALID_HEAD = "Validator,PT_VERSION,2.7.1\nValidator,GCN_ARCH_NAME,gfx942:sramecc+:xnack-\n"


@pytest.mark.parametrize("line, where", [
    ("Validator,PT_VERSION\n", ":1: Validator: expected"),
    ("GemmTunableOp_Half_TN,tn_1_2_3\n", ":3: fields: expected 3 or 4"),
    ("GemmTunableOp_Half_TN,tn_1_2_3,Gemm_Hipblaslt_5,0.1,junk\n", ":3: fields:"),
    ("GemmTunableOp_Half_TN,tn_1_2_3,Gemm_Hipblaslt_5x,0.1\n", ":3: solution: not a solution"),
    ("GemmTunableOp_Quarter_TN,tn_1_2_3,Gemm_Hipblaslt_5,0.1\n", ":3: op: unknown dtype 'Quarter'"),
    ("GemmTunableOp_Half_TN,nt_1_2_3,Gemm_Hipblaslt_5,0.1\n", ":3: params: layout"),
    ("GemmTunableOp_Half_TN,tn_1_2_3_B_4,Gemm_Hipblaslt_5,0.1\n", ":3: params:"),
    ("GemmStridedBatchedTunableOp_Half_TN,tn_1_2_3,Gemm_Hipblaslt_5,0.1\n", ":3: params:"),
    ("GemmTunableOp_Half_TN,tn_1_2_x,Gemm_Hipblaslt_5,0.1\n", ":3: params:"),
    ("GemmTunableOp_Half_TN,tn_1_2_3,Gemm_Hipblaslt_5,fast\n", ":3: time: not a number"),
    ("GemmTunableOp_Half_TN,tn_1_2_3,Gemm_Hipblaslt_NT_5,0.1\n", ":3: solution: layout"),
    ("FooTunableOp_Half_TN,tn_1_2_3,Default,0.1\n", ":3: op: unknown TunableOp"),
])
def test_tunableop_malformed(tmp_path, line, where):
    text = line if line.startswith("Validator") else VALID_HEAD + line
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(ExportError) as err:
        read_tunableop(path)
    assert f"{path}{where}" in str(err.value)


def test_tunableop_reader_other_ops(tmp_path):
    text = VALID_HEAD + (
        "ScaledGemmTunableOp_Float8_e4m3fnuz_Float8_e4m3fnuz_BFloat16_TN,"
        "tn_4096_16_8192_ld_8192_8192_4096_rw_0_bias_None,Gemm_Hipblaslt_9001,0.05\n"
        "GemmAndBiasTunableOp_Half_TN,tn_64_8_32_ld_32_32_64,Default,0.01\n"
        "GemmTunableOp_Half_TN,tn_51866_39232_1280_ld_1280_1280_51866,Gemm_Hipblaslt_477479,4.87196"
        ",BLAS_PARAMS: - { function: matmul, M: 51866, N: 39232, K: 1280 }\n")
    frame = read_tunableop(write(tmp_path, "ops.csv", text))
    scaled, bias, plain = (frame.iloc[i] for i in range(3))
    assert (scaled["a_type"], scaled["b_type"], scaled["c_type"]) == ("f8_fnuz_r", "f8_fnuz_r",
                                                                      "bf16_r")
    assert not scaled["rowwise"]
    assert scaled["bias"] == "None" and scaled["solution_index"] == 9001
    assert bias["op"] == "GemmAndBiasTunableOp" and bias["backend"] == "default"
    assert plain["solution_index"] == 477479 and plain["lda"] == 1280 and plain["ldc"] == 51866
    assert plain["blas_params"].startswith("BLAS_PARAMS: - { function: matmul, M: 51866")


# ------------------------------------------------------------------------------------------------
# refused exports


def one(**change) -> pd.DataFrame:
    return TINY.iloc[[0]].assign(**change).reset_index(drop=True)


@pytest.mark.parametrize("change, message", [
    (dict(a_type="f8_fnuz_r", b_type="f8_fnuz_r"), "TunableOp has no GEMM op"),
    (dict(a_type="f8_r", b_type="f8_r", c_type="f8_r", d_type="f8_r"), "TunableOp has no GEMM op"),
    (dict(a_type="i8_r", b_type="i8_r", c_type="i32_r", d_type="i32_r", compute_type="c_i32_r"),
     "TunableOp has no GEMM op"),
    (dict(a_type="f32_c", b_type="f32_c", c_type="f32_c", d_type="f32_c",
          compute_type="c_f32_r"), "TunableOp has no GEMM op"),
    (dict(c_type="f32_r", d_type="f32_r"), "TunableOp has no GEMM op"),  # bf16 in, f32 out
])
def test_tunableop_refuses_unsupported_types(tmp_path, change, message):
    with pytest.raises(ExportError, match=message):
        write_tunableop(one(**change), tmp_path / "r.csv", validators=VALIDATORS)
    assert not (tmp_path / "r.csv").exists()


def test_tunableop_refusals_depend_on_style(tmp_path):
    tf32 = one(a_type="f32_r", b_type="f32_r", c_type="f32_r", d_type="f32_r",
               compute_type="c_xf32_r")
    with pytest.raises(ExportError, match="legacy style"):
        write_tunableop(tf32, tmp_path / "r.csv", validators=LEGACY_VALIDATORS)
    write_tunableop(tf32, tmp_path / "r.csv", validators=VALIDATORS)
    assert "GemmTunableOp_tf32_TN," in (tmp_path / "r.csv").read_text()


def test_export_refusals(tmp_path):
    with pytest.raises(ExportError, match="PT_VERSION is mandatory"):
        write_tunableop(TINY, tmp_path / "r.csv", validators={"GCN_ARCH_NAME": "gfx942"})
    with pytest.raises(ExportError, match="style must be"):
        write_tunableop(TINY, tmp_path / "r.csv", validators=VALIDATORS, style="newest")
    with pytest.raises(ExportError, match="duplicate"):
        write_tunableop(pd.concat([TINY, TINY]), tmp_path / "r.csv", validators=VALIDATORS)
    with pytest.raises(ExportError, match="duplicate GEMM"):
        write_tuning_override(pd.concat([TINY, TINY]), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="missing column.*solution_name"):
        write_tuning_override(TINY.drop(columns=["solution_name"]), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="winners row 0: solution_name: missing"):
        write_tuning_override(one(solution_name=None), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="commas"):
        write_tuning_override(one(solution_name="a,b"), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="missing column"):
        write_tuning_override(TINY.drop(columns=["m"]), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="winners row 0: solution_index"):
        write_tuning_override(one(solution_index=1.5), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="unknown data type"):
        write_tuning_override(one(a_type="q8_r"), tmp_path / "t.txt")
    with pytest.raises(ExportError, match="cuda"):
        write_tuning_override(one(platform="cuda"), tmp_path / "t.txt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_tuning_override(one(platform="sim"), tmp_path / "t.txt")
    assert any("sim platform" in str(w.message) for w in caught)
    assert not (tmp_path / "r.csv").exists()


# ------------------------------------------------------------------------------------------------
# validators and styles


def test_default_validators():
    got = default_validators("gfx942:sramecc+:xnack-", "100201-5b515cf1bc", "2.7.1",
                             "6.4.1.0-83-0f0a83c")
    assert got == VALIDATORS and list(got) == list(VALIDATORS)
    with_rocblas = default_validators("gfx90a:sramecc+:xnack-", torch_version="2.4.0",
                                      rocblas_version="4.0.0-88df9726-dirty")
    assert with_rocblas == {"PT_VERSION": "2.4.0", "GCN_ARCH_NAME": "gfx90a:sramecc+:xnack-",
                            "ROCBLAS_VERSION": "4.0.0-88df9726-dirty"}
    with pytest.warns(UserWarning, match="feature suffix"):
        default_validators("gfx942", torch_version="2.7.1")


def test_tunableop_style():
    assert tunableop_style("2.4.0") == "legacy"
    assert tunableop_style("2.6.0") == "legacy"
    assert tunableop_style("2.7.0") == "current"
    assert tunableop_style("2.10.0a0+git1234") == "current"
    with pytest.raises(ExportError):
        tunableop_style("main")


@needs_fixtures
def test_fixture_rows_rewrite_identically(tmp_path):
    """A real TunableOp file's hipBLASLt rows, exported again in its own (legacy) style, give the
    same op, params and solution strings."""
    source = FIXDIR / PR131078
    read = read_tunableop(source)
    hip = read[read["backend"] == "hipblaslt"].assign(solution_name=None)
    path = write_tunableop(hip, tmp_path / "again.csv", validators=read.attrs["validators"])
    original = [line for line in source.read_text().splitlines()
                if "Gemm_Hipblaslt" in line]
    assert path.read_text().splitlines()[5:] == original
    assert exports.tunableop_style(read.attrs["validators"]["PT_VERSION"]) == "legacy"
