"""Workload edges of issue 16: a CSV with blank lines reports the right line; a key given twice in
one row (mask-64 YAML, CSV header, --list file) is refused naming its line and key instead of
silently keeping the last value."""

import pytest

from geko_lib import platforms, workload
from geko_lib.workload import WorkloadError

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named

HEADER = "M,N,K,transA,transB,batch_count,a_type,b_type,c_type,d_type,compute_type\n"
GOOD = "16,16,16,T,N,1,bf16_r,bf16_r,bf16_r,bf16_r,c_f32_r\n"
ROW = ("- {function: matmul, M: 16, N: 16, K: 16, transA: T, transB: N, batch_count: 1, "
       "a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r}\n")


def test_csv_with_blank_lines_reports_the_line_of_the_bad_row(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("\n" + HEADER + GOOD + "\n\n" + GOOD + "  \n" + GOOD.replace("16,16,16", "16,-2,16"))
    with pytest.raises(WorkloadError) as caught:
        workload.read(path, support=ANY)
    assert (caught.value.line, caught.value.field) == (8, "N"), str(caught.value)


def test_csv_quoted_field_spanning_lines_keeps_later_lines_right(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text(HEADER.rstrip("\n") + ",kernel_name\n" + GOOD.rstrip("\n") + ',"a\nb"\n'
                    + GOOD.replace("bf16_r,c_f32_r", "bf16_r,bf8_r").rstrip("\n") + ",k\n")
    with pytest.raises(WorkloadError) as caught:  # compute bf8: no platform's library runs it
        workload.read(path, support=platforms.gemm_support(None))
    assert (caught.value.line, caught.value.field) == (4, "compute_type"), str(caught.value)


def test_duplicate_csv_column_is_refused_naming_it(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text(HEADER.replace("K,", "K,M,") + GOOD.replace("16,T", "16,32,T"))
    with pytest.raises(WorkloadError, match=r"w\.csv:1: M: column 'M' appears twice"):
        workload.read(path, support=ANY)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "pyyaml"])
def test_duplicate_key_in_a_yaml_row_is_refused_naming_line_and_key(tmp_path, fast):
    path = tmp_path / "w.yaml"
    path.write_text("# trace\n" + ROW + ROW.replace("K: 16,", "K: 16, M: 4096,") + ROW)
    with pytest.raises(WorkloadError, match=r"w\.yaml:3: M: key 'M' appears twice in one row"):
        workload.read(path, fast=fast, support=ANY)


def test_duplicate_key_next_to_unusual_values_is_refused_too(tmp_path):
    """A row the fast parser hands to PyYAML (a quoted value) is checked there."""
    path = tmp_path / "w.yaml"
    path.write_text(ROW.replace("transA: T", 'transA: "T", transB: T'))
    with pytest.raises(WorkloadError, match=r":1: transB: key 'transB' appears twice"):
        workload.read(path, support=ANY)


def test_duplicate_key_in_a_list_file_is_refused(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("TRANSA: N\nTRANSB: N\nDataType: B\nDestDataType: B\nComputeDataType: S\n"
                    "DataType: H\nSizes:\n  - [16, 16, 1, 16]\n")
    with pytest.raises(WorkloadError, match=r"list\.yaml:6: DataType: key 'DataType' is given twice"):
        workload.read_list(path, support=ANY)
