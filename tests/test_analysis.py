"""geko_lib.campaign.analysis: compare() keep rule and metrics() numbers (original_tool.md §7).

All expected numbers are worked out by hand below.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from geko_lib.campaign import analysis
from geko_lib.gemm import GEMM_FIELDS
from geko_lib.bench_formats.summary import PCT

TYPE = {"transA": "T", "transB": "N", "batch_count": 1, "a_type": "bf16_r", "b_type": "bf16_r",
        "c_type": "bf16_r", "d_type": "bf16_r", "compute_type": "c_f32_r",
        "scaleA": 0, "scaleB": 0}
PLATFORM = {"name": "sim", "arch": "gfx950", "measured": False, "note": "test"}


def result(m, us, kernel, lib="a.yaml", solution_index=0):
    return {**TYPE, "m": m, "n": 64, "k": 64, "us": us, "gflops": 1.0, "gbps": 1.0,
            "solution_index": solution_index, "solution_name": kernel, "kernel": kernel,
            "platform": "sim", "measured": False, "device": 0, "lib": lib}


def verify_row(m, error):
    return {**TYPE, "m": m, "n": 64, "k": 64, "solution_index": 0, "solution_name": "x",
            "kernel": "x", "error": error, "platform": "sim", "measured": False, "device": 0}


# m -> (us_reference, kernel_reference, us_tuned, kernel_tuned, error or None (no verify row))
CASES = {
    1: (10.0, "kA", 5.0, "kB", 0.001),   # ratio 2.0, valid, different kernel  -> kept
    2: (10.0, "kA", 9.8, "kB", 0.0),     # ratio 1.0204 < 1.03                  -> not kept
    3: (10.0, "kA", 5.0, "kA", 0.0),     # same kernel                          -> not kept
    4: (10.0, "kA", 4.0, "kC", 0.05),    # error >= err_thr (invalid)           -> not kept
    5: (10.0, "kA", 8.0, "kD", None),    # verify row missing -> error 1e6      -> not kept
    6: (103.0, "kA", 100.0, "kE", 0.0),  # ratio == up_thr exactly              -> kept
    7: (10.0, "kA", 8.0, "kF", 0.03),    # error == err_thr (strict <)          -> not kept
    8: (10.0, "kA", 12.5, "kG", 0.0),    # ratio 0.8, regression                -> not kept
}
KEPT = {1, 6}


def frames():
    ref = pd.DataFrame([result(m, c[0], c[1]) for m, c in CASES.items()])
    tun = pd.DataFrame([result(m, c[2], c[3], solution_index=m) for m, c in CASES.items()])
    ver = pd.DataFrame([verify_row(m, c[4]) for m, c in CASES.items() if c[4] is not None])
    return ref, tun, ver


def by_m(raw, column):
    return {int(r["m"]): r[column] for r in raw.to_dict("records")}


def test_ratio_and_keep_rule():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, up_thr=1.03, err_thr=0.03)
    assert len(raw) == len(CASES)
    ratio = by_m(raw, "ratio")
    for m, (ur, _, ut, _, _) in CASES.items():
        assert ratio[m] == pytest.approx(ur / ut)
    assert {m for m, kept in by_m(raw, "kept").items() if kept} == KEPT
    assert by_m(raw, "winner") == {m: ("tuned" if m in KEPT else "reference") for m in CASES}
    assert by_m(raw, "us_reference")[4] == 10.0 and by_m(raw, "us_tuned")[4] == 4.0
    assert by_m(raw, "kernel_reference")[1] == "kA" and by_m(raw, "kernel_tuned")[1] == "kB"


def test_paired_reference_from_the_tuned_job_decides_the_ratio():
    """Case 6 (103 vs 100 us in separate jobs) is only 1% faster than the reference timed
    beside it; case 1 keeps its uplift; a missing paired time falls back to the reference."""
    ref, tun, ver = frames()
    paired = {1: 9.0, 6: 101.0}
    tun[analysis.PAIRED] = [paired.get(int(m), math.nan) for m in tun["m"]]
    raw = analysis.compare(ref, tun, ver, up_thr=1.03, err_thr=0.03)
    ratio = by_m(raw, "ratio")
    assert ratio[1] == pytest.approx(9.0 / 5.0) and ratio[6] == pytest.approx(1.01)
    assert ratio[2] == pytest.approx(10.0 / 9.8)
    assert {m for m, kept in by_m(raw, "kept").items() if kept} == {1}
    assert by_m(raw, "us_saved")[1] == pytest.approx(4.0)


def test_validity_and_missing_verify_row():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, up_thr=1.03, err_thr=0.03)
    err = by_m(raw, "error_tuned")
    assert err[5] == analysis.FAILED_ERROR == 1e6
    assert err[1] == pytest.approx(0.001)
    valid = by_m(raw, "valid")
    assert {m for m, v in valid.items() if not v} == {4, 5, 7}
    assert raw["verified"].all()


def test_failed_verify_text_counts_as_invalid():
    ref, tun, ver = frames()
    ver["error"] = ver["error"].astype(object)
    ver.loc[ver["m"] == 1, "error"] = "failed"
    raw = analysis.compare(ref, tun, ver, up_thr=1.03, err_thr=0.03)
    assert by_m(raw, "error_tuned")[1] == 1e6
    assert not by_m(raw, "kept")[1]


def test_without_verify_everything_is_valid():
    ref, tun, _ = frames()
    raw = analysis.compare(ref, tun, None, up_thr=1.03, err_thr=0.03)
    assert raw["valid"].all()
    assert not raw["verified"].any()
    # 1, 4, 5, 6 and 7 are faster by >= 3 % with another kernel
    assert {m for m, k in by_m(raw, "kept").items() if k} == {1, 4, 5, 6, 7}


def test_thresholds_are_parameters():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, up_thr=2.0, err_thr=0.1)
    # ratio >= 2: m=1 (2.0), m=3 (2.0, same kernel), m=4 (2.5, error 0.05 now valid)
    assert {m for m, k in by_m(raw, "kept").items() if k} == {1, 4}


def test_rows_matched_by_identity_not_order():
    ref, tun, ver = frames()
    tun = tun.iloc[::-1].reset_index(drop=True)
    ver = ver.sample(frac=1.0, random_state=1).reset_index(drop=True)
    raw = analysis.compare(ref, tun, ver, up_thr=1.03, err_thr=0.03)
    assert by_m(raw, "ratio")[8] == pytest.approx(0.8)
    assert {m for m, k in by_m(raw, "kept").items() if k} == KEPT


def test_mismatched_gemm_sets_are_an_error():
    ref, tun, ver = frames()
    with pytest.raises(ValueError):
        analysis.compare(ref, tun.iloc[:-1], ver)


def test_uplift_columns():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver)
    assert by_m(raw, "uplift_pct")[1] == pytest.approx(100.0)
    assert by_m(raw, "uplift_pct")[8] == pytest.approx(-20.0)
    assert by_m(raw, "us_saved")[1] == pytest.approx(5.0)
    # m=1, n=k=64, bf16 (2 bytes): 2*1*64*64 / (2*1*64 + 2*64*64 + 2*1*64) = 8192 / 8448
    assert by_m(raw, "arith_intensity")[1] == pytest.approx(8192 / 8448)
    # m=8: 2*8*64*64 / (2*8*64 + 2*64*64 + 2*8*64) = 65536 / 10240
    assert by_m(raw, "arith_intensity")[8] == pytest.approx(6.4)


def weights_table(pcts, calls):
    rows = []
    for m in CASES:
        row = {**TYPE, "m": m, "n": 64, "k": 64, "call_count": calls[m]}
        if pcts is not None:
            row[PCT] = pcts[m]
        rows.append(row)
    return pd.DataFrame(rows)


PCTS = {1: 30.0, 2: 10.0, 3: 10.0, 4: 10.0, 5: 10.0, 6: 20.0, 7: 5.0, 8: 5.0}
CALLS = {m: 10 * m for m in CASES}


def test_weighted_contributions():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, weights=weights_table(PCTS, CALLS))
    contrib = by_m(raw, "weighted_uplift_contribution_pct")
    # kept: m=1 30 % * (1 - 1/2) = 15; m=6 20 % * (1 - 100/103) = 0.582524...
    assert contrib[1] == pytest.approx(15.0)
    assert contrib[6] == pytest.approx(20.0 * 3.0 / 103.0)
    assert all(contrib[m] == 0.0 for m in CASES if m not in KEPT)
    saved = by_m(raw, "weighted_us_saved")
    assert saved[1] == pytest.approx(10 * 5.0)
    assert saved[6] == pytest.approx(60 * 3.0)
    assert by_m(raw, "pct_of_total") == PCTS


def test_weights_without_percent_use_reference_time():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, weights=weights_table(None, CALLS))
    # totals: m * 10 calls * us_reference -> m=6: 60 * 103 = 6180
    totals = {m: CALLS[m] * CASES[m][0] for m in CASES}
    grand = sum(totals.values())
    pct = by_m(raw, "pct_of_total")
    for m in CASES:
        assert pct[m] == pytest.approx(100.0 * totals[m] / grand)


def test_metrics_numbers():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, weights=weights_table(PCTS, CALLS))
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    json.dumps(m, allow_nan=False)
    assert m["platform"] == PLATFORM
    assert m["config"] == {"up_thr": 1.03, "error_thr": 0.03, "verify": True}
    c = m["counts"]
    assert c["n_attempted"] == 8
    assert c["n_valid"] == 5  # 1, 2, 3, 6, 8
    assert c["n_invalid"] == 3
    assert c["n_kept"] == 2
    # valid ratios: 2.0, 1.0204, 2.0, 1.03, 0.8
    assert c["n_improved"] == 4 and c["n_regressed"] == 1 and c["n_neutral"] == 0
    assert c["improved_cumulative"]["ge_1_pct"] == 4
    assert c["improved_cumulative"]["ge_3_pct"] == 3
    assert c["improved_cumulative"]["ge_100_pct"] == 2
    assert c["regressed_cumulative"]["ge_10_pct"] == 1

    kept = m["uplift_kept"]  # ratios 2.0 and 1.03
    assert kept["n"] == 2
    assert kept["mean"] == pytest.approx((100.0 + 3.0) / 2)
    assert kept["geomean"] == pytest.approx(100.0 * (math.sqrt(2.0 * 1.03) - 1.0))
    assert kept["max"] == pytest.approx(100.0) and kept["min"] == pytest.approx(3.0)

    allv = m["uplift_all_attempted"]
    ratios = [2.0, 10.0 / 9.8, 2.0, 1.03, 0.8]
    assert allv["n"] == 5
    assert allv["geomean"] == pytest.approx(
        100.0 * (math.exp(sum(math.log(r) for r in ratios) / 5) - 1.0))
    assert allv["median"] == pytest.approx(3.0)

    e2e = m["e2e"]
    assert e2e["e2e_uplift_pct"] == pytest.approx(15.0 + 20.0 * 3.0 / 103.0)
    assert e2e["coverage_pct"] == pytest.approx(50.0)
    assert e2e["e2e_us_saved_per_iter"] == pytest.approx(10 * 5.0 + 60 * 3.0)
    assert e2e["top10pct_contribution_share"] == pytest.approx(30.0)  # ceil(0.8) = 1 GEMM

    assert m["diversity"]["n_unique_winning_kernels"] == 2
    assert m["diversity"]["pct_kernel_changed_in_attempted"] == pytest.approx(100.0 * 7 / 8)
    assert m["per_dtype_layout"]["bf16_r_TN"]["n"] == 5


def test_metrics_without_verify_has_no_invalid_count():
    ref, tun, _ = frames()
    raw = analysis.compare(ref, tun, None)
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    assert "n_invalid" not in m["counts"]
    assert m["config"]["verify"] is False
    assert m["e2e"] == {}
    json.dumps(m, allow_nan=False)


def test_metrics_nothing_kept():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, up_thr=100.0, weights=weights_table(PCTS, CALLS))
    m = analysis.metrics(raw, 100.0, 0.03, PLATFORM)
    json.dumps(m, allow_nan=False)
    assert m["counts"]["n_kept"] == 0
    assert m["uplift_kept"]["n"] == 0
    assert m["e2e"]["e2e_uplift_pct"] == 0.0 and m["e2e"]["coverage_pct"] == 0.0
    assert m["diversity"]["unique_winners_per_gemm"] is None
    assert analysis.summary_lines(m) == ["No kernels improve over the base library"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_metrics_non_finite_values_become_null():
    ref, tun, ver = frames()
    tun.loc[tun["m"] == 1, "us"] = 0.0  # ratio inf
    raw = analysis.compare(ref, tun, ver, weights=weights_table(PCTS, CALLS))
    assert np.isinf(by_m(raw, "ratio")[1])
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    text = json.dumps(m, allow_nan=False)
    assert "NaN" not in text and "Infinity" not in text
    assert m["uplift_kept"]["max"] is None
    assert m["uplift_kept"]["mean"] is None


def test_metrics_single_kept_row():
    ref, tun, ver = frames()
    raw = analysis.compare(ref.iloc[:1], tun.iloc[:1], ver.iloc[:1])
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    json.dumps(m, allow_nan=False)
    assert m["uplift_kept"]["n"] == 1
    assert m["uplift_kept"]["std"] == 0.0
    assert m["uplift_kept"]["geomean"] == pytest.approx(100.0)


def test_metrics_all_invalid_is_json_safe():
    ref, tun, _ = frames()
    ver = pd.DataFrame([verify_row(m, 1.0) for m in CASES])
    raw = analysis.compare(ref, tun, ver)
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    json.dumps(m, allow_nan=False)
    assert m["counts"]["n_valid"] == 0
    assert m["uplift_all_attempted"] == {"n": 0}
    assert m["per_dtype_layout"] == {}


def test_summary_lines():
    ref, tun, ver = frames()
    raw = analysis.compare(ref, tun, ver, weights=weights_table(PCTS, CALLS))
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    lines = analysis.summary_lines(m)
    geo = 100.0 * (math.sqrt(2.06) - 1.0)
    assert lines[0].startswith(f"Average GEMM uplift of {51.5:.4f}% for a total of 2 GEMMs "
                               "(arithmetic mean of the kept GEMMs' uplifts")
    assert f"geomean {geo:.4f}%" in lines[0]
    assert lines[1].startswith(f"Weighted GEMM uplift of {15.0 + 60.0 / 103.0:.4f}%")
    raw = analysis.compare(ref, tun, ver)
    assert len(analysis.summary_lines(analysis.metrics(raw, 1.03, 0.03, PLATFORM))) == 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_summary_lines_with_null_values():
    ref, tun, ver = frames()
    tun.loc[tun["m"] == 1, "us"] = 0.0
    raw = analysis.compare(ref, tun, ver)
    m = analysis.metrics(raw, 1.03, 0.03, PLATFORM)
    lines = analysis.summary_lines(m)
    assert lines and "for a total of 2 GEMMs" in lines[0]


def test_keys_are_gemm_fields():
    assert analysis.KEYS == list(GEMM_FIELDS)
