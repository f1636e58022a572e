"""geko_lib.search: chunking, dense-search rows (original_tool.md §8.1-8.2) and winners."""

import math

import pandas as pd
import pytest

from geko_lib import search
from geko_lib.gemm import GEMM_FIELDS

GEMM = {"transA": "T", "transB": "N", "batch_count": 1, "m": 4096, "n": 4096, "k": 2048,
        "a_type": "bf16_r", "b_type": "bf16_r", "c_type": "bf16_r", "d_type": "bf16_r",
        "compute_type": "c_f32_r", "scaleA": 0, "scaleB": 0}


# --------------------------------------------------------------------------------------------
# chunks

def check_cover(bounds, n):
    covered = []
    for first, last in bounds:
        assert first <= last, "empty chunk"
        covered.extend(range(first, last + 1))
    assert covered == list(range(n)), "every GEMM in exactly one chunk, in order"


@pytest.mark.parametrize("n", [1, 2, 3, 7, 24, 25, 26, 49, 50, 51, 60, 99, 100, 101, 1000])
@pytest.mark.parametrize("devices", [1, 2, 3, 8])
def test_chunk_bounds_properties(n, devices):
    bounds = search.chunk_bounds(n, 25, devices)
    check_cover(bounds, n)
    lengths = [last - first + 1 for first, last in bounds]
    assert max(lengths) <= 25
    assert max(lengths) - min(lengths) <= 1, "balanced: devices finish together"
    if n >= devices:
        assert len(bounds) % devices == 0, "every device gets the same number of chunks"
    else:
        assert len(bounds) == n


@pytest.mark.parametrize("n, devices, expected", [
    (60, 1, [(0, 19), (20, 39), (40, 59)]),
    (45, 2, [(0, 22), (23, 44)]),
    (10, 2, [(0, 4), (5, 9)]),
    (3, 8, [(0, 0), (1, 1), (2, 2)]),
    (50, 2, [(0, 24), (25, 49)]),
    (25, 1, [(0, 24)]),
    (1, 1, [(0, 0)]),
])
def test_chunk_bounds_examples(n, devices, expected):
    assert search.chunk_bounds(n, 25, devices) == expected


def test_chunk_bounds_empty_and_odd_inputs():
    assert search.chunk_bounds(0, 25, 2) == []
    check_cover(search.chunk_bounds(7, 25, 0), 7)
    check_cover(search.chunk_bounds(7, 1, 1), 7)
    assert len(search.chunk_bounds(7, 1, 1)) == 7
    assert search.chunk_bounds(30, 10, 1) == [(0, 9), (10, 19), (20, 29)]
    assert search.chunk_bounds(31, 10, 1) == [(0, 7), (8, 15), (16, 23), (24, 30)]


def test_chunk_name():
    assert search.chunk_name(0, 24) == "gemms_0-24"
    assert search.chunk_name(25, 49) == "gemms_25-49"
    assert search.chunk_name(7, 7) == "gemms_7"


# --------------------------------------------------------------------------------------------
# search rows (§8.1)

@pytest.mark.parametrize("latency, duration, iters, ratio", [
    (50.0, 0.04, 800, 0.6),     # 40000 us / 50 us
    (30.0, 0.04, 1334, 0.6),    # 1333.3 -> ceil
    (20.0, 0.04, 2000, 0.3),    # 20 us is not > 20
    (20.5, 0.04, 1952, 0.6),    # 1951.2 -> ceil
    (7.0, 0.04, 5715, 0.3),     # 5714.3 -> ceil
    (1000.0, 0.5, 500, 0.6),
    (3e6, 0.04, 1, 0.6),        # longer than the budget: still one iteration
])
def test_search_row_with_latency(latency, duration, iters, ratio):
    row = search.search_row(GEMM, latency, duration, 512)
    assert row["iters"] == row["cold_iters"] == iters
    assert row["skip_slow_solution_ratio"] == ratio


@pytest.mark.parametrize("m, n, k, ratio", [
    (4096, 4096, 2048, 0.6),
    (2049, 2049, 1025, 0.6),
    (2048, 4096, 2048, 0.3),   # M > 2048 is strict
    (4096, 2048, 2048, 0.3),
    (4096, 4096, 1024, 0.3),   # K > 1024 is strict
    (16, 16, 16, 0.3),
])
@pytest.mark.parametrize("latency", [None, 0, 0.0, float("nan")])
def test_search_row_without_latency(m, n, k, ratio, latency):
    row = search.search_row({**GEMM, "m": m, "n": n, "k": k}, latency, 0.04, 512)
    assert row["iters"] == 100 and row["cold_iters"] == 20
    assert row["skip_slow_solution_ratio"] == ratio


