"""Tests for geko_lib.workload: readers, normalization, validation, fast path vs PyYAML, writer."""

from __future__ import annotations

import pickle
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from geko_lib import gemm, platforms, workload
from geko_lib.workload import grid_sizes
from geko_lib.workload import WorkloadError

from .conftest import FIXTURES

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "workloads"
MALFORMED = DATA / "malformed"
LOGS = FIXTURES / "hipblaslt_logs"

needs_shared = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"fixtures not found at {FIXTURES}")


def _shared_files(pattern_dirs: list[tuple[str, str]]) -> list[Path]:
    out = []
    for sub, pattern in pattern_dirs:
        out += sorted((FIXTURES / sub).glob(pattern))
    return out


MASK64_SHARED = _shared_files([("workloads", "*.yaml"), ("hipblaslt_logs", "*.yaml")])
MASK32_SHARED = [p for p in _shared_files([("hipblaslt_logs", "*.txt")])
                 if not p.name.startswith("loglevel4")]
LOCAL_LOGS = sorted(p for p in DATA.glob("*.*") if not p.name.startswith("list_"))


def _ids(paths):
    return [p.name for p in paths]


def _manual_counts(path: Path) -> tuple[int, int]:
    """(distinct rows, call_count sum) of a one-row-per-line mask-64 log, counted by hand."""
    rows, total = set(), 0
    for line in path.read_text().splitlines():
        s = line.strip()
        if not s.startswith("- {"):
            continue
        m = re.search(r"call_count: *(\d+)", s)
        total += int(m.group(1)) if m else 1
        rows.add(re.sub(r",? *call_count: *\d+", "", s))
    return len(rows), total


# --------------------------------------------------------------------------------------------
# shared real-world inputs


@needs_shared
@pytest.mark.parametrize("path", MASK64_SHARED, ids=_ids(MASK64_SHARED))
def test_shared_mask64_fast_equals_pyyaml(path):
    fast = workload.read(path, support=ANY)
    reference = workload.read(path, fast=False, support=ANY)
    pd.testing.assert_frame_equal(fast, reference)
    rows, calls = _manual_counts(path)
    assert len(fast) == rows
    assert int(fast["call_count"].sum()) == calls
    assert list(fast.columns) == [c for c in gemm.LOG_FIELDS if c in fast.columns]
    assert fast[list(gemm.GEMM_LOG_FIELDS)].notna().all().all()


@needs_shared
def test_shared_mangled_pairs_fixture_parses_on_the_fast_path(monkeypatch):
    path = LOGS / "profile_mask64_format_llama31_8b_shapes.yaml"
    text = path.read_text()
    assert ": , : ," in text
    with pytest.raises(yaml.YAMLError):  # the reason this fixture exists
        yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    def no_pyyaml(*args):
        raise AssertionError("the fast parser should read the mangled lines itself")

    monkeypatch.setattr(workload.mask64, "_parse_line_yaml", no_pyyaml)
    df = workload.read(path, support=ANY)
    assert len(df) == 15
    assert set(df["call_count"]) == {40, 1280}
    assert df.loc[0, "M"] == 128256 and df.loc[0, "N"] == 32768 and df.loc[0, "K"] == 4096
    assert df.loc[0, "transA"] == "T" and df.loc[0, "transB"] == "N"
    assert df.loc[0, "compute_type"] == "c_f32_r"
    assert bool(df.loc[0, "flush"]) is True
    # keys that are not log fields (initialization, use_gpu_timer) are dropped
    assert "initialization" not in df.columns and "use_gpu_timer" not in df.columns


@needs_shared
def test_shared_workloads_have_expected_dtypes():
    df = workload.read(FIXTURES / "workloads" / "mixed_types.yaml", support=ANY)
    for col in ("M", "N", "K", "lda", "stride_a", "batch_count", "call_count", "scaleA", "rotating"):
        assert df[col].dtype == np.int64, col
    for col in ("alpha", "beta"):
        assert df[col].dtype == np.float64, col
    for col in ("flush", "gradient", "bias_vector"):
        assert df[col].dtype == bool, col
    for col in ("transA", "a_type", "compute_type", "function"):
        assert pd.api.types.is_string_dtype(df[col]), col
        assert all(isinstance(v, str) for v in df[col])


def _bench_flags(line: str) -> dict:
    tokens = line.split()
    out = {}
    for i, t in enumerate(tokens):
        if t.startswith("-") and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            out[t.lstrip("-")] = tokens[i + 1]
    return out


