"""Data-type combinations are checked against what the platform's library supports (issue 16:
"impossible type combinations (i8 x f64_c -> f4, f32 x f8, compute bf8) are accepted, 'verified'
and kept")."""

import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from geko_lib.platforms import gemm_support, type_support
from geko_lib import workload
from geko_lib.workload import WorkloadError
from geko_lib.workload.support import UNCHECKED

from .conftest import FIXTURES, WORKLOADS

GEKO = [shutil.which("geko", path=str(Path(sys.executable).parent)) or sys.executable]
GEKO = GEKO if GEKO[0] != sys.executable else [sys.executable, "-m", "geko_lib.cli"]

GOOD = ("bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
ANY = gemm_support(None)  # no platform known (yet): every platform's, the union


def row(a, b, c, d, compute, m=64):
    return (f"- {{function: matmul, M: {m}, N: 16, K: 32, transA: T, transB: N, batch_count: 1, "
            f"a_type: {a}, b_type: {b}, c_type: {c}, d_type: {d}, compute_type: {compute}}}\n")


@pytest.mark.parametrize("combo, field", [
    (("i8_r", "f64_c", "f4_r", "f4_r", "c_i32_r"), "b_type"),
    (("f32_r", "f8_r", "f32_r", "f32_r", "c_f32_r"), "b_type"),
    (("bf16_r", "bf16_r", "bf16_r", "bf16_r", "bf8_r"), "compute_type"),
    (("f16_r", "f16_r", "f4_r", "f4_r", "c_f32_r"), "c_type"),
    (("f8_r", "f8_r", "bf16_r", "f32_r", "c_f32_r"), "d_type"),
], ids=["i8xf64c->f4", "f32xf8", "compute-bf8", "f4-output", "c!=d"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pyyaml"])
def test_impossible_combinations_are_refused_with_line_and_field(tmp_path, combo, field, fast):
    path = tmp_path / "w.yaml"
    path.write_text("# a trace\n" + row(*GOOD) + row(*combo, m=128))
    with pytest.raises(WorkloadError) as caught:
        workload.read(path, fast=fast, support=ANY)
    err = caught.value
    assert (err.line, err.field) == (3, field), str(err)
    assert str(err).startswith(f"{path}:3: {field}: ")
    assert "allowed here:" in str(err)


def test_csv_and_bench_line_readers_check_types_too(tmp_path):
    csv = tmp_path / "w.csv"
    csv.write_text("M,N,K,transA,transB,batch_count,a_type,b_type,c_type,d_type,compute_type\n"
                   "8,8,8,T,N,1,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n"
                   "8,8,8,T,N,1,f32_r,f8_r,f32_r,f32_r,c_f32_r\n")
    with pytest.raises(WorkloadError, match=r"w\.csv:3: b_type: f8_r after f32_r"):
        workload.read(csv, support=ANY)
    bench = tmp_path / "log.txt"
    bench.write_text("hipblaslt-bench --api_method c -m 8 -n 8 -k 8 --transA T --transB N "
                     "--a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r "
                     "--compute_type bf8_r --batch_count 1\n")
    with pytest.raises(WorkloadError, match=r"log\.txt:1: compute_type: bf8_r"):
        workload.read(bench, support=ANY)


def test_list_and_inline_sources_are_checked(tmp_path):
    listing = tmp_path / "list.yaml"
    listing.write_text("TRANSA: N\nTRANSB: N\nDataType: S\nDestDataType: S\n"
                       "ComputeDataType: S\nSizes:\n  - [16, 16, 1, 16]\n")
    assert len(workload.read_list(listing, support=gemm_support("rocm"))) == 1
    listing.write_text("TRANSA: N\nTRANSB: N\nDataType: D\nDestDataType: D\n"
                       "ComputeDataType: D\nSizes:\n  - [16, 16, 1, 16]\n")
    with pytest.raises(WorkloadError, match=r"list\.yaml:7: a_type: f64_r is not a type "
                                            r"combination hipBLASLt supports"):
        workload.read_list(listing, support=gemm_support("rocm"))
    cublaslt = gemm_support("cuda")
    assert len(workload.read_list(listing, support=cublaslt)) == 1  # cuBLASLt: COMPUTE_64F
    with pytest.raises(WorkloadError, match="--inline: a_type: f64_r"):
        workload.read_inline("16 16 1 16 D D D N N", support=gemm_support("rocm"))


def test_platform_tables_differ_where_the_libraries_do(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(row("f4_r", "f4_r", "bf16_r", "bf16_r", "c_f32_r"))
    assert len(workload.read(path, support=gemm_support("rocm"))) == 1  # gfx950 MX float4
    assert len(workload.read(path, support=gemm_support("sim"))) == 1  # sim: the union
    assert len(workload.read(path, support=ANY)) == 1  # no platform: the union too
    with pytest.raises(WorkloadError, match=r":1: a_type: f4_r is not a type combination cuBLASLt"):
        workload.read(path, support=gemm_support("cuda"))
    path.write_text(row("bf8_r", "bf8_r", "f16_r", "f16_r", "c_f32_r"))
    assert len(workload.read(path, support=gemm_support("rocm"))) == 1
    with pytest.raises(WorkloadError, match="b_type: bf8_r after bf8_r"):  # E5M2 x E5M2
        workload.read(path, support=gemm_support("cuda"))


def test_every_recorded_and_shipped_workload_stays_valid():
    logs = sorted((FIXTURES / "hipblaslt_logs").glob("*.*")) + sorted(WORKLOADS.glob("*.yaml"))
    readable = [p for p in logs if p.suffix in (".txt", ".yaml") and "loglevel4" not in p.name]
    assert len(readable) >= 8
    for path in readable:
        assert len(workload.read(path, support=ANY)) > 0, path


def test_tables_are_consistent():
    assert type_support.table("sim") == type_support.ROCM | type_support.CUDA
    assert type_support.table(None) == type_support.table("sim")
    for combo in type_support.table("sim"):
        assert gemm_support("sim").unsupported(combo) is None
        assert combo.compute_type.startswith("c_") or combo.compute_type == "f16_r"


def test_geko_refuses_an_impossible_type_before_making_a_workdir(tmp_path):
    (tmp_path / "w.yaml").write_text(row(*GOOD) + row("i8_r", "f64_c", "f4_r", "f4_r", "c_i32_r"))
    proc = subprocess.run([*GEKO, "--search", "--workload-log", "w.yaml", "--workdir", "run"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "w.yaml:2: b_type: f64_c after i8_r" in proc.stderr
    assert not (tmp_path / "run").exists()


def _user_files(tmp_path) -> dict:
    """reader name -> (its first argument, a user's input no platform runs, and the field the
    refusal names): a type no library supports, or (a config.json, whose types are geko's) an
    intermediate_size no device holds."""
    log = tmp_path / "w.yaml"
    log.write_text(row(*GOOD) + row("f32_r", "f8_r", "f32_r", "f32_r", "c_f32_r"))
    bench = tmp_path / "bench.txt"
    bench.write_text("hipblaslt-bench --api_method c -m 8 -n 8 -k 8 --transA T --transB N "
                     "--a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r "
                     "--compute_type bf8_r --batch_count 1\n")
    listing = tmp_path / "list.yaml"
    listing.write_text("TRANSA: N\nTRANSB: N\nDataType: B\nDestDataType: B\n"
                       "ComputeDataType: F8\nSizes:\n  - [16, 16, 1, 16]\n")
    model = tmp_path / "config.json"
    config = json.loads((FIXTURES / "models" / "llama3_8b.json").read_text())
    model.write_text(json.dumps(config | {"intermediate_size": 2**27}, indent=2))
    return {"read": (log, "b_type"), "read_bench_commands": (bench, "compute_type"),
            "read_list": (listing, "compute_type"),
            "read_inline": ("16 16 1 16 B B F8 N N", "compute_type"),
            "read_model": (model, "intermediate_size")}


def test_no_reader_takes_a_user_file_unchecked(tmp_path):
    """Every public reader (``workload.read*``) takes ``support`` by keyword with no default
    and refuses None: a caller that names no platform cannot skip the check by leaving it out,
    it passes ``gemm_support(None)`` (every platform's limits), and a user's GEMM beyond all of
    them is refused naming file, line and field. Only ``support.UNCHECKED``, by name, skips
    it (``workload.rows_of``)."""
    inputs = _user_files(tmp_path)
    readers = sorted(name for name in workload.__all__ if name.startswith("read"))
    assert readers == sorted(inputs)  # a new reader is held to this too
    for name in readers:
        reader, (given, field) = getattr(workload, name), inputs[name]
        parameter = inspect.signature(reader).parameters["support"]
        assert parameter.kind is parameter.KEYWORD_ONLY, name
        assert parameter.default is parameter.empty, name
        with pytest.raises(TypeError, match="support"):
            reader(given)
        with pytest.raises(TypeError, match="support must be a GemmSupport"):
            reader(given, support=None)
        with pytest.raises(WorkloadError) as refused:
            reader(given, support=ANY)
        err = refused.value
        assert err.field == field, (name, str(err))
        where = "--inline" if name == "read_inline" else str(given)
        assert str(err).startswith(f"{where}:"), (name, str(err))
        assert err.line is not None or name in ("read_inline", "read_model"), (name, str(err))
    assert len(workload.read(inputs["read"][0], support=UNCHECKED)) == 2  # by name only
