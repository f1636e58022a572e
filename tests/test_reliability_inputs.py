"""Inputs no device runs and false refusals (issue 24): sizes beyond what the platform's library
can index or its largest device can hold are refused naming the field (sim answers as the
hardware it models); a CSV's "NA" is quoted as written, an empty cell called one; a --list grid
without ARCH: is taken by geko with --arch, as by the workflow."""

import pytest

from geko_lib import cli, workload
from geko_lib.platforms import gemm_support, limits

ANY = gemm_support(None)  # every platform's limits (the union): no platform named

ROW = ("- {{function: matmul, M: {m}, N: {n}, K: {k}, transA: T, transB: N, batch_count: {b}, "
       "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, "
       "compute_type: c_f32_r}}\n")


@pytest.mark.parametrize("platform", ["sim", "rocm", "cuda"])
@pytest.mark.parametrize("m", [2**63 - 1, 2**40, 2**32, 2**31])
def test_sizes_no_library_can_index_are_refused_naming_the_field(tmp_path, platform, m):
    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=64, n=64, k=64, b=1) + ROW.format(m=m, n=64, k=64, b=1))
    with pytest.raises(workload.WorkloadError) as refused:
        workload.read(log, support=gemm_support(platform))
    assert str(refused.value).startswith(f"{log}:2: M: {m} is beyond what")
    assert "at most 2147483647" in str(refused.value)


@pytest.mark.parametrize("platform, device", [("rocm", "288 GB"), ("cuda", "141 GB"),
                                              ("sim", "288 GB")])
def test_operands_no_device_holds_are_refused(tmp_path, platform, device):
    """Dimensions a 32-bit index takes but operands of terabytes: no device of the platform
    (sim: of any platform it models) has the memory."""
    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=2**20, n=1024, k=2**20, b=1))
    with pytest.raises(workload.WorkloadError, match=f"log.yaml:1: (M|K): .* holds \\({device}\\)"):
        workload.read(log, support=gemm_support(platform))
    fits = tmp_path / "fits.yaml"
    fits.write_text(ROW.format(m=65536, n=1024, k=65536, b=1))  # 8.6 GB of bf16 operands
    assert len(workload.read(fits, support=gemm_support(platform))) == 1


def test_the_limits_are_declared_per_platform():
    assert limits.memory_bytes("cuda") < limits.memory_bytes("rocm") == limits.memory_bytes("sim")


def test_a_csv_na_is_quoted_as_written_and_an_empty_cell_called_one(tmp_path):
    header = "transA,transB,batch_count,m,n,k,a_type,b_type,c_type,d_type,compute_type\n"
    good = "T,N,1,1024,256,512,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n"
    na = tmp_path / "na.csv"
    na.write_text(header + good + "T,N,1,1024,NA,512,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n")
    with pytest.raises(workload.WorkloadError, match="na.csv:3: N: must be a positive integer, "
                                                     "got 'NA'"):
        workload.read(na, support=ANY)
    empty = tmp_path / "empty.csv"
    empty.write_text(header + good + "T,N,1,1024,,512,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n")
    with pytest.raises(workload.WorkloadError, match="empty.csv:3: N: missing required field "
                                                     "\\(an empty cell\\)"):
        workload.read(empty, support=ANY)
    only_good = tmp_path / "good.csv"
    only_good.write_text(header + good)
    assert len(workload.read(only_good, support=ANY)) == 1


def test_geko_takes_a_list_grid_without_arch_when_given_arch(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("TRANSA: T\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
                    "SIZE_OPTION: 1\n")
    args = cli.parser().parse_args(["--bench", "--list", str(grid), "--arch", "gfx950",
                                    "-w", str(tmp_path / "run")])
    config, target = cli.build_config(args, environ={})
    assert (config["arch"], target) == ("gfx950", "bench")
    assert config["workload_list"] == str(grid.resolve())
    assert len(workload.read_list(grid, support=gemm_support("sim"), arch="gfx950")) > 100


def test_a_deleted_workload_log_is_named_missing_not_none(tmp_path):
    from geko_lib.campaign import state

    log = tmp_path / "log.yaml"
    log.write_text(ROW.format(m=64, n=64, k=64, b=1))
    before = state.workload_identity({"workload_log": str(log)})
    log.unlink()
    after = state.workload_identity({"workload_log": str(log)})
    text = "; ".join(state.differences(before, after))
    assert f"(this run: {log} does not exist)" in text and "None" not in text