@needs_shared
@pytest.mark.parametrize("path", MASK32_SHARED, ids=_ids(MASK32_SHARED))
def test_shared_mask32_lines_parse(path):
    df = workload.read(path, support=ANY)
    assert workload.read(path, fast=False, support=ANY).equals(df)
    pd.testing.assert_frame_equal(workload.read_bench_commands(path, support=ANY), df)
    lines = [s.strip() for s in path.read_text().splitlines() if s.strip()]
    assert int(df["call_count"].sum()) == len(lines)
    # every row matches the values written in its first line
    distinct = list(dict.fromkeys(lines))
    assert len(df) <= len(distinct)
    for line in distinct[:5]:
        flags = _bench_flags(line)
        match = df[(df.M == int(flags["m"])) & (df.N == int(flags["n"])) & (df.K == int(flags["k"]))
                   & (df.transA == flags["transA"]) & (df.transB == flags["transB"])
                   & (df.a_type == flags["a_type"]) & (df.c_type == flags["c_type"])]
        assert len(match) >= 1, line
        row = match.iloc[0]
        assert row["batch_count"] == int(flags["batch_count"])
        assert row["lda"] == int(flags["lda"])
        assert row["alpha"] == float(flags["alpha"])
        assert row["compute_type"] == gemm.normalize_compute_type(flags["compute_type"])
    assert set(df["compute_type"]) <= {"c_f32_r"}


@needs_shared
def test_shared_mask32_specific_values():
    deepseek = workload.read(LOGS / "DeepSeekV3_mbs1_seq4096_ep8_fp8_gemms.txt", support=ANY)
    assert len(deepseek) == 36 and int(deepseek["call_count"].sum()) == 36
    first = deepseek.iloc[0]
    assert (first.M, first.N, first.K) == (14336, 4096, 7168)
    assert (first.a_type, first.b_type, first.c_type) == ("f8_r", "bf8_r", "bf16_r")
    assert first.scaleA == 1 and first.scaleB == 1 and first.solution_index == 4264
    assert set(deepseek["transA"] + deepseek["transB"]) == {"TN"}

    legacy = workload.read(LOGS / "bench_mask32_pr485_2023_legacy_format.txt", support=ANY)
    row = legacy.iloc[0]
    assert (row.M, row.N, row.K) == (1024, 512, 1024)
    assert row.alpha == 1.0 and legacy["alpha"].dtype == np.float64  # "--alpha 1" (integer) -> 1.0
    assert row.scaleA == 0 and row.scaleB == 0  # absent -> default 0
    assert "lde" not in legacy.columns and "stride_e" not in legacy.columns

    issue = workload.read(LOGS / "bench_mask32_issue12243_gfx90a_bf16_NN.txt", support=ANY).iloc[0]
    assert bool(issue.any_stride) is True and issue.lda == 16 and issue.solution_index == 93338

    example = workload.read(LOGS / "hipblaslt_gemm_log_example_mask32.txt", support=ANY)
    assert len(example) == 20
    layouts = Counter(example["transA"] + example["transB"])
    assert layouts == {"NN": 15, "TN": 4, "NT": 1}
    assert example["batch_count"].max() == 800


@needs_shared
def test_shared_loglevel4_trace_is_rejected():
    path = LOGS / "loglevel4_override_applied_dtk_gfx938_excerpt.txt"
    for fast in (True, False):
        with pytest.raises(WorkloadError) as info:
            workload.read(path, fast=fast, support=ANY)
        assert info.value.line == 1 and info.value.field == "format"
        assert "HIPBLASLT_LOG_MASK" in str(info.value) and path.name in str(info.value)


@needs_shared
def test_shared_generator_config_list():
    df = workload.read_list(FIXTURES / "geko_test_data" / "config.yaml", support=ANY)
    assert len(df) == 16  # 17 sizes, [16, 16, 1, 128] twice
    assert (df.transA == "N").all() and (df.a_type == "bf16_r").all() and (df.compute_type == "c_f32_r").all()
    assert tuple(df.iloc[0][["M", "N", "batch_count", "K"]]) == (1, 163840, 1, 128)
    assert (df.call_count == 1).all()


# --------------------------------------------------------------------------------------------
# local fixtures


@pytest.mark.parametrize("path", LOCAL_LOGS, ids=_ids(LOCAL_LOGS))
def test_local_fixtures_fast_equals_pyyaml(path):
    pd.testing.assert_frame_equal(workload.read(path, support=ANY),
                                  workload.read(path, fast=False, support=ANY))


