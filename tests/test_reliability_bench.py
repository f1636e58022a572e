"""The hipblaslt-bench parser reads real headers whose column names carry punctuation (issue 16:
HIPBLASLT_BENCH_EFF=1 adds efficiency columns such as ``num_cu's``)."""

import pytest

from geko_lib.platforms.rocm.bench import BenchOutputError, parse_bench_output, read_bench_output

from .conftest import FIXTURES

EFF = FIXTURES / "hipblaslt_bench" / "bench_readme_eff_env_f16_efficiency_columns.txt"
PERF = FIXTURES / "hipblaslt_bench" / "bench_readme_perf_env_bf16_efficiency_columns.txt"


def test_efficiency_columns_of_hipblaslt_bench_eff():
    (row,) = read_bench_output(EFF).to_dict("records")
    assert (row["m"], row["n"], row["k"], row["a_type"]) == (4096, 4864, 32896, "f16_r")
    assert (row["us"], row["gflops"], row["gbps"]) == (2361.71, 555009.0, 248.176)
    assert row["efficiency"] == pytest.approx(81.3366)
    assert row["num_cu's"] == 0 and row["lowest_avg_freq"] == 1096


def test_newer_perf_columns_with_nan_values():
    (row,) = read_bench_output(PERF).to_dict("records")
    assert (row["us"], row["efficiency"], row["num_cu"]) == (1209.14, pytest.approx(92.3889), 256)
    assert row["cu_gran"] != row["cu_gran"]  # printed "-nan"


@pytest.mark.parametrize("name", ["eff(%)", "tflops/s", "time:us", "a'b"])
def test_any_punctuation_but_separators_is_a_column_name(name):
    text = EFF.read_text().replace(",efficiency,", f",{name},")
    (row,) = parse_bench_output(text).to_dict("records")
    assert row[name] == pytest.approx(81.3366)


def test_a_header_with_a_blank_in_a_name_is_still_refused_with_its_line():
    text = EFF.read_text().replace(",efficiency,", ",effi ciency,")
    with pytest.raises(BenchOutputError, match=r":2: .*'effi ciency' is not a column name"):
        parse_bench_output(text, source="out.txt")
