"""GEMMs are neither lost nor merged on the way through the library (issue 16): a 16-bit compute
type keeps its call_count after the library round trip, and GEMM types that differ only in
c_type/d_type get distinct library files."""

import pandas as pd
import pytest

from geko_lib import gemm, library, workload


def row(m, compute, calls, c="f16_r", d="f16_r"):
    return (f"- {{function: matmul, M: {m}, N: 256, K: 512, transA: N, transB: N, batch_count: 1, "
            f"a_type: f16_r, b_type: f16_r, c_type: {c}, d_type: {d}, compute_type: {compute}, "
            f"call_count: {calls}}}\n")


@pytest.mark.parametrize("spelling", ["c_f16_r", "f16_r"])
def test_f16_compute_has_one_spelling_that_survives_the_library(spelling):
    gemm_type = gemm.GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f16_r", spelling)
    assert library.gemm_type_of(library.problem_type_for(gemm_type)) == gemm_type


def test_c_f16_r_workload_keeps_its_weights_through_a_search_campaign(campaign, tmp_path):
    log = tmp_path / "w.yaml"
    log.write_text(row(1024, "c_f16_r", 7) + row(2048, "c_f16_r", 3))
    c = campaign(workload_log=str(log), keep_thr=0.0)
    c.snakemake("final_libs")
    rows = workload.read(c.path("workload.yaml"))
    assert set(rows["compute_type"]) == {"f16_r"}
    raw = pd.read_csv(c.path("results", "raw_results.csv"))
    assert sorted(raw["call_count"]) == [3, 7]
    for weight in ("pct_of_total", "weighted_us_saved", "weighted_uplift_contribution_pct"):
        assert raw[weight].notna().all(), weight
    assert raw["pct_of_total"].sum() == pytest.approx(100.0)