def test_duplicates_are_summed():
    df = workload.read(DATA / "duplicates.yaml", support=ANY)
    assert len(df) == 2
    assert list(df["N"]) == [128, 256]  # first-appearance order
    assert list(df["call_count"]) == [5, 3]  # 1 + 1 + 3, 1 + 2


def test_csv_lowercase_mnk():
    df = workload.read(DATA / "lowercase_mnk.csv", support=ANY)
    assert {"M", "N", "K"} <= set(df.columns) and not {"m", "n", "k", "us"} & set(df.columns)
    assert len(df) == 2
    assert list(df["call_count"]) == [15, 4]
    assert list(df["compute_type"]) == ["c_f32_r", "c_f32_r"]
    assert df["M"].dtype == np.int64 and df.loc[1, "batch_count"] == 2
    assert list(df.columns) == [c for c in gemm.LOG_FIELDS if c in df.columns]


def test_mask32_repeated_lines_are_counted():
    df = workload.read(DATA / "mask32_repeated.txt", support=ANY)
    assert list(df["call_count"]) == [3, 1]
    assert list(df["N"]) == [512, 64]
    assert list(df["alpha"]) == [1.0, -1.0]  # a negative value is not a flag
    assert df["any_stride"].dtype == bool and df["any_stride"].all()
    assert "api_method" not in df.columns and "algo_method" not in df.columns


def test_unusual_rows_values():
    df = workload.read(DATA / "unusual_rows.yaml", support=ANY).set_index("N")
    assert df.loc[3, "alpha"] == 1.0 and str(df.loc[3, "beta"]) == "-0.0"
    assert df.loc[4, "rotating"] == 512  # 0x200 (YAML 1.1 hex)
    assert bool(df.loc[7, "flush"]) is True and bool(df.loc[7, "use_e"]) is False
    assert df.loc[8, "transA"] == "T"  # transA: true
    assert df.loc[9, "compute_type"] == "c_f32_r" and df.loc[9, "scale_type"] == "f32_r"
    assert df.loc[10, "scaleA"] == 0 and df.loc[11, "call_count"] == 1
    # columns present in only some rows are dropped; unknown keys too (with a warning)
    assert not {"kernel_name", "solution_Name", "aux_type", "extra_field"} & set(df.columns)


def test_fast_parser_handles_typical_rows_without_pyyaml(monkeypatch, tmp_path):
    def no_pyyaml(*args):
        raise AssertionError("PyYAML used for a typical row")

    monkeypatch.setattr(workload.mask64, "_parse_line_yaml", no_pyyaml)
    monkeypatch.setattr(workload.reader, "_read_yaml_reference", no_pyyaml)
    path = tmp_path / "log.yaml"
    path.write_text((DATA / "duplicates.yaml").read_text())
    assert int(workload.read(path, support=ANY)["call_count"].sum()) == 8


def test_quoted_and_commented_rows(tmp_path):
    base = ("- {function: matmul, M: 64, N: 64, K: 64, transA: N, transB: N, batch_count: 1, a_type: f16_r, "
            "b_type: f16_r, c_type: f16_r, d_type: f16_r, compute_type: c_f32_r, kernel_name: KN, call_count: 2}")
    rows = [base.replace("KN", "'name, with: punctuation'"),
            base.replace("KN", '"double \\"quoted\\""') + "  # comment",
            base.replace("KN", "plain_name"),
            base.replace("KN", "'plain_name'")]  # same value as the previous row -> aggregated
    path = tmp_path / "quoted.yaml"
    path.write_text("\n".join(rows) + "\n")
    df = workload.read(path, support=ANY)
    pd.testing.assert_frame_equal(df, workload.read(path, fast=False, support=ANY))
    assert list(df["kernel_name"]) == ["name, with: punctuation", 'double "quoted"', "plain_name"]
    assert list(df["call_count"]) == [2, 2, 4]


def test_crlf_and_byte_order_mark(tmp_path):
    text = (DATA / "duplicates.yaml").read_text().replace("\n", "\r\n")
    path = tmp_path / "crlf.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    df = workload.read(path, support=ANY)
    pd.testing.assert_frame_equal(df, workload.read(path, fast=False, support=ANY))
    pd.testing.assert_frame_equal(df, workload.read(DATA / "duplicates.yaml", support=ANY))


