"""GEMMs are neither lost nor merged on the way through the library (issue 16): a 16-bit compute
type keeps its call_count after the library round trip, and GEMM types that differ only in
c_type/d_type get distinct library files."""

import pandas as pd
import pytest

from geko_lib import gemm, library, platforms, workload
from geko_lib.library import logic

from .conftest import FIXTURES

ANY = platforms.gemm_support(None)  # every platform's limits (the union): no platform named


def row(m, compute, calls, c="f16_r", d="f16_r"):
    return (f"- {{function: matmul, M: {m}, N: 256, K: 512, transA: N, transB: N, batch_count: 1, "
            f"a_type: f16_r, b_type: f16_r, c_type: {c}, d_type: {d}, compute_type: {compute}, "
            f"call_count: {calls}}}\n")


@pytest.mark.parametrize("spelling", ["c_f16_r", "f16_r"])
def test_f16_compute_has_one_spelling_that_survives_the_library(spelling):
    gemm_type = gemm.GemmType("N", "N", "f16_r", "f16_r", "f16_r", "f16_r", spelling)
    assert library.gemm_type_of(library.problem_type_for(gemm_type)) == gemm_type


def test_common_library_names_are_the_originals():
    """c == d: the names TensileLite writes (the recorded fixtures carry them)."""
    for path in sorted((FIXTURES / "tensile_logic").glob("*.yaml")):
        lib = library.load(path)
        schedule = path.name.split("_Cijk_")[0]
        assert path.name.startswith(logic.file_name(schedule, lib.gemm_type)[:-len("_UserArgs.yaml")])
    bbs = gemm.GemmType("T", "N", "bf16_r", "bf16_r", "bf16_r", "bf16_r", "c_f32_r")
    assert (bbs.name, logic.file_name("gfx950", bbs)) == (
        "BBS_TN", "gfx950_Cijk_Alik_Bljk_BBS_BH_UserArgs.yaml")


def test_types_differing_only_in_d_type_get_distinct_names_and_round_trip():
    same = gemm.GemmType("T", "N", "f16_r", "f16_r", "f16_r", "f16_r", "c_f32_r")
    wider = gemm.GemmType("T", "N", "f16_r", "f16_r", "f16_r", "f32_r", "c_f32_r")
    assert same.name == "HHS_TN" and wider.name == "HHSOS_TN"
    assert logic.file_name("gfx950", same) != logic.file_name("gfx950", wider)
    for t in (same, wider):
        assert library.gemm_type_of(library.problem_type_for(t)) == t
    assert "DataTypeD" not in library.problem_type_for(same)  # the common case stays Tensile's


def test_c_f16_r_and_d_type_variants_survive_a_search_campaign(campaign, tmp_path):
    log = tmp_path / "w.yaml"
    log.write_text(row(1024, "c_f16_r", 7) + row(2048, "c_f16_r", 3)
                   + row(1024, "c_f32_r", 5) + row(1024, "c_f32_r", 2, d="f32_r"))
    c = campaign(workload_log=str(log), keep_thr=0.0)
    c.snakemake("final_libs")
    rows = workload.read(c.path("workload.yaml"), support=ANY)
    assert set(rows["compute_type"]) == {"f16_r", "c_f32_r"}
    libs = sorted(p.name for p in c.path("libs").glob("*.yaml"))
    assert len(libs) == 3, libs  # HHH, HHS and HHSOS: none overwrote another
    served = {library.load(c.path("libs", name)).gemm_type.d_type for name in libs}
    assert served == {"f16_r", "f32_r"}
    raw = pd.read_csv(c.path("results", "raw_results.csv"))
    assert sorted(raw["call_count"]) == [2, 3, 5, 7]
    for weight in ("pct_of_total", "weighted_us_saved", "weighted_uplift_contribution_pct"):
        assert raw[weight].notna().all(), weight
    assert raw["pct_of_total"].sum() == pytest.approx(100.0)