def test_search_row_keys():
    row = search.search_row(GEMM, 50.0, 0.04, 256)
    assert row["function"] == "matmul"
    assert row["algo_method"] == 0
    assert row["requested_solution_num"] == -1
    assert row["beta"] == 0.0 and row["alpha"] == 1.0
    assert row["flush"] is False
    assert row["rotating"] == 256
    assert row["use_gpu_timer"] is True and row["print_kernel_info"] is True
    assert (row["M"], row["N"], row["K"], row["batch_count"]) == (4096, 4096, 2048, 1)
    assert {"m", "n", "k"}.isdisjoint(row)
    assert (row["transA"], row["transB"]) == ("T", "N")
    assert row["compute_type"] == "c_f32_r"
    assert row["scale_type"] == "f32_r"
    assert (row["scaleA"], row["scaleB"]) == (0, 0)
    for key in ("a_type", "b_type", "c_type", "d_type"):
        assert row[key] == "bf16_r"
    for key, value in row.items():  # plain Python values, so YAML dumps them cleanly
        assert type(value) in (str, int, float, bool), key


def test_search_row_numpy_sizes_become_ints():
    frame = pd.DataFrame([GEMM])
    row = search.search_row(frame.to_dict("records")[0], None, 0.04, 512)
    assert type(row["M"]) is int and type(row["batch_count"]) is int


def test_search_rows_take_latency_from_summary_by_identity():
    g1 = dict(GEMM)
    g2 = {**GEMM, "m": 64, "n": 64, "k": 64}
    g3 = {**GEMM, "m": 128, "n": 128, "k": 128}
    gemms = pd.DataFrame([g1, g2, g3])
    summary = pd.DataFrame([{**g2, "us": 10.0, "call_count": 1},
                            {**g1, "us": 40.0, "call_count": 1}])  # g3 has no timing
    rows = search.search_rows(gemms, summary, 0.04, 512)
    assert [r["M"] for r in rows] == [4096, 64, 128]
    assert [r["iters"] for r in rows] == [1000, 4000, 100]
    assert [r["cold_iters"] for r in rows] == [1000, 4000, 20]
    assert [r["skip_slow_solution_ratio"] for r in rows] == [0.6, 0.3, 0.3]


def test_search_rows_without_timings():
    gemms = pd.DataFrame([GEMM])
    rows = search.search_rows(gemms, gemms.assign(call_count=1), 0.04, 512)
    assert rows[0]["iters"] == 100 and rows[0]["cold_iters"] == 20
    assert rows[0]["skip_slow_solution_ratio"] == 0.6


# --------------------------------------------------------------------------------------------
# winners

def cand(m, us, index):
    return {**GEMM, "m": m, "n": 64, "k": 64, "us": us, "solution_index": index,
            "kernel": f"k{index}"}


def test_winners_min_us_and_ties():
    rows = [cand(64, 5.0, 1), cand(64, 3.0, 2), cand(64, 4.0, 3),
            cand(32, 2.0, 9), cand(32, 2.0, 4), cand(32, 2.5, 1),
            cand(16, 7.0, 5)]
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=7).reset_index(drop=True)
    best = search.winners(frame)
    assert list(best["m"]) == [16, 32, 64]  # sorted by size
    assert list(best["solution_index"]) == [5, 4, 2]
    assert list(best["us"]) == [7.0, 2.0, 3.0]
    assert list(best["kernel"]) == ["k5", "k4", "k2"]
    assert list(best.index) == [0, 1, 2]


def test_winners_one_per_gemm_identity():
    rows = [cand(64, 5.0, 1), {**cand(64, 1.0, 2), "transA": "N"},
            {**cand(64, 2.0, 3), "batch_count": 2}, {**cand(64, 9.0, 4), "a_type": "f16_r",
                                                    "b_type": "f16_r", "c_type": "f16_r",
                                                    "d_type": "f16_r"}]
    best = search.winners(pd.DataFrame(rows))
    assert len(best) == 4
    assert set(best["solution_index"]) == {1, 2, 3, 4}
    assert not best.duplicated(subset=list(GEMM_FIELDS)).any()


def test_default_iteration_counts_match_spec():
    assert (search.DEFAULT_ITERS, search.DEFAULT_COLD_ITERS) == (100, 20)
    assert math.ceil(0.04 * 1e6 / 40.0) == 1000


def test_deal_by_cost_mixes_long_and_short_gemms_into_every_chunk():
    latencies = [1.0] * 20 + [100.0] * 4  # the four longest GEMMs come last in the workload
    rows = [{"id": i} for i in range(24)]
    bounds = search.chunk_bounds(24, 25, 4)
    dealt = search.deal_by_cost(rows, latencies, bounds)
    assert sorted(r["id"] for r in dealt) == list(range(24))
    loads = [sum(latencies[r["id"]] for r in dealt[first:last + 1]) for first, last in bounds]
    assert max(loads) == min(loads) == 105.0  # one long GEMM per chunk
    for first, last in bounds:  # each chunk keeps the workload's order
        ids = [r["id"] for r in dealt[first:last + 1]]
        assert ids == sorted(ids)


