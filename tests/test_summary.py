"""geko_lib.bench_formats.summary.summarize: total (us), % of total, sort, keep_thr (a percent),
identity join.

Expected numbers are computed by hand from original_tool.md §3.
"""

import pandas as pd
import pytest

from geko_lib.gemm import GEMM_FIELDS
from geko_lib.bench_formats.summary import PCT, TOTAL, summarize

TYPE = {"transA": "T", "transB": "N", "a_type": "bf16_r", "b_type": "bf16_r",
        "c_type": "bf16_r", "d_type": "bf16_r", "compute_type": "c_f32_r",
        "scaleA": 0, "scaleB": 0}


def wrow(m, n, k, calls, batch=1, **extra):
    return {"M": m, "N": n, "K": k, "batch_count": batch, **TYPE, "call_count": calls,
            "lda": k, **extra}


def brow(m, n, k, us, batch=1, **extra):
    return {"m": m, "n": n, "k": k, "batch_count": batch, **TYPE, "us": us, **extra}


# three GEMMs: A = 10 calls * 5 us = 50, B = 1 * 30 = 30, C = 2 * 10 = 20; total 100 us
WORKLOAD = pd.DataFrame([wrow(64, 64, 64, 2), wrow(128, 128, 128, 1), wrow(32, 32, 32, 10)])
BASELINE = pd.DataFrame([brow(32, 32, 32, 5.0), brow(128, 128, 128, 30.0),
                         brow(64, 64, 64, 10.0)])


def sizes(frame):
    return [tuple(int(v) for v in r) for r in frame[["m", "n", "k"]].itertuples(index=False)]


def test_totals_percent_and_sort():
    summary, gemms = summarize(WORKLOAD, BASELINE, keep_thr=0.1)
    assert sizes(summary) == [(32, 32, 32), (128, 128, 128), (64, 64, 64)]
    assert list(summary["call_count"]) == [10, 1, 2]
    assert list(summary[TOTAL]) == pytest.approx([50.0, 30.0, 20.0])
    assert list(summary[PCT]) == pytest.approx([50.0, 30.0, 20.0])
    assert summary[PCT].sum() == pytest.approx(100.0)
    assert list(summary.columns[:len(GEMM_FIELDS)]) == list(GEMM_FIELDS)
    assert list(gemms.columns) == list(GEMM_FIELDS)
    assert sizes(gemms) == sizes(summary)


def test_percent_is_relative_to_sum_of_totals():
    workload = pd.DataFrame([wrow(16, 16, 16, 3), wrow(32, 32, 32, 1)])
    baseline = pd.DataFrame([brow(16, 16, 16, 1.0), brow(32, 32, 32, 1.0)])
    summary, _ = summarize(workload, baseline, keep_thr=0.1)
    # totals 3 and 1 -> 75 % and 25 %
    assert list(summary[PCT]) == pytest.approx([75.0, 25.0])


@pytest.mark.parametrize("keep_thr, kept", [
    (0.1, [(32, 32, 32), (128, 128, 128), (64, 64, 64)]),
    (20.0, [(32, 32, 32), (128, 128, 128), (64, 64, 64)]),  # share == keep_thr is kept
    (20.001, [(32, 32, 32), (128, 128, 128)]),
    (30.0, [(32, 32, 32), (128, 128, 128)]),
    (30.5, [(32, 32, 32)]),
    (50.0, [(32, 32, 32)]),
    (50.5, []),
])
def test_keep_rule_is_percent(keep_thr, kept):
    summary, gemms = summarize(WORKLOAD, BASELINE, keep_thr=keep_thr)
    assert sizes(summary) == kept
    assert sizes(gemms) == kept
    if kept:  # shares stay relative to the whole workload, not to the kept part
        assert summary[PCT].iloc[0] == pytest.approx(50.0)


def test_keep_thr_zero_without_baseline_is_identity_and_calls():
    summary, gemms = summarize(WORKLOAD, None, keep_thr=0)
    assert list(summary.columns) == list(GEMM_FIELDS) + ["call_count"]
    assert list(gemms.columns) == list(GEMM_FIELDS)
    assert sizes(summary) == [(64, 64, 64), (128, 128, 128), (32, 32, 32)]  # input order
    assert list(summary["call_count"]) == [2, 1, 10]
    assert TOTAL not in summary and PCT not in summary


def test_keep_thr_zero_with_baseline_keeps_everything():
    summary, _ = summarize(WORKLOAD, BASELINE, keep_thr=0)
    assert len(summary) == 3
    assert list(summary[PCT]) == pytest.approx([50.0, 30.0, 20.0])


def test_rows_differing_only_in_non_identity_columns_are_summed():
    workload = pd.DataFrame([
        wrow(64, 64, 64, 2, lda=64), wrow(64, 64, 64, 3, lda=128),
        wrow(64, 64, 64, 4, lda=64, bias_vector=True), wrow(32, 32, 32, 1),
    ])
    summary, gemms = summarize(workload, None, keep_thr=0)
    assert sizes(summary) == [(64, 64, 64), (32, 32, 32)]
    assert list(summary["call_count"]) == [9, 1]
    baseline = pd.DataFrame([brow(64, 64, 64, 1.0), brow(32, 32, 32, 1.0)])
    summary, _ = summarize(workload, baseline, keep_thr=0.1)
    assert list(summary[TOTAL]) == pytest.approx([9.0, 1.0])
    assert list(summary[PCT]) == pytest.approx([90.0, 10.0])


