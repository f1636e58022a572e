"""Data-type combinations are checked against what the platform's library supports (issue 16:
"impossible type combinations (i8 x f64_c -> f4, f32 x f8, compute bf8) are accepted, 'verified'
and kept")."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from geko_lib.platforms import type_support
from geko_lib import workload
from geko_lib.workload import WorkloadError

from .conftest import FIXTURES, WORKLOADS

GEKO = [shutil.which("geko", path=str(Path(sys.executable).parent)) or sys.executable]
GEKO = GEKO if GEKO[0] != sys.executable else [sys.executable, "-m", "geko_lib.cli"]

GOOD = ("bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")


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
        workload.read(path, fast=fast)
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
        workload.read(csv)
    bench = tmp_path / "log.txt"
    bench.write_text("hipblaslt-bench --api_method c -m 8 -n 8 -k 8 --transA T --transB N "
                     "--a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r "
                     "--compute_type bf8_r --batch_count 1\n")
    with pytest.raises(WorkloadError, match=r"log\.txt:1: compute_type: bf8_r"):
        workload.read(bench)


def test_list_and_inline_sources_are_checked(tmp_path):
    listing = tmp_path / "list.yaml"
    listing.write_text("TRANSA: N\nTRANSB: N\nDataType: S\nDestDataType: S\n"
                       "ComputeDataType: S\nSizes:\n  - [16, 16, 1, 16]\n")
    assert len(workload.read_list(listing, platform="rocm")) == 1
    listing.write_text("TRANSA: N\nTRANSB: N\nDataType: D\nDestDataType: D\n"
                       "ComputeDataType: D\nSizes:\n  - [16, 16, 1, 16]\n")
    with pytest.raises(WorkloadError, match=r"list\.yaml:7: a_type: f64_r is not a type "
                                            r"combination hipBLASLt supports"):
        workload.read_list(listing, platform="rocm")
    assert len(workload.read_list(listing, platform="cuda")) == 1  # cuBLASLt: COMPUTE_64F
    with pytest.raises(WorkloadError, match="--inline: a_type: f64_r"):
        workload.read_inline("16 16 1 16 D D D N N", platform="rocm")


def test_platform_tables_differ_where_the_libraries_do(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(row("f4_r", "f4_r", "bf16_r", "bf16_r", "c_f32_r"))
    assert len(workload.read(path, platform="rocm")) == 1  # gfx950 MX float4
    assert len(workload.read(path)) == 1  # sim and no platform: the union
    with pytest.raises(WorkloadError, match=r":1: a_type: f4_r is not a type combination cuBLASLt"):
        workload.read(path, platform="cuda")
    path.write_text(row("bf8_r", "bf8_r", "f16_r", "f16_r", "c_f32_r"))
    assert len(workload.read(path, platform="rocm")) == 1
    with pytest.raises(WorkloadError, match="b_type: bf8_r after bf8_r"):  # E5M2 x E5M2
        workload.read(path, platform="cuda")


def test_every_recorded_and_shipped_workload_stays_valid():
    logs = sorted((FIXTURES / "hipblaslt_logs").glob("*.*")) + sorted(WORKLOADS.glob("*.yaml"))
    readable = [p for p in logs if p.suffix in (".txt", ".yaml") and "loglevel4" not in p.name]
    assert len(readable) >= 8
    for path in readable:
        assert len(workload.read(path)) > 0, path


def test_tables_are_consistent():
    assert type_support.table("sim") == type_support.ROCM | type_support.CUDA
    assert type_support.table(None) == type_support.table("sim")
    for combo in type_support.table("sim"):
        assert type_support.unsupported(combo, "sim") is None
        assert combo.compute_type.startswith("c_") or combo.compute_type == "f16_r"


def test_geko_refuses_an_impossible_type_before_making_a_workdir(tmp_path):
    (tmp_path / "w.yaml").write_text(row(*GOOD) + row("i8_r", "f64_c", "f4_r", "f4_r", "c_i32_r"))
    proc = subprocess.run([*GEKO, "--search", "--workload-log", "w.yaml", "--workdir", "run"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "w.yaml:2: b_type: f64_c after i8_r" in proc.stderr
    assert not (tmp_path / "run").exists()