def test_deal_by_cost_fills_uneven_chunks_and_keeps_order_without_latencies():
    rows = list(range(7))
    bounds = search.chunk_bounds(7, 25, 2)
    dealt = search.deal_by_cost(rows, [7, 6, 5, 4, 3, 2, 1], bounds)
    assert [len(dealt[f:l + 1]) for f, l in bounds] == [4, 3]
    assert sorted(dealt) == rows
    assert search.deal_by_cost(rows, [None] * 7, bounds) == rows


def test_search_run_retries_a_failed_chunk_gemm_by_gemm_and_logs_what_still_fails(tmp_path):
    """The API runner (search.run) shares the workflow's retry and failed_jobs.log format."""
    from geko_lib import failures
    from geko_lib.gemm import GemmProblem

    rows = [search.search_row({"transA": "N", "transB": "N", "m": m, "n": 256, "k": 512,
                               "batch_count": 1, "a_type": "bf16_r", "b_type": "bf16_r",
                               "c_type": "bf16_r", "d_type": "bf16_r",
                               "compute_type": "c_f32_r"}, None, 0.01, 64)
            for m in (256, 512, 768)]
    crash = GemmProblem.from_row(rows[1]).name
    winners = search.run(configs=rows, output_dir=tmp_path / "s", devices=[0],
                         platform="sim", sim={"search_crash_on": [crash]})
    assert sorted(GemmProblem.from_row(r).name for r in winners.to_dict("records")) == \
        sorted(GemmProblem.from_row(r).name for r in (rows[0], rows[2]))
    log_text = (tmp_path / "s" / "failed_jobs.log").read_text()
    assert failures.failed_names(log_text) == [crash] and "injected search crash" in log_text
    assert (tmp_path / "s" / "failed_gemms.yaml").is_file()
    # each GEMM retried alone in a chunk of its own: a rerun resumes from them
    assert sorted(p.name for p in (tmp_path / "s" / "data").glob("*_retry*.csv")) == \
        ["gemms_0-2_retry0.csv", "gemms_0-2_retry2.csv"]


def _rows_of(ms):
    return [search.search_row({"transA": "N", "transB": "N", "m": m, "n": 256, "k": 512,
                               "batch_count": 1, "a_type": "bf16_r", "b_type": "bf16_r",
                               "c_type": "bf16_r", "d_type": "bf16_r",
                               "compute_type": "c_f32_r"}, None, 0.01, 64) for m in ms]


def test_search_run_reuses_only_whole_candidates_measured_for_the_same_platform_and_options(
        tmp_path, monkeypatch, caplog):
    """A rerun of search.run into the same directory reuses a chunk's candidates only when their
    stamp is whole and was made for the same rows, platform and options: damaged, unstamped or
    other-options candidates are searched again, never returned as they are."""
    from geko_lib.platforms import sim

    rows, out = _rows_of((256, 512)), tmp_path / "s"
    searched = []
    real = sim.SimPlatform.search

    def counting(self, problems, *args, **kwargs):
        searched.append(len(problems))
        return real(self, problems, *args, **kwargs)

    monkeypatch.setattr(sim.SimPlatform, "search", counting)
    first = search.run(configs=rows, output_dir=out, devices=[0], platform="sim")
    data = out / "data" / "gemms_0-1.csv"
    assert searched == [2] and data.with_name(data.name + ".stamp.json").is_file()
    again = search.run(configs=rows, output_dir=out, devices=[0], platform="sim")
    assert searched == [2], "same rows, platform and options: reused"
    pd.testing.assert_frame_equal(first, again)
    # the candidates edited (a winner made faster by hand): searched again, not believed
    text = data.read_text().splitlines()
    data.write_text("\n".join(text[:2]) + "\n")
    with caplog.at_level("INFO"):
        search.run(configs=rows, output_dir=out, devices=[0], platform="sim")
    assert searched == [2, 2] and "damaged or edited" in caplog.text
    # other options of the platform: measured for something else, searched again
    search.run(configs=rows, output_dir=out, devices=[0], platform="sim", sim={"seed": 7})
    assert searched == [2, 2, 2]
    # no stamp (a file copied in): searched again
    data.with_name(data.name + ".stamp.json").unlink()
    search.run(configs=rows, output_dir=out, devices=[0], platform="sim", sim={"seed": 7})
    assert searched == [2, 2, 2, 2]