def test_identity_distinguishes_type_layout_batch():
    workload = pd.DataFrame([
        wrow(64, 64, 64, 1),
        {**wrow(64, 64, 64, 1), "transA": "N"},
        {**wrow(64, 64, 64, 1), "a_type": "f16_r", "b_type": "f16_r", "c_type": "f16_r",
         "d_type": "f16_r"},
        wrow(64, 64, 64, 1, batch=4),
    ])
    summary, gemms = summarize(workload, None, keep_thr=0)
    assert len(summary) == 4 and len(gemms) == 4
    assert list(summary["call_count"]) == [1, 1, 1, 1]


def test_timings_joined_by_identity_not_position():
    shuffled = BASELINE.sample(frac=1.0, random_state=3).reset_index(drop=True)
    reversed_ = BASELINE.iloc[::-1].reset_index(drop=True)
    expected, _ = summarize(WORKLOAD, BASELINE, keep_thr=0.1)
    for baseline in (shuffled, reversed_):
        summary, _ = summarize(WORKLOAD, baseline, keep_thr=0.1)
        assert sizes(summary) == sizes(expected)
        assert list(summary["us"]) == [5.0, 30.0, 10.0]
        assert list(summary[TOTAL]) == pytest.approx([50.0, 30.0, 20.0])


def test_timing_for_same_size_other_type_is_not_used():
    # the f16 GEMM has the same m, n, k as the bf16 one; its timing must come from its own row
    workload = pd.DataFrame([wrow(64, 64, 64, 1),
                             {**wrow(64, 64, 64, 1), "a_type": "f16_r", "b_type": "f16_r",
                              "c_type": "f16_r", "d_type": "f16_r"}])
    baseline = pd.DataFrame([{**brow(64, 64, 64, 3.0), "a_type": "f16_r", "b_type": "f16_r",
                              "c_type": "f16_r", "d_type": "f16_r"},
                             brow(64, 64, 64, 1.0)])
    summary, _ = summarize(workload, baseline, keep_thr=0.1)
    us = {r.a_type: r.us for r in summary.itertuples()}
    assert us == {"bf16_r": 1.0, "f16_r": 3.0}
    assert list(summary["a_type"]) == ["f16_r", "bf16_r"]


def test_missing_timing_is_an_error():
    with pytest.raises(ValueError):
        summarize(WORKLOAD, BASELINE.iloc[:2], keep_thr=0.1)


def test_nan_timing_is_an_error():
    baseline = BASELINE.copy()
    baseline.loc[1, "us"] = float("nan")
    with pytest.raises(ValueError):
        summarize(WORKLOAD, baseline, keep_thr=0.1)


@pytest.mark.parametrize("keep_thr", [-0.1, -1, -100])
def test_negative_keep_thr_is_an_error(keep_thr):
    with pytest.raises(ValueError):
        summarize(WORKLOAD, BASELINE, keep_thr=keep_thr)
    with pytest.raises(ValueError):
        summarize(WORKLOAD, None, keep_thr=keep_thr)


def test_positive_keep_thr_needs_baseline():
    with pytest.raises(ValueError):
        summarize(WORKLOAD, None, keep_thr=0.1)


def test_baseline_extra_columns_and_call_count_ignored():
    baseline = BASELINE.copy()
    baseline["call_count"] = 999  # the workload's call counts win
    baseline["kernel"] = ["k1", "k2", "k3"]
    summary, _ = summarize(WORKLOAD, baseline, keep_thr=0.1)
    assert list(summary["call_count"]) == [10, 1, 2]
    assert list(summary[TOTAL]) == pytest.approx([50.0, 30.0, 20.0])
    assert list(summary["kernel"]) == ["k1", "k2", "k3"]


def test_workload_without_scale_columns():
    workload = WORKLOAD.drop(columns=["scaleA", "scaleB"])
    summary, _ = summarize(workload, BASELINE, keep_thr=0.1)
    assert list(summary[TOTAL]) == pytest.approx([50.0, 30.0, 20.0])
    assert set(summary["scaleA"]) == {0}


def test_baseline_compute_type_without_prefix_joins():
    baseline = BASELINE.assign(compute_type="f32_r")
    summary, _ = summarize(WORKLOAD, baseline, keep_thr=0.1)
    assert list(summary[TOTAL]) == pytest.approx([50.0, 30.0, 20.0])


def test_inputs_not_modified():
    workload, baseline = WORKLOAD.copy(), BASELINE.copy()
    summarize(workload, baseline, keep_thr=1.0)
    pd.testing.assert_frame_equal(workload, WORKLOAD)
    pd.testing.assert_frame_equal(baseline, BASELINE)


def test_baseline_parts_deal_round_robin_and_merge_back_in_order():
    from geko_lib.bench_formats.summary import merge_parts, part_of

    assert part_of("part_1_of_3") == (1, 3)
    with pytest.raises(ValueError, match="index"):
        part_of("part_3_of_3")
    gemms = list(range(7))
    parts = [pd.DataFrame({"gemm": gemms[i::3], "us": [float(g) for g in gemms[i::3]]})
             for i in range(3)]
    merged = merge_parts(parts, 7)
    assert merged["gemm"].tolist() == gemms and merged["us"].dtype == float
    with pytest.raises(ValueError, match="part 2 of 3 has 1 rows, expected 2"):
        merge_parts([parts[0], parts[1], parts[2].iloc[:1]], 7)
    # more devices than GEMMs: the deal makes no part without a GEMM, and a merge of one is refused
    empty = [pd.DataFrame({"gemm": [0]}), pd.DataFrame(columns=["gemm"])]
    with pytest.raises(ValueError, match="2 baseline parts for 1 GEMM"):
        merge_parts(empty, 1)
