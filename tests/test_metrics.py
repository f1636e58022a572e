"""metrics.json beyond the original's counts (tests/test_analysis.py): disjoint uplift buckets,
GEMM categories, per dtype/layout, and the roofline section and columns.

Hand-made tables; every expected number is worked out in the comments."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from geko_lib.campaign import analysis
from geko_lib.bench_formats.summary import PCT

BF16 = {"transA": "T", "transB": "N", "batch_count": 1, "a_type": "bf16_r", "b_type": "bf16_r",
        "c_type": "bf16_r", "d_type": "bf16_r", "compute_type": "c_f32_r", "scaleA": 0,
        "scaleB": 0}
F32 = dict(BF16, a_type="f32_r", b_type="f32_r", c_type="f32_r", d_type="f32_r")
PLATFORM = {"name": "sim", "arch": "test", "measured": False, "note": "test"}


def result(ident, us, kernel, lib="a.yaml"):
    return {**ident, "us": us, "gflops": 1.0, "gbps": 1.0, "solution_index": 0,
            "solution_name": kernel, "kernel": kernel, "platform": "sim", "measured": False,
            "device": 0, "lib": lib}


def compare(cases, weights=None, verify=None):
    """cases: list of (identity, us_reference, us_tuned); tuned kernels all differ."""
    ref = pd.DataFrame([result(i, ur, "ref") for i, ur, _ in cases])
    tun = pd.DataFrame([result(i, ut, f"k{n}") for n, (i, _, ut) in enumerate(cases)])
    return analysis.compare(ref, tun, verify, up_thr=1.03, err_thr=0.03, weights=weights)


# --- improved_in_ranges / regressed_in_ranges ----------------------------------------------------

# us_tuned for us_reference = 100: uplift = (100 / us_tuned - 1) * 100
UPLIFTS = {  # m -> (us_tuned, uplift %)
    1: (100 / 1.005, 0.5), 2: (100 / 1.02, 2.0), 3: (100 / 1.04, 4.0), 4: (100 / 1.07, 7.0),
    5: (100 / 1.15, 15.0), 6: (100 / 1.30, 30.0), 7: (100 / 1.60, 60.0), 8: (100 / 2.5, 150.0),
    9: (100 / 0.995, -0.5), 10: (100 / 0.98, -2.0), 11: (100 / 0.96, -4.0),
    12: (100 / 0.93, -7.0), 13: (100 / 0.80, -20.0), 14: (100.0, 0.0),
}


def bucket_raw():
    return compare([(dict(BF16, m=m, n=64, k=64), 100.0, ut) for m, (ut, _) in UPLIFTS.items()])


def test_improved_and_regressed_in_ranges():
    m = analysis.metrics(bucket_raw(), 1.03, 0.03, PLATFORM)
    c = m["counts"]
    assert c["n_improved"] == 8 and c["n_regressed"] == 5 and c["n_neutral"] == 1
    assert c["improved_in_ranges"] == {"0_1_pct": 1, "1_3_pct": 1, "3_5_pct": 1, "5_10_pct": 1,
                                       "10_20_pct": 1, "20_50_pct": 1, "50_100_pct": 1,
                                       "ge_100_pct": 1}
    # regression magnitudes 0.5, 2, 4, 7, 20
    assert c["regressed_in_ranges"] == {"0_1_pct": 1, "1_3_pct": 1, "3_5_pct": 1, "5_10_pct": 1,
                                        "ge_10_pct": 1}
    assert sum(c["improved_in_ranges"].values()) == c["n_improved"]
    assert sum(c["regressed_in_ranges"].values()) == c["n_regressed"]
    # the buckets from 1 % up add up to the cumulative count at 1 %
    assert sum(v for k, v in c["improved_in_ranges"].items() if k != "0_1_pct") == \
        c["improved_cumulative"]["ge_1_pct"] == 7
    assert c["regressed_cumulative"]["ge_10_pct"] == c["regressed_in_ranges"]["ge_10_pct"]


def test_bucket_edges_belong_to_the_upper_bucket():
    # exactly 3 % and exactly 100 %: [3, 5) and [100, inf)
    raw = compare([(dict(BF16, m=1, n=64, k=64), 103.0, 100.0),
                   (dict(BF16, m=2, n=64, k=64), 200.0, 100.0)])
    c = analysis.metrics(raw, 1.03, 0.03, PLATFORM)["counts"]
    assert c["improved_in_ranges"]["3_5_pct"] == 1 and c["improved_in_ranges"]["ge_100_pct"] == 1
    assert c["improved_in_ranges"]["1_3_pct"] == 0


def test_invalid_rows_are_not_bucketed():
    verify = pd.DataFrame([{**dict(BF16, m=m, n=64, k=64), "solution_index": 0,
                            "solution_name": "x", "kernel": "x", "error": 0.5 if m == 8 else 0.0,
                            "platform": "sim", "measured": False, "device": 0} for m in UPLIFTS])
    raw = compare([(dict(BF16, m=m, n=64, k=64), 100.0, ut) for m, (ut, _) in UPLIFTS.items()],
                  verify=verify)
    c = analysis.metrics(raw, 1.03, 0.03, PLATFORM)["counts"]
    assert c["n_invalid"] == 1 and c["improved_in_ranges"]["ge_100_pct"] == 0


# --- categories -------------------------------------------------------------------------------

@pytest.mark.parametrize("m, n, k, batch, label", [
    (128, 128, 128, 9000, "Very large batch"),
    (128, 128, 128, 2000, "Large batch"),
    (128, 128, 128, 129, "Medium batch"),
    (128, 128, 128, 2, "Small batch"),
    (1, 4096, 4096, 1, "M = 1"),
    (4096, 1, 4096, 1, "N = 1"),
    (4096, 4096, 1, 1, "K = 1"),
    (16384, 16, 128, 1, "Large M, very small N and K"),
    (64, 16384, 128, 1, "Large N, very small M and K"),
    (128, 128, 16384, 1, "Large K, very small M and N"),
    (16384, 4096, 4096, 1, "Large M"),
    (4096, 16384, 129, 1, "Large N"),
    (4096, 4096, 16384, 1, "Large K"),
    (16384, 16384, 64, 1, "Large M and N"),
    (16384, 64, 16384, 1, "Large M and K"),
    (64, 16384, 16384, 1, "Large N and K"),
    (16384, 16384, 16384, 1, "Large M, N and K"),
    (1024, 512, 1024, 1, "Small GEMMs"),
    (4096, 8192, 4096, 1, "Large GEMMs"),
    (2048, 8192, 512, 1, "Medium GEMMs"),
])
def test_gemm_category(m, n, k, batch, label):
    assert analysis.gemm_category(m, n, k, batch) == label


def test_twenty_distinct_categories():
    assert len(set(analysis.CATEGORIES)) == 20


def test_per_category_and_per_dtype_layout():
    small = dict(BF16, m=64, n=64, k=64)  # Small GEMMs
    small2 = dict(BF16, m=128, n=64, k=64)
    large = dict(F32, m=4096, n=4096, k=4096)  # Large GEMMs
    raw = compare([(small, 10.0, 5.0), (small2, 10.0, 10.0 / 1.02), (large, 100.0, 80.0)],
                  weights=pd.DataFrame([{**small, "call_count": 1, PCT: 20.0},
                                        {**small2, "call_count": 1, PCT: 30.0},
                                        {**large, "call_count": 1, PCT: 50.0}]))
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    cat = m["per_category"]
    assert set(cat) == {"Small GEMMs", "Large GEMMs"}
    # Small: ratios 2.0 (kept) and 1.02 (not kept: < 1.03)
    assert cat["Small GEMMs"]["n"] == 2 and cat["Small GEMMs"]["n_kept"] == 1
    assert cat["Small GEMMs"]["geomean_valid"] == pytest.approx(100 * (math.sqrt(2 * 1.02) - 1))
    assert cat["Small GEMMs"]["geomean_kept"] == pytest.approx(100.0)
    assert cat["Small GEMMs"]["pct_of_total"] == pytest.approx(50.0)
    assert cat["Small GEMMs"]["e2e_uplift_pct"] == pytest.approx(20.0 * 0.5)
    # Large: ratio 1.25, kept: 50 % * (1 - 1/1.25) = 10 %
    assert cat["Large GEMMs"]["e2e_uplift_pct"] == pytest.approx(10.0)
    assert m["e2e"]["e2e_uplift_pct"] == pytest.approx(20.0)
    per = m["per_dtype_layout"]
    assert per["bf16_r_TN"]["n"] == 2 and per["bf16_r_TN"]["n_kept"] == 1
    assert per["bf16_r_TN"]["mean"] == pytest.approx((100.0 + 2.0) / 2)
    assert per["f32_r_TN"] == {"n": 1, "geomean": pytest.approx(25.0),
                               "median": pytest.approx(25.0), "max": pytest.approx(25.0),
                               "mean": pytest.approx(25.0), "n_kept": 1}


# --- roofline ---------------------------------------------------------------------------------

CEILINGS = {"arch": "test", "peak_tflops": {"16": 100.0, "32": 10.0}, "hbm_tbps": 2.0,
            "source": "test figures"}
# A: bf16 1024^3. flops 2*1024^3 = 2147483648; bytes 2*3*1024^2 = 6291456; intensity 341.33
#    flop/B -> bandwidth roof 682.67 TFLOP/s > peak 100: compute bound, roofline 100 TFLOP/s.
#    us_reference 42.94967296 -> 50 TFLOP/s = 50 %; us_tuned 26.8435456 -> 80 TFLOP/s = 80 %.
A = dict(BF16, m=1024, n=1024, k=1024)
A_REF_US, A_TUNED_US = 42.94967296, 26.8435456
# B: bf16 GEMV 4096 x 1 x 4096. flops 2*4096*4096 = 33554432; bytes 2*(4096*4096 + 4096 + 4096)
#    = 33570816; intensity 0.99951 -> roofline 1.99902 TFLOP/s (memory bound).
#    us_reference 33.554432 -> 1 TFLOP/s; us_tuned 41.943040 -> 0.8 TFLOP/s (slower: not kept).
B = dict(BF16, m=4096, n=1, k=4096)
B_REF_US, B_TUNED_US = 33.554432, 41.94304
B_ROOF = 2.0 * (2 * 4096 * 4096) / 33570816
# C: f32 256^3. flops 33554432; bytes 4*3*256^2 = 786432; intensity 42.67 -> 85.33 > peak 10:
#    compute bound, roofline 10 TFLOP/s; us 6.7108864 both sides -> 5 TFLOP/s = 50 %.
C = dict(F32, m=256, n=256, k=256)
C_US = 6.7108864
WEIGHTS = {"A": 60.0, "B": 30.0, "C": 10.0}


def roof_raw(with_weights=True):
    cases = [(A, A_REF_US, A_TUNED_US), (B, B_REF_US, B_TUNED_US), (C, C_US, C_US)]
    weights = pd.DataFrame([{**A, "call_count": 3, PCT: WEIGHTS["A"]},
                            {**B, "call_count": 5, PCT: WEIGHTS["B"]},
                            {**C, "call_count": 7, PCT: WEIGHTS["C"]}]) if with_weights else None
    return compare(cases, weights=weights)


def test_roofline_per_gemm():
    raw = roof_raw()
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM, ceilings=CEILINGS)
    roof = m["roofline"]
    json.dumps(m, allow_nan=False)
    assert roof["ceilings"]["peak_tflops"] == {"16": 100.0, "32": 10.0}
    assert roof["n"] == 3 and roof["n_memory_bound"] == 1 and roof["n_compute_bound"] == 2
    a, b, c = roof["gemms"]
    assert a["gemm"] == "BBS_TN_M1024_N1024_B1_K1024" and a["peak_class"] == "16"
    assert a["arith_intensity"] == pytest.approx(2 * 1024**3 / (2 * 3 * 1024**2))
    assert a["memory_bound_tflops"] == pytest.approx(2.0 * 1024 / 3)
    assert a["roofline_tflops"] == pytest.approx(100.0) and a["bound"] == "compute"
    assert a["tflops_reference"] == pytest.approx(50.0)
    assert a["tflops_tuned"] == pytest.approx(80.0)
    assert a["pct_roofline_reference"] == pytest.approx(50.0)
    assert a["pct_roofline_tuned"] == pytest.approx(80.0)
    assert a["kept"] is True and a["time_share_pct"] == pytest.approx(60.0)
    assert b["bound"] == "memory" and b["roofline_tflops"] == pytest.approx(B_ROOF)
    assert b["pct_roofline_reference"] == pytest.approx(100.0 * 1.0 / B_ROOF)
    assert b["pct_roofline_tuned"] == pytest.approx(100.0 * 0.8 / B_ROOF)
    assert b["kept"] is False
    assert c["peak_class"] == "32" and c["roofline_tflops"] == pytest.approx(10.0)
    assert c["pct_roofline_reference"] == pytest.approx(50.0)


def test_timings_above_the_roofline_are_reported_as_flaws(caplog):
    # A tuned at 125 TFLOP/s against a 100 TFLOP/s peak: the ceilings are no bound there
    cases = [(A, A_REF_US, A_TUNED_US * 80.0 / 125.0), (C, C_US, C_US)]
    with caplog.at_level("WARNING", logger="geko"):
        roof = analysis.metrics(compare(cases), 1.03, 0.03, PLATFORM,
                                ceilings=CEILINGS)["roofline"]
    assert roof["flaws"] == [{"gemm": "BBS_TN_M1024_N1024_B1_K1024", "side": "tuned",
                              "pct_roofline": pytest.approx(125.0),
                              "tflops": pytest.approx(125.0), "roofline_tflops": 100.0}]
    assert "above 100% of the roofline" in caplog.text
    assert analysis.metrics(roof_raw(), 1.03, 0.03, PLATFORM,
                            ceilings=CEILINGS)["roofline"]["flaws"] == []


def test_roofline_time_weighted():
    roof = analysis.metrics(roof_raw(), 1.03, 0.03, PLATFORM, ceilings=CEILINGS)["roofline"]
    b_ref, b_tuned = 100.0 / B_ROOF, 80.0 / B_ROOF
    assert roof["weights"] == "pct_of_total" and roof["weight_coverage_pct"] == pytest.approx(100)
    assert roof["time_weighted_pct_roofline_reference"] == pytest.approx(
        0.6 * 50.0 + 0.3 * b_ref + 0.1 * 50.0)
    assert roof["time_weighted_pct_roofline_tuned"] == pytest.approx(
        0.6 * 80.0 + 0.3 * b_tuned + 0.1 * 50.0)
    # what ships: A tuned (kept), B and C reference
    assert roof["time_weighted_pct_roofline_shipped"] == pytest.approx(
        0.6 * 80.0 + 0.3 * b_ref + 0.1 * 50.0)
    assert roof["mean_pct_roofline_reference"] == pytest.approx((50.0 + b_ref + 50.0) / 3)
    assert roof["median_pct_roofline_tuned"] == pytest.approx(50.0)


def test_roofline_weights_partial_summary_are_normalised():
    # keep_thr > 0: the summary's shares cover part of the workload (here 40 + 20 + 0 = 60 %)
    raw = roof_raw()
    raw["pct_of_total"] = [40.0, 20.0, 0.0]
    roof = analysis.roofline_metrics(raw, CEILINGS)
    assert roof["weight_coverage_pct"] == pytest.approx(60.0)
    assert roof["time_weighted_pct_roofline_reference"] == pytest.approx(
        (40.0 * 50.0 + 20.0 * 100.0 / B_ROOF) / 60.0)


def test_roofline_weights_without_summary_shares_use_reference_time():
    raw = roof_raw(with_weights=False)
    roof = analysis.roofline_metrics(raw, CEILINGS)
    total = A_REF_US + B_REF_US + C_US  # no call counts: one call each
    assert roof["weights"] == "reference time"
    assert roof["gemms"][1]["time_share_pct"] == pytest.approx(100.0 * B_REF_US / total)
    assert roof["time_weighted_pct_roofline_reference"] == pytest.approx(
        (A_REF_US * 50.0 + B_REF_US * 100.0 / B_ROOF + C_US * 50.0) / total)


def test_roofline_columns_of_raw_results():
    raw = analysis.enrich(roof_raw(), CEILINGS)
    by_m = raw.set_index("m")
    assert by_m.loc[1024, "pct_roofline_reference"] == pytest.approx(50.0)
    assert by_m.loc[1024, "pct_roofline_tuned"] == pytest.approx(80.0)
    assert by_m.loc[4096, "pct_roofline_tuned"] == pytest.approx(80.0 / B_ROOF)
    assert list(by_m["category"]) == ["Small GEMMs", "N = 1", "Small GEMMs"]


def test_no_ceilings_no_roofline_section_and_empty_columns():
    raw = analysis.enrich(roof_raw(), None)
    assert raw["pct_roofline_reference"].isna().all() and raw["pct_roofline_tuned"].isna().all()
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    assert "roofline" not in m
    json.dumps(m, allow_nan=False)


def test_class_without_a_peak_is_bandwidth_bound():
    ceilings = dict(CEILINGS, peak_tflops={"16": 100.0})  # no "32"
    roof = analysis.roofline_metrics(roof_raw(), ceilings)
    c = roof["gemms"][2]
    assert c["peak_tflops"] is None
    assert c["bound"] == "memory"
    assert c["roofline_tflops"] == pytest.approx(2.0 * 2 * 256**3 / (4 * 3 * 256**2))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_roofline_json_safe_with_zero_time():
    raw = roof_raw()
    raw.loc[raw["m"] == 1024, "us_tuned"] = 0.0
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM, ceilings=CEILINGS)
    text = json.dumps(m, allow_nan=False)
    assert "Infinity" not in text
    assert m["roofline"]["gemms"][0]["pct_roofline_tuned"] is None


def test_existing_keys_are_kept():
    m = analysis.metrics(roof_raw(), 1.03, 0.03, PLATFORM, ceilings=CEILINGS)
    assert {"platform", "config", "counts", "uplift_all_attempted", "uplift_kept", "diversity",
            "e2e", "per_dtype_layout", "per_category", "roofline"} == set(m)
    for key in ("n_attempted", "n_valid", "n_improved", "n_regressed", "n_neutral", "n_kept",
                "improved_cumulative", "regressed_cumulative"):
        assert key in m["counts"]
    assert set(m["e2e"]) == {"e2e_uplift_pct", "coverage_pct", "e2e_us_saved_per_iter",
                             "top10pct_contribution_share", "n_untimed"}
    assert np.isfinite(m["uplift_kept"]["geomean"])


def test_failed_gemms_count_as_not_kept_in_every_headline_figure():
    """A workload of one more GEMM than was compared (its job failed): the headline counts it
    as not kept, and where it has no timing (weights from the compared GEMMs only) the
    time-weighted uplift says whose time it is a share of."""
    from geko_lib.campaign import headline

    raw = roof_raw()
    untimed = analysis.metrics(raw, 1.03, 0.03, PLATFORM, n_workload=len(raw) + 1)
    assert untimed["counts"]["n_failed"] == 1 and untimed["e2e"]["n_untimed"] == 1
    line = headline.text(untimed)
    assert line.startswith(f"{untimed['counts']['n_kept']} of {len(raw) + 1} GEMMs kept "
                           "(1 failed); ")
    assert "of the compared GEMMs' time saved (1 failed GEMM(s) untimed)" in line
    everything = analysis.metrics(raw, 1.03, 0.03, PLATFORM, n_workload=len(raw))
    assert everything["counts"]["n_failed"] == 0 and "failed" not in headline.text(everything)