def _random_row(rng: random.Random, n_max: int) -> str:
    m, k = rng.choice([(4096, 4096), (14336, 4096), (4096, 14336), (1536, 7168)])
    n = rng.randint(1, n_max)
    ta, tb = rng.choice(["TN", "NN", "NT"])
    a, c = rng.choice([("bf16_r", "bf16_r"), ("f16_r", "f32_r"), ("f8_r", "bf16_r")])
    return (f"- {{function: matmul, M: {m}, N: {n}, K: {k}, lda: {k if ta == 'T' else m}, "
            f"ldb: {k if tb == 'N' else n}, ldc: {m}, ldd: {m}, stride_a: 0, stride_b: 0, "
            f"stride_c: 0, stride_d: 0, alpha: 1.0, beta: 0.0, "
            f"transA: {ta}, transB: {tb}, batch_count: 1, scaleA: 0, scaleB: 0, scaleAlpha_vector: false, "
            f"gradient: false, use_e: false, bias_vector: false, bias_source: d, a_type: {a}, b_type: {a}, "
            f"c_type: {c}, d_type: {c}, scale_type: f32_r, bias_type: f32_r, compute_type: c_f32_r, "
            f"activation_type: none, flush: false, rotating: 512, cold_iters: 0, iters: 0")


def test_generated_20k_line_log(tmp_path):
    rng = random.Random(7)
    pool = list(dict.fromkeys(_random_row(rng, 200) for _ in range(400)))
    expected: dict[str, int] = {}
    lines = []
    for _ in range(20_000):
        row = rng.choice(pool)
        calls = rng.choice([1, 1, 1, 2, 5])
        expected[row] = expected.get(row, 0) + calls
        lines.append(f"{row}, call_count: {calls}}}\n")
    path = tmp_path / "big.yaml"
    path.write_text("".join(lines))
    df = workload.read(path, support=ANY)
    assert len(df) == len(expected)
    assert int(df["call_count"].sum()) == sum(expected.values())
    # first-appearance order and per-row sums
    for (row, calls), got_n, got_calls in zip(expected.items(), df["N"], df["call_count"]):
        assert f" N: {got_n}," in row and got_calls == calls
    # the reference path agrees on a prefix (PyYAML is slow: ~2k rows/s)
    small = tmp_path / "small.yaml"
    small.write_text("".join(lines[:800]))
    pd.testing.assert_frame_equal(workload.read(small, support=ANY),
                                  workload.read(small, fast=False, support=ANY))


def test_all_distinct_rows_and_int64_dtypes(tmp_path):
    rng = random.Random(3)
    rows = list(dict.fromkeys(_random_row(rng, 10**6) for _ in range(3000)))
    path = tmp_path / "distinct.yaml"
    path.write_text("".join(r + "}\n" for r in rows))
    df = workload.read(path, support=ANY)
    assert len(df) == len(rows) and (df["call_count"] == 1).all()
    assert df["N"].dtype == np.int64


# --------------------------------------------------------------------------------------------
# malformed corpus: (file, line, field); line None = whole-file problem

MALFORMED_CASES = [
    ("missing_required_field.yaml", 4, "K"),
    ("non_integer_size.yaml", 3, "N"),
    ("zero_m.yaml", 2, "M"),
    ("negative_k.yaml", 4, "K"),
    ("float_size.yaml", 3, "M"),
    ("unknown_dtype.yaml", 4, "a_type"),
    ("bad_compute_type.yaml", 2, "compute_type"),
    ("bad_transpose.yaml", 3, "transB"),
    ("string_batch_count.yaml", 2, "batch_count"),
    ("call_count_zero.yaml", 3, "call_count"),
    ("truncated_line.yaml", 4, "syntax"),
    ("empty.yaml", None, "rows"),
    ("comments_only.yaml", None, "rows"),
    ("binary_garbage.yaml", 2, "encoding"),
    ("nul_bytes.yaml", 2, "encoding"),
    ("loglevel4_trace.txt", 1, "format"),
    ("trace_line_inside_log.yaml", 3, "format"),
    ("not_a_workload.yaml", 1, "format"),
    ("scalar_rows.yaml", 3, "format"),
    ("mask32_bad_size.txt", 2, "K"),
    ("mask32_stray_line.txt", 2, "format"),
    ("csv_missing_column.csv", 2, "K"),
    ("csv_bad_transpose.csv", 3, "transB"),
]


def test_malformed_corpus_is_complete():
    listed = {name for name, _, _ in MALFORMED_CASES} | {name for name, _, _ in LIST_CASES}
    assert listed == {p.name for p in MALFORMED.iterdir()}


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pyyaml"])
@pytest.mark.parametrize("name,line,field", MALFORMED_CASES, ids=[c[0] for c in MALFORMED_CASES])
def test_malformed_corpus(name, line, field, fast):
    with pytest.raises(WorkloadError) as info:
        workload.read(MALFORMED / name, fast=fast, support=ANY)
    err = info.value
    text = str(err)
    assert name in text and field in text
    assert err.field == field and err.line == line
    expected_prefix = f"{MALFORMED / name}:{line}: {field}: " if line else f"{MALFORMED / name}: {field}: "
    assert text.startswith(expected_prefix), text


def test_error_object():
    err = WorkloadError("a/b.yaml", 7, "M", "must be a positive integer, got 0")
    assert str(err) == "a/b.yaml:7: M: must be a positive integer, got 0"
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.path, again.line, again.field, str(again)) == (err.path, err.line, err.field, str(err))
    assert str(WorkloadError("x.yaml", None, "rows", "empty")) == "x.yaml: rows: empty"


def test_missing_file(tmp_path):
    with pytest.raises(WorkloadError) as info:
        workload.read(tmp_path / "nope.yaml", support=ANY)
    assert info.value.field == "file" and "nope.yaml" in str(info.value)


def test_reading_writes_nothing(tmp_path):
    src = tmp_path / "in.yaml"
    src.write_text((DATA / "duplicates.yaml").read_text())
    before = sorted(tmp_path.iterdir())
    workload.read(src, support=ANY)
    workload.read(src, fast=False, support=ANY)
    assert sorted(tmp_path.iterdir()) == before


# --------------------------------------------------------------------------------------------
# --list and --inline

LIST_CASES = [
    ("list_bad_datatype.yaml", 3, "DataType"),
    ("list_bad_size.yaml", 8, "Sizes"),
    ("list_bad_density.yaml", 7, "GRID_DENSITY"),
]


def test_read_list_sizes():
    df = workload.read_list(DATA / "list_sizes.yaml", support=ANY)
    sizes = list(zip(df.M, df.N, df.batch_count, df.K))
    assert sizes == [(1024, 1024, 1, 1024), (4096, 128, 1, 4096), (256, 256, 8, 64)]
    assert (df.transA == "T").all() and (df.transB == "N").all()
    assert (df.a_type == "bf16_r").all() and (df.c_type == "bf16_r").all() and (df.compute_type == "c_f32_r").all()
    assert (df.call_count == 1).all() and (df.function == "matmul").all() and (df.scaleA == 0).all()
    assert "lda" not in df.columns


def test_read_list_grid():
    """SIZE_OPTION 1: the original's M x N grid inside the CU boundary, times its K ladder."""
    # ARCH gfx950 (256 CUs), GRID_DENSITY 2
    df = workload.read_list(DATA / "list_grid.yaml", support=ANY)
    sizes = list(zip(df.M, df.N, df.batch_count, df.K))
    assert sizes == grid_sizes.grid(256, 2) and len(sizes) == len(set(sizes)) > 100
    assert (df.batch_count == 1).all() and (df.a_type == "f16_r").all() and (df.transA == "N").all()
    assert sorted(set(df.K)) == [256, 1024, 4096, 8192, 16384]
    # no M x N point beyond the boundary of 2x2 rounds of 256x256 tiles per CU pair
    assert max(df.M) <= 128 * 512 and max(df.N) <= 128 * 512
    assert not ((df.M > 1024) & (df.N > 1024) & (df.K > 4096)).any()
    # the campaign's arch wins over the file's ARCH, and sets the CU count
    fewer = workload.read_list(DATA / "list_grid.yaml", arch="gfx950_128cu", support=ANY)
    assert len(fewer) < len(df) and max(fewer.M) <= 64 * 512


def test_grid_boundary_by_hand():
    # 20 CUs: corners (2*512, 10*512), (4*512, 5*512), (5*512, 4*512), (10*512, 2*512)
    corners = grid_sizes.boundary(20)
    assert corners[0] == (5120, 1024) and corners[-1] == (1024, 5120)
    assert grid_sizes.inside(1024, 1024, corners) and not grid_sizes.inside(4096, 4096, corners)
    assert grid_sizes.inside(2048, 2560, corners)  # on the segment (2048, 2560)-(2560, 2048)
    assert not grid_sizes.inside(2304, 2560, corners)
    assert not grid_sizes.inside(16, 6144, corners)  # above the largest n
    assert grid_sizes.axis(256, 1)[:13] == [16, 32, 64, 96] + list(range(128, 256, 16)) + [256]
    assert max(grid_sizes.axis(256, 1)) == 15360  # bands below 16384 whatever the boundary
    with pytest.raises(ValueError):
        grid_sizes.boundary(7)  # a prime count has no 2-factor boundary


def test_grid_needs_an_arch(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("TRANSA: N\nTRANSB: N\nDataType: H\nDestDataType: H\nComputeDataType: S\n"
                    "SIZE_OPTION: 1\n")
    with pytest.raises(WorkloadError) as info:
        workload.read_list(path, support=ANY)
    assert info.value.field == "ARCH"


def test_read_list_log_path():
    df = workload.read_list(DATA / "list_log.yaml", support=ANY)
    pd.testing.assert_frame_equal(df, workload.read(DATA / "duplicates.yaml", support=ANY))


@pytest.mark.parametrize("name,line,field", LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_read_list_errors(name, line, field):
    with pytest.raises(WorkloadError) as info:
        workload.read_list(MALFORMED / name, support=ANY)
    assert info.value.line == line and info.value.field == field
    assert name in str(info.value)


def test_read_list_missing_keys(tmp_path):
    path = tmp_path / "l.yaml"
    path.write_text("TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nSizes: [[1, 1, 1, 1]]\n")
    with pytest.raises(WorkloadError, match="ComputeDataType"):
        workload.read_list(path, support=ANY)
    path.write_text("SIZE_OPTION: 2\n")
    with pytest.raises(WorkloadError, match="GEMM_LOG_PATH"):
        workload.read_list(path, support=ANY)


BBS_TN = "TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
HHS_NN = "TRANSA: N\nTRANSB: N\nDataType: H\nDestDataType: H\nComputeDataType: S\n"


def test_a_list_file_of_several_documents_holds_several_gemm_problems(tmp_path):
    """The original README: "multiple GEMM problems per file are supported" (issue 41): one
    mapping per YAML document, each its own GEMM type; a GEMM listed twice is read once."""
    path = tmp_path / "sizes.yaml"
    path.write_text(BBS_TN + "Sizes:\n  - [1024, 1024, 1, 1024]\n  - [64, 8, 1, 64]\n---\n"
                    + HHS_NN + "Sizes:\n  - [512, 512, 1, 512]\n---\n"
                    + BBS_TN + "Sizes:\n  - [64, 8, 1, 64]\n")
    df = workload.read_list(path, support=ANY)
    assert list(zip(df.transA, df.a_type, df.M)) == [
        ("T", "bf16_r", 1024), ("T", "bf16_r", 64), ("N", "f16_r", 512)]
    assert (df.call_count == 1).all()
    single = tmp_path / "one.yaml"
    single.write_text(BBS_TN + "Sizes:\n  - [1024, 1024, 1, 1024]\n  - [64, 8, 1, 64]\n")
    pd.testing.assert_frame_equal(df.iloc[:2], workload.read_list(single, support=ANY))


def test_a_bad_document_of_a_list_file_is_named_by_its_line(tmp_path):
    path = tmp_path / "sizes.yaml"
    path.write_text(BBS_TN + "Sizes: [[1, 1, 1, 1]]\n---\n" + HHS_NN + "Sizes: [[1, 0, 1, 1]]\n")
    with pytest.raises(WorkloadError) as info:
        workload.read_list(path, support=ANY)
    assert (info.value.line, info.value.field) == (13, "Sizes")
    path.write_text(BBS_TN + "Sizes: [[1, 1, 1, 1]]\n---\n- [1, 1, 1, 1]\n")
    with pytest.raises(WorkloadError, match="the one on line 8 is not"):
        workload.read_list(path, support=ANY)
    path.write_text(BBS_TN + "Sizes: [[1, 1, 1, 1]]\n---\nSIZE_OPTION: 2\nGEMM_LOG_PATH: x\n")
    with pytest.raises(WorkloadError, match="only document") as info:
        workload.read_list(path, support=ANY)
    assert info.value.line == 8


def test_the_arch_of_a_list_file_of_several_documents(tmp_path):
    from geko_lib import cli

    path = tmp_path / "sizes.yaml"
    path.write_text(BBS_TN + "Sizes: [[1, 1, 1, 1]]\n---\n" + HHS_NN + "ARCH: gfx942\n"
                    "Sizes: [[2, 2, 1, 2]]\n")
    assert cli.list_arch(path) == ("gfx942", 13)
    path.write_text(path.read_text() + "---\n" + BBS_TN + "ARCH: gfx950\nSizes: [[3, 3, 1, 3]]\n")
    with pytest.raises(cli.UsageError, match=r":21: ARCH: 'gfx950', but line 13 says 'gfx942'"):
        cli.list_arch(path)


def test_read_inline():
    df = workload.read_inline("1024 1024 1 1024 B B S N T", support=ANY)
    assert len(df) == 1
    row = df.iloc[0]
    assert (row.M, row.N, row.batch_count, row.K) == (1024, 1024, 1, 1024)
    assert (row.transA, row.transB, row.a_type, row.d_type, row.compute_type) == ("N", "T", "bf16_r", "bf16_r", "c_f32_r")
    assert row.call_count == 1 and row.scale_type == "f32_r"
    pd.testing.assert_frame_equal(
        df, workload.read_inline("1024 1024 1 1024 B B S N T".split(), support=ANY))
    tf32 = workload.read_inline(["64", "32", "4", "16", "X", "S", "S", "T", "N"],
                                support=ANY).iloc[0]
    assert (tf32.a_type, tf32.compute_type, tf32.scale_type, tf32.batch_count) == ("f32_r", "c_xf32_r", "f32_r", 4)
    mixed = workload.read_inline("16 16 1 16 F8B8 B S T N", support=ANY).iloc[0]
    assert (mixed.a_type, mixed.b_type, mixed.c_type) == ("f8_r", "bf8_r", "bf16_r")


@pytest.mark.parametrize("spec,field", [
    ("1024 1024 1 B B S N T", "tokens"),
    ("0 1024 1 1024 B B S N T", "M"),
    ("1024 abc 1 1024 B B S N T", "N"),
    ("1024 1024 -1 1024 B B S N T", "batch"),
    ("1024 1024 1 1.5 B B S N T", "K"),
    ("1024 1024 1 1024 Q B S N T", "DataType"),
    ("1024 1024 1 1024 B BB S N T", "DestDataType"),
    ("1024 1024 1 1024 B B ? N T", "ComputeDataType"),
    ("1024 1024 1 1024 B B S X T", "transA"),
    ("1024 1024 1 1024 B B S N C", "transB"),
])
def test_read_inline_errors(spec, field):
    with pytest.raises(WorkloadError) as info:
        workload.read_inline(spec, support=ANY)
    assert info.value.field == field and info.value.path == "--inline"
    assert str(info.value).startswith(f"--inline: {field}: ")


# --------------------------------------------------------------------------------------------
# write / problems


@pytest.mark.parametrize("path", LOCAL_LOGS + MASK64_SHARED + MASK32_SHARED,
                         ids=_ids(LOCAL_LOGS + MASK64_SHARED + MASK32_SHARED))
def test_write_read_round_trip(path, tmp_path):
    df = workload.read(path, support=ANY)
    out = workload.write(df, tmp_path / "out.yaml")
    assert out == tmp_path / "out.yaml" and not (tmp_path / "out.yaml.tmp").exists()
    pd.testing.assert_frame_equal(workload.read(out, support=ANY), df)
    pd.testing.assert_frame_equal(workload.read(out, fast=False, support=ANY), df)


def test_write_round_trip_awkward_values(tmp_path):
    df = workload.read(DATA / "duplicates.yaml", support=ANY)
    df = pd.concat([df] * 4, ignore_index=True)
    df["M"] = [1, 2, 3, 4, 5, 6, 7, 8]
    df["alpha"] = [1e-05, 1e20, 0.1, -2.5, float("inf"), 1.0, 0.0, 3.0]
    df["kernel_name"] = pd.Series(["a, b: c", "true", "123", "", "it's # hash", "ünïcode ✓", "1.0", "null"],
                                  dtype="str")
    df = df[[c for c in gemm.LOG_FIELDS if c in df.columns]]
    path = workload.write(df, tmp_path / "awkward.yaml")
    text = path.read_text()
    assert text.count("\n") == 8 and all(line.startswith("- {function: matmul, M: ") for line in text.splitlines())
    pd.testing.assert_frame_equal(workload.read(path, support=ANY), df)
    pd.testing.assert_frame_equal(workload.read(path, fast=False, support=ANY), df)


def test_write_format(tmp_path):
    df = workload.read_inline("1024 512 1 256 B B S T N", support=ANY)
    text = workload.write(df, tmp_path / "w.yaml").read_text()
    assert text == ("- {function: matmul, M: 1024, N: 512, K: 256, transA: T, transB: N, batch_count: 1, "
                    "scaleA: 0, scaleB: 0, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
                    "scale_type: f32_r, compute_type: c_f32_r, call_count: 1}\n")


def test_problems():
    df = workload.read(DATA / "lowercase_mnk.csv", support=ANY)
    probs = workload.problems(df)
    assert [p.size for p in probs] == [(4096, 128, 1, 4096), (1024, 1024, 2, 512)]
    assert probs[0].type.name == "BBS_TN" and probs[1].type.name == "HSS_NN"
    twice = pd.concat([df, df.assign(call_count=1)], ignore_index=True)
    assert workload.problems(twice) == probs


def test_document_start_and_comment_after_bom(tmp_path, monkeypatch):
    rows = (DATA / "duplicates.yaml").read_text()
    path = tmp_path / "doc.yaml"
    path.write_bytes(b"\xef\xbb\xbf# comment after a byte-order mark\n---\n" + rows.encode())

    def no_pyyaml(*args):
        raise AssertionError("the fast path should not need PyYAML here")

    expected = workload.read(DATA / "duplicates.yaml", support=ANY)
    pd.testing.assert_frame_equal(workload.read(path, fast=False, support=ANY), expected)
    monkeypatch.setattr(workload.reader, "_read_yaml_reference", no_pyyaml)
    pd.testing.assert_frame_equal(workload.read(path, support=ANY), expected)
    # a second document is an error (PyYAML reads the whole file and rejects it)
    monkeypatch.undo()
    path.write_text("---\n" + rows + "---\n" + rows)
    with pytest.raises(WorkloadError) as info:
        workload.read(path, support=ANY)
    assert info.value.field == "syntax"


def test_partial_columns_dropped_with_warning_and_scale_defaults(caplog):
    with caplog.at_level("WARNING", logger="geko_lib.workload"):
        workload.read(DATA / "unusual_rows.yaml", support=ANY)
    dropped = " ".join(r.getMessage() for r in caplog.records)
    assert "kernel_name" in dropped and "aux_type" in dropped and "unusual_rows.yaml" in dropped
    # no scaleA/scaleB/scale_type columns at all
    block = workload.read(DATA / "block_style.yaml", support=ANY)
    assert list(block[["scaleA", "scaleB"]].iloc[0]) == [0, 0]
    assert block.loc[0, "scale_type"] == "f32_r" and block.loc[0, "compute_type"] == "c_f32_r"
    assert block.loc[0, "call_count"] == 10  # 7 (block row) + 3 (same row, flow style)


# --- mask-32 lines: the offline-tuning entry, command lines with a path, --precision -----------

@needs_shared
def test_shared_mask32_docs_entry_keeps_solution_and_ignores_algo_method():
    row = workload.read(LOGS / "bench_mask32_docs_offline_tuning_log_entry.txt",
                        support=ANY).iloc[0]
    assert (row.M, row.N, row.K, row.transA, row.transB) == (1024, 512, 1024, "N", "N")
    assert (row.a_type, row.c_type, row.compute_type) == ("f16_r", "f16_r", "c_f32_r")
    assert row.beta == 1.0 and row.solution_index == 56073 and row.call_count == 1
    assert "algo_method" not in row.index and "api_method" not in row.index


@needs_shared
def test_shared_bench_output_command_lines_read_as_workloads(tmp_path):
    """The command lines printed above real hipblaslt-bench outputs (./hipblaslt-bench ...,
    ./clients/staging/hipblaslt-bench --precision ...) are workload lines too."""
    bench = FIXTURES / "hipblaslt_bench"
    first = (bench / "bench_docs_offline_tuning_winner_soulution_index.txt").read_text()
    readme = (bench / "bench_readme_2024_f32_verify_cpu_columns.txt").read_text()
    path = tmp_path / "commands.txt"
    path.write_text(first.splitlines()[0] + "\n" + readme.splitlines()[0]
                    + " -m 128 -n 128 -k 128 --compute_type f32_r --transA N --transB N"
                    " --batch_count 1\n")
    df = workload.read(path, support=ANY)
    assert len(df) == 2
    offline, demo = df.sort_values("M", ascending=False).to_dict("records")
    assert (offline["M"], offline["N"], offline["a_type"]) == (1024, 512, "f16_r")
    assert "lda" not in df and "solution_index" not in df  # columns with nulls are dropped
    assert {demo[t] for t in ("a_type", "b_type", "c_type", "d_type")} == {"f32_r"}


def test_mask32_precision_flag_sets_every_type_unless_named(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("hipblaslt-bench -m 8 -n 8 -k 8 -r f16_r --d_type f32_r --c_type f32_r "
                    "--compute_type f32_r --transA N --transB T --batch_count 1\n")
    row = workload.read(path, support=ANY).iloc[0]
    assert (row.a_type, row.b_type, row.c_type, row.d_type) == ("f16_r", "f16_r", "f32_r", "f32_r")
